"""Which runs an inference board's chart draws (generator/chart_rows.py): a failed run's own-tool record is never
drawn, and a run ranks on the chart exactly when it ranks on the board (its tool record with it)."""

from __future__ import annotations

import polars as pl

from generator import chart_rows


def test_a_failed_runs_tool_record_is_not_drawn_and_unranked_runs_are_marked() -> None:
    current = pl.DataFrame(
        {
            "run_id": ["ranked", "ranked-bench", "unranked", "unranked-bench", "failed", "failed-bench"],
            "origin": ["measured", "imported", "measured", "imported", "measured", "imported"],
            "status": ["ok", "ok", "ok", "ok", "oom", "ok"],
            "paired_run": [None, "ranked", None, "unranked", None, "failed"],
        }
    )
    board = pl.DataFrame({"run_ids": [["ranked"]]})
    drawn = chart_rows.test_runs(current, board)
    assert dict(drawn.select("run_id", "ranked").iter_rows()) == {
        "ranked": True, "ranked-bench": True, "unranked": False, "unranked-bench": False,
    }  # fmt: skip
    nothing_ranks = chart_rows.test_runs(current, board.clear())
    assert not nothing_ranks["ranked"].any() and nothing_ranks.height == 4
