"""Which runs a board's chart draws, and whether each ranks: the charts mark unranked runs as such (hollow bars) and
never draw a figure for a run that has none. Pure polars: frames in, a frame out (no chart, no template)."""

from __future__ import annotations

import polars as pl

import generator.derive.counting as counting


def drawable_runs(current: pl.DataFrame, ranked: pl.DataFrame) -> pl.DataFrame:
    """An inference test's runs for its chart, each with `ranked`. `current`: the test's unretracted records (the
    runner's and its engine's own tool's); `ranked`: the board's ranked rows (`run_ids` lists their runs). Finished
    runner runs are drawn, ranked when among `ranked`'s runs; a tool record is drawn unless its runner run
    (`paired_run`) failed, and ranks with it, so a failed run's tool figure never stands for it on the chart."""
    none: pl.Series = pl.Series([[]])
    ranked_ids = ranked["run_ids"].explode().drop_nulls().unique().implode() if ranked.height else none
    failed = current.filter(counting.MEASURED & (pl.col("status") != "ok"))["run_id"].implode()
    tool = pl.col("origin") == "imported"
    return current.filter(
        (pl.col("status") == "ok") & ~(tool & pl.col("paired_run").is_in(failed).fill_null(False))
    ).with_columns(
        ranked=pl.when(tool).then(pl.col("paired_run").is_in(ranked_ids)).otherwise(pl.col("run_id").is_in(ranked_ids))
    )


DRAWN_PER_CONFIGURATION = 3
"""Runs of one configuration an inference test's chart draws, the newest: a bar per run of a configuration run a
hundred times is a chart a hundred bars tall that says no more than three do (the board's tables and JSON keep every
run). The committed records have at most three a configuration, so their charts draw every run."""

CONFIGURATION = ["ranked", "variant", "engine", "settings_hash"]
"""What one configuration's runs on a test's chart share (a run that ranks and one that does not are drawn apart)."""


def newest_drawn(drawable: pl.DataFrame, per: int = DRAWN_PER_CONFIGURATION) -> pl.DataFrame:
    """`drawable` (`drawable_runs`) less all but the `per` newest runner runs of each configuration (`CONFIGURATION`),
    in its order: a tool record is drawn with its runner run, and one whose runner run is not among `drawable`'s
    (none, or not finished) counts in its own configuration."""
    if drawable.is_empty():
        return drawable
    tool = pl.col("origin") == "imported"
    runner_ids = drawable.filter(~tool)["run_id"].implode()
    own = ~tool | ~pl.col("paired_run").is_in(runner_ids).fill_null(False)  # ranked among its configuration's
    newest = (
        drawable.filter(own)
        .sort("started_at", "run_id", descending=True, nulls_last=True)
        .filter(pl.int_range(pl.len()).over(CONFIGURATION) < per)
    )
    kept = newest["run_id"].implode()
    with_its_run = ~own & pl.col("paired_run").is_in(kept).fill_null(False)
    return drawable.filter(pl.col("run_id").is_in(kept) | with_its_run)
