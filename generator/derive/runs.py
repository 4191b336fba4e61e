"""One row per run of every kind (training, inference test, served point, offline), each with the figure its kind is
ranked by on the boards and why it does not count where it does not: what `compare` selects from, derived with the
rest of the site's figures (`derive.results`).

Only finished, verified, unretracted runs count (the boards' own reasons, less those about a board's shape: a short
run, a sweep point or a run without a cross-check is compared anyway, with a note).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

import generator.derive.configurations as configurations
import generator.derive.inference as inference
import generator.derive.ladder as ladder
import generator.derive.serving as serving

COLUMNS = ["run_id", "suite", "workload", "kind", "settings_hash", "settings", "variant", "engine", "engine_version",
           "accelerator", "accelerator_count", "shared_host", "harness_commit", "started_at", "status", "origin",
           "sha256", "figure", "value", "lo", "hi", "tokens_per_step", "tokens_per_s", "tokens_per_s_lo",
           "tokens_per_s_hi", "excluded", "note", "busy_host", "others_cpu_cores", "cpu_cores",
           "gpu_processes"]  # fmt: skip
"""The columns of `every_run`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EveryRun:
    runs: pl.DataFrame
    """One row per run (`COLUMNS`): `value`, `lo`, `hi` its figure; `excluded` why it does not count; `note` why a
    run that counts is not on its board."""
    run_floors: dict[str, float]
    """run_id -> the A/A spread of the repeats of counted runs it belongs to."""


def every_run(summary: pl.DataFrame, tests: pl.DataFrame, served: pl.DataFrame, repeats: pl.DataFrame) -> EveryRun:
    """Every run with its figure (`COLUMNS`) and the A/A spread of each counted run's repeats: training's from
    `repeats` (`derive.repeats`), a test's from the repeats of the counted runs of its configuration."""
    training = summary.filter(~inference.is_inference(summary) & ~serving.is_serving(summary)).with_columns(
        kind=pl.col("kind").fill_null("train"),  # claims and retractions name no kind
        value=pl.col("steps_per_s"),
        lo=pl.col("steps_per_s_lo"),
        hi=pl.col("steps_per_s_hi"),
    )
    frames = [
        _counted(training, configurations.UNIT, _training_reasons()),
        _counted(tests.with_columns(*_named(inference.FIGURE)), inference.UNIT, _test_reasons(inference.CHECKS)),
    ]
    served = served.with_columns(*_named(serving.FIGURE))
    for kind, cross_checks in serving.CHECKS.items():
        reasons = _test_reasons(cross_checks, tuple(served.columns))
        frames.append(_counted(served.filter(pl.col("kind") == kind), serving.UNIT, reasons))
    runs = pl.concat(frames, how="diagonal_relaxed").select(COLUMNS).sort("started_at", "run_id")
    test_repeats = ladder.repeats(runs.filter(pl.col("excluded").is_null() & (pl.col("kind") != "train")))
    run_floors: dict[str, float] = {}
    for frame in (repeats, test_repeats):
        for ids, spread in frame.select("run_id", "spread").iter_rows():
            run_floors |= dict.fromkeys(ids, spread)
    return EveryRun(runs=runs, run_floors=run_floors)


def _named(figure: tuple[pl.Expr, pl.Expr, pl.Expr]) -> list[pl.Expr]:
    value, lo, hi = figure
    return [value.alias("value"), lo.alias("lo"), hi.alias("hi")]


def _counted(frame: pl.DataFrame, figure: str, reasons: tuple[pl.Expr, dict[str, pl.Expr], pl.Expr]) -> pl.DataFrame:
    """`frame` with its figure's name, `excluded` (why a run does not count, or null) and `note` (why a run that
    counts is not on its board, or null). `reasons`: the boards' reason a run does not rank, the columns that make it
    count anyway (a board's shape), and the note."""
    board, anyway, note = reasons
    first = (
        pl.when(pl.col("origin") == "claim")
        .then(pl.lit("a claim, reported elsewhere and not reproduced here"))
        .when(pl.col("origin") == "retraction")
        .then(pl.format("a retraction (of {}), not a measurement", pl.col("retracts")))
        .when(pl.col("retracted_by").is_not_null())
        .then(pl.format("retracted by {}: {}", pl.col("retracted_by"), pl.col("retraction_reason").fill_null("")))
    )
    verified = frame.with_columns(**anyway).select(board).to_series()
    return (
        frame.with_columns(figure=pl.lit(figure), verified=verified)
        .with_columns(
            excluded=first.when(pl.col("verified").is_not_null())
            .then(pl.col("verified"))
            .when(pl.col("value").is_null())
            .then(pl.lit("no figure"))
        )
        .with_columns(note=pl.when(pl.col("excluded").is_null()).then(note))
    )


def _training_reasons() -> tuple[pl.Expr, dict[str, pl.Expr], pl.Expr]:
    """The boards' reason a training run does not rank (`configurations.unranked_reason`); a short run, a sweep point
    and a run with no loss-parity baseline at its micro-batch count anyway (they are about the board's shape), so a
    run left out is stopped, unverified, or its loss departs from its baseline's."""
    board = configurations.unranked_reason()
    anyway = {"full_length": pl.lit(True), "sweep_point": pl.lit(False)}
    anyway["loss_parity_ok"] = pl.col("loss_parity_ok").fill_null(True)
    note = (
        pl.when(~pl.col("suite_scale"))
        .then(pl.format("on {} device(s), not the workload's (the board's scaling table)", pl.col("accelerator_count")))
        .otherwise(board)
    )
    return board, anyway, note


def _test_reasons(
    cross_checks: tuple[tuple[str, ...], ...], columns: tuple[str, ...] = ()
) -> tuple[pl.Expr, dict[str, pl.Expr], pl.Expr]:
    """The boards' reason a test run does not rank (`ladder.unranked_reason`, with the tolerance columns of
    `columns` the frame has); a run with no cross-check counts anyway, so a run left out is stopped, unverified, has
    no figure, or disagrees with its engine's own tool."""
    board = ladder.unranked_reason(cross_checks, depth=True, columns=columns)
    anyway = {"bench_run": pl.col("bench_run").fill_null("-"), "bench_status": pl.lit("ok")}
    anyway |= {check[1]: pl.col(check[1]).fill_null(1.0) for check in cross_checks}
    return board, anyway, board
