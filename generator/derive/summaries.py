"""Per-run summaries: one row per run with the figures its own records give (its windows' steps/s and interval,
step-time quantiles, losses, loss parity, energy, the checks against what its hardware can do), and a run's interval
over repetitions for the kinds of test that repeat (`repetition_intervals`). The training boards made from the
summary are in training_boards.py, loss parity in parity.py.

Every formula comes from `runners.metrics`; this module only groups, joins and orders.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

import generator.derive.counting as counting
import generator.derive.energy as energy
import generator.derive.parity as parity
import generator.load.columns as columns
import generator.load.fields as fields
import generator.store.runcache as runcache
from runners import metrics

SUMMARY_SCHEMA = {
    "run_id": pl.String,
    "steps_per_s": pl.Float64,
    "steps_per_s_lo": pl.Float64,
    "steps_per_s_hi": pl.Float64,
    "windows": pl.Int64,
    "coverage": pl.Float64,
    "fastest_window_steps_per_s": pl.Float64,
    "steady_step_s": pl.Float64,
}


def config_fields(runs: pl.DataFrame) -> pl.DataFrame:
    """The runs flattened (`columns.flatten`), with `headline`: a configuration as the suite pins it (no sweep
    setting, no other micro-batch, steps or device count), run to the end, the only kind of run a headline ("best")
    may name."""
    return columns.flatten(runs).with_columns(
        headline=(pl.col("status") == "ok")
        & pl.col("full_length")
        & pl.col("suite_scale")
        & ~pl.col("sweep_point")
        & ~pl.col("variant").str.contains("[", literal=True),
    )


def env_changes(runs: pl.DataFrame) -> pl.DataFrame:
    """Per run, the allowlisted variables it set that not every measured run of its suite, engine and hardware
    set alike (an NCCL sweep, say), as `KEY=VALUE` text: what the image or an engine's launcher sets everywhere
    (torchrun's TORCH_* for every PyTorch run, none for MLX's) is omitted, and so is where a cache lives (`*_CACHE_DIR`:
    a path on the host, not a setting of the run)."""
    parsed: dict[str, frozenset[tuple[str, Any]]] = {}  # runs of one host share their text: each read once

    def items(env: str) -> frozenset[tuple[str, Any]]:
        if env not in parsed:
            parsed[env] = frozenset((k, v) for k, v in json.loads(env).items() if not k.endswith("_CACHE_DIR"))
        return parsed[env]

    out = []
    for _, group in runs.filter(counting.MEASURED).group_by("suite", "engine", "accelerator", "accelerator_count"):
        texts = group["environment"].to_list()
        distinct = {env: items(env) for env in texts}
        common = frozenset.intersection(*distinct.values())
        changes = {env: " ".join(f"{k}={v}" for k, v in sorted(s - common)) for env, s in distinct.items()}
        out += [(r, changes[env]) for r, env in zip(group["run_id"], texts, strict=True)]
    return pl.DataFrame(out, schema={"run_id": pl.String, "env_changes": pl.String}, orient="row")


def window_rates(runs: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """Per run (`run_id`), the steps/s of every complete window of steady steps, pooled over trials in time order
    (`rate`, a list): what a run's figure, its interval and the verdict's resampling are made from."""
    return (
        rows.lazy()
        .filter((pl.col("metric") == "step_time_s") & (pl.col("phase") == "steady"))
        .join(runs.lazy().select("run_id", "warmup_steps", "window_steps"), on="run_id")
        .with_columns(window=(pl.col("step") - pl.col("warmup_steps")) // pl.col("window_steps"))
        .group_by("run_id", "trial", "window")
        # each window's values in step order, summed as one list: a float sum that depends on the window's own
        # values alone (a group_by sum's depends on how the frame's other runs chunk it: a warm build differed)
        .agg(times=pl.col("value").sort_by("step"), n=pl.len(), window_steps=pl.col("window_steps").first())
        .with_columns(elapsed=pl.col("times").list.sum())
        .filter(pl.col("n") == pl.col("window_steps"))
        .with_columns(rate=pl.col("window_steps") / pl.col("elapsed"))
        .sort("run_id", "trial", "window")  # in time order: batch means need neighbours side by side
        .group_by("run_id", maintain_order=True)
        .agg(pl.col("rate"))
        .collect()
    )


def window_intervals(runs: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """Steps/s per complete window of steady steps, pooled over trials: median and 95% interval per run
    (`metrics.window_interval`, the one function for a run's own interval). Also the mean
    steady step time over those windows (`steady_step_s`), which the end-to-end reading adds up."""
    out = []
    for run_id, rates in window_rates(runs, rows).iter_rows():
        median, lo, hi, n, coverage = metrics.window_interval(rates)
        steady_step_s = sum(1 / r for r in rates) / len(rates)
        out.append((run_id, median, lo, hi, n, coverage, max(rates), steady_step_s))
    return pl.DataFrame(out, schema=SUMMARY_SCHEMA, orient="row")


def step_time_quantiles(rows: pl.DataFrame) -> pl.DataFrame:
    """Per run, the 5th, 25th, 50th, 75th and 95th percentiles of steady step times (ms): the distribution's shape
    without shipping every sample to the page."""
    steady = rows.filter((pl.col("metric") == "step_time_s") & (pl.col("phase") == "steady"))
    return steady.group_by("run_id").agg(
        **{f"step_ms_p{q}": (pl.col("value").quantile(q / 100, "linear") * 1e3) for q in (5, 25, 50, 75, 95)}
    )


def retractions(runs: pl.DataFrame) -> pl.DataFrame:
    """Per retracted run: the retraction record's id, its reason and when it was made (from flattened runs)."""
    return runs.filter(pl.col("origin") == "retraction").select(
        run_id=pl.col("retracts"),
        retracted_by=pl.col("run_id"),
        retraction_reason=pl.col("retraction_reason_text"),
        retracted_at=pl.col("started_at"),
    )


def _run_values(rows: pl.DataFrame) -> pl.DataFrame:
    """Per run, its declared run-level metrics (`fields.RUN_METRICS`, the first trial's), every one a column (null
    where a record has none), in a fixed order; the record's own steps/s as `reported_steps_per_s`."""
    run_values = (
        # only the declared ones (generator/load/fields.py): a file's own run-level metric never becomes or
        # shadows a column
        rows.filter(pl.col("phase") == "run", pl.col("metric").is_in(list(fields.RUN_METRICS)))
        .sort("run_id", "metric", "trial")
        .group_by("run_id", "metric", maintain_order=True)
        .agg(pl.col("value").first())  # run-level values of the first trial
        .pivot(on="metric", index="run_id", values="value")
    )
    for name in fields.RUN_METRICS:
        if name not in run_values.columns:
            run_values = run_values.with_columns(pl.lit(None, dtype=pl.Float64).alias(name))
    run_values = run_values.select("run_id", *sorted(set(run_values.columns) - {"run_id"}))  # a fixed order
    run_values = run_values.rename({"steps_per_s": "reported_steps_per_s"})
    return run_values


def run_summary(runs: pl.DataFrame, rows: pl.DataFrame, flat: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per run with its headline numbers (null where a run has none, e.g. a failure). `flat`: the runs
    already flattened (`config_fields` of these runs or of more, row for row the same), which is most of the cost."""
    if flat is None:
        runs = config_fields(runs)
    else:
        runs = flat.join(runs.select("run_id"), on="run_id", how="semi", maintain_order="left")
    runs = runs.join(retractions(runs), on="run_id", how="left")
    own = _own_figures(runs, rows)
    run_values = _run_values(rows)
    losses = (
        rows.filter(pl.col("metric") == "loss", pl.col("trial") == 0)
        .sort("step")
        .group_by("run_id")
        .agg(first_loss=pl.col("value").first(), final_loss=pl.col("value").last())
    )
    summary = (
        runs.join(own.select(*SUMMARY_SCHEMA), on="run_id", how="left")
        .join(run_values, on="run_id", how="left")
        .join(losses, on="run_id", how="left")
        .join(parity.loss_parity(runs, rows, _curves(own)), on="run_id", how="left")
        .join(env_changes(runs), on="run_id", how="left")
        .join(own.select("run_id", *_QUANTILES), on="run_id", how="left")
        .with_columns(
            steps_per_s=pl.coalesce("steps_per_s", "reported_steps_per_s"),
            peak_mem_gib=pl.coalesce("peak_mem_gib", "peak_rss_gib"),
            # the last line of an error (a traceback's exception), short enough for a table cell
            error_short=pl.col("error").fill_null("").str.strip_chars().str.split("\n").list.last().str.slice(0, 200),
        )
        .with_columns(
            tokens_per_s=metrics.tokens_per_s(pl.col("steps_per_s"), pl.col("tokens_per_step")),
            tokens_per_s_lo=metrics.tokens_per_s(pl.col("steps_per_s_lo"), pl.col("tokens_per_step")),
            tokens_per_s_hi=metrics.tokens_per_s(pl.col("steps_per_s_hi"), pl.col("tokens_per_step")),
        )
        .with_columns(
            tokens_per_s_per_device=pl.col("tokens_per_s") / pl.col("accelerator_count"),
            # all of the workload's steps over their wall time, warm-up and compilation included: a full-length
            # run's own, a shorter run's projected to the workload's steps (metrics.end_to_end_steps_per_s)
            end_to_end_steps_per_s=metrics.end_to_end_steps_per_s(
                pl.col("workload_steps"), pl.col("warmup_s"), pl.col("warmup_steps"), pl.col("steady_step_s")
            ),
        )
    )
    peaks, ceilings, unverified = _hardware_checks(summary)
    flops, rate, count = pl.col("flops_per_token"), pl.col("tokens_per_s"), pl.col("accelerator_count")
    model_flops_per_s = flops * rate
    references = [
        metrics.datasheet_peak_flops(acc, ref) if ref else None
        for acc, ref in summary.select("accelerator", "reference_precision").iter_rows()
    ]
    summary = summary.join(energy.per_run(summary, rows), on="run_id", how="left", maintain_order="left")
    return summary.with_columns(
        datasheet_peak_flops=pl.Series(peaks, dtype=pl.Float64),
        reference_peak_flops=pl.Series(references, dtype=pl.Float64),
        flops_ceiling=pl.Series(ceilings, dtype=pl.Float64),
        unverified=pl.Series(unverified, dtype=pl.String),
        # one calibrated peak per hardware model, precision, engine and device count: the median of every measured
        # run's own (each run's is on its page), so that one host's noisy calibration does not move a run's MFU;
        # engines and device counts calibrate differently (on H200, torch on 2 GPUs: 780 TFLOP/s; every run pooled:
        # 764), so each keeps its own
        model_matmul_flops=pl.col("calibrated_matmul_flops")
        .filter(counting.MEASURED)
        .median()
        .over("accelerator", "matmul_precision", "engine", "accelerator_count"),
        model_reference_matmul_flops=pl.col("reference_matmul_flops")
        .filter(counting.MEASURED)
        .median()
        .over("accelerator", "reference_precision", "engine", "accelerator_count"),
    ).with_columns(
        mfu_datasheet=metrics.mfu(flops, rate, pl.col("datasheet_peak_flops"), count),
        mfu_calibrated=metrics.mfu(flops, rate, pl.col("model_matmul_flops"), count),
        ceiling_fraction=model_flops_per_s / pl.col("flops_ceiling"),
        # every window must be possible too, not only the median (a file can hide impossible windows behind it)
        fastest_window_fraction=pl.col("flops_per_token")
        * pl.col("tokens_per_step")
        * pl.col("fastest_window_steps_per_s")
        / pl.col("flops_ceiling"),
        mfu_datasheet_reference=metrics.mfu(flops, rate, pl.col("reference_peak_flops"), count),
        mfu_calibrated_reference=metrics.mfu(flops, rate, pl.col("model_reference_matmul_flops"), count),
    )


_QUANTILES = [f"step_ms_p{q}" for q in (5, 25, 50, 75, 95)]
"""`step_time_quantiles`' columns."""

OWN = runcache.Frames("own")
"""Each run's figures from its own rows (`_own_figures`), kept by its file's sha256."""


OWN_CHUNK = 10_000
"""Runs whose own figures (`_own_figures`) are worked out at once: each is a run's alone, so a chunk gives the same rows
as all of them together, and the window and quantile frames of every row of a cold build at once were the largest
memory the build held."""


def _own_figures(runs: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """Per run, what its own rows decide: its windows' interval (`window_intervals`), its step-time quantiles and its
    loss curve (`curve_first`, `curve_windows`: null where it has none). They depend on the file and on its warm-up and
    window steps, so with a cache in use (generator/store/runcache.py) only new files' are worked out: a warm build
    need not work out every run's again."""

    def compute(part: pl.DataFrame) -> pl.DataFrame:
        if part.height > OWN_CHUNK:  # a cold build's every run: a chunk at a time, each from its own rows alone
            chunks = [compute(part.slice(i, OWN_CHUNK)) for i in range(0, part.height, OWN_CHUNK)]
            return pl.concat(chunks, how="vertical_relaxed")
        wanted = rows if part.height == runs.height else rows.filter(pl.col("run_id").is_in(part["run_id"].implode()))
        curves = parity.loss_curves(part, wanted)
        curve = pl.DataFrame(
            {
                "run_id": list(curves),
                "curve_first": [c.first for c in curves.values()],
                "curve_windows": [c.windows for c in curves.values()],
            },
            schema={"run_id": pl.String, "curve_first": pl.Float64, "curve_windows": pl.List(pl.Float64)},
        )
        return (
            part.select("run_id")
            .join(window_intervals(part, wanted), on="run_id", how="left", maintain_order="left")
            .join(step_time_quantiles(wanted), on="run_id", how="left", maintain_order="left")
            .join(curve, on="run_id", how="left", maintain_order="left")
        )

    return OWN.by_file(runs, ["warmup_steps", "window_steps"], compute)


def _curves(own: pl.DataFrame) -> dict[str, parity.Curve]:
    """The loss curves `_own_figures` holds, as `parity.loss_curves` gives them (runs without loss rows left out)."""
    return {
        run_id: parity.Curve(first, list(windows or []))
        for run_id, first, windows in own.select("run_id", "curve_first", "curve_windows").iter_rows()
        if first is not None
    }


def _hardware_checks(summary: pl.DataFrame) -> tuple[list[float | None], list[float | None], list[str | None]]:
    """Per run (in order): its datasheet peak FLOP/s, the most its hardware can do (every device), and why its
    speed cannot be checked against that (null: it can)."""
    peaks, ceilings, unverified = [], [], []
    for acc, prec, device, cores, count in summary.select(
        "accelerator", "compute_precision", "device", "cpu_cores", "accelerator_count"
    ).iter_rows():
        peaks.append(metrics.datasheet_peak_flops(acc, prec or "fp32"))
        ceiling = metrics.flops_ceiling(acc, prec or "fp32", device, cores)
        # a CPU's ceiling covers all its cores, however many processes share them; a GPU's is per device
        ceilings.append(None if ceiling is None else ceiling if device == "cpu" else ceiling * count)
        unverified.append(None if ceiling is not None else _unverified_reason(acc, prec, device))
    # a training figure whose FLOPs cannot be computed from its shapes cannot be checked either
    no_shapes = summary.select(
        pl.col("steps_per_s").is_not_null() & pl.col("flops_per_token").is_null() & counting.MEASURED
    ).to_series()
    # nor one that recorded no loss: the same-start, same-data check (loss parity) has nothing to compare
    no_loss = summary.select(
        pl.col("steps_per_s_lo").is_not_null() & pl.col("first_loss").is_null() & counting.MEASURED
    ).to_series()
    unverified = [
        reason
        or ("no model shapes (config.model and workload.seq_len) to compute its FLOPs from" if missing else None)
        or (
            "no loss recorded, so loss parity cannot check that it trained the same model on the same data"
            if lossless
            else None
        )
        for reason, missing, lossless in zip(unverified, no_shapes, no_loss, strict=True)
    ]
    return peaks, ceilings, unverified


def _unverified_reason(accelerator: str, precision: str | None, device: str | None) -> str:
    """Why a run's speed cannot be checked against what its hardware can do (and so why it is not ranked)."""
    if device == "cpu":
        return "a CPU run whose record gives no core count (hardware.cpu_cores), so its speed cannot be checked"
    return (
        f"no datasheet peak for {accelerator!r} at {precision or 'fp32'} in runners/metrics.py "
        "(DATASHEET_PEAK_FLOPS), so its speed cannot be checked: unranked until the table knows it"
    )


def repetition_intervals(samples: pl.DataFrame, prefix: str) -> pl.DataFrame:
    """Per run (`run_id` and a list column of its repetitions' values, nulls dropped): the median with its 95%
    interval and the interval's exact coverage (`metrics.repetition_interval`), as `{prefix}_med`, `_lo`, `_hi`,
    `_coverage`, and the number of repetitions. One repetition (or all equal) has no interval: `_lo`, `_hi` and
    `_coverage` are null, never an interval of zero width (`metrics.with_width`)."""
    stats: list[tuple[str, float | None, float | None, float | None, float | None, int]] = []
    for run_id, values in samples.iter_rows():
        found = metrics.repetition_interval([v for v in values or [] if v is not None])
        if found is None:
            stats.append((run_id, None, None, None, None, 0))
            continue
        median, lo, hi, n, coverage = found
        stats.append((run_id, median, lo, hi, coverage, n))
    names = [f"{prefix}_med", f"{prefix}_lo", f"{prefix}_hi", f"{prefix}_coverage"]
    schema = {"run_id": pl.String, **dict.fromkeys(names, pl.Float64), "repetitions": pl.Int64}
    return pl.DataFrame(stats, schema=schema, orient="row")


def median_range(column: str, median: str, lo: str, hi: str) -> dict[str, pl.Expr]:
    """A group's median of `column` and its range (smallest, largest), named `median`, `lo` and `hi`: the
    aggregations of a point or a table row that shows the runs it pools."""
    values = pl.col(column)
    return {median: values.median(), lo: values.min(), hi: values.max()}
