"""The "Wanted runs" page and its download: the runs that would settle each undecided answer and each unreplicated or
unverified row (`Results.wanted`, derived in generator/derive/wanted.py), grouped by the hardware they need, so
someone with that hardware can pick them up; `downloads/wanted.json` is what `fairfight wanted --format json --all`
prints, less whether the host fits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import generator.render.pages as pages
from generator.derive.wanted import Wanted
from runners import formats

DOWNLOAD = "downloads/wanted.json"


def write(env: Any, docs: Path, entries: list[Wanted]) -> None:
    """Render wanted.md and write its JSON beside the other downloads."""
    by_hardware: dict[str, dict[str, list[Wanted]]] = {}
    for entry in entries:  # in the derivation's order: the verdict first, then the boards
        by_hardware.setdefault(entry.hardware, {}).setdefault(entry.settles, []).append(entry)
    path = docs / DOWNLOAD
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(formats.to_json([e.to_json() for e in entries]))
    pages.render(env, "wanted.md.j2", docs / "wanted.md", by_hardware=by_hardware, total=len(entries),
                 download=DOWNLOAD)  # fmt: skip
