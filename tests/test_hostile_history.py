"""History that only grows (issue 57, class 3): a committed run or manifest deleted, or a frozen file moved, is named
by `validate` (exit 1) and on the site, with the commit that did it; a back-dated forged edition is the one
rejected, never the genuine one. Each test builds a git repository of a few committed cpu-smoke records (tests/
conftest.py `committed`), releases editions in it, and then changes its history as a careless or hostile
contributor would, with git's own commands; each failed on the code before."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from generator.load import editions, history
from tests.conftest import ROOT, TRAIN, committed, run_module, write_as_submitted
from tests.test_hostile_files import doctored

GENUINE = sorted((ROOT / "data" / "cpu-smoke").glob("*.parquet"))
"""The five committed runs of cpu-smoke's training workload (started 2026-11-29)."""
TUNED = ROOT / "data" / "cpu-smoke" / "20261129T182303Z-train-gpt-tiny-mb4-ddp-tuned-4c2956.parquet"
AMP = ROOT / "data" / "cpu-smoke" / "20261129T182238Z-train-gpt-tiny-mb4-ddp-amp-stock-c01ae0.parquet"


def git(repo: Path, *args: str) -> str:
    command = ["git", "-C", str(repo), "-c", "user.name=Fair Fight tests", "-c", "user.email=tests@invalid", *args]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """data/ with the five runs (AMP's added after e1), editions e1 and e2, each committed."""
    out = tmp_path / "data"
    (out / "cpu-smoke").mkdir(parents=True)
    for path in GENUINE:
        if path != AMP:
            shutil.copy(path, out / "cpu-smoke")
    committed(tmp_path)
    editions.release("e1", out, now=datetime(2026, 12, 1, 10, tzinfo=UTC))
    committed(tmp_path, "edition e1")
    shutil.copy(AMP, out / "cpu-smoke")
    committed(tmp_path, "one more run")
    editions.release("e2", out, now=datetime(2026, 12, 2, 10, tzinfo=UTC))
    committed(tmp_path, "edition e2")
    return out


def validate(data: Path) -> subprocess.CompletedProcess[str]:
    return run_module("generator.commands.validate", str(data), check=False)


def test_the_latest_manifest_deleted_committed_or_in_the_work_tree_is_named(data: Path) -> None:
    """Before: with the latest edition's manifest deleted, validate exited 0 and named nothing (the chain cannot see
    the last link go). Now git's history names it, with the commit, and validate exits 1."""
    manifest = data / "editions" / "e2.json"
    assert validate(data).returncode == 0
    manifest.unlink()  # only in the work tree
    proc = validate(data)
    assert proc.returncode == 1, proc.stdout
    assert f"{manifest}: deleted in the work tree (not committed) after it was committed" in proc.stdout
    git(data.parent, "rm", "-q", "data/editions/e2.json")
    git(data.parent, "commit", "-q", "-m", "drop e2")
    commit = git(data.parent, "rev-parse", "HEAD")[:12]
    proc = validate(data)
    assert proc.returncode == 1, proc.stdout
    assert f"{manifest}: deleted in commit {commit} after it was committed" in proc.stdout
    assert "1 missing (deleted or moved after they were committed" in proc.stdout


def test_a_deleted_committed_run_is_named_with_its_commit_and_the_editions_that_froze_it(data: Path) -> None:
    """Before: `git rm` of a committed run that no edition froze left validate at exit 0, naming nothing (a frozen
    one was named only as missing from its editions, without the commit). Now each file is named where it was, with
    the commit, and the editions that froze it."""
    late = data / "cpu-smoke" / "committed-after-e2.parquet"
    write_as_submitted(doctored(TUNED, late.stem), late)
    committed(data.parent, "a run after e2")
    assert validate(data).returncode == 0
    commit, said = _deleted_then_validated(data, late.name, "drop the run no edition froze")
    assert f"{late}: deleted in commit {commit} after it was committed: result files" in said
    victim = data / "cpu-smoke" / TUNED.name
    commit, said = _deleted_then_validated(data, TUNED.name, "drop a frozen run")
    assert f"{victim}: deleted in commit {commit} after it was committed (frozen in edition 'e1', 'e2')" in said
    assert said.count(TUNED.stem) == 1, said  # one line for the file, not one per edition besides


def _deleted_then_validated(data: Path, name: str, message: str) -> tuple[str, str]:
    """`git rm` of data/cpu-smoke/NAME, committed: the commit, and what validate (failing) says of the tree."""
    git(data.parent, "rm", "-q", f"data/cpu-smoke/{name}")
    git(data.parent, "commit", "-q", "-m", message)
    commit = git(data.parent, "rev-parse", "HEAD")[:12]
    proc = validate(data)
    assert proc.returncode == 1, proc.stdout
    return commit, proc.stdout


def test_a_frozen_flat_file_moved_with_git_mv_is_named_where_it_was_and_rejected_where_it_is(data: Path) -> None:
    """Before: `git mv` of a frozen flat file into its month folder (same bytes, same run id) left validate at exit
    0. Now the old path is named as moved, and the file at its new path is rejected, each with the commit."""
    old, new = f"data/cpu-smoke/{TUNED.name}", f"data/cpu-smoke/2026-11/{TUNED.name}"
    (data / "cpu-smoke" / "2026-11").mkdir()
    git(data.parent, "mv", old, new)
    staged = validate(data)  # staged only: the work tree's move
    assert staged.returncode == 1 and f"moved to {new} in the work tree (not committed)" in staged.stdout
    git(data.parent, "commit", "-q", "-m", "tidy into month folders")
    commit = git(data.parent, "rev-parse", "HEAD")[:12]
    proc = validate(data)
    assert proc.returncode == 1, proc.stdout
    assert f"{data.parent / old}: moved to {new} in commit {commit} after it was committed (frozen in" in proc.stdout
    assert f"{data.parent / new}: this result file was moved here from {old} in commit {commit}" in proc.stdout


def test_the_site_marks_a_deleted_manifest_a_deleted_run_and_a_moved_file_with_their_commits(
    data: Path, tmp_path: Path
) -> None:
    """Before: the site built after these showed nothing of them. Now the home page, Rejected files, the editions
    page and the board of the files' suite each carry a line naming the file and the commit, and the frozen edition's
    page says what became of each of its runs (and shows them as frozen, from git)."""
    (data / "cpu-smoke" / "2026-11").mkdir()
    git(data.parent, "mv", f"data/cpu-smoke/{AMP.name}", f"data/cpu-smoke/2026-11/{AMP.name}")
    git(data.parent, "rm", "-q", f"data/cpu-smoke/{TUNED.name}", "data/editions/e2.json")
    git(data.parent, "commit", "-q", "-m", "rewrite history")
    commit = git(data.parent, "rev-parse", "HEAD")[:12]
    site = tmp_path / "site"
    run_module("generator.build", "--data", str(data), "--out", str(site), "--work", str(tmp_path / "b"))
    lines = {
        f"data/editions/e2.json</code>: deleted in commit {commit}",
        f"data/cpu-smoke/{TUNED.name}</code>: deleted in commit {commit}",
        f"data/cpu-smoke/{AMP.name}</code>: moved to data/cpu-smoke/2026-11/{AMP.name} in commit {commit}",
    }
    for page in ("index.html", "editions.html"):
        text = (site / page).read_text()
        assert all(line in text for line in lines), (page, [line for line in lines if line not in text])
    rejected = (site / "rejected.html").read_text()
    assert all(line.replace("</code>: ", "</code></td>\n<td>") in rejected for line in lines), rejected
    assert f"moved here from data/cpu-smoke/{AMP.name} in commit {commit}" in rejected
    board = (site / "leaderboards" / f"cpu-smoke-{TRAIN}.html").read_text()
    assert all(line in board for line in lines if "/editions/" not in line), board
    frozen = (site / "editions" / "e1.html").read_text()
    assert f"{TUNED.stem}: result file deleted in commit {commit} after it was committed; shown as frozen" in frozen


def forged(data: Path, name: str, created_at: str, previous: dict[str, str] | None) -> Path:
    """A manifest written by hand: a copy of e1's runs, dated and chained as given."""
    manifest = json.loads((data / "editions" / "e1.json").read_text())
    manifest.update(name=name, created_at=created_at, previous=previous)
    path = data / "editions" / f"{name}.json"
    path.write_text(json.dumps(manifest, indent=1) + "\n")
    return path


@pytest.mark.parametrize("link", ["none", "e2"])
def test_a_back_dated_forged_edition_is_the_one_rejected(data: Path, link: str, tmp_path: Path) -> None:
    """Before: a forged edition dated before the first (following nothing, or naming the latest) was flagged, or
    not, but the genuine first edition was the one rejected ("null, but edition 'e0' is dated before it"). Now the
    chain follows the manifests' links: the forged one, off the chain, is rejected, and e1 and e2 both stand, in git
    (committed or not) and outside it."""
    e2 = editions.read_editions(data)[-1]
    previous = None if link == "none" else {"name": "e2", "sha256": e2.sha256}
    forged(data, "e0", "2026-11-30T10:00:00Z", previous)
    outside = tmp_path / "copy" / "data"
    shutil.copytree(data, outside)
    committed(data.parent, "a forged edition")
    for folder in (data, outside):
        kept, bad = editions.scan(folder)
        assert [e.name for e in kept] == ["e1", "e2"], (folder, bad)
        assert [Path(r.path).name for r in bad] == ["e0.json"], bad
        proc = validate(folder)
        assert proc.returncode == 1 and "e0.json: field 'previous'" in proc.stdout and "e1.json" not in proc.stdout


def test_two_first_editions_are_told_apart_by_git_and_neither_is_trusted_outside_it(tmp_path: Path) -> None:
    """One genuine edition, and a forged one back-dated before it, both claiming to be first: git added the genuine
    manifest first, so the forged one is rejected; outside git nothing can tell them apart, and both are."""
    out = tmp_path / "data"
    (out / "cpu-smoke").mkdir(parents=True)
    shutil.copy(TUNED, out / "cpu-smoke")
    committed(tmp_path)
    editions.release("e1", out, now=datetime(2026, 12, 1, 10, tzinfo=UTC))
    committed(tmp_path, "edition e1")
    forged(out, "e0", "2026-11-30T10:00:00Z", None)
    committed(tmp_path, "a forged edition")
    kept, bad = editions.scan(out)
    assert [e.name for e in kept] == ["e1"] and [Path(r.path).name for r in bad] == ["e0.json"], bad
    assert "this one was made outside the chain, or back-dated" in bad[0].problems[0]
    assert history.added_order(out, "editions") == {"data/editions/e1.json": 0, "data/editions/e0.json": 1}
    shutil.rmtree(tmp_path / ".git")
    kept, bad = editions.scan(out)
    assert kept == [] and sorted(Path(r.path).name for r in bad) == ["e0.json", "e1.json"]
    assert "git cannot say which was made first" in bad[0].problems[0]


def test_a_longer_forged_chain_does_not_displace_the_one_git_added_first(data: Path) -> None:
    """Three forged editions, back-dated before the first and chained to each other, committed after the genuine
    two: a chain longer than the genuine one, which git's order of adding them still tells apart."""
    previous = None
    for i, name in enumerate(("f1", "f2", "f3")):
        path = forged(data, name, f"2026-11-2{i}T10:00:00Z", previous)
        previous = {"name": name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    committed(data.parent, "a forged chain")
    kept, bad = editions.scan(data)
    assert [e.name for e in kept] == ["e1", "e2"], bad
    assert sorted(Path(r.path).name for r in bad) == ["f1.json", "f2.json", "f3.json"]
