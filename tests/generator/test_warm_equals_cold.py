"""A warm build publishes exactly what a cold one would (issue 56), when the code changed between them: a writer of
a download is changed in a copy of the code, then that copy builds warm (the cache of the build before the change)
and cold, as `fairfight site` would, in child processes. Every file of the two sites must be the same bytes."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import run_module
from tests.generator.test_build_store import small_data, snapshot

ROOT = Path(__file__).resolve().parents[2]
COPIED = ("generator", "runners", "site_src", "pyproject.toml")
"""What of the checkout a build reads: a copy of these builds as the checkout does (no .git: the version is the
installed one's, the same for every build here)."""


def _copy_code(into: Path) -> Path:
    into.mkdir()
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, into / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, into / name)
    return into


def _site(code: Path, data: Path, out: Path, work: Path) -> None:
    run_module("generator.build", "--data", str(data), "--out", str(out), "--work", str(work), cwd=code,
               FAIRFIGHT_SITE_CACHE="")  # fmt: skip


def _changed(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{path}: {old!r} not found (the writer moved: change this test with it)"
    path.write_text(text.replace(old, new))


CHANGES = {
    # the samples download's writer (as the contributor of issue 56 changed it): SNAPPY instead of ZSTD
    "samples-writer": (
        "generator/render/catalog.py", 'compression="zstd", write_statistics', 'compression="snappy", write_statistics'
    ),
    # the formatter of every count on every page (thousands apart with _), which no run page's hand list named
    "formatter": ("generator/derive/words.py", 'return f"{value:,}"', 'return f"{value:_}"'),
}  # fmt: skip
"""A change to a module that writes output: (file, text, what it becomes)."""


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_warm_build_after_a_code_change_is_the_cold_build(tmp_path: Path, change: str) -> None:
    """A change made in a copy of the code (as a contributor previewing it would), then a warm build (the cache of the
    build before the change) and a cold one: every file the same bytes, the change in both."""
    path, old, new = CHANGES[change]
    code, data = _copy_code(tmp_path / "code"), small_data(tmp_path)
    warm, cold = tmp_path / "warm", tmp_path / "cold"
    _site(code, data, warm, tmp_path / "work")
    _changed(code / path, old, new)
    _site(code, data, warm, tmp_path / "work")
    _site(code, data, cold, tmp_path / "cold-work")
    if change == "samples-writer":  # the change reached the cold build
        parts = sorted((cold / "downloads" / "samples").rglob("*.parquet"))
        assert parts and all(pq.ParquetFile(p).metadata.row_group(0).column(0).compression == "SNAPPY" for p in parts)
    else:
        assert any(re.search(r"[1-9]\d{0,2}_\d{3}(?!\d)", p.read_text()) for p in (cold / "runs").glob("*.html"))
    assert snapshot(warm) == snapshot(cold)
