"""Every column of a board's row has a declared aggregation (issue 36): the median of its configuration's runs,
every run's, the largest, the smallest, or the latest run's, where the latest is declared column by column or is a
fact of the run (its record's or its config's). A new derived column that is declared nowhere stops the build,
naming itself, instead of silently showing the latest run's value."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pytest

from generator import configurations
from generator.derive import ladder


def _runs(**extra: list) -> pl.DataFrame:
    t0 = datetime(2026, 12, 1, tzinfo=UTC)
    base = {"suite": ["s", "s"], "workload": ["w", "w"], "settings_hash": ["h", "h"], "run_id": ["r1", "r2"],
            "started_at": [t0, t0], "steps_per_s": [1.0, 3.0], "peak_mem_gib": [2.0, 5.0], "coverage": [0.9, 0.8],
            "variant": ["v", "v"]}  # fmt: skip
    return pl.DataFrame(base | extra)


def test_each_declared_aggregation_is_what_a_row_takes() -> None:
    exprs = {name: configurations._aggregated(name) for name in ("steps_per_s", "peak_mem_gib", "coverage", "run_id")}
    row = _runs().group_by(configurations.KEYS).agg(**exprs).row(0, named=True)
    assert (row["steps_per_s"], row["peak_mem_gib"], row["coverage"], row["run_id"]) == (2.0, 5.0, 0.8, "r2")
    assert configurations.aggregation("run_id", configurations.AGGREGATIONS, configurations.LATEST) == "latest"
    assert configurations.aggregation("model_name", {}, ()) == "latest"  # a config column: a fact of the run


def test_an_undeclared_board_column_stops_the_build() -> None:
    runs = _runs(tuning_gain=[1.1, 1.2])
    with pytest.raises(ValueError, match="board column 'tuning_gain' has no declared aggregation"):
        configurations.rows(runs, {})
    tests = runs.with_columns(value=pl.col("steps_per_s"), lo=pl.lit(None), hi=pl.lit(None))
    with pytest.raises(ValueError, match=r"board column 'tuning_gain'.*ladder\.py LATEST"):
        ladder.rows(tests)
