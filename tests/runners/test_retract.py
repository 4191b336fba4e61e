"""Retractions: a new record points at a run that no longer counts; nothing is deleted or rewritten."""

from __future__ import annotations

import hashlib
import html
import shutil
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from generator import derive, load
from runners import layout, retract, store
from tests.conftest import ROOT, run_module

REASON = "ran with a <b>stale</b> bucket setting & a debug build"


def _run_of(data: Path, variant: str) -> Path:
    return next(
        p for p in data.rglob("*.parquet") if layout.read(p).select(["variant"])["variant"][0].as_py() == variant
    )


@pytest.mark.bench
def test_a_retraction_points_at_the_run_and_takes_it_out_of_every_ranking(bench_data, tmp_path: Path) -> None:
    source, _ = bench_data
    data = tmp_path / "data"
    shutil.copytree(source, data)
    target = _run_of(data, "ddp-tuned")
    before = hashlib.sha256(target.read_bytes()).hexdigest()

    site, work = tmp_path / "site", tmp_path / "build"
    run_module("generator.build", "--data", str(data), "--out", str(site), "--work", str(work))  # before: cold

    proc = run_module("runners", "retract", target.stem, "--reason", REASON, "--data-dir", str(data))
    written = store.find(data, "cpu-smoke", f"retraction-{target.stem}")  # in the month it was made
    assert written is not None and store.MONTH.fullmatch(written.parent.name)
    assert f"wrote {written}" in proc.stdout
    assert hashlib.sha256(target.read_bytes()).hexdigest() == before  # the retracted file is untouched

    again = run_module("runners", "retract", target.stem, "--reason", "twice", "--data-dir", str(data), check=False)
    assert again.returncode == 2 and "already retracted" in again.stderr
    unknown = run_module("runners", "retract", "no-such-run", "--reason", "x", "--data-dir", str(data), check=False)
    assert unknown.returncode == 2 and "no result file for run 'no-such-run'" in unknown.stderr
    blank = run_module("runners", "retract", target.stem, "--reason", " ", "--data-dir", str(data), check=False)
    assert blank.returncode == 2 and "--reason is required" in blank.stderr

    # a retraction of a run that is not there is reported by file and field, and changes nothing else
    ghost = layout.read(target).slice(0, 1).to_pylist()[0] | {"run_id": "ghost-run"}
    ghost_path = store.write_run(data, retract.retraction_table(ghost, "0" * 64, "no such run", datetime.now(UTC)))

    loaded = load.load(data)
    rejected = {r.path: r.problems for r in loaded.rejected}
    assert rejected == {
        ghost_path.relative_to(data.parent).as_posix(): (
            "row 0, field 'config': retracts 'ghost-run', which no loaded result file holds",
        )
    }
    summary = derive.run_summary(loaded.runs, loaded.rows)
    row = summary.filter(pl.col("run_id") == target.stem).row(0, named=True)
    assert row["retracted_by"] == f"retraction-{target.stem}" and row["retraction_reason"] == REASON
    board = derive.leaderboards(summary)[("cpu-smoke", "train-gpt-tiny-mb4")]
    assert target.stem not in board["run_id"].to_list() and board.height == 3
    assert f"retraction-{target.stem}" not in board["run_id"].to_list()

    # after: a warm build, which must re-render the retracted run's page (its summary row changed)
    run_module("generator.build", "--data", str(data), "--out", str(site), "--work", str(work))
    # the reason is shown as text everywhere: escaped in the HTML, never markup
    errata = (site / "errata.html").read_text()
    assert f"runs/{target.stem}.html" in errata and REASON in html.unescape(errata) and REASON not in errata
    run_page = (site / "runs" / f"{target.stem}.html").read_text()
    assert 'id="retracted"' in run_page and REASON in html.unescape(run_page) and REASON not in run_page
    board_page = (site / "leaderboards" / "cpu-smoke-train-gpt-tiny-mb4.html").read_text()
    assert 'id="retracted"' in board_page and REASON in html.unescape(board_page) and REASON not in board_page
    assert "ghost-run" in (site / "rejected.html").read_text()


def test_retract_takes_the_run_ids_compare_takes(tmp_path: Path) -> None:
    """One rule for a run id in every command (runners/arguments.matching_runs): its id, a unique prefix of it, or its
    file's path; a prefix of several is refused by both. Real result files, copied from data/."""
    from generator.commands import compare

    data = tmp_path / "data"
    shutil.copytree(ROOT / "data" / "cpu-smoke", data / "cpu-smoke")
    target = next(p for p in sorted(data.rglob("*.parquet")) if "-ddp-tuned-" in p.name)
    prefix = target.stem[: target.stem.index("-ddp-tuned-") + len("-ddp-tuned")]
    assert [p for p in data.rglob(f"{prefix}*.parquet")] == [target]  # a unique prefix

    ds = compare.load_dataset(data)
    assert compare.select(prefix, ds).runs["run_id"].to_list() == [target.stem]
    assert retract.find_run(data, prefix) == target
    assert retract.find_run(data, str(target)) == retract.find_run(data, target.stem) == target

    several = target.stem[:9]  # the day: every run of it
    with pytest.raises(compare.UsageError, match="is ambiguous"):
        compare.select(several, ds)
    proc = run_module("fairfight", "retract", several, "--reason", "x", "--data-dir", str(data), check=False)
    assert proc.returncode == 2 and f"'{several}' is ambiguous: it begins" in proc.stderr

    proc = run_module("fairfight", "retract", prefix, "--reason", "a stale setting", "--data-dir", str(data))
    written = store.find(data, "cpu-smoke", f"retraction-{target.stem}")  # named by the run's whole id
    assert written is not None and f"wrote {written}" in proc.stdout
