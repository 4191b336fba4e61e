"""One row per run of every kind (training, inference test, served point, offline), each with the figure its kind is
ranked by on the boards and why it does not count where it does not: what `compare` selects from, derived with the
rest of the site's figures (`derive.results`).

Only finished, verified, unretracted runs count (the boards' own reasons, less those about a board's shape: a short
run, a sweep point or a run without a cross-check is compared anyway, with a note).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

import generator.derive.commit_pairs as commit_pairs
import generator.derive.configurations as configurations
import generator.derive.inference as inference
import generator.derive.ladder as ladder
import generator.derive.serving as serving
import generator.derive.training_boards as training_boards

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
    """run_id -> the A/A spread of the repeats it belongs to (`at_commit_floors`: same configuration, commit, hardware
    and host condition)."""
    kind_floors: dict[tuple[str, str, int, bool], float]
    """(kind, accelerator, count, shared host) -> the largest of those spreads: the floor of a side with no repeats."""


def every_run(summary: pl.DataFrame, tests: pl.DataFrame, served: pl.DataFrame) -> EveryRun:
    """Every run with its figure (`COLUMNS`), and the A/A spreads `compare` and the history across commits hold a
    difference to (`at_commit_floors`)."""
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
    run_floors, kind_floors = at_commit_floors(summary, runs)
    return EveryRun(runs=runs, run_floors=run_floors, kind_floors=kind_floors)


def at_commit_floors(
    summary: pl.DataFrame, runs: pl.DataFrame
) -> tuple[dict[str, float], dict[tuple[str, str, int, bool], float]]:
    """The A/A spreads a difference between two sides is held to: of each counted run's repeats (the runs of its
    configuration, hardware and host condition at its harness commit: training's by `training_boards.repeats`, a
    test's by `ladder.repeats`), and the largest of those per kind, hardware and host condition. Repeats share their
    commit (its recorded forms as one, `commit_pairs.full_commits`): runs of one configuration at two commits are what
    a comparison asks about, and a spread that pooled them would hold a change to a floor that contains it."""
    one = commit_pairs.full_commits(summary["harness_commit"])
    at = ("harness_commit",)
    commit = pl.col("harness_commit").replace(one)
    training = training_boards.repeats(summary.with_columns(harness_commit=commit), by=at)
    counted = runs.filter(pl.col("excluded").is_null() & (pl.col("kind") != "train"))
    return floors(
        training.with_columns(kind=pl.lit("train")), ladder.repeats(counted.with_columns(harness_commit=commit), by=at)
    )


def floors(*repeats: pl.DataFrame) -> tuple[dict[str, float], dict[tuple[str, str, int, bool], float]]:
    """run_id -> the spread of the repeats it belongs to, and (kind, accelerator, count, shared host) -> the largest
    of those spreads, of `repeats` frames (`ladder.repeats`, `training_boards.repeats` with a `kind`)."""
    run_floors: dict[str, float] = {}
    kind_floors: dict[tuple[str, str, int, bool], float] = {}
    columns = ("run_id", "spread", "kind", "accelerator", "accelerator_count", "shared_host")
    for frame in repeats:
        for ids, spread, kind, acc, count, shared in frame.select(columns).iter_rows():
            run_floors |= dict.fromkeys(ids, spread)
            where = (str(kind), str(acc), int(count), bool(shared))
            kind_floors[where] = max(kind_floors.get(where, 0.0), spread)
    return run_floors, kind_floors


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
