"""The "Comparable commits" page: the harness commits the data holds and the pairs of them that measured a
configuration in common, each with the `fairfight compare @A @B` that sets them side by side. Derived by
`compare_select.shared`, the function `fairfight compare --list` prints from, so the page and the command list the
same pairs; most pairs share nothing (each commit measured its own sweep), and a contributor looking for a
before/after comparison starts here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from generator import compare_select, pages

SHOWN = 12
"""Digits of a commit in the command (as `compare --list` prints it): a prefix `compare` resolves."""


def write(env: Any, docs: Path, runs: pl.DataFrame) -> None:
    """Render commits.md from one row per run (`Results.every_run.runs`, what `compare` selects from)."""
    groups = compare_select.commits(runs)
    commits = [{"commit": g[0], "label": compare_select.label(g, runs)} for g in groups]
    pairs = [
        {"a": a[0], "b": b[0], "configurations": n, "command": f"fairfight compare @{a[0][:SHOWN]} @{b[0][:SHOWN]}"}
        for a, b, n in compare_select.shared(runs)
    ]
    pages.render(env, "commits.md.j2", docs / "commits.md", commits=commits, pairs=pairs,
                 possible=len(groups) * (len(groups) - 1) // 2)  # fmt: skip
