"""Issue 57's last promise for hostile files: the site built with one in the data folder is the site built without
it, but for the file's line on rejected.html and the home page's warning that a file was rejected. One real build
(MkDocs included) per case, of cpu-smoke's committed records copied into a folder of the test's own: a footer with
two run entries (class 1), a file in a folder where no result file lives (class 2), a file named what Windows cannot
hold (class 5). Each case was published as a run before issue 57."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from generator import build
from runners import layout
from tests.generator.test_build_store import snapshot
from tests.test_hostile_files import GENUINE, genuine_copy
from tests.test_one_reading import _run_entry, _target, write_footer
from tests.test_portable_names import _renamed


@pytest.fixture(autouse=True)
def _no_shared_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAIRFIGHT_SITE_CACHE", raising=False)  # each build's cache is its own work folder's


def _two_run_entries(data: Path) -> Path:
    entries = [(layout.RUN_KEY, _run_entry()), (layout.RUN_KEY, _run_entry(status="failed", error="x"))]
    return write_footer(_target(data), entries)


def _misplaced(data: Path) -> Path:
    path = data / "cpu-smoke" / "2026-11" / "cpu-smoke" / "20261129T182303Z-train-gpt-tiny-mb4-ddp-tuned-0deep0.parquet"
    path.parent.mkdir(parents=True)
    shutil.copy(GENUINE[0], path)
    return path


def _windows_name(data: Path) -> Path:
    return _renamed(data, "CON")


@pytest.mark.parametrize(
    "plant", [_two_run_entries, _misplaced, _windows_name], ids=["two run entries", "misplaced", "CON"]
)
def test_the_site_with_a_hostile_file_is_the_site_without_it_but_its_rejected_line(tmp_path: Path, plant) -> None:
    clean = genuine_copy(tmp_path / "clean")
    build.build(clean, tmp_path / "clean-site", tmp_path / "clean-work")
    hostile = genuine_copy(tmp_path / "hostile")
    planted = plant(hostile)
    build.build(hostile, tmp_path / "hostile-site", tmp_path / "hostile-work")
    without, with_it = snapshot(tmp_path / "clean-site"), snapshot(tmp_path / "hostile-site")
    differing = sorted(k for k in without.keys() | with_it.keys() if without.get(k, b"-") != with_it.get(k, b"-"))
    # rejected.html lists it, the home page says a file was rejected (and the search index, with its gzipped copy,
    # holds both pages' words)
    assert differing == ["index.html", "rejected.html", "search/search_index.json", "search/search_index.json.gz"], (
        differing
    )
    home = with_it["index.html"].decode()
    warning = re.search(r'<div class="admonition warning">\n<p class="admonition-title">1 result file\(s\) rejected'
                        r".*?</div>\n", home, re.S)  # fmt: skip
    assert warning is not None and home.replace(warning.group(0), "") == without["index.html"].decode()
    page = (tmp_path / "hostile-site" / "rejected.html").read_text()
    assert planted.name in page
    assert planted.name not in "".join(
        p.read_text(errors="replace") for p in (tmp_path / "hostile-site").rglob("*.html") if p.name != "rejected.html"
    )
