"""The Configuration page (site_src/docs/configuration.md) lists every environment variable the code reads: each
FAIRFIGHT_* name anywhere in the code or the sweep scripts, and each name read literally through os.environ or
os.getenv; and it lists no FAIRFIGHT_* name the code no longer has."""

from __future__ import annotations

import re
from pathlib import Path

from generator.render import pages

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "site_src" / "docs" / "configuration.md"
CODE = [*(ROOT / "runners").rglob("*.py"), *(ROOT / "generator").rglob("*.py"), *(ROOT / "fairfight").rglob("*.py"),
        ROOT / "noxfile.py", *(ROOT / "runners" / "sweeps").rglob("*.sh")]  # fmt: skip
OURS = re.compile(r"\bFAIRFIGHT_[A-Z0-9_]+")
READ = re.compile(
    r"""(?:environ\.get|getenv)\(\s*["']([A-Z][A-Z0-9_]*)["']|environ\[["']([A-Z][A-Z0-9_]*)["']\](?!\s*=[^=])"""
)
GROUPS = {"CFLAGS", "CXXFLAGS", "LDFLAGS", "CUDAFLAGS"}
"""Read in a loop over their names (runners/engines/llamacpp/build.py), not literally: checked to be listed anyway."""


def _listed() -> set[str]:
    return set(re.findall(r"`([A-Z][A-Z0-9_]*)(?:=[^`]*)?`", PAGE.read_text()))


def test_every_variable_the_code_reads_is_on_the_page() -> None:
    ours, read = set(), set(GROUPS)
    for path in CODE:
        text = path.read_text()
        ours |= set(OURS.findall(text))
        read |= {a or b for a, b in READ.findall(text)}
    assert len(ours) >= 6 and {"FAIRFIGHT_CACHE", "CUDA_VISIBLE_DEVICES"} <= ours | read  # the scan found them
    listed = _listed()
    assert sorted(ours - listed) == [], "FAIRFIGHT_* variables the code reads and configuration.md does not list"
    assert sorted(read - listed) == [], "variables the code reads and configuration.md does not list"
    stale = {n for n in listed if n.startswith("FAIRFIGHT_")} - ours
    assert sorted(stale) == [], "configuration.md lists FAIRFIGHT_* variables the code no longer reads"


def test_the_page_is_in_the_navigation() -> None:
    assert any(p.file == "configuration.md" and p.section == "Guides" for p in pages.SITE)
