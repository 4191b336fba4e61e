"""Pages list at most `lists.SHOWN` runs of a list that grows with the data (a board's unranked runs and failures,
the runs since the latest edition): the newest, with how many there are in all and a CSV of every one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import generator.render.lists as lists
from generator import derive, load, render
from generator.derive import changelog, checks
from generator.load import history
from generator.render import pages
from runners import store
from tests.generator.test_claims_and_parity import _training_run


def test_a_list_within_the_bound_is_shown_whole_in_its_order_and_writes_no_file(tmp_path: Path) -> None:
    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    frame = pl.DataFrame({"run_id": ["b", "a", "c"], "started_at": [t0, t0 + timedelta(1), t0 - timedelta(1)]})
    shown = lists.bounded(frame, tmp_path, tmp_path / "leaderboards" / "x.md", "x-unranked")
    assert [r["run_id"] for r in shown.rows] == ["b", "a", "c"] and shown.total == 3 and shown.href is None
    assert not (tmp_path / "downloads").exists()


def test_a_long_list_shows_its_newest_and_writes_every_row_newest_first(tmp_path: Path) -> None:
    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    n = lists.SHOWN + 7
    frame = pl.DataFrame(
        {
            "run_id": [f"r{i:03d}" for i in range(n)],
            "started_at": [t0 + timedelta(hours=(i * 37) % n) for i in range(n)],  # not in id order
            "reason": ["=cmd|' /C calc'!A0" if i == 0 else "short" for i in range(n)],
            "run_ids": [["x"]] * n,  # a list column: no CSV cell, left out
            "config": ["{}"] * n,  # the record's JSON: on the run's page, not in the list
        }
    )
    page = tmp_path / "leaderboards" / "x.md"
    shown = lists.bounded(frame, tmp_path, page, "x-unranked")
    newest = frame.sort("started_at", "run_id", descending=True)
    assert shown.total == n and [r["run_id"] for r in shown.rows] == newest["run_id"].head(lists.SHOWN).to_list()
    assert shown.href == "../downloads/lists/x-unranked.csv.gz" and shown.name == "x-unranked.csv.gz"
    written = pl.read_csv(tmp_path / "downloads" / "lists" / "x-unranked.csv.gz")
    assert written["run_id"].to_list() == newest["run_id"].to_list()  # every row, newest first
    assert written.columns == ["run_id", "started_at", "reason"]
    assert written.filter(pl.col("run_id") == "r000")["reason"].item().startswith("'=")  # inert in a spreadsheet


@pytest.fixture(scope="module")
def many_unranked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, derive.Results]:
    """A training board with two ranked configurations (one of them run twice) and eight runs that do not rank
    (their GPU is not in the datasheet table), each started an hour after the one before."""
    data = tmp_path_factory.mktemp("lists") / "data"
    t0 = datetime(2026, 11, 29, tzinfo=UTC)
    losses = list(np.linspace(6.2, 4.0, 26))
    store.write_run(data, _training_run("base-1", "base", losses, t0))
    store.write_run(data, _training_run("fast-1", "fast", losses, t0))
    store.write_run(data, _training_run("fast-2", "fast", losses, t0 + timedelta(minutes=30)))  # one row, two runs
    for i in range(8):
        run = _training_run(f"odd-{i}", "fast", losses, t0 + timedelta(hours=i + 1), accelerator="Mystery X1")
        store.write_run(data, run)
    loaded, summary = checks.checked(load.load(data))
    return data, derive.results(loaded, summary)


def _pages(results: derive.Results, data: Path, docs: Path) -> Path:
    sink = pages.Charts(docs, docs.parent / "svg")
    render.boards.write_pages(results, docs, sink, changelog.changelog([], results, history.repo(data) is not None))
    sink.finish()
    return docs


def test_a_board_with_more_unranked_runs_than_the_bound_lists_the_newest_and_links_them_all(
    many_unranked: tuple[Path, derive.Results], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, results = many_unranked
    board = results.boards[("cpu-smoke", "w")]
    odd = {f"odd-{i}" for i in range(8)}
    assert odd <= set(board.shown_unranked["run_id"])
    whole = _pages(results, data, tmp_path / "whole")
    page = (whole / "leaderboards" / "cpu-smoke-w.md").read_text()
    assert "Showing the" not in page and not (whole / "downloads" / "lists").exists()
    assert all(f'"{r}")' in page for r in odd)  # each unranked run linked in the table

    monkeypatch.setattr(lists, "SHOWN", 3)
    docs = _pages(results, data, tmp_path / "bounded")
    page = (docs / "leaderboards" / "cpu-smoke-w.md").read_text()
    total = board.shown_unranked.height
    assert f"Showing the 3 newest of {total} unranked runs, newest first; all {total} are in" in page
    assert "(../downloads/lists/cpu-smoke-w-unranked.csv.gz)" in page
    unranked = page[page.index("## Unranked") :]
    listed = {r for r in board.shown_unranked["run_id"] if f'"{r}")' in unranked}
    assert listed == {"odd-7", "odd-6", "odd-5"}  # the newest three
    written = pl.read_csv(docs / "downloads" / "lists" / "cpu-smoke-w-unranked.csv.gz")
    assert set(written["run_id"]) == set(board.shown_unranked["run_id"]) and written.height == total
    assert written["run_id"].head(3).to_list() == ["odd-7", "odd-6", "odd-5"]
    # the board as data is the same however many the page lists
    assert (docs / "leaderboards" / "cpu-smoke-w.json").read_bytes() == (
        whole / "leaderboards" / "cpu-smoke-w.json"
    ).read_bytes()
    # the runs since the latest edition (none yet): the newest three, and every run in the CSV
    editions = (docs / "editions.md").read_text()
    n = results.runs.height
    assert f"Showing the 3 newest of {n} added runs, newest first; all {n} are in" in editions
    assert editions.count("- [") == 3 and "- [odd-7](" in editions
    since = pl.read_csv(docs / "downloads" / "lists" / "since-latest-edition.csv.gz")
    assert set(since["run_id"]) == set(results.runs["run_id"]) and "sha256" in since.columns


def test_a_ranked_row_links_its_latest_runs_and_its_board_json_lists_them_all(
    many_unranked: tuple[Path, derive.Results], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, results = many_unranked
    board = results.boards[("cpu-smoke", "w")]
    figure = ("steps_per_s", "steps_per_s_lo", "steps_per_s_hi")
    rows = render.boards.board_rows(board.ranked, board.unranked, board.unranked_spans, "steps/s", figure)
    (fast,) = [r for r in rows if r["variant"] == "fast" and r["rank"] is not None]
    earlier, latest = fast["runs"]
    whole = (_pages(results, data, tmp_path / "whole") / "leaderboards" / "cpu-smoke-w.md").read_text()
    ranking = whole[whole.index("## Ranking") : whole.index("## Unranked")]
    assert f'[1](../{pages.run_href(earlier)} "{earlier}"), [2](../{pages.run_href(latest)} "{latest}")' in ranking
    assert "runs 1–" not in ranking

    monkeypatch.setattr(lists, "RUN_LINKS", 1)
    page = (_pages(results, data, tmp_path / "bounded") / "leaderboards" / "cpu-smoke-w.md").read_text()
    ranking = page[page.index("## Ranking") : page.index("## Unranked")]
    link = f'[2](../{pages.run_href(latest)} "{latest}")'
    cell = f"<small>runs 1–1 in [cpu-smoke-w.json](cpu-smoke-w.json)</small>, {link}"
    assert ranking.count(cell) == 2  # in the ranking and in its every-column table
    assert f'"{earlier}")' not in ranking
