"""The interval step of the one evidence mechanism (identity → per-run figure → between-run spread → interval →
agreement → rank → decision): how a configuration's runs become one figure's 95% interval, for every board row
(`configurations.rows`, `ladder.rows`) and for each side of `compare`, so that a run shows one interval wherever it
is printed.

The formula is `metrics.repeat_interval`; what this module adds is the rules around it, in one place:
- a run whose own interval is wider than its figure (`metrics.wider_than_figure`) measured no steady state: its
  own interval is left out (it would reach below zero for a rate), and it is flagged (`Interval.flagged`);
- a configuration of one run whose engine has no pooled spread of its kind on its hardware is unreplicated: no
  between-run interval (on a board; `board=False` keeps the run's own span, for a unit test of other rules);
- no interval of zero width (`metrics.with_width`).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from runners import metrics

RUNS_TO_RANK = 2
"""Runs of one configuration that rank on a board where its engine has repeated nothing else on that hardware: one
run alone is unreplicated (`interval`), so a Reproduce block asks for this many (generator/render/runs.py)."""
FLAGGED = "its own interval is wider than its figure (no steady state measured): flagged, its span left out"
"""What a run flagged by `metrics.wider_than_figure` is said to be."""
SPREAD_KEYS = ("engine", "kind", "accelerator", "accelerator_count")
"""What a pooled between-run spread is of (`spreads`): one engine's runs of one kind of test on one hardware."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Interval:
    """One configuration's figure and 95% interval, as every page and command shows it."""

    value: float | None
    """The median of its runs' figures."""
    lo: float | None
    hi: float | None
    """Null where there is none (unreplicated, one measurement, no figure): never lo = hi."""
    unreplicated: bool
    """One run and no between-run spread of its engine's on its hardware: nothing says where a second run lands."""
    flagged: int
    """How many of its runs had an own interval wider than their figure (left out of the span)."""


def interval(
    figures: Sequence[float | None],
    own: Sequence[tuple[float | None, float | None, float | None]],
    spread: metrics.PooledSpread | None,
    *,
    board: bool = True,
) -> Interval:
    """A configuration's figure and interval from its runs' `figures` and every run's own (figure, lo, hi) in `own`
    (its runs', and any other measurement its interval must not exclude: a run stopped by its time budget as
    (x, x, x)), with its engine's pooled between-run spread of its kind on its hardware (`spread`, or None)."""
    values = [x for x in figures if x is not None]
    kept: list[tuple[float | None, float | None]] = []
    flagged = 0
    for x, lo, hi in own:
        if metrics.wider_than_figure(x, lo, hi):
            flagged += 1
            kept.append((None, None))
        else:
            kept.append((lo, hi))
    if not values:
        return Interval(value=None, lo=None, hi=None, unreplicated=False, flagged=flagged)
    value = statistics.median(values)
    alone = spread is None and len(values) == 1 and len(own) <= 1
    if alone and board:
        return Interval(value=value, lo=None, hi=None, unreplicated=True, flagged=flagged)
    lo, hi = metrics.with_width(*metrics.repeat_interval(values, kept, spread))
    return Interval(value=value, lo=lo, hi=hi, unreplicated=False, flagged=flagged)


def spreads(
    test_spreads: Mapping[tuple[str, str, str, int], metrics.PooledSpread],
    training_steady: Mapping[tuple[str, str, int], metrics.PooledSpread],
) -> dict[tuple[object, ...], metrics.PooledSpread]:
    """Every pooled between-run spread by `SPREAD_KEYS`: the inference and serving tests' (`Results.test_spreads`) and
    training's of steady steps/s (`Results.training_spreads["steady"]`, by engine and hardware; its kind "train"). What
    `of_runs` widens a set of runs by, for `compare`'s sides and the history's commits alike."""
    out: dict[tuple[object, ...], metrics.PooledSpread] = dict(test_spreads.items())
    out |= {(engine, "train", acc, count): s for (engine, acc, count), s in training_steady.items()}
    return out


def of_runs(
    counted: pl.DataFrame,
    spreads: Mapping[tuple[object, ...], metrics.PooledSpread],
    columns: tuple[str, str, str] = ("value", "lo", "hi"),
) -> tuple[Interval, metrics.PooledSpread | None]:
    """The figure and interval of `counted` (runs that count, of one configuration of one engine, kind of test and
    hardware, with their figure, lo and hi in `columns`), widened by the pooled spread (`spreads`, by `SPREAD_KEYS`)
    of their engine and kind on their hardware, and that spread: one side of `fairfight compare`, and one commit of a
    configuration's history (`commit_history.points`), so that both print one interval for one set of runs."""
    if counted.select(SPREAD_KEYS).n_unique() != 1:
        raise AssertionError(f"one interval pools runs of {counted.select(SPREAD_KEYS).n_unique()} engines or hardware")
    first = counted.row(0, named=True)
    spread = spreads.get(tuple(first[k] for k in SPREAD_KEYS))
    own = list(counted.select(*columns).iter_rows())
    return interval([x for x, _, _ in own], own, spread), spread


FloorKey = tuple[str, str, int, bool]
"""What a kind's A/A floor is of (`Results.kind_floors`): kind of test, accelerator, count, shared host."""


def aa_floor(
    counted: pl.DataFrame,
    run_floors: Mapping[str, float],
    kind_floors: Mapping[FloorKey, float],
    side: str,
    own: str | None = None,
) -> tuple[float, str]:
    """The A/A spread of one side's counted runs (run_id, kind, accelerator, accelerator_count, shared_host) and what
    it is: of the repeats they belong to (`run_floors`, `EveryRun.run_floors`: runs of one configuration at one harness
    commit), else the largest of their kind on their hardware and host condition (`kind_floors`), else none measured
    (0). `side` names them in the basis; `own` says what their own repeats are, where `side` says it already."""
    mine = [run_floors[r] for r in counted["run_id"] if r in run_floors]
    if mine:
        return max(mine), own or f"the spread of {side}'s repeats at its commit"
    kinds = counted.select("kind", "accelerator", "accelerator_count", pl.col("shared_host").fill_null(False)).unique()
    found = [(kind_floors[k], k) for k in kinds.iter_rows() if k in kind_floors]  # keys as `runs.floors` makes them
    if found:
        spread, (kind, acc, count, shared) = max(found)
        where = f"{kind} on {count} × {acc}{', shared host' * shared}"
        return spread, f"the largest spread of repeats at one commit of {where} ({side} has none)"
    kind, acc, count, _ = kinds.row(0)
    return 0.0, f"none: no repeats at one commit of {kind} on {count} × {acc} measured, so no floor"


def pair_floor(
    a: pl.DataFrame, b: pl.DataFrame, run_floors: Mapping[str, float], kind_floors: Mapping[FloorKey, float]
) -> tuple[float, str]:
    """The floor a difference between sides A and B is held to (`metrics.compare_verdict`): the larger of the two
    sides' `aa_floor`, with its basis. `compare` and each run page's history across commits decide by it."""
    return max(aa_floor(a, run_floors, kind_floors, "A"), aa_floor(b, run_floors, kind_floors, "B"),
               key=lambda f: f[0])  # fmt: skip
