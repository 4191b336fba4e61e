"""Serving tests (vLLM: offline throughput and served latency) from loaded records to the numbers their pages show:
per-run statistics, the cross-check against `vllm bench`, tensor-parallel scaling, and batch-1 decode beside
llama.cpp's generation test. `serving` is the entry `derive.results` calls: every frame, derived once (`Serving`).

Every formula comes from `runners.metrics` (`serving_metrics`, `median_ci`, `mbu`); this module only groups, joins
and orders. Served points are recomputed from their raw per-request samples, so the runner's records and vLLM's
tool's records go through the very same code.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

import generator.derive.configurations as configurations
import generator.derive.counting as counting
import generator.derive.energy as energy
import generator.derive.ladder as ladder
import generator.derive.summaries as summaries
import generator.load.columns as columns
import generator.store.runcache as runcache
from runners import engines, metrics

if TYPE_CHECKING:
    import pyarrow as pa

    from generator import load

TEST_KINDS = ("offline", "serve")
"""The `kind` of a serving test: offline throughput and a served point."""

Reader = Callable[[Sequence[str]], pl.DataFrame]
"""Every row of the given runs' files (`load.full_rows` of the loaded records)."""


def bench_tools() -> tuple[str, ...]:
    """The own tools of the serving engines (the registry's, `engines.tools_of`): a runner's served figures are
    cross-checked against its engine's tool's record of the same test."""
    return engines.tools_of("serving")


"""vLLM's bench tool's record of a test has the runner's run id with this inserted before the random suffix."""


def is_serving(summary: pl.DataFrame) -> pl.Series:
    return summary["kind"].is_in(TEST_KINDS).fill_null(False)


SERVED_FIGURES = runcache.Table("served")
"""A served point's figures decided by its file alone (its requests and its SLOs): cached by the file's sha256."""


FIGURES_BATCH = 16
"""Served points whose samples are read at once when their figures are not cached: memory for a batch's requests."""


def _served_figures(runs: pl.DataFrame, rows: pl.DataFrame, read: Reader | None = None) -> list[dict]:
    served = runs.filter(pl.col("kind") == "serve")
    hashes = served["sha256"].to_list() if "sha256" in served.columns else [None] * served.height
    keys = [
        None if sha is None else _key(sha, ttft, tpot)
        for sha, ttft, tpot in zip(hashes, served["slo_ttft_ms"], served["slo_tpot_ms"], strict=True)
    ]
    cached = SERVED_FIGURES.read()
    todo = [r for r, k in zip(served["run_id"], keys, strict=True) if k is None or k not in cached]
    slos = {r: (ttft, tpot) for r, ttft, tpot in served.select("run_id", "slo_ttft_ms", "slo_tpot_ms").iter_rows()}
    computed: dict[str, dict[str, float] | None] = {}
    for i in range(0, len(todo), FIGURES_BATCH):  # a batch of files' samples at a time, never all of them
        batch = todo[i : i + FIGURES_BATCH]
        frame = read(batch) if read is not None else rows.filter(pl.col("run_id").is_in(pl.Series(batch).implode()))
        samples = frame.filter(pl.col("metric").is_in(metrics.SERVED_SAMPLES))
        by_run = {key[0]: g for key, g in samples.partition_by("run_id", as_dict=True).items()}
        computed |= {run_id: _figures(by_run.get(run_id), *slos[run_id]) for run_id in batch}
    out, entries = [], {}
    for key, run_id in zip(keys, served["run_id"], strict=True):
        figures = cached[key] if key is not None and key in cached else computed[run_id]
        if key is not None:
            entries[key] = figures
        if figures is not None:
            out.append({"run_id": run_id, **figures})
    if not entries.keys() <= cached.keys():
        SERVED_FIGURES.write(cached | entries)
    return out


def _key(sha256: str, slo_ttft_ms: float | None, slo_tpot_ms: float | None) -> str:
    """A served point's entry in `SERVED_FIGURES`: its file's sha256 and the SLOs its goodput counts against."""
    return json.dumps([sha256, slo_ttft_ms, slo_tpot_ms])


def _figures(group: pl.DataFrame | None, slo_ttft_ms: float, slo_tpot_ms: float) -> dict[str, float] | None:
    """One served point's figures from its sample rows (None without samples or duration, or where a gap has no step:
    a hostile file's order is never guessed, and its point stays without figures, unranked)."""
    if group is None:
        return None
    if group.filter(pl.col("metric") == "itl_s")["step"].null_count():
        return None  # a gap without its step has no place among its request's gaps: no figures, never a guessed order
    codes = group["metric"].replace_strict(
        metrics.SERVED_SAMPLES, range(len(metrics.SERVED_SAMPLES)), default=-1, return_dtype=pl.Int8
    )
    steps = group["step"].fill_null(0).to_numpy()  # a step counts for a gap alone, and every gap has one
    trials, values = (group[c].to_numpy() for c in ("trial", "value"))
    return metrics.served_figures(trials, steps, codes.to_numpy(), values, slo_ttft_ms, slo_tpot_ms)


def may_be_served(config: str) -> bool:
    """False for a config whose text cannot name the kind "serve" (most files: `file_figures` then skips the JSON
    and its frames); True sends it to `file_figures`, which decides. A config that spells the word
    with JSON escapes is False here: its figures are then worked out by `per_run_figures`, as for any file left out."""
    return "serve" in config


def file_figures(sha256: str, config: str, rows: pl.DataFrame) -> tuple[str, dict[str, float] | None] | None:
    """A served point's `SERVED_FIGURES` entry (its key and figures) from its file alone: what the loader works out
    while a file's every row is in hand (generator/load/), so that a cold build does not read each served point's
    file a second time; None for a file of another kind, or one whose SLOs are not numbers (`per_run_figures` then
    decides). The kind and SLOs are read as the flattened columns read them (`columns.column`)."""
    head = pl.DataFrame({"config": [config]}, schema={"config": pl.String}).select(
        columns.column("kind"), columns.column("slo_ttft_ms"), columns.column("slo_tpot_ms")
    )
    kind, ttft, tpot = head.row(0)
    if kind != "serve" or ttft is None or tpot is None:
        return None
    samples = rows.filter(pl.col("metric").is_in(metrics.SERVED_SAMPLES))
    return _key(sha256, ttft, tpot), _figures(samples if samples.height else None, ttft, tpot)


def file_entry(sha256: str, head: Mapping[str, Any], rows: pa.Table) -> tuple[str, dict[str, float] | None] | None:
    """`file_figures` of a file the loader has just read and checked (`load.PerFile`: its sha256, row 0 and every
    row), a file whose config cannot name a served point skipped before its rows become a frame (`may_be_served`)."""
    config = head["config"]
    if not may_be_served(config):
        return None
    frame = pl.from_arrow(rows)
    assert isinstance(frame, pl.DataFrame)  # a table gives a frame (it is typed to give a Series too, for arrays)
    return file_figures(sha256, config, frame)


def as_read() -> load.PerFile | None:
    """What a command hands `load.load` as its `per_file` (and then `remember`s what the load made): `file_entry`,
    where a cache is in use to keep its entries; None without one, where the derivation works each point out once
    anyway."""
    return file_entry if runcache.active() is not None else None


def remember(entries: Mapping[str, dict[str, float] | None]) -> None:
    """Add served points' figures (`file_figures`) to `SERVED_FIGURES` (nothing without a cache folder in use)."""
    if not entries or runcache.active() is None:
        return
    cached = SERVED_FIGURES.read()
    SERVED_FIGURES.ask(entries)  # the loaded files' entries: this build's
    if not entries.keys() <= cached.keys():
        SERVED_FIGURES.write(cached | dict(entries))


@dataclass(frozen=True, slots=True, kw_only=True)
class Serving:
    """Every frame of the serving tests, derived once (`serving`): what `derive.results` takes from this module."""

    per_run: pl.DataFrame
    """One row per serving run: its figures, its engine's tool's record beside it and its energy (`per_run_figures`)."""
    tp_scaling: pl.DataFrame
    """Tensor-parallel scaling (`tp_scaling`)."""
    latency: pl.DataFrame
    """The served points' latency against throughput (`latency_points`)."""
    ranked: pl.DataFrame
    """The runs that rank, each with its figure in `value`, `lo`, `hi` (`ranked_runs`): what the A/A repeats and the
    pooled spreads are made of."""


def serving(
    summary: pl.DataFrame, rows: pl.DataFrame, copy_bandwidth: Mapping[str, float], read: Reader | None = None
) -> Serving:
    """The serving tests' frames from the run summary, the loaded rows and the copy bandwidth calibrated on each
    hardware model (`copy_bound.copy_bandwidths`), each once: `per_run_figures`, and from its rows tensor-parallel
    scaling, the served points' latency and the runs that rank."""
    per_run = per_run_figures(summary, rows, copy_bandwidth, read)
    return Serving(
        per_run=per_run, tp_scaling=tp_scaling(per_run), latency=latency_points(per_run), ranked=ranked_runs(per_run)
    )


def per_run_figures(
    summary: pl.DataFrame, rows: pl.DataFrame, copy_bandwidth: Mapping[str, float], read: Reader | None = None
) -> pl.DataFrame:
    """One row per serving run: its test (kind, concurrency or request rate, lengths), tensor-parallel size, and
    figures. Offline: output tokens/s over repetitions (median with a 95% interval, mean ± sd), total tokens/s and
    requests/s (means). Served: `metrics.serving_metrics` of its requests (throughputs, goodput, mean/median/p99 of
    TTFT, TPOT, ITL and end-to-end latency). At one request in flight, the decode rate is 1000 / median TPOT and its
    MBU is the bytes a decoded token reads × that rate ÷ the datasheet bandwidth, and beside it `copy_fraction` the same
    over the copy bandwidth calibrated on its hardware model (`copy_bound`; `metrics.copy_bound_fraction`, not an MBU).
    vLLM's bench tool's record of the
    same test is paired with the runner's (`bench_*` columns; ratios are runner / tool), and each served figure's
    agreement tolerance on the run's hardware is beside it (`tool_tolerances`: `tol_out`, `tol_ttft`, `tol_tpot`).
    `copy_bandwidth`: per hardware model, its calibrated copy bandwidth (`copy_bound.copy_bandwidths`). `read`: every
    row of the given runs (`load.full_rows`) where `rows` leaves their per-request samples out."""
    runs = summary.filter(is_serving(summary))
    tools = bench_tools()
    offline, offline_interval = _offline_figures(runs, rows)
    served_schema = {"run_id": pl.String, **{k: pl.Float64 for k in _SERVED_COLUMNS}}
    served = pl.DataFrame(
        [{k: f.get(k) for k in served_schema} for f in _served_figures(runs, rows, read)], schema=served_schema
    )
    bandwidth = [(metrics.datasheet_memory(acc) or (None, None))[1] for acc in runs["accelerator"].to_list()]
    figures = (
        runs.with_columns(
            datasheet_bandwidth=pl.Series(bandwidth, dtype=pl.Float64),
            # the copy fraction's: its hardware model's calibrated one (null where none was calibrated)
            copy_bandwidth=pl.col("accelerator").replace_strict(copy_bandwidth, default=None, return_dtype=pl.Float64),
        )
        .join(offline, on="run_id", how="left")
        .join(offline_interval, on="run_id", how="left")
        .join(served, on="run_id", how="left")
    )
    decoded = _with_decode_figures(figures, tools)
    paired = _with_served_energy(_paired_with_tool(decoded, tools))
    # a served figure must agree with the tool within what the tool's own repeats moved on that hardware
    return paired.join(tool_tolerances(paired), on=["accelerator", "accelerator_count"], how="left")


def _offline_figures(runs: pl.DataFrame, rows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per offline run, the means over its repetitions (output tokens/s with its sd, total tokens/s, requests/s), and
    its output tokens/s's median with a 95% interval (`summaries.repetition_intervals`, as `out_*`)."""
    offline = (
        rows.filter(
            pl.col("run_id").is_in(runs.filter(pl.col("kind") == "offline")["run_id"].implode()),
            pl.col("phase") == "steady",
            pl.col("metric").is_in(["output_tokens_per_s", "total_tokens_per_s", "request_throughput"]),
        )
        .pivot(on="metric", index=["run_id", "trial"], values="value", aggregate_function="first")
        .sort("run_id", "trial")
    )
    for name in ("output_tokens_per_s", "total_tokens_per_s", "request_throughput"):
        if name not in offline.columns:
            offline = offline.with_columns(pl.lit(None, dtype=pl.Float64).alias(name))
    per_run = offline.group_by("run_id", maintain_order=True).agg(
        pl.col("output_tokens_per_s").alias("rates"),
        out_mean=pl.col("output_tokens_per_s").mean(),
        out_sd=pl.col("output_tokens_per_s").std(),
        total_mean=pl.col("total_tokens_per_s").mean(),
        requests_mean=pl.col("request_throughput").mean(),
    )
    stat_frame = summaries.repetition_intervals(per_run.select("run_id", "rates"), "out")
    return per_run.drop("rates"), stat_frame


def _with_decode_figures(figures: pl.DataFrame, tools: Sequence[str]) -> pl.DataFrame:
    """`figures` with the test's output tokens/s (`out_rate`), the decode rate at one request in flight, its MBU and
    copy fraction (against `datasheet_bandwidth` and `copy_bandwidth`, each one GPU's), and the runner's run a tool's
    record checks (`paired_run`)."""
    return figures.with_columns(
        # the test's output tokens/s, whichever kind: offline mean over repetitions, or the served point's
        out_rate=pl.coalesce("out_mean", "output_tokens_per_s"),
        decode_rate=pl.when(pl.col("concurrency") == 1).then(metrics.decode_tokens_per_s(pl.col("median_tpot_ms"))),
        # the tool's record names the runner's it checks; before the field, its run id had the tool's tag inserted
        paired_run=pl.when(pl.col("origin") == "imported").then(
            pl.coalesce(
                "pairs_with",
                *(
                    pl.when(pl.col("engine") == tool).then(pl.col("run_id").str.replace(f"-{tool}-", "-", literal=True))
                    for tool in tools
                ),
            )
        ),
    ).pipe(with_bandwidth_use)


def with_bandwidth_use(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with the MBU and copy-bound fraction of its decode rate at one request in flight (`decode_rate`;
    `ladder.with_bandwidth_use`), against every GPU's bandwidth together: tensor parallelism splits the weights. A
    run's of its own rate, a board's row's of the row's (the median of its runs')."""
    return ladder.with_bandwidth_use(
        frame, pl.col("decode_rate"), decodes=pl.col("decode_rate").is_not_null(), gpus=pl.col("accelerator_count")
    )


def _paired_with_tool(figures: pl.DataFrame, tools: Sequence[str]) -> pl.DataFrame:
    """Each runner's run with its engine's bench tool's record of the same test (`bench_*`) and the runner / tool
    ratios of output tokens/s, median TTFT and median TPOT."""
    paired = ladder.with_tool_record(
        figures,
        tools,
        bench_rate=pl.col("out_rate"),
        bench_ttft=pl.col("median_ttft_ms"),
        bench_tpot=pl.col("median_tpot_ms"),
    )
    return paired.with_columns(
        bench_ratio=pl.col("out_rate") / pl.col("bench_rate"),
        bench_ttft_ratio=pl.col("median_ttft_ms") / pl.col("bench_ttft"),
        bench_tpot_ratio=pl.col("median_tpot_ms") / pl.col("bench_tpot"),
    )


def _with_served_energy(paired: pl.DataFrame) -> pl.DataFrame:
    """A served point's energy figures, from its output tokens over its duration (an offline run keeps its own)."""
    # a served point's energy per token: its requests' output tokens are known only from its figures
    served_energy = energy.figures(
        pl.col("output_tokens_per_s") * pl.col("duration_s"),
        "duration_s",
        pl.coalesce("energy_counter_update_s", "energy_sample_interval_s"),
    )
    return paired.with_columns(
        pl.when(pl.col("kind") == "serve").then(expr).otherwise(pl.col(name)).alias(name)
        for name, expr in served_energy.items()
    )


def board(tests: pl.DataFrame, spreads: ladder.Spreads | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One serving test's ranked configurations and unranked runs (`ladder.board`) by output tokens/s: offline,
    the median over repetitions with its 95% interval, checked against `vllm bench throughput`; served, the point's
    figure over all its requests, checked against `vllm bench serve` on throughput, median TTFT and median TPOT. At one
    request in flight, a row's MBU and copy-bound fraction are of its own decode rate (`with_bandwidth_use`)."""
    ranked, unranked = ladder.board(
        tests, *FIGURE, CHECKS["serve" if tests["kind"].eq("serve").any() else "offline"], spreads
    )
    # a row's decode rate is the median of its runs' (as its figure is), and its MBU that rate's
    return with_bandwidth_use(ranked), with_bandwidth_use(unranked)


def ranked_runs(tests: pl.DataFrame) -> pl.DataFrame:
    """The serving runs that rank (`ladder.verified` with no `unranked` reason), of every kind (offline, served),
    each with its figure in `value`, `lo`, `hi`: what the A/A repeats and the pooled spreads are made of."""
    ranked = [
        ladder.verified(tests.filter(pl.col("kind") == kind), *FIGURE, checks).filter(pl.col("unranked").is_null())
        for kind, checks in CHECKS.items()
    ]
    return pl.concat(ranked, how="diagonal_relaxed")


def pooled_spreads(tests: pl.DataFrame) -> dict[tuple[str, str, str, int], metrics.PooledSpread]:
    """The between-run spreads of serving tests (`ladder.pooled_spreads` over the runs that rank), by kind
    (offline, served), hardware and device count: a served point's row, one measurement, gets its interval from
    them."""
    return ladder.pooled_spreads(ranked_runs(tests))


FIGURE = (pl.coalesce("out_med", "output_tokens_per_s"), pl.col("out_lo"), pl.col("out_hi"))
"""What a serving test's board ranks by: output tokens/s (offline: the median over repetitions with its 95% interval;
served: the point's figure over all its requests, no interval of its own: its row gets the between-run spread of
served points pooled on its hardware, where one was measured, and otherwise none)."""
UNIT = "output tokens/s"
"""What `FIGURE` is in."""
CHECKS = {
    "offline": ((UNIT, "bench_ratio"),),
    "serve": (
        (UNIT, "bench_ratio", "tol_out"),
        ("median TTFT", "bench_ttft_ratio", "tol_ttft"),
        ("median TPOT", "bench_tpot_ratio", "tol_tpot"),
    ),
}
"""Per kind, what must agree with `vllm bench`: (what, column of runner / tool ratios[, column of its tolerance:
`tool_tolerances`])."""
TOLERANCES = {"tol_out": "out_rate", "tol_ttft": "median_ttft_ms", "tol_tpot": "median_tpot_ms"}
"""A served figure's tolerance column, by the figure whose tool repeats set it."""


def tool_tolerances(tests: pl.DataFrame) -> pl.DataFrame:
    """Per hardware model and device count, each served figure's agreement tolerance (`metrics.agreement_tolerance`)
    from the serving tool's own repeats there: its records of one served point (one configuration), counted only where
    `metrics.TOOL_REPEATS_MIN` or more of them pass `tool_repeat` (else the floor, `metrics.OWN_TOOL_REL_TOL`), and
    `tool_repeats`, the most such records of one point (what the board's rule sentence says the tolerance rests on)."""
    keys = ["accelerator", "accelerator_count"]
    tool = tests.filter(tool_repeat(tests.columns))
    groups = tool.group_by(*keys, "suite", "workload", "settings_hash").agg(
        *(pl.col(c).drop_nulls() for c in TOLERANCES.values()), repeats=pl.len()
    )
    out = []
    for (acc, count), group in groups.group_by(keys, maintain_order=True):
        tolerances = {name: metrics.agreement_tolerance(group[figure].to_list()) for name, figure in TOLERANCES.items()}
        repeats = group["repeats"].max()
        out.append({"accelerator": acc, "accelerator_count": count, **tolerances, "tool_repeats": repeats})
    schema: dict[str, pl.DataType | type[pl.DataType]] = {
        "accelerator": pl.String,
        "accelerator_count": tests.schema["accelerator_count"],
    }
    return pl.DataFrame(out, schema=schema | dict.fromkeys(TOLERANCES, pl.Float64) | {"tool_repeats": pl.UInt32})


def tool_repeat(columns: Sequence[str]) -> pl.Expr:
    """Whether a record is a repeat of the serving tool's that may set a tolerance: a served point of a serving
    engine's own tool that finished and that nothing the gate reads flags: not retracted, not `unverified`, not run on
    a host it shared with other work (`shared_host`), and neither its own interval wider than its figure nor recorded
    on a busy host (`configurations.flagged`). A record the gate would not trust beside a runner's cannot widen what
    every runner is held to. `columns`: the frame's (a synthetic frame may lack a fact; nothing is flagged by it)."""
    keep = pl.col("engine").is_in(list(bench_tools())) & (pl.col("kind") == "serve") & (pl.col("status") == "ok")
    if "retracted_by" in columns:
        keep &= pl.col("retracted_by").is_null()
    if "unverified" in columns:
        keep &= pl.col("unverified").is_null()
    if "shared_host" in columns:
        keep &= ~pl.col("shared_host").fill_null(False)
    if {"out_lo", "out_hi"} <= set(columns):
        keep &= ~configurations.flagged("out_rate", "out_lo", "out_hi", columns)
    return keep


def agreement_clause(rows: pl.DataFrame) -> str:
    """What a served board's runs were held to by the tool (`tool_tolerances`), per hardware and device count among
    `rows` (the board's ranked and unranked rows), as its rule sentence says it: the floor, or each figure's widened
    tolerance and the repeats it rests on. Without served rows, the floor on every figure both report."""
    floor = metrics.OWN_TOOL_REL_TOL
    default = f"±{_pct(floor)} on every figure both report"
    needed = {"accelerator", "accelerator_count", *TOLERANCES, "tool_repeats"}
    if rows.is_empty() or not needed <= set(rows.columns) or not rows["kind"].eq("serve").any():
        return default
    label = engines.tool_labels()
    tools = ", ".join(label.get(t, t) for t in bench_tools())
    applied = (
        rows.filter(pl.col("kind") == "serve")
        .select("accelerator", "accelerator_count", *TOLERANCES, "tool_repeats")
        .unique()
        .sort("accelerator_count", "accelerator")
    )
    groups: dict[tuple[float, ...], list[tuple[str, int | None]]] = {}
    for acc, count, out, ttft, tpot, repeats in applied.iter_rows():
        tols = tuple(floor if t is None else t for t in (out, ttft, tpot))
        groups.setdefault(tols, []).append((f"{count} × {acc}", repeats))
    parts = []
    for tols, where in groups.items():
        on = " and ".join(w for w, _ in where)
        if all(t == floor for t in tols):
            parts.append(
                f"±{_pct(floor)} on output tokens/s, median TTFT and median TPOT on {on} (the floor: {tools} repeated "
                f"no served point there {metrics.TOOL_REPEATS_MIN} or more times)"
            )
        else:
            most = max((r or 0) for _, r in where)
            parts.append(
                f"±{_pct(tols[0])} on output tokens/s, ±{_pct(tols[1])} on median TTFT and ±{_pct(tols[2])} on median "
                f"TPOT on {on} (the largest spread of {tools}'s own repeats of one served point there, {most} records "
                f"at most, never below the ±{_pct(floor)} floor)"
            )
    return " and within ".join(parts)


def _pct(x: float) -> str:
    """A tolerance as the rule sentences and unranked reasons print it: a percentage to 0.1, no trailing .0."""
    return f"{x * 100:.1f}".removesuffix(".0") + "%"


_SERVED_COLUMNS = (
    "completed_requests",
    "failed_requests",
    "duration_s",
    "request_throughput",
    "output_tokens_per_s",
    "total_tokens_per_s",
    "goodput_requests_per_s",
    *(f"{s}_{m}" for m in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms") for s in ("mean", "median", "p99")),
)


def tp_scaling(tests: pl.DataFrame) -> pl.DataFrame:
    """Each measured test's latest ok run per weights and tensor-parallel size, with its output tokens/s over that of
    the fewest GPUs measured on the same test, suite and weights (`base_gpus`: one where the model fits on one) as
    speedup, and the efficiency of that speedup (`metrics.strong_scaling_efficiency`). A curve is one weights format
    (`weights_label`): AWQ on one GPU is never the base of FP8 on two. Only runs that sent as many requests as the
    test's newest run are compared (a served point's request count has changed)."""
    ok = (
        tests.filter(counting.MEASURED & (pl.col("status") == "ok") & pl.col("retracted_by").is_null())
        .filter(pl.col("out_rate").is_not_null())
        .sort("started_at")
    )
    newest = ok.group_by("suite", "workload").agg(newest_requests=pl.col("requests").last())
    latest = (
        ok.join(newest, on=["suite", "workload"], how="left")
        .filter(pl.col("requests").eq_missing(pl.col("newest_requests")))
        .drop("newest_requests")
        .group_by("suite", "workload", "weights_label", "accelerator_count", maintain_order=True)
        .last()
    )
    base = (
        latest.sort("accelerator_count")
        .group_by("suite", "workload", "weights_label", maintain_order=True)
        .first()
        .select("suite", "workload", "weights_label", base_gpus="accelerator_count", base_rate="out_rate")
    )
    joined = latest.join(base, on=["suite", "workload", "weights_label"], how="left", nulls_equal=True).with_columns(
        speedup=pl.col("out_rate") / pl.col("base_rate")
    )
    eff = [
        metrics.strong_scaling_efficiency(r, b, n, n0)
        for r, b, n, n0 in joined.select("out_rate", "base_rate", "accelerator_count", "base_gpus").iter_rows()
    ]
    return joined.with_columns(efficiency=pl.Series(eff, dtype=pl.Float64)).sort(
        "suite", "entry", "kind", "concurrency", "weights_label", "accelerator_count"
    )


POINT_KEYS = ("suite", "model_name", "weights_label", "accelerator", "accelerator_count", "concurrency")
"""One served point of a model's latency view: its weights (`weights.label`: FP8 and AWQ are two points, never two
runs of one), hardware, tensor-parallel size and concurrency."""


def latency_points(tests: pl.DataFrame) -> pl.DataFrame:
    """Per suite, model, weights, tensor-parallel size and concurrency (`POINT_KEYS`): the served points' output
    tokens/s per GPU and median TPOT, ITL and TTFT (the medians over the point's finished, measured runs) with the
    range of its runs (the interval from repeats), for the latency-against-throughput view of one model."""
    served = tests.filter(
        (pl.col("kind") == "serve")
        & counting.MEASURED
        & (pl.col("status") == "ok")
        & pl.col("retracted_by").is_null()
        & pl.col("output_tokens_per_s").is_not_null()
        & pl.col("concurrency").is_not_null()
    ).with_columns(per_gpu=pl.col("output_tokens_per_s") / pl.col("accelerator_count"))
    points = (
        served.group_by(*POINT_KEYS)
        .agg(
            runs=pl.len(),
            **summaries.median_range("per_gpu", "per_gpu", "per_gpu_lo", "per_gpu_hi"),
            **summaries.median_range("median_tpot_ms", "tpot_ms", "tpot_lo", "tpot_hi"),
            itl_ms=pl.col("median_itl_ms").median(),
            ttft_ms=pl.col("median_ttft_ms").median(),
            run_ids=pl.col("run_id").sort(),
        )
        .sort(*POINT_KEYS)  # every key: points that differ only by their GPU model would come in group_by's order
    )
    # a range over runs has a width only where they differ: one run's is none, never lo = hi (`metrics.with_width`)
    return points.with_columns(
        pl.when(pl.col(f"{c}_lo") < pl.col(f"{c}_hi")).then(pl.col(f"{c}_{end}")).alias(f"{c}_{end}")
        for c in ("per_gpu", "tpot")
        for end in ("lo", "hi")
    )
