"""Per-run summaries and the training leaderboards, repeats, scaling and loss parity made from them.

Every formula comes from `runners.metrics`; this module only groups, joins and orders.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

import polars as pl

import generator.derive.configurations as configurations
import generator.derive.energy as energy
import generator.load.columns as columns
import generator.load.fields as fields
import generator.store.runcache as runcache
from runners import metrics, schema

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
    for _, group in runs.filter(pl.col("origin") == "measured").group_by(
        "suite", "engine", "accelerator", "accelerator_count"
    ):
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


@dataclass(frozen=True, slots=True)
class _Curve:
    first: float
    windows: list[float]


def _loss_curves(runs: pl.DataFrame, rows: pl.DataFrame) -> dict[str, _Curve]:
    """Trial 0's first loss and steady-window mean losses per run: `metrics.window_means` of the losses after the
    warm-up, computed for every run in one polars pass (the same complete windows of consecutive steps)."""
    losses = (
        rows.lazy()
        .filter(pl.col("metric") == "loss", pl.col("trial") == 0)
        .join(runs.lazy().select("run_id", "warmup_steps", "window_steps"), on="run_id")
        .sort("run_id", "step")
        .with_columns(pos=pl.int_range(pl.len()).over("run_id"))
    )
    first = losses.group_by("run_id").agg(first=pl.col("value").first())
    windows = (
        losses.filter(pl.col("pos") >= pl.col("warmup_steps"))
        .with_columns(window=(pl.col("pos") - pl.col("warmup_steps")) // pl.col("window_steps"))
        .group_by("run_id", "window")
        .agg(mean=pl.col("value").sum() / pl.len(), n=pl.len(), size=pl.col("window_steps").first())
        .filter(pl.col("n") == pl.col("size"))
        .sort("run_id", "window")
        .group_by("run_id", maintain_order=True)
        .agg(pl.col("mean"))
    )
    curves = first.join(windows, on="run_id", how="left").collect()
    return {run_id: _Curve(f, list(means or [])) for run_id, f, means in curves.iter_rows()}


def loss_windows(summary: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """Every run's trial-0 loss as the mean per timing window (run_id, step at the window's start, value): what
    the leaderboards' loss charts draw, computed once for all boards."""
    return (
        rows.lazy()
        .filter(pl.col("metric") == "loss", pl.col("trial") == 0)
        .join(summary.lazy().select("run_id", "window_steps"), on="run_id")
        .with_columns(step=(pl.col("step") // pl.col("window_steps")) * pl.col("window_steps"))
        .group_by("run_id", "step")
        .agg(pl.col("value").mean())
        .sort("run_id", "step")
        .collect()
    )


def loss_parity(runs: pl.DataFrame, rows: pl.DataFrame, curves: dict[str, _Curve] | None = None) -> pl.DataFrame:
    """Each measured run's loss against its baseline: the run of the workload's first variant with the same
    accelerator, device count and micro-batch that has the most steady loss windows, the latest of those (null
    where there is none). A baseline stopped by its time budget still counts: the stock fp32 run rarely finishes
    2000 steps, and the comparison covers the windows both runs have. Over the whole run, each run is also held
    against the latest full-length run of the first stock variant the suite lists on the same key
    (`whole_run_baseline`: bf16 DDP on the seed's workloads), by the mean window gap (`metrics.loss_parity_whole`).

    The same work comes first: a baseline has the workload's seed (as its suite file says it now) and, where one
    has hashes, is such a run; a run with another seed, other recipes, or hashes that differ from its baseline's
    fails parity with that reason, whatever its loss says (`_same_work`). `same_work` says how it was
    established. `curves`: the runs' `_loss_curves`, when already worked out."""
    curves = _loss_curves(runs, rows) if curves is None else curves
    windows = pl.DataFrame(
        [(r, len(c.windows)) for r, c in curves.items()],
        schema={"run_id": pl.String, "loss_windows": pl.Int64},
        orient="row",
    )
    seeds = _workload_seeds(runs)
    runs = runs.with_columns(
        hashed=pl.col("data_sha256").is_not_null() & pl.col("weights_sha256").is_not_null(),
        workload_seed_ok=pl.col("run_id").replace_strict(seeds, default=True, return_dtype=pl.Boolean),
    )
    with_windows = runs.join(windows, on="run_id")
    paired = runs.join(_parity_baselines(with_windows), on=_PARITY_KEYS, how="left", nulls_equal=True).join(
        _whole_run_baselines(with_windows), on=_PARITY_KEYS, how="left", nulls_equal=True
    )
    held = functools.partial(
        _parity_row,
        curves=curves,
        work={r[0]: r[1:] for r in runs.select(*_WORK_COLUMNS).iter_rows()},
        precision=dict(runs.select("run_id", "compute_precision").iter_rows()),
        optimizer=dict(runs.select("run_id", "optimizer_settings").iter_rows()),
        seeds=seeds,
    )
    out = [held(*row) for row in paired.select("run_id", "baseline_run", "whole_baseline").iter_rows()]
    return pl.DataFrame(out, schema=_PARITY_SCHEMA, orient="row")


_PARITY_KEYS = ["suite", "workload", "accelerator", "accelerator_count", "micro_batch"]
"""A run and its parity baselines share these."""

_PARITY_SCHEMA = {
    "run_id": pl.String,
    "parity_baseline": pl.String,
    "loss_first_gap": pl.Float64,
    "loss_max_rel_gap": pl.Float64,
    "loss_parity_tol": pl.Float64,
    "whole_run_baseline": pl.String,
    "loss_mean_rel_gap": pl.Float64,
    "loss_mean_rel_tol": pl.Float64,
    "loss_parity_ok": pl.Boolean,
    "parity_problem": pl.String,
    "same_work": pl.String,
}
"""`loss_parity`'s frame, one row per run."""


def _parity_baselines(runs: pl.DataFrame) -> pl.DataFrame:
    """`baseline_run` per key: the workload's first variant's run with the most steady loss windows (the latest of
    those), one with hashes first (the proof needs both)."""
    return (
        runs.filter(
            (pl.col("variant") == pl.col("baseline_variant"))
            & pl.col("retracted_by").is_null()
            & pl.col("status").is_in(["ok", "timeout"])
            & (pl.col("origin") == "measured")
            & (pl.col("loss_windows") > 0)
            & pl.col("workload_seed_ok")
        )
        # a baseline with hashes first (the proof needs both); runs that started at once, by id: a file added
        # elsewhere never changes which of them is a run's baseline (nor so every page that names it)
        .sort("hashed", "loss_windows", "started_at", "run_id")
        .group_by(_PARITY_KEYS)
        .agg(baseline_run=pl.col("run_id").last())
    )


def _whole_run_baselines(runs: pl.DataFrame) -> pl.DataFrame:
    """`whole_baseline` per key: the latest full-length run of the first stock variant the suite lists that has one
    on the key."""
    return (
        runs.filter(
            pl.col("full_length")
            & (pl.col("tier") == "stock")
            & pl.col("variant_order").is_not_null()
            & pl.col("retracted_by").is_null()
            & (pl.col("status") == "ok")
            & (pl.col("origin") == "measured")
            & (pl.col("loss_windows") > 0)
            & pl.col("workload_seed_ok")
        )
        .sort("variant_order", "started_at", "run_id", descending=[True, False, False])  # ties by id, as above
        .group_by(_PARITY_KEYS)
        .agg(whole_baseline=pl.col("run_id").last())
    )


def _parity_row(
    run_id: str,
    baseline: str | None,
    whole_run: str | None,
    *,
    curves: dict[str, _Curve],
    work: dict[str, tuple[Any, ...]],
    precision: dict[str, Any],
    optimizer: dict[str, Any],
    seeds: dict[str, bool],
) -> tuple[object, ...]:
    """One run's row of `_PARITY_SCHEMA`: its loss against its baseline's, the same work, and its whole run against
    the full-length stock run's."""
    if baseline is None or run_id not in curves:
        return (run_id, baseline, None, None, None, None, None, None, None, None, None)
    run, base = curves[run_id], curves[baseline]
    tol = metrics.loss_parity_tolerance(precision[run_id], precision[baseline])
    first_gap, rel, ok = metrics.loss_parity(run.first, base.first, run.windows, base.windows, tol)
    problem, same_work = _same_work(work[run_id], work[baseline], run_id == baseline, seeds.get(run_id, True))
    if problem is None and optimizer[run_id] and optimizer[baseline] and optimizer[run_id] != optimizer[baseline]:
        problem = (
            f"other optimizer settings than the baseline's ({' '.join(columns.OPTIMIZER_KEYS)}: "
            f"{optimizer[run_id]} against {optimizer[baseline]})"
        )
    # over the whole run, against a full-length stock run (the fp32 baseline above stops on its time budget)
    mean_gap = None
    if whole_run is not None and whole_run != run_id and curves[whole_run].windows:
        mean_gap, whole_ok = metrics.loss_parity_whole(run.windows, curves[whole_run].windows)
        if problem is None and not whole_ok:
            problem = (
                f"loss drifts from the full-length stock run's over the whole run (mean window gap "
                f"{mean_gap:.2%}, tolerance {metrics.LOSS_PARITY_MEAN_REL_TOL:.0%})"
            )
    whole_tol = None if mean_gap is None else metrics.LOSS_PARITY_MEAN_REL_TOL
    return (run_id, baseline, first_gap, rel, tol, whole_run, mean_gap, whole_tol, ok and problem is None, problem,
            same_work)  # fmt: skip


_WORK_COLUMNS = ("run_id", "work_recipe", "state_sha256", "weights_sha256", "data_sha256", "hashes_from",
                 "steps_requested")  # fmt: skip
"""What a run says of its work: its recipe (seed, data and initial-weights recipes) and its hashes."""


def _workload_seeds(runs: pl.DataFrame) -> dict[str, bool]:
    """Per run, whether its seed is its workload's as the suite file defines it now (True where no suite file defines
    the workload: then there is nothing to hold it to)."""
    out = {}
    for run_id, suite, workload, recipe in runs.select("run_id", "suite", "workload", "work_recipe").iter_rows():
        defined = schema.suite_workloads(suite).get(workload)
        if defined is not None and recipe is not None:
            out[run_id] = json.loads(recipe).get("seed") == defined["seed"]
    return out


def _same_work(mine: tuple, theirs: tuple, is_baseline: bool, seed_ok: bool) -> tuple[str | None, str]:
    """(why the run did not do its baseline's work or None, how its same work was established). A run and its
    baseline must state the same seed and recipes, the workload's seed, and equal hashes of each kind both carry
    (the data hash covers the steps a run asked for: it is compared between runs asking for as many)."""
    recipe, state, weights, data, source, steps = mine
    b_recipe, b_state, b_weights, b_data, b_source, b_steps = theirs
    if not seed_ok:
        return f"another seed than its workload's ({recipe})", "not the same work"
    if recipe != b_recipe:
        return f"other work than the baseline's (seed and recipes {recipe} against {b_recipe})", "not the same work"
    pairs = [("initial weights", state, b_state), ("initial weights", weights, b_weights)]
    pairs += [("data", data, b_data)] if steps == b_steps else []
    for what, a, b in pairs:
        if a and b and a != b:
            return f"other {what} than the baseline's (sha256 {a[:12]} against {b[:12]})", "not the same work"
    if is_baseline:
        return None, "the baseline itself"
    compared = [what for what, a, b in pairs if a and b]
    if "data" in compared and "initial weights" in compared:
        if source == b_source == "fed":
            return None, "proven: the hashes of the weights and tokens it fed its model equal the baseline's"
        return None, (
            "by hashes of its spec: its initial-weights file and a token stream recomputed from its seed hash as the "
            "baseline's (records of 2026-12-01 hashed those, not what the process fed its model)"
        )
    return None, (
        "by record: the same seed and recipes as the baseline and a loss curve within tolerance; no hashes of "
        + ("its tokens " if "initial weights" in compared else "its weights and tokens ")
        + "to compare (records before 2026-12-01 carry none)"
    )


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
        .join(loss_parity(runs, rows, _curves(own)), on="run_id", how="left")
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
        .filter(pl.col("origin") == "measured")
        .median()
        .over("accelerator", "matmul_precision", "engine", "accelerator_count"),
        model_reference_matmul_flops=pl.col("reference_matmul_flops")
        .filter(pl.col("origin") == "measured")
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
    window steps, so with a cache in use (generator/store/runcache.py) only new files' are worked out (2.6 s of a warm
    build at 50,000 runs went to working out every run's again)."""

    def compute(part: pl.DataFrame) -> pl.DataFrame:
        if part.height > OWN_CHUNK:  # a cold build's every run: a chunk at a time, each from its own rows alone
            chunks = [compute(part.slice(i, OWN_CHUNK)) for i in range(0, part.height, OWN_CHUNK)]
            return pl.concat(chunks, how="vertical_relaxed")
        wanted = rows if part.height == runs.height else rows.filter(pl.col("run_id").is_in(part["run_id"].implode()))
        curves = _loss_curves(part, wanted)
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


def _curves(own: pl.DataFrame) -> dict[str, _Curve]:
    """The loss curves `_own_figures` holds, as `_loss_curves` gives them (runs without loss rows left out)."""
    return {
        run_id: _Curve(first, list(windows or []))
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
        pl.col("steps_per_s").is_not_null() & pl.col("flops_per_token").is_null() & (pl.col("origin") == "measured")
    ).to_series()
    # nor one that recorded no loss: the same-start, same-data check (loss parity) has nothing to compare
    no_loss = summary.select(
        pl.col("steps_per_s_lo").is_not_null() & pl.col("first_loss").is_null() & (pl.col("origin") == "measured")
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


def candidates(summary: pl.DataFrame) -> pl.DataFrame:
    """The measured, unretracted runs on the suite's device count with a steady-state figure, each with its
    `unranked` reason (null for the runs that rank: `configurations.unranked_reason`)."""
    return summary.filter(
        (pl.col("origin") == "measured")
        & pl.col("retracted_by").is_null()
        & pl.col("suite_scale")
        & pl.col("steps_per_s_lo").is_not_null()
    ).with_columns(unranked=configurations.unranked_reason())


def _speed_baselines(summary: pl.DataFrame, ranked: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Per board key, the variant speedups are over and its speed: the first of the workload's variants, in the
    suite file's order (its baseline first; for a workload the file does not define, as its newest run lists
    them), that has ranked runs on that key; its speed is the median of those runs' medians. A baseline that
    never ranks (fp32 stopped by its budget) is passed over."""
    order = {
        (suite, workload): listed
        for suite, workload, listed in (
            summary.filter(pl.col("origin") == "measured")
            .sort("started_at")
            .group_by("suite", "workload")
            .agg(pl.col("listed_variants").last())
            .iter_rows()
        )
    }
    speeds = ranked.group_by([*keys, "variant"]).agg(rate=pl.col("steps_per_s").median())
    out = []
    for key, group in speeds.group_by(keys):
        rates = dict(group.select("variant", "rate").iter_rows())
        variant = next((v for v in order.get(key[:2], []) if v in rates), None)
        out.append((*key, variant, rates.get(variant)))
    columns: dict[str, pl.DataType | type[pl.DataType]] = {
        **ranked.select(keys).schema,
        "speed_baseline": pl.String,
        "baseline_steps_per_s": pl.Float64,
    }
    return pl.DataFrame(out, schema=columns, orient="row")


def leaderboards(
    summary: pl.DataFrame, spreads: configurations.Spreads | None = None, found: pl.DataFrame | None = None
) -> dict[tuple[str, str], pl.DataFrame]:
    """Per (suite, workload) with any record: one row per configuration of its ranked runs (`configurations`), ranked
    with ties, with the speedup over the median of the baseline variant's ranked runs on the same hardware, device
    count and micro-batch (`speed_baseline`, `_speed_baselines`). Other device
    counts are in `scaling`; runs that do not rank are in `candidates` with their reason. A workload with nothing
    ranked gets an empty board of the same columns. `spreads`: the pooled spreads of steps/s
    (`configurations.pooled_spreads`) and `found` (`candidates`), computed here when not given."""
    keys = ["suite", "workload", "accelerator", "accelerator_count", "micro_batch"]
    found = candidates(summary) if found is None else found
    ranked = found.filter(pl.col("unranked").is_null())
    ranked = ranked.join(_speed_baselines(summary, ranked, keys), on=keys, how="left", nulls_equal=True)
    ranked = ranked.with_columns(speedup=pl.col("steps_per_s") / pl.col("baseline_steps_per_s"))
    ranked_ids = ranked["run_id"].implode()
    stopped = configurations.measured_runs(found).filter(
        (pl.col("status") == "timeout") & ~pl.col("run_id").is_in(ranked_ids)
    )
    spreads = configurations.pooled_spreads(summary) if spreads is None else spreads
    rows = configurations.rows(ranked, spreads, stopped)
    boards: dict[tuple[str, str], pl.DataFrame] = {}
    for suite, workload in summary.select("suite", "workload").unique().sort("suite", "workload").iter_rows():
        board = rows.filter((pl.col("suite") == suite) & (pl.col("workload") == workload))
        boards[(suite, workload)] = configurations.rank(board)
    return boards


def _comparable(summary: pl.DataFrame) -> pl.DataFrame:
    """Measured, unretracted full-length runs that finished (a run stopped by its time budget has not run the whole
    workload), with a steady-state figure, whose loss agrees with their baseline."""
    return summary.filter(
        (pl.col("origin") == "measured")
        & pl.col("retracted_by").is_null()
        & (pl.col("status") == "ok")
        & pl.col("full_length")
        & pl.col("steps_per_s_lo").is_not_null()
        & pl.col("loss_parity_ok").fill_null(True)
        & pl.col("unverified").is_null()
    )


CONFIG_KEYS = ["suite", "workload", "variant", "settings_hash", "accelerator", "accelerator_count", "micro_batch"]
"""One configuration: a variant name can cover runs whose settings differ (made at different harness commits), and
those are not repeats of each other (`settings_hash`, generator/load/columns.py)."""


def repeats(summary: pl.DataFrame) -> pl.DataFrame:
    """A/A: every configuration (variant with its overrides, hardware, device count, micro-batch) with two or more
    full-length runs under the same host conditions, their medians and their relative spread
    (`metrics.relative_spread`). A run beside other jobs on a shared host and a run alone are not repeats of each
    other: sharing is a condition, not noise, so each condition has its own spread."""
    keys = [*CONFIG_KEYS, "shared_host"]
    groups = (
        _comparable(summary)
        .filter(~configurations.flagged(columns=summary.columns))  # no steady state, or a busy host: nobody's repeat
        .sort("started_at")
        .group_by(keys, maintain_order=True)
        .agg(
            pl.col("run_id"),
            pl.col("steps_per_s").alias("medians"),
        )
        .filter(pl.col("run_id").list.len() >= 2)
    )
    spreads = [metrics.relative_spread(m) for m in groups["medians"]]
    return groups.with_columns(
        runs=pl.col("run_id").list.len(),
        lowest=pl.col("medians").list.min(),
        highest=pl.col("medians").list.max(),
        spread=pl.Series(spreads, dtype=pl.Float64),
    ).sort(keys)


def scaling(summary: pl.DataFrame) -> pl.DataFrame:
    """Per variant, hardware and micro-batch, each device count's tokens/s per device (the median of its
    full-length runs' medians) and its efficiency against one device (`metrics.scaling_efficiency`; null
    without a one-device run). Only variants run on two or more device counts appear."""
    keys = ["suite", "workload", "variant", "accelerator", "micro_batch"]
    points = (
        _comparable(summary)
        .group_by(*keys, "accelerator_count")
        .agg(
            pl.col("tokens_per_s_per_device").median(),
            pl.col("steps_per_s").median(),
            runs=pl.len(),
            shared_host=pl.col("shared_host").any(),
            tier=pl.col("tier").first(),
        )
    )
    one = points.filter(pl.col("accelerator_count") == 1).select(*keys, one_device=pl.col("tokens_per_s_per_device"))
    counts = points.group_by(keys).agg(n_counts=pl.col("accelerator_count").n_unique())
    out = (
        points.join(counts, on=keys)
        .filter(pl.col("n_counts") >= 2)
        .join(one, on=keys, how="left")
        .drop("n_counts")
        .sort(*keys, "accelerator_count")
    )
    eff = [
        None if base is None else metrics.scaling_efficiency(rate, base)
        for rate, base in out.select("tokens_per_s_per_device", "one_device").iter_rows()
    ]
    return out.with_columns(efficiency=pl.Series(eff, dtype=pl.Float64))


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
