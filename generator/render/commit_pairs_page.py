"""The "Comparable commits" page: the harness commits the data holds and the pairs of them that measured a
configuration in common, each with the `fairfight compare @A @B` that sets them side by side. Derived once
(`Results.comparable`) by `commit_pairs.shared`, the function `fairfight compare --list` prints from, so the page
and the command list the same pairs; most pairs share nothing (each commit measured its own sweep), and a contributor
looking for a before/after comparison starts here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import generator.derive.commit_pairs as commit_pairs
import generator.render.pages as pages

SHOWN = 12
"""Digits of a commit in the command (as `compare --list` prints it): a prefix `compare` resolves."""


def write(env: Any, docs: Path, comparable: commit_pairs.Comparable) -> None:
    """Render commits.md from `Results.comparable`."""
    commits = [{"commit": commit, "label": label} for commit, label in comparable.commits]
    pairs = [
        {"a": a, "b": b, "configurations": n, "command": f"fairfight compare @{a[:SHOWN]} @{b[:SHOWN]}"}
        for a, b, n in comparable.pairs
    ]
    pages.render(env, "commits.md.j2", docs / "commits.md", commits=commits, pairs=pairs, possible=comparable.possible)
