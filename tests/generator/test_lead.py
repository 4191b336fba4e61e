"""What a board and a run page say first (`derive.lead`, issue 59): a board's answer is its ranking's first row with
its own figure and interval, and the top is settled exactly when the rank rule (`ladder.rank`, which is
`metrics.ranks_with_ties`) gives no other row rank 1; a run's standing is its configuration's rank or the reason its
board gives, and a run no board lists says what its record is. Synthetic boards ranked by the real rank code."""

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


def test_every_run_a_board_lists_has_its_rank_or_its_boards_reason() -> None:
    ranked = _board(("a", 120.0, 110.0, 130.0), ("b", 115.0, 105.0, 125.0), ("u", 10.0, None, None))
    unranked = pl.DataFrame({"run_id": ["run-short"], "unranked": ["a short run: 120 steps asked"]})
    got = {r["run_id"]: (r["board_rank"], r["standing"]) for r in lead.standings([(ranked, unranked)]).to_dicts()}
    assert got == {
        "run-a": (1, "ranked 1 on its board"),
        "run-b": (1, "ranked 1 on its board"),
        "run-u": (None, "on its board's ranking, no rank: unreplicated: one run"),
        "run-short": (None, "not ranked: a short run: 120 steps asked"),
    }


def test_a_run_no_board_lists_says_what_its_record_is() -> None:
    runs = pl.DataFrame(
        {
            "retracted_by": [None, None, None, None, "r-1", None],
            "origin": ["claim", "imported", "measured", "measured", "measured", "measured"],
            "status": ["ok", "ok", "oom", "ok", "ok", "ok"],
            "suite_scale": [True, True, True, False, True, True],
        },
        schema_overrides={"retracted_by": pl.String},
    )
    said = runs.select(lead.standing_elsewhere()).to_series().to_list()
    assert said[0].startswith("not ranked: a claim") and said[1].startswith("not ranked: the engine's own tool")
    assert said[2] == "not ranked: it did not finish (status oom)"
    assert "device count" in said[3] and said[4] == "not ranked: retracted"
    assert said[5] is None  # nothing its record says: the page says nothing rather than guess
