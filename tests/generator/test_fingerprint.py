"""The one fingerprint a cached output's key starts from (generator/store/fingerprint.py, issue 56): every library that
makes the site's bytes is named without a hand list, and a change to any of them, or to any file of the code that makes
output (the template or formatter that no hand list named), changes it; a hand-written page does not."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest

from generator.store import fingerprint

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _afresh() -> Iterator[None]:
    fingerprint._fingerprint.cache_clear()
    fingerprint.code.cache_clear()
    yield
    fingerprint._fingerprint.cache_clear()
    fingerprint.code.cache_clear()


def test_every_library_that_makes_bytes_is_named() -> None:
    named = dict(fingerprint.libraries())
    for name in ("polars", "pyarrow", "numpy", "altair", "vl-convert-python", "jinja2", "mkdocs", "mkdocs-material",
                 "markdown", "pygments", "pymdown-extensions", "pyyaml"):  # fmt: skip
        assert named.get(name) == metadata.version(name), name


def test_a_library_version_changes_the_fingerprint(monkeypatch: pytest.MonkeyPatch) -> None:
    before = fingerprint.fingerprint()
    real = metadata.distribution

    class Newer:
        def __init__(self, dist: metadata.Distribution) -> None:
            self.version, self.requires = dist.version + ".post1", dist.requires

    def distribution(name: str) -> object:
        dist = real(name)
        return Newer(dist) if name == "pyarrow" else dist

    monkeypatch.setattr(fingerprint.metadata, "distribution", distribution)
    fingerprint._fingerprint.cache_clear()
    assert fingerprint.fingerprint() != before


@pytest.mark.parametrize(
    ("path", "changes"),
    [
        ("generator/derive/words.py", True),  # formats every number: no hand list of the run pages' named it
        ("site_src/templates/run.html.j2", True),
        ("site_src/overrides/partials/copyright.html", True),
        ("runners/schema.py", True),
        ("site_src/docs/methodology.md", False),  # a hand-written page: shown as written, held by no cache
    ],
)
def test_a_change_to_the_code_changes_the_fingerprint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str, changes: bool
) -> None:
    for name in ("generator", "runners", "site_src"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(fingerprint, "TOP", tmp_path)
    before = fingerprint.code()
    with open(tmp_path / path, "a") as changed:
        changed.write("\n")
    fingerprint.code.cache_clear()
    assert (fingerprint.code() != before) is changes
