"""`fairfight submit`: a real cpu-smoke run (torch, gloo, 2 processes) submitted against committed cpu-smoke records
copied from the repository's data/, and the mistakes it refuses before writing anything. Every command runs in a
child process, as a user types it; nothing is mocked."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, TRAIN, run_module

BOARD = f"leaderboards/cpu-smoke-{TRAIN}.html"
COMMITTED = sorted((ROOT / "data" / "cpu-smoke").rglob("*.parquet"))


def _committed(tmp: Path) -> Path:
    """A data folder holding the repository's committed cpu-smoke records (so there is a board to join)."""
    data = tmp / "committed" / "data"
    for path in COMMITTED:
        target = data / path.relative_to(ROOT / "data")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return data


@pytest.fixture(scope="module")
def fresh_run(tmp_path_factory: pytest.TempPathFactory, torch_engine: str) -> Path:
    """The file of a real `fairfight bench` run of cpu-smoke's stock baseline, in a data folder of its own."""
    data = tmp_path_factory.mktemp("fresh") / "data"
    run_module("fairfight", "bench", "--suite", "cpu-smoke", "--workload", TRAIN, "--variant", "ddp-fp32-stock",
               "--data-dir", str(data))  # fmt: skip
    (path,) = data.rglob("*.parquet")
    return path


def _submit(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return run_module("fairfight", "submit", *args, cwd=cwd, check=False)


@pytest.mark.bench
def test_a_fresh_cpu_run_makes_a_pull_request_folder_naming_its_board(fresh_run: Path, tmp_path: Path) -> None:
    data, out = _committed(tmp_path), tmp_path / "pr"
    proc = _submit(str(fresh_run), "--data-dir", str(data), "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    (copy,) = (out / "data").rglob("*.parquet")
    month = copy.parent.name
    assert copy.relative_to(out).as_posix() == f"data/cpu-smoke/{month}/{fresh_run.name}"
    assert copy.read_bytes() == fresh_run.read_bytes()  # byte-identical, where the bench writes it
    summary = (out / "SUMMARY.md").read_text()
    sha = hashlib.sha256(fresh_run.read_bytes()).hexdigest()
    assert f"## {fresh_run.stem}" in summary and sha in summary
    assert f"joins **{TRAIN} · " in summary and f"(`{BOARD}`)" in summary  # the board's title and page
    # the committed records hold runs of the same configuration on the same kind of CPU, or none on this one
    compared = f"| cpu-smoke · {TRAIN} | steps/s |" in summary
    assert compared or "First run of this configuration: nothing to compare with." in summary, summary
    assert "## Checklist (Submitting, section 5)" in summary and "- [x] **`fairfight validate` passes**" in summary
    assert (out / "validate.txt").read_text() == "1 file(s) checked, 0 with problems, 0 unverified\n"
    # again into the same folder: a previous submission is replaced, not refused
    again = _submit(str(fresh_run), "--data-dir", str(data), "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in out.iterdir()) == ["SUMMARY.md", "data", "validate.txt"]


@pytest.mark.bench
def test_the_first_run_of_a_configuration_says_there_is_nothing_to_compare(fresh_run: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()  # nothing committed: the run makes its board
    proc = _submit(str(fresh_run), "--data-dir", str(data), "--out", str(tmp_path / "pr"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = (tmp_path / "pr" / "SUMMARY.md").read_text()
    assert "First run of this configuration: nothing to compare with." in summary
    assert f"(`{BOARD}`)" in summary


def _refused(proc: subprocess.CompletedProcess[str], said: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.stderr.startswith("submit: ") and said in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr  # one sentence


def test_mistakes_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    data, out = _committed(tmp_path), tmp_path / "pr"
    missing = tmp_path / "no-such-run.parquet"
    _refused(_submit(str(missing), "--data-dir", str(data), "--out", str(out)), f"{missing}: no such file")
    assert not out.exists()
    text = tmp_path / "notes.txt"
    text.write_text("not a result file")
    _refused(_submit(str(text), "--data-dir", str(data), "--out", str(out)), "not a result file")
    assert not out.exists()
    # a committed run, copied out and named as new: it is in the data already
    copied = tmp_path / "elsewhere" / "cpu-smoke" / COMMITTED[0].name
    copied.parent.mkdir(parents=True)
    shutil.copyfile(COMMITTED[0], copied)
    _refused(_submit(str(copied), "--data-dir", str(data), "--out", str(out)), "is committed already")
    assert not out.exists()
    _refused(_submit(str(copied), "--data-dir", str(tmp_path / "nowhere"), "--out", str(out)), "--data-dir")
    assert not out.exists()
    # an out folder holding something no submission wrote is left as it is
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    _refused(_submit(str(COMMITTED[0]), "--data-dir", str(data), "--out", str(out)), "mine.txt")
    assert [p.name for p in out.iterdir()] == ["mine.txt"]
    # nor is one that holds a data folder, as a checkout does: only a previous submission is replaced
    _refused(_submit(str(COMMITTED[0]), "--data-dir", str(data), "--out", str(data.parent)), "not a previous")
    assert sorted(p.name for p in data.rglob("*.parquet")) == sorted(p.name for p in COMMITTED)


def test_a_rejected_file_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    data, out = _committed(tmp_path), tmp_path / "pr"
    bad = tmp_path / "cpu-smoke" / "broken-run.parquet"
    bad.parent.mkdir()
    bad.write_bytes(b"PAR1 this is not a parquet file")
    proc = _submit(str(bad), "--data-dir", str(data), "--out", str(out))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"submit: {bad}: rejected, as `fairfight validate` rejects it: not a readable Parquet file" in proc.stderr
    assert not out.exists()
