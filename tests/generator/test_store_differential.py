"""Differential tests of the one build store (issue 56, generator/store/): a warm build publishes every byte of
every file a cold build does, after (a) a seeded sequence of data operations, (c) a library's new version, (d) damaged
entries of every kind, (e) two builds at once into one cache; and a commit of docs alone renders no run page again.
Real builds (MkDocs included) of a few committed H200 records copied into a folder of their own."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from generator import build, render, store
from generator.commands import compare
from generator.store import fingerprint
from runners import layout, retract
from tests.generator.test_build_store import ROOT, RUNS, count_rendered, small_data, snapshot

OTHERS = (  # committed H200 records the operations add
    "20261129T175040Z-train-gpt-1.27b-mb4-ddp-tuned-ae4fb9",
    "20261130T053546Z-llama-8b-serve-c8-i512-o128-vllm-tp1-38a16c",
)


@pytest.fixture(autouse=True)
def _no_shared_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAIRFIGHT_SITE_CACHE", raising=False)  # each test's cache is its own work folder's


def _cold(data: Path, folder: Path) -> dict[str, bytes | None]:
    """The site a build with no cache at all makes from `data`."""
    if folder.exists():
        shutil.rmtree(folder)
    build.build(data, folder / "site", folder / "work")
    return snapshot(folder / "site")


def _differing(warm: dict[str, bytes | None], cold: dict[str, bytes | None]) -> list[str]:
    return sorted(k for k in warm.keys() | cold.keys() if warm.get(k, b"<absent>") != cold.get(k, b"<absent>"))


def _others() -> list[Path]:
    found = [ROOT / "data" / "h100" / f"{r}.parquet" for r in OTHERS]
    return [p for p in found if p.is_file()] or pytest.skip("the committed records the operations add are gone")


def _month(path: Path) -> str:
    return f"{layout.read(path).slice(0, 1).to_pylist()[0]['started_at']:%Y-%m}"


def _operations(data: Path, seed: int) -> list[tuple[str, object]]:
    """The data operations, in an order drawn from `seed`: each a name and a function doing it to `data`."""
    suite = data / "h100"
    extra = _others()
    then = datetime(2026, 12, 2, tzinfo=UTC)

    def add() -> None:  # an inference run: a training run's figures are another matter (the test after this one)
        shutil.copy2(extra[-1], suite)

    def delete() -> None:
        (suite / f"{RUNS[1]}.parquet").unlink()

    def edit_in_place() -> None:  # another record's bytes in the same file, its times set back
        path = suite / f"{RUNS[0]}.parquet"
        st = path.stat()
        with open(path, "r+b") as f:
            f.truncate(0)
            f.write(extra[0].read_bytes())
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))

    def same_size() -> None:  # replaced by a file of the same size, one byte flipped (renamed over it)
        path = suite / f"{RUNS[2]}.parquet"
        raw = bytearray(path.read_bytes())
        raw[len(raw) // 2] ^= 0x5A
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(bytes(raw))
        st = path.stat()
        os.replace(tmp, path)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))

    def retracted() -> None:
        retract.retract(data, RUNS[3], "measured on the wrong clocks", now=then)

    def claim() -> None:
        from runners import claims

        claims.import_claims(ROOT / "runners" / "claims" / "seed.toml", data)

    def moved_to_month() -> None:
        path = suite / f"{RUNS[4]}.parquet"
        month = suite / _month(path)
        month.mkdir(exist_ok=True)
        os.replace(path, month / path.name)

    ops: list[tuple[str, object]] = [
        ("add", add),
        ("delete", delete),
        ("edit in place, mtime set back", edit_in_place),
        ("replace by a same-size file", same_size),
        ("retract", retracted),
        ("claim", claim),
        ("move a flat file to its month folder", moved_to_month),
    ]
    random.Random(seed).shuffle(ops)
    return ops


KEPT = (  # committed records beside `RUNS` that no operation touches: no board is left without a run
    "20261130T172151Z-llama-8b-pp512-d0-mlx-f16-0461a1",
    "20261129T200258Z-train-gpt-1.27b-mb4-ddp-amp-stock-31951e",
)


@pytest.mark.parametrize("seed", [56, 57])
def test_a_warm_build_after_each_data_operation_is_the_cold_build(tmp_path: Path, seed: int) -> None:
    """(a) After each operation of a seeded sequence (add, delete, an in-place edit with the mtime set back, a
    replacement of the same size, a retraction, a claim, a flat file moved to its month folder), the warm build's site
    is the cold build's, every byte of every file."""
    data = small_data(tmp_path)
    for run_id in KEPT:
        if not (ROOT / "data" / "h100" / f"{run_id}.parquet").is_file():
            pytest.skip(f"{run_id} is no longer committed")
        shutil.copy2(ROOT / "data" / "h100" / f"{run_id}.parquet", data / "h100")
    warm, work = tmp_path / "warm", tmp_path / "work"
    build.build(data, warm, work)
    for name, operation in _operations(data, seed):
        operation()  # type: ignore[operator]
        build.build(data, warm, work)
        assert _differing(snapshot(warm), _cold(data, tmp_path / "cold")) == [], f"after: {name}"


def test_a_warm_build_after_a_new_training_run_is_the_cold_build(tmp_path: Path) -> None:
    """(a) A training run added: the warm build's site is the cold build's, every byte of every file."""
    data = small_data(tmp_path)
    warm, work = tmp_path / "warm", tmp_path / "work"
    build.build(data, warm, work)
    shutil.copy2(_others()[0], data / "h100")
    build.build(data, warm, work)
    assert _differing(snapshot(warm), _cold(data, tmp_path / "cold")) == []


def test_a_new_library_version_is_a_cold_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """(c) A library's new version (faked in the fingerprint) that makes other bytes (gzip's, here: what a new zlib
    would): the warm build made with the old one's store publishes what a cold build with the new one does."""
    data, warm, work = small_data(tmp_path), tmp_path / "warm", tmp_path / "work"
    build.build(data, warm, work)
    real = fingerprint.libraries
    monkeypatch.setattr(fingerprint, "libraries", lambda: [*real(), ("zlib-faked", "2.0")])
    fingerprint._fingerprint.cache_clear()
    real_gzipped = render.parts.gzipped
    monkeypatch.setattr(render.parts, "gzipped", lambda text, level=9: real_gzipped(text, level=1))
    try:
        build.build(data, warm, work)
        assert _differing(snapshot(warm), _cold(data, tmp_path / "cold")) == []
    finally:
        monkeypatch.undo()
        fingerprint._fingerprint.cache_clear()


NOTES = (store.NOTE, ".sha256", ".key", "key.txt")
"""What names an entry's hash beside it, in this layout and the ones before it (damaged with the entry, not alone)."""


def _entries_by_folder(cache: Path) -> dict[Path, list[Path]]:
    """The cache's entries (regular files that are not notes), by their folder relative to `cache`."""
    out: dict[Path, list[Path]] = {}
    for path in sorted(cache.rglob("*")):
        if path.is_file() and not path.is_symlink() and not path.name.endswith(NOTES) and not path.name.startswith("."):
            out.setdefault(path.parent.relative_to(cache), []).append(path)
    return out


def _damage(entry: Path, how: str, other: Path | None) -> None:
    """Damage a cache entry as a full disk, another build or a hostile hand might; another dataset's entry comes with
    its note."""
    if how == "truncated":  # in place: a file linked to it loses its end too
        with open(entry, "r+b") as f:
            f.truncate(entry.stat().st_size // 2)
        return
    entry.unlink()
    if how == "another dataset's entry":
        assert other is not None
        entry.write_bytes(other.read_bytes())
        for suffix in (store.NOTE, ".sha256"):
            if other.with_name(other.name + suffix).is_file():
                entry.with_name(entry.name + suffix).write_bytes(other.with_name(other.name + suffix).read_bytes())
    elif how == "a folder":
        entry.mkdir()
        (entry / "x").write_text("x")
    elif how == "a link to a device":
        entry.symlink_to("/dev/zero")


@pytest.mark.parametrize("how", ["truncated", "another dataset's entry", "a folder", "a link to a device"])
def test_a_warm_build_after_damaged_entries_is_the_cold_build(tmp_path: Path, how: str) -> None:
    """(d) One entry in every folder of the cache damaged between two builds (its bytes truncated, replaced by another
    dataset's entry with its note, a folder, a link to /dev/zero): the warm build publishes what a cold one does, and
    the damaged entries are made again."""
    data, warm, work = small_data(tmp_path), tmp_path / "warm", tmp_path / "work"
    other = tmp_path / "other"
    (other / "h100").mkdir(parents=True)
    for path in _others():
        shutil.copy2(path, other / "h100")
    build.build(other, tmp_path / "other-site", tmp_path / "other-work")  # another dataset's entries
    build.build(data, warm, work)
    theirs = _entries_by_folder(tmp_path / "other-work" / "cache")
    damaged = 0
    for folder, entries in _entries_by_folder(work / "cache").items():
        foreign = [p for p in theirs.get(folder, []) if p.name != entries[0].name]
        if how == "another dataset's entry" and not foreign:
            continue
        _damage(entries[0], how, foreign[0] if foreign else None)
        damaged += 1
    assert damaged >= 5
    build.build(data, warm, work)
    assert _differing(snapshot(warm), _cold(data, tmp_path / "cold")) == []
    for path in (work / "cache").rglob("*"):  # no damaged entry left behind
        assert not path.is_symlink(), path


def test_two_builds_at_once_into_one_cache_publish_the_cold_site(tmp_path: Path) -> None:
    """(e) Two `fairfight site` processes at once with the same `--work` and `--out`: both succeed, one waits for the
    other and says so, and the site is the cold build's."""
    data, out, work = small_data(tmp_path), tmp_path / "site", tmp_path / "work"
    build.build(data, out, work)  # warm: the second pair reads what the first kept
    (data / "h100" / f"{RUNS[0]}.parquet").unlink()
    shutil.copy2(_others()[-1], data / "h100")
    command = [sys.executable, "-m", "generator.build", "--data", str(data), "--out", str(out), "--work", str(work)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("FAIRFIGHT_SITE_CACHE", None)
    procs = [
        subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e[-2000:] for _, e in outputs]
    assert _differing(snapshot(out), _cold(data, tmp_path / "cold")) == []
    assert any("waiting for another build" in err for _, err in outputs)


def test_a_commit_of_docs_alone_renders_no_run_page_and_keeps_compares_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit that changes only a hand-written page: the warm build renders no run page again (their inputs and the
    code are the same) and shows the new page; `compare`'s table keeps its key (it follows the commits of data/, not
    HEAD)."""
    repo = tmp_path / "repo"
    data = small_data(repo)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "data"], check=True)
    site_src = tmp_path / "site_src"
    shutil.copytree(build.SITE_SRC, site_src, ignore=shutil.ignore_patterns(".*"))
    monkeypatch.setattr(build, "SITE_SRC", site_src)
    out, work = tmp_path / "site", tmp_path / "work"
    build.build(data, out, work)
    key = compare.cache.key(data)
    rendered = count_rendered(monkeypatch)
    page = site_src / "docs" / "methodology.md"
    page.write_text(page.read_text() + "\nA sentence added by a docs-only commit.\n")
    (repo / "README.md").write_text("docs\n")
    subprocess.run([*git, "add", "README.md"], check=True)
    subprocess.run([*git, "commit", "-qm", "docs only"], check=True)
    build.build(data, out, work)
    assert rendered == []
    assert "A sentence added by a docs-only commit." in (out / "methodology.html").read_text()
    assert compare.cache.key(data) == key
