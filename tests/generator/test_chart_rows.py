"""Which runs an inference board's chart draws (generator/derive/chart_rows.py): a failed run's own-tool record is never
drawn, and a run ranks on the chart exactly when it ranks on the board (its tool record with it)."""

from __future__ import annotations

import polars as pl

from generator.derive import chart_rows


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
    drawn = chart_rows.drawable_runs(current, board)
    assert dict(drawn.select("run_id", "ranked").iter_rows()) == {
        "ranked": True, "ranked-bench": True, "unranked": False, "unranked-bench": False,
    }  # fmt: skip
    nothing_ranks = chart_rows.drawable_runs(current, board.clear())
    assert not nothing_ranks["ranked"].any() and nothing_ranks.height == 4


def test_a_chart_draws_each_configurations_newest_runs_and_their_tools_records() -> None:
    """Five runs of one configuration: the newest three are drawn, each with its own tool's record; another
    configuration's run, a run that does not rank and a tool record without its runner run each count apart."""
    runs = [f"a{i}" for i in range(5)]
    current = pl.DataFrame(
        {
            "run_id": [*runs, *(f"{r}-bench" for r in runs), "b0", "u0", "u1", "u2", "u3", "lone-bench"],
            "origin": ["measured"] * 5 + ["imported"] * 5 + ["measured"] * 5 + ["imported"],
            "status": ["ok"] * 16,
            "paired_run": [None] * 5 + runs + [None] * 5 + ["gone"],
            "variant": ["v"] * 10 + ["w"] + ["v"] * 4 + ["v"],
            "engine": ["llamacpp"] * 5 + ["llama-bench"] * 5 + ["llamacpp"] * 5 + ["llama-bench"],
            "settings_hash": ["h"] * 10 + ["g"] + ["h"] * 4 + ["h"],
            "started_at": [*range(5), *range(5), 0, 10, 11, 12, 13, 0],
        }
    )
    board = pl.DataFrame({"run_ids": [[*runs, "b0"]]})
    drawable = chart_rows.drawable_runs(current, board)
    drawn = chart_rows.newest_drawn(drawable)
    assert drawn["run_id"].to_list() == [
        "a2", "a3", "a4", "a2-bench", "a3-bench", "a4-bench", "b0", "u1", "u2", "u3", "lone-bench",
    ]  # fmt: skip
    assert chart_rows.newest_drawn(drawable, per=10).equals(drawable)
    assert chart_rows.newest_drawn(drawable.clear()).is_empty()
