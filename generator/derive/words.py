"""Numbers and counts as the pages write them, for the templates' filters (generator/render/pages.py) and for the derive
side's sentences (the verdict's owed list), which must not import Jinja."""

from __future__ import annotations

import math
from typing import Any


def fmt(value: Any, digits: int = 3) -> str:
    """A number for a table: significant digits, a dash for missing."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 1e15:  # a figure no table needs every digit of (and 1e308 would print 309)
            return f"{value:.{digits}g}"
        return f"{value:,.{digits}g}" if abs(value) < 10**digits else f"{value:,.0f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def counted(n: Any, noun: str) -> str:
    """ "1 run", "249 runs": a count with its noun, singular or plural as English has it (nouns taking an -s)."""
    if not isinstance(n, int) or isinstance(n, bool):
        return f"{fmt(n)} {noun}s"
    return f"{n:,} {noun}{'' if n == 1 else 's'}"
