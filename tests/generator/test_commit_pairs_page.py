"""The "Comparable commits" page (generator/render/commit_pairs_page.py) on the committed data: it lists the pairs of
harness commits that share configurations exactly as `fairfight compare --list` does (both from
`commit_pairs.shared`), each with the command that compares them, and stays out of the search index (a generated
list, like the tables: the home page carries the index within its weight budget, tests/test_browser.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from generator import derive
from generator.derive import commit_pairs
from generator.render import commit_pairs_page, pages

ROOT = Path(__file__).resolve().parents[2]


def test_the_page_lists_what_compare_list_prints_with_each_command(
    committed_results: derive.Results, tmp_path: Path
) -> None:
    commit_pairs_page.write(pages.environment(), tmp_path, committed_results.comparable)
    page = (tmp_path / "commits.md").read_text()
    done = subprocess.run([sys.executable, "-m", "fairfight", "compare", "--list", "--format", "json"], cwd=ROOT,
                          capture_output=True, text=True, check=True)  # fmt: skip
    listed = json.loads(done.stdout)
    assert listed["pairs"], "the committed data has pairs of commits that share configurations"
    rows = [line for line in page.splitlines() if line.startswith("| <code>")]
    assert rows == [
        f"| <code>{p['a'][:12]}</code> | <code>{p['b'][:12]}</code> | {p['configurations']} | "
        f"<code>fairfight compare @{p['a'][:12]} @{p['b'][:12]}</code> |"
        for p in listed["pairs"]
    ]
    n = len(listed["commits"])
    assert f"{len(listed['pairs'])} of {n * (n - 1) // 2} pairs of harness commits" in page
    for c in listed["commits"]:
        assert f"- <code>{pages.md_text(c['label'])}</code>" in page
    assert "search:\n  exclude: true" in page.split("\n---\n")[0]


def test_the_page_is_in_the_navigation() -> None:
    assert any(p.file == "commits.md" and p.template == "commits.md.j2" for p in pages.SITE)


def test_a_recorded_commit_that_is_markup_stays_text(tmp_path: Path) -> None:
    """A record's harness commit is the submitter's text: on this page it is escaped, in the table and the list."""
    from datetime import UTC, datetime

    import polars as pl

    hostile = "<img src=x onerror=alert(1)>|[x](javascript:alert(2))"
    runs = pl.DataFrame(
        {
            "run_id": ["a", "b"], "harness_commit": [hostile, "c0ffee1234567"], "origin": ["measured", "measured"],
            "suite": ["s", "s"], "workload": ["w", "w"], "settings_hash": ["h", "h"],
            "started_at": [datetime(2026, 12, 1, tzinfo=UTC), datetime(2026, 12, 2, tzinfo=UTC)],
        }
    )  # fmt: skip
    commit_pairs_page.write(pages.environment(), tmp_path, commit_pairs.comparable(runs))
    page = (tmp_path / "commits.md").read_text()
    assert "<img" not in page and "](javascript:" not in page and "1 of 1 pairs" in page
    (row,) = [line for line in page.splitlines() if line.startswith("| <code>")]
    assert row.count(" | ") == 3  # the commit's "|" did not open a column
