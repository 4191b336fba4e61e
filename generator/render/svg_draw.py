"""Static SVGs (`pages.Charts`), drawn by vl-convert in worker processes: vl-convert holds the GIL while it draws,
so on threads it stalled everything the build did meanwhile. Imports nothing of the generator: a worker starts in
the time Python and vl-convert take to import."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def draw(cached: Path, spec: dict[str, Any]) -> Path:
    """Draw `spec` (a Vega-Lite spec of fixed width) into `cached` unless it is there; returns `cached`."""
    import vl_convert

    if not cached.exists():
        tmp = cached.with_name(f".{cached.name}.{os.getpid()}.tmp")  # two builds at once each write their own
        tmp.write_text(vl_convert.vegalite_to_svg(spec))
        tmp.replace(cached)
    return cached
