"""What a board says first (`derive.lead`, issue 59): its answer is its ranking's first row with its own figure and
interval, and the top is settled exactly when the rank rule (`ladder.rank`, which is `metrics.ranks_with_ties`)
gives no other row rank 1. Synthetic boards ranked by the real rank code."""

from __future__ import annotations

import polars as pl

import generator.derive.ladder as ladder
import generator.derive.lead as lead
from generator.derive.results import TEST_FIGURE


def _board(*rows: tuple[str, float, float | None, float | None]) -> pl.DataFrame:
    """A test board of (variant, figure, interval low, interval high) rows, ranked as a board ranks them."""
    frame = pl.DataFrame(
        {
            "variant": [r[0] for r in rows],
            "value": [r[1] for r in rows],
            "lo": [r[2] for r in rows],
            "hi": [r[3] for r in rows],
            "settings_hash": [f"h{i}" for i in range(len(rows))],
            "run_ids": [[f"run-{r[0]}"] for r in rows],
            "interval_basis": ["pooled" if r[2] is not None else "unreplicated: one run" for r in rows],
        },
        schema_overrides={"lo": pl.Float64, "hi": pl.Float64},
    )
    return ladder.rank(frame)


def test_a_top_whose_interval_lies_above_every_other_is_settled() -> None:
    answer = lead.board_lead(_board(("b", 90.0, 85.0, 95.0), ("a", 120.0, 110.0, 130.0)), TEST_FIGURE)
    assert answer.first is not None and answer.first["variant"] == "a"  # the ranking's first row, by rank
    assert (answer.value, answer.lo, answer.hi) == (120.0, 110.0, 130.0)  # its own figure, nothing new
    assert answer.rows == answer.placed == 2 and answer.tied == () and answer.settled


def test_a_second_row_whose_interval_overlaps_the_first_leaves_the_top_undecided() -> None:
    answer = lead.board_lead(
        _board(("a", 120.0, 110.0, 130.0), ("b", 115.0, 105.0, 125.0), ("c", 50.0, 45.0, 55.0)), TEST_FIGURE
    )
    assert answer.tied == ("b",) and not answer.settled and answer.ranks
    assert answer.rows == 3


def test_a_row_without_an_interval_ranks_nowhere_and_settles_nothing() -> None:
    only_unreplicated = lead.board_lead(_board(("a", 120.0, None, None)), TEST_FIGURE)
    assert not only_unreplicated.ranks and not only_unreplicated.settled and only_unreplicated.placed == 0
    beside = lead.board_lead(_board(("a", 100.0, 95.0, 105.0), ("fast", 300.0, None, None)), TEST_FIGURE)
    assert beside.first is not None and beside.first["variant"] == "a"  # never above a row it could overlap
    assert beside.settled and beside.rows == 2 and beside.placed == 1
    empty = lead.board_lead(_board(("a", 1.0, 0.5, 1.5)).clear(), TEST_FIGURE)
    assert empty.first is None and empty.rows == 0 and not empty.settled
