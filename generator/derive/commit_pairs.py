"""Which harness commit a `compare` selector names, and how to say that a prefix names several things.

`compare @A @B` (or a bare commit prefix, when it names nothing else) compares every configuration measured at both
commits, one row each, as `asv compare REV1 REV2` compares every benchmark measured at both revisions
(airspeed-velocity/asv, asv/commands/compare.py: results for each revision, the benchmarks they share, one line
each). Records name their harness commit in full or, from older harnesses, by a 7-digit prefix: a 7-digit form that
begins exactly one recorded full id is that commit (`full_commits`, which the history across commits reads too), and a
commit given here matches every form of it. Pure functions of the runs' frame (`compare.Dataset.runs`): this module
selects, it does not load or derive.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

import generator.derive.configurations as configurations

HEX = re.compile(r"[0-9a-f]{4,64}")
"""What a commit (or a settings hash) prefix looks like: at least 4 hex digits, as git's shortest abbreviation, and at
most a full id's 40, or 64 in a SHA-256 repository (as `runners.provenance.FULL_COMMIT` records them)."""
ABBREVIATED = 7
"""The fewest digits a recorded commit abbreviates a longer one in: git's default abbreviation, as older records wrote
their commit. A shorter recorded form is its own commit, never a part of another."""


def full_commits(commits: Iterable[str | None]) -> dict[str, str]:
    """Each recorded commit of `ABBREVIATED` or more hex digits that begins exactly one longest recorded form (one no
    other extends: a full id) -> that form: a record at `fa4a5bb` and one at `fa4a5bb4…` were made at one commit. A
    form that begins two is left as it is (which of them it was is unknown). Unique among the records, not checked
    against the repository, which the generator never reads: git wrote a 7-digit form unique when it wrote it. The one
    rule the history across commits (`commit_history.points`), `@COMMIT` and `HASH@COMMIT` read commits by."""
    ids = sorted({c for c in commits if c is not None and HEX.fullmatch(c)})
    out = {}
    for i, short in enumerate(ids):
        longer = ids[i + 1 : bisect.bisect_left(ids, short + "g")]  # sorted: the forms it begins follow it ("g" > hex)
        ends = [c for j, c in enumerate(longer) if not (j + 1 < len(longer) and longer[j + 1].startswith(c))]
        if len(short) >= ABBREVIATED and len(ends) == 1:
            out[short] = ends[0]
    return out


def commits(runs: pl.DataFrame) -> list[list[str]]:
    """The harness commits the runs were made at, each as the forms it is recorded in (a full id and the abbreviations
    of it that older records carry are one commit, `full_commits`), longest form first, newest commit last."""
    order = (
        runs.filter(pl.col("harness_commit").is_not_null())
        .group_by("harness_commit")
        .agg(pl.col("started_at").max())
        .sort("started_at", "harness_commit")
    )
    full = full_commits(order["harness_commit"])
    groups: dict[str, list[str]] = {}
    for commit in sorted(order["harness_commit"], key=len, reverse=True):
        groups.setdefault(full.get(commit, commit), []).append(commit)
    last = dict(order.iter_rows())
    return sorted(groups.values(), key=lambda g: max(str(last[c]) for c in g))


def matching(prefix: str, runs: pl.DataFrame) -> list[list[str]]:
    """The commits (as `commits` groups them) that `prefix` names: the one with a recorded form equal to it, else each
    it begins, or an abbreviated form it extends that no recorded full id does (a record that names `fa4a5bb` was made
    at `fa4a5bb4…` when nothing recorded says otherwise)."""
    p = prefix.lower()
    if not HEX.fullmatch(p):
        return []
    groups = commits(runs)
    exact = [g for g in groups if p in g]
    if exact:
        return exact
    forms = [c for g in groups for c in g]
    return [
        g
        for g in groups
        if g[0].startswith(p)
        or (len(g[0]) >= ABBREVIATED and p.startswith(g[0]) and not any(c.startswith(g[0]) for c in forms if c != g[0]))
    ]


def runs_at(group: list[str], runs: pl.DataFrame) -> pl.DataFrame:
    """The runs made at one commit (every recorded form of it), less retractions (not measurements)."""
    return runs.filter(pl.col("harness_commit").is_in(group) & (pl.col("origin") != "retraction"))


def shared(runs: pl.DataFrame) -> list[tuple[list[str], list[str], int]]:
    """Every pair of commits (as `commits` groups them, older first) that measured at least one configuration (suite,
    workload, settings hash) in common, with how many: the rows `compare @A @B` has. Two commits that share none give
    an empty comparison, as most pairs do where each commit measured its own sweep."""
    groups = commits(runs)
    measured = [set(runs_at(g, runs).drop_nulls(configurations.KEYS).select(configurations.KEYS).iter_rows())
                for g in groups]  # fmt: skip
    return [
        (groups[i], groups[j], len(measured[i] & measured[j]))
        for i in range(len(groups))
        for j in range(i + 1, len(groups))
        if measured[i] & measured[j]
    ]


def label(group: list[str], runs: pl.DataFrame) -> str:
    at = runs_at(group, runs)
    configurations = at.select("settings_hash").n_unique()
    days = sorted({str(s)[:10] for s in at["started_at"].drop_nulls()})
    when = f"{days[0]} to {days[-1]}" if len(days) > 1 else (days[0] if days else "no date")
    return f"commit {group[0][:12]}  ({at.height} runs of {configurations} configurations, {when})"


def listing(prefix: str, matches: Iterable[tuple[str, str]], limit: int = 3) -> str:
    """`prefix` is ambiguous: how many of each kind it matches, with the first few of each, on one line."""
    kinds: dict[str, list[str]] = {}
    for what, key in matches:
        kinds.setdefault(what, []).append(key)
    parts = []
    for what, keys in kinds.items():
        shown = ", ".join(keys[:limit]) + (f", … ({len(keys) - limit} more)" if len(keys) > limit else "")
        parts.append(f"{len(keys)} {what}{'s' * (len(keys) > 1)} ({shown})")
    if not prefix:
        return "an empty selector names everything: give a run id, a configuration hash, @COMMIT or edition:NAME"
    return f"{prefix!r} is ambiguous: it begins {'; '.join(parts)}; give more of it"


@dataclass(frozen=True, slots=True)
class Comparable:
    """The harness commits of a data set and the pairs of them that measured a configuration in common: what the
    "Comparable commits" page shows (`Results.comparable`), from the functions `compare --list` prints from."""

    commits: list[tuple[str, str]]
    """(the commit's longest recorded form, `label`), oldest first."""
    pairs: list[tuple[str, str, int]]
    """(older commit, newer commit, configurations in common), as `shared` gives them."""
    possible: int
    """How many pairs the commits make."""


def comparable(runs: pl.DataFrame) -> Comparable:
    """`Comparable` of one row per run (`Results.every_run.runs`, what `compare` selects from)."""
    groups = commits(runs)
    return Comparable(
        commits=[(g[0], label(g, runs)) for g in groups],
        pairs=[(a[0], b[0], n) for a, b, n in shared(runs)],
        possible=len(groups) * (len(groups) - 1) // 2,
    )
