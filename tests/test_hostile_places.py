"""One place for a file (issue 57, class 2): a result file lives at `data/<suite>/<file>.parquet` or
`data/<suite>/<YYYY-MM>/<file>.parquet` and nowhere else, and a data folder has one name however it is given. Each
file is written as a submitter would (tests/conftest.py `write_as_submitted`), from the committed cpu-smoke records;
each test failed on the code before."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from generator import load
from generator.derive import checks
from generator.load import editions
from tests.conftest import committed, run_module, write_as_submitted
from tests.test_hostile_files import GENUINE, TUNED, doctored, genuine_copy

MISPLACED = {
    "deeper-than-a-month": ("cpu-smoke", "2026-11", "cpu-smoke"),
    "suite-in-another-folder": ("other", "cpu-smoke", "2026-11"),
    "suite-in-its-own-folder": ("cpu-smoke", "cpu-smoke"),
}
"""Run id -> the folders under data/ its file is put in: each passes every check of where a file's own folder and
month must be (its parent is named for its suite, or is its run's month in a folder named for its suite)."""


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return genuine_copy(tmp_path)


def misplace(data: Path) -> dict[str, Path]:
    """A valid record of its own (its run id the file's name) at each misplaced path."""
    out = {}
    for run_id, folders in MISPLACED.items():
        path = data.joinpath(*folders, f"{run_id}.parquet")
        path.parent.mkdir(parents=True, exist_ok=True)
        out[run_id] = write_as_submitted(doctored(TUNED, run_id), path)
    return out


def test_result_files_deeper_or_elsewhere_are_refused_by_name_by_the_loader_and_validate(data: Path) -> None:
    """Before: files in `cpu-smoke/2026-11/cpu-smoke/`, `other/cpu-smoke/2026-11/` and `cpu-smoke/cpu-smoke/` were
    loaded and published (validate exited 0). Now each is refused by its path, named with the rule, and validate
    exits 1 whether it is given the data folder, a suite's folder or a month folder."""
    placed = misplace(data)
    loaded, _ = checks.checked(load.load(data))
    found = {Path(r.path).stem: " ".join(r.problems) for r in loaded.rejected}
    for run_id, folders in MISPLACED.items():
        assert f"in folder {'/'.join(folders)!r}/ of the data folder" in found[run_id], found
        assert "a result file lives in data/<suite>/ or data/<suite>/<YYYY-MM>/ and nowhere else" in found[run_id]
    assert sorted(loaded.runs["run_id"]) == sorted(p.stem for p in GENUINE)  # the genuine ones, and only them
    for target in (data, data / "cpu-smoke", data / "cpu-smoke" / "2026-11"):
        proc = run_module("generator.commands.validate", str(target), check=False)
        assert proc.returncode == 1, (target, proc.stdout)
        for path in placed.values():
            if target in path.parents:
                assert f"{path}: in folder" in proc.stdout, (target, proc.stdout)
    proc = run_module("generator.commands.validate", check=False, cwd=data.parent)  # the default: data/
    assert proc.returncode == 1 and all(f"{p}: in folder" in proc.stdout for p in placed.values()), proc.stdout


def test_a_misplaced_file_named_alone_is_judged_from_its_data_folder(data: Path) -> None:
    """Before: `validate data/cpu-smoke/cpu-smoke/X.parquet` took `data/cpu-smoke/` for the file's data folder (two
    folders up), found the file in a folder named for its suite and exited 0; so did the other two places. Now a file
    named alone is judged from the data folder above it (the `data/` of the folder validate runs in, or of a git
    checkout), refused by its path as the site refuses it, and its genuine neighbour named alone still passes."""
    placed = misplace(data)
    genuine = sorted((data / "cpu-smoke").glob("*.parquet"))[0]
    for path in placed.values():
        proc = run_module("generator.commands.validate", str(path), check=False, cwd=data.parent)  # ./data: the default
        assert proc.returncode == 1 and f"{path}: in folder" in proc.stdout, (path, proc.stdout)
    committed(data.parent)  # from anywhere else, the checkout's data/
    for path in [*placed.values(), genuine]:
        proc = run_module("generator.commands.validate", str(path), check=False, cwd=data.parent.parent)
        if path == genuine:
            assert proc.returncode == 0 and "1 file(s) checked, 0 with problems" in proc.stdout, proc.stdout
        else:
            assert proc.returncode == 1 and f"{path}: in folder" in proc.stdout, (path, proc.stdout)


def test_release_freezes_only_what_the_loader_accepts_and_validate_accepts_its_manifest(
    data: Path, tmp_path: Path
) -> None:
    """Before: `release` froze the misplaced files and `validate` then rejected the manifest it had just written.
    Now release refuses while any is there; without them, validate accepts the manifest release wrote."""
    misplace(data)
    committed(data.parent)
    with pytest.raises(SystemExit, match=r"refusing to release with rejected files.*in folder 'cpu-smoke/2026-11/cpu"):
        editions.release("e1", data)
    assert not (data / "editions").exists()
    clean = tmp_path / "clean" / "data"  # a checkout without them (deleting committed files is itself named)
    shutil.copytree(data / "cpu-smoke", clean / "cpu-smoke", ignore=shutil.ignore_patterns("2026-11", "cpu-smoke"))
    committed(clean.parent)
    manifest = editions.release("e1", clean / "cpu-smoke" / "..")  # named any way: the paths are data/'s
    assert '"path": "cpu-smoke/' in manifest.read_text() and "../" not in manifest.read_text()
    committed(clean.parent, "edition e1")
    proc = run_module("generator.commands.validate", str(clean), check=False)
    assert proc.returncode == 0, proc.stdout
    assert not editions.scan(clean)[1] and [e.name for e in editions.read_editions(clean)] == ["e1"]


def test_a_data_folder_named_any_way_builds_the_same_site(data: Path, tmp_path: Path) -> None:
    """Before: `--data data/cpu-smoke/..` published every path as `../cpu-smoke/X.parquet` (13 files of the site
    differed from `--data data`), and the misplaced files were on the boards. Now the folder is resolved to one name:
    the same paths as `--data data`, the misplaced files on Rejected files only."""
    placed = misplace(data)
    plain = load.load(data)
    for other in (data / "cpu-smoke" / "..", Path(f"{data}/./"), tmp_path / "link"):
        if other.name == "link":
            other.symlink_to(data)
        again = load.load(other)
        assert again.runs["path"].to_list() == plain.runs["path"].to_list(), other
        assert [r.path for r in again.rejected] == [r.path for r in plain.rejected], other
    assert all(p.startswith("data/cpu-smoke/") for p in plain.runs["path"])
    site = tmp_path / "site"
    run_module("generator.build", "--data", str(data / "cpu-smoke" / ".."), "--out", str(site), "--work",
               str(tmp_path / "b"))  # fmt: skip
    rejected = (site / "rejected.html").read_text()
    for run_id, folders in MISPLACED.items():
        assert f"data/{'/'.join(folders)}/{run_id}.parquet" in rejected, run_id
        assert not (site / "runs" / f"{run_id}.html").exists()
    page = (site / "runs" / f"{TUNED.stem}.html").read_text()
    assert f"<code>data/cpu-smoke/{TUNED.name}</code>" in page
    for path in site.rglob("*.html"):
        assert "../cpu-smoke/" + TUNED.name not in path.read_text(), path
    assert placed  # written before the build
