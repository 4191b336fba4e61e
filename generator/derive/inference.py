"""Inference tests (llama-bench style: pp and tg at a KV-cache depth) from loaded records to the numbers their
pages show: per-run statistics over repetitions, the cross-check against the engine's own tool (llama-bench,
mlx_lm.benchmark), MBU, and rankings. `inference_figures` is the entry `derive.results` calls: every frame, derived
once (`InferenceFigures`).

Every formula comes from `runners.metrics`; this module only groups, joins and orders.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import polars as pl

import generator.derive.ladder as ladder
import generator.derive.summaries as summaries
from runners import engines, metrics, schema

TEST_KINDS = ("pp", "tg")
"""The `kind` of an inference test: prompt processing (pp) and token generation (tg), as llama-bench names them."""


def bench_tags() -> dict[str, str]:
    """Per own tool of an inference engine (the registry's, `engines.tools_of`), how its record made before
    `config.pairs_with` names the runner's record it checks: its run id is the runner's with this inserted before the
    random suffix (llama-bench for llama.cpp, mlx_lm.benchmark for MLX)."""
    return {tool: f"-{tool}-" for tool in engines.tools_of("inference")}


TOOL_PATH_ENGINES = schema.TOOL_TIMES_MORE
"""Engines whose own tool times more than the test (the registry's `tool_times_more`; mlx_lm.benchmark: see
`runners.engines.mlx.generate._Bench.tool_path`): their runner also times the tool's path, and only that figure is
compared with the tool's (a record without it has nothing like for like)."""


def is_inference(summary: pl.DataFrame) -> pl.Series:
    """Which runs are inference tests (their workload's kind is pp or tg)."""
    return summary["kind"].is_in(TEST_KINDS).fill_null(False)


@dataclass(frozen=True, slots=True, kw_only=True)
class InferenceFigures:
    """Every frame of the inference tests, derived once (`inference_figures`): what `derive.results` takes from this
    module."""

    per_run: pl.DataFrame
    """One row per inference run: its figures and its engine's tool's record beside it (`per_run_figures`)."""
    ranked: pl.DataFrame
    """The runs that rank, each with its figure in `value`, `lo`, `hi` (`ranked_runs`): what the A/A repeats and the
    pooled spreads are made of."""


def inference_figures(
    summary: pl.DataFrame, rows: pl.DataFrame, copy_bandwidth: Mapping[str, float]
) -> InferenceFigures:
    """The inference tests' frames from the run summary, the loaded rows and the copy bandwidth calibrated on each
    hardware model (`copy_bound.copy_bandwidths`), each once: `per_run_figures`, and from its rows the runs that
    rank."""
    per_run = per_run_figures(summary, rows, copy_bandwidth)
    return InferenceFigures(per_run=per_run, ranked=ranked_runs(per_run))


def per_run_figures(summary: pl.DataFrame, rows: pl.DataFrame, copy_bandwidth: Mapping[str, float]) -> pl.DataFrame:
    """One row per inference run: its test, weights, and tokens/s over repetitions (median with a 95% interval,
    mean ± standard deviation), llama.cpp's own counters' rate, the bytes a decoded token reads and the MBU
    against the datasheet bandwidth (with beside it the fraction of the copy bound calibrated on its hardware model,
    `metrics.copy_bound_fraction`); the engine's own tool's record of the same test, weights and settings is paired
    with the runner's (`bench_*` columns; `bench_ratio` is runner / tool of the means, the runner's figure being its
    timing of the tool's own path where it has one, `tool_path_rate`, and `test_ratio` its test's). `depth_fills` is
    how many repetitions decoded their depth (null in records older than the runner's depth-state reuse, which
    decoded it on every repetition, and in llama-bench's). A record made before its engine ran an untimed warm-up
    repetition (`ran_cold_first`) has its first, cold, repetition left out of all of these (`cold_first_dropped`).
    `copy_bandwidth`: per hardware model, its calibrated copy bandwidth (`copy_bound.copy_bandwidths`)."""
    runs = summary.filter(is_inference(summary)).with_columns(cold_first_dropped=ran_cold_first(summary.columns))
    tags = bench_tags()
    cold = runs.filter(pl.col("cold_first_dropped"))["run_id"].implode()
    reps = (
        rows.filter(pl.col("run_id").is_in(runs["run_id"].implode()), pl.col("phase") == "steady")
        .pivot(on="metric", index=["run_id", "trial"], values="value", aggregate_function="first")
        .sort("run_id", "trial")
        # a record made before its engine's untimed warm-up timed its first repetition cold: left out of every figure
        .filter(~(pl.col("run_id").is_in(cold) & (pl.col("trial") == pl.col("trial").min().over("run_id"))))
    )
    for name in ("tokens_per_s", "llama_time_s", "llama_tokens", "tool_path_tokens_per_s"):
        if name not in reps.columns:
            reps = reps.with_columns(pl.lit(None, dtype=pl.Float64).alias(name))
    per_run = reps.group_by("run_id", maintain_order=True).agg(
        pl.col("tokens_per_s"),
        pl.col("tool_path_tokens_per_s"),
        rate_mean=pl.col("tokens_per_s").mean(),
        rate_sd=pl.col("tokens_per_s").std(),
        llama_rate=(pl.col("llama_tokens") / pl.col("llama_time_s")).median(),
        tool_path_rate=pl.col("tool_path_tokens_per_s").mean(),
    )
    stat_frame = summaries.repetition_intervals(per_run.select("run_id", "tokens_per_s"), "rate")
    tool_path = summaries.repetition_intervals(per_run.select("run_id", "tool_path_tokens_per_s"), "tool_path").drop(
        "repetitions"
    )
    bandwidth = [(metrics.datasheet_memory(acc) or (None, None))[1] for acc in runs["accelerator"].to_list()]
    joined = (
        runs.with_columns(
            datasheet_bandwidth=pl.Series(bandwidth, dtype=pl.Float64),
            # the copy fraction's: its hardware model's calibrated one (null where none was calibrated)
            copy_bandwidth=pl.col("accelerator").replace_strict(copy_bandwidth, default=None, return_dtype=pl.Float64),
        )
        .join(per_run.drop("tokens_per_s", "tool_path_tokens_per_s"), on="run_id", how="left")
        .join(stat_frame, on="run_id", how="left")
        .join(tool_path, on="run_id", how="left")
    )
    out = with_bandwidth_use(joined, pl.col("rate_med")).with_columns(  # of the figure its page leads with
        paired_run=pl.coalesce(
            pl.when(pl.col("origin") == "imported").then(pl.col("pairs_with")),
            # records made before the field: the tool's run id is the runner's with the tool's tag inserted
            *(
                pl.when((pl.col("origin") == "imported") & (pl.col("engine") == tool)).then(
                    pl.col("run_id").str.replace(tag, "-", literal=True)
                )
                for tool, tag in tags.items()
            ),
        ),
    )
    paired = ladder.with_tool_record(
        out, list(tags), bench_rate=pl.col("rate_mean"), bench_sd=pl.col("rate_sd"), bench_tool=pl.col("engine")
    )
    return paired.with_columns(
        # like with like: where the runner also timed the tool's own path (MLX: mlx-lm's generate loop, whose prompt
        # time includes more than prompt processing), that figure is what the tool's must match
        bench_ratio=pl.when(pl.col("engine").is_in(list(TOOL_PATH_ENGINES)))
        .then(pl.col("tool_path_rate"))
        .otherwise(pl.col("rate_mean"))
        / pl.col("bench_rate"),
        test_ratio=pl.col("rate_mean") / pl.col("bench_rate"),
    )


def ran_cold_first(columns: Sequence[str]) -> pl.Expr:
    """Whether a record timed its first repetition cold: its engine (or the engine whose tool made it) gained an
    untimed warm-up repetition later, and the record lacks the field that says it ran one (the registry's
    `engines.cold_first_repetition`). `columns`: the frame's (a field no loaded record has is absent from every one)."""
    out = pl.lit(False)
    for engine, field in engines.cold_first_repetition().items():
        lacks = pl.col(field).is_null() if field in columns else pl.lit(True)
        out = out | ((pl.col("engine") == engine) & lacks)
    return out


def board(tests: pl.DataFrame, spreads: ladder.Spreads | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One inference test's ranked configurations and unranked runs (`ladder.board`): the median tokens/s over
    repetitions with its 95% interval, checked against the engine's own tool's tokens/s (a tg test's figure is also
    its latency: time per token is its inverse). `spreads` (`pooled_spreads`) gives rows the between-run spread.
    A tg row's MBU and copy-bound fraction are of its own figure, `value` (the median of its runs' figures), and an
    unranked run's of its figure: what every page that shows the row prints beside that figure."""
    ranked, unranked = ladder.board(_with_tool_path(tests), *FIGURE, CHECKS, spreads)
    return with_bandwidth_use(ranked, pl.col("value")), with_bandwidth_use(unranked, pl.col("value"))


def with_bandwidth_use(frame: pl.DataFrame, rate: pl.Expr) -> pl.DataFrame:
    """`frame` with a tg test's MBU and copy-bound fraction of `rate` (`ladder.with_bandwidth_use`), against one
    GPU's bandwidth: llama.cpp splits layers across GPUs, and a token reads them one GPU after another."""
    return ladder.with_bandwidth_use(frame, rate, decodes=pl.col("kind") == "tg", gpus=pl.lit(1))


def ranked_runs(tests: pl.DataFrame) -> pl.DataFrame:
    """The inference runs that rank (`ladder.verified` with no `unranked` reason), each with its figure in
    `value`, `lo`, `hi`: what the A/A repeats and the pooled spreads are made of."""
    runs = ladder.verified(_with_tool_path(tests), *FIGURE, CHECKS)
    return runs.filter(pl.col("unranked").is_null())


def pooled_spreads(tests: pl.DataFrame) -> dict[tuple[str, str, str, int], metrics.PooledSpread]:
    """The between-run spreads of inference tests (`ladder.pooled_spreads` over the runs that rank), by kind
    (pp, tg), hardware and device count."""
    return ladder.pooled_spreads(ranked_runs(tests))


def _with_tool_path(tests: pl.DataFrame) -> pl.DataFrame:
    """`tests` with the tool-path columns `_figure` reads (null where a frame has none: no run timed the path)."""
    missing = [f"tool_path_{w}" for w in ("med", "lo", "hi") if f"tool_path_{w}" not in tests.columns]
    return tests.with_columns(pl.lit(None, dtype=pl.Float64).alias(c) for c in missing)


def _figure(what: str) -> pl.Expr:
    """A run's ranked figure: where its engine's tool times more than the test (`TOOL_PATH_ENGINES`), its timing of
    the tool's own path, the figure that was cross-checked; otherwise its test's."""
    tool_path = pl.col("engine").is_in(list(TOOL_PATH_ENGINES))
    # a record without the tool's path has nothing like for like with the tool: it shows its test's, never ranks
    return pl.coalesce(pl.when(tool_path).then(pl.col(f"tool_path_{what}")), pl.col(f"rate_{what}"))


FIGURE = (_figure("med"), _figure("lo"), _figure("hi"))
"""What an inference test's board ranks by: a run's median tokens/s over repetitions and its 95% interval, of the
figure its engine's own tool checked (MLX: its timing of mlx_lm.benchmark's path, which includes the first decoded
token in the prompt's time; ranking its own pp figure, 1.33× the tool's on an H200, would rank what nothing
checked)."""
UNIT = "tokens/s"
"""What `FIGURE` is in."""
CHECKS = ((UNIT, "bench_ratio"),)
"""What must agree with the engine's own tool: (what, column of runner / tool ratios)."""
