"""Editions: frozen manifests that are never rewritten, changelogs between them, integrity on the site."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from generator.load import editions
from runners import claims, spec
from tests.conftest import committed, run_module


@pytest.mark.bench
def test_release_freezes_runs_and_changelog_and_integrity_show_on_the_site(bench_data, tmp_path: Path) -> None:
    source, _ = bench_data
    data = tmp_path / "data"
    shutil.copytree(source, data)
    committed(tmp_path)
    first = editions.release("e1", data, now=datetime(2026, 12, 1, 10, tzinfo=UTC))
    manifest = json.loads(first.read_text())
    assert len(manifest["runs"]) == 4 and all(len(r["sha256"]) == 64 for r in manifest["runs"])
    with pytest.raises(SystemExit, match="never rewritten"):
        editions.release("e1", data, now=datetime(2026, 12, 1, 11, tzinfo=UTC))
    assert json.loads(first.read_text()) == manifest  # untouched
    claims.import_claims(spec.SUITES_DIR.parent / "claims" / "seed.toml", data)
    committed(tmp_path)
    editions.release("e2", data, now=datetime(2026, 12, 1, 12, tzinfo=UTC))
    e1, e2 = editions.read_editions(data)
    assert editions.changelog(e1, e2.runs)["added"] == sorted(e2.runs.keys() - e1.runs.keys())
    assert len(editions.changelog(e1, e2.runs)["added"]) == 2
    # the same run's bytes change (recompressed): the editions that froze it must say so
    # not the loss-parity baseline (ddp-fp32-stock): without it no run of the board can rank (parity fails closed)
    victim = next(p for p in sorted((data / "cpu-smoke").rglob("*.parquet")) if "-fp32-" not in p.name)
    pq.write_table(pq.read_table(victim), victim, compression="gzip")
    (tmp_path / ".git").rename(tmp_path / "git-aside")  # as a tarball would be: only the editions can tell
    run_module("generator.build", "--data", str(data), "--out", str(tmp_path / "site"), "--work", str(tmp_path / "b"))
    index = (tmp_path / "site" / "editions.html").read_text()
    assert "e1" in index and "e2" in index
    page = (tmp_path / "site" / "editions" / "e1.html").read_text()
    assert f"{victim.stem}: result file changed since the edition, and its frozen bytes cannot be read" in page
    assert "cpu-smoke · train-gpt-tiny-mb4" in page


def test_edition_names_are_checked(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="edition name"):
        editions.release("../escape", tmp_path)


def test_an_edition_shows_every_kind_of_board(tmp_path: Path) -> None:
    """An edition's page is `derive.results` of its own records (generator/build.py `edition_results`), so it shows
    every kind of board the site does: an edition of the committed H200 records ranks training, inference and
    serving boards, each row as the site's own board of the same records has it."""
    from generator import build, derive, load, render
    from generator.derive import changelog, checks
    from generator.load import suite_titles
    from generator.render import pages

    data = tmp_path / "data"
    shutil.copytree(Path(__file__).resolve().parents[2] / "data" / "h100", data / "h100")
    committed(tmp_path)
    editions.release("e1", data, now=datetime(2026, 12, 1, 10, tzinfo=UTC))
    committed(tmp_path, "edition e1")
    loaded, summary = checks.checked(load.load(data))
    results = derive.results(loaded, summary)
    frozen = build.edition_results(loaded, data)
    ((made, of_edition),) = frozen
    assert made.problems == [] and set(made.edition.runs) == set(results.runs["run_id"])
    kinds = {b.kind for b in of_edition.boards.values() if b.ranked.height}
    assert kinds == {"train", "inference", "serving"}
    for key, board in of_edition.boards.items():  # the same records: the same boards, row for row
        assert board.ranked.equals(results.boards[key].ranked)
    docs = tmp_path / "docs"
    sink = pages.Charts(docs, tmp_path / "svg")
    render.boards.write_pages(results, docs, sink, changelog.changelog(frozen, results, in_git=True))
    sink.finish()
    page = (docs / "editions" / "e1.md").read_text()
    for unit in ("| Steps/s |", "| Tokens/s |", "| Output tokens/s |"):
        assert unit in page
    serving_board = next(b for b in of_edition.boards.values() if b.kind == "serving" and b.ranked.height)
    assert f"## {suite_titles.title('h100')} · {serving_board.workload}" in page  # the suite by its title
