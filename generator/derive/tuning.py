"""What tuning bought: the ladder from stock to the best tuned configuration of the seed's fight, one rung per
configuration in the suite file's order (and, between two of them, a rung per configuration that runs measured on the
way, a few settings at a time), at each micro-batch measured, each with the settings it changed over the rung below,
its figure, what it bought over the rung below and over stock (ratios with 95% intervals, `metrics.ratio_interval`, of
the points' intervals, which hold the between-run spread as a board row's do) and its steady-state memory. Pure: the
sweep's points (`verdict.sweep`, as `sweep_draws.compute` returns them) in, plain rows out; no template, no chart, so
that it can move into generator/derive/ whole."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

import generator.derive.configurations as configurations
import generator.derive.verdict as verdict
from runners import metrics, schema

COLUMNS = ("label", "variant", "tier", "micro_batch", "steps_per_s", "steps_per_s_lo", "steps_per_s_hi",
           "peak_mem_gib", "peak_mem_steady_gib", "runs", "run_ids")  # fmt: skip
"""What a rung reads from a sweep point."""


def effect(base: dict[str, Any] | None, row: dict[str, Any]) -> dict[str, Any] | None:
    """row ÷ base in steps/s with its 95% interval and what the interval settles ("faster", "slower", or "not
    settled" where it holds 1); None without a base or where either figure lacks a usable interval (an unreplicated
    run has none: nothing says where its second run would land)."""
    if base is None or base is row:
        return None
    a, a_lo, a_hi = base["steps_per_s"], base["steps_per_s_lo"], base["steps_per_s_hi"]
    b, b_lo, b_hi = row["steps_per_s"], row["steps_per_s_lo"], row["steps_per_s_hi"]
    if None in (a, a_lo, a_hi, b, b_lo, b_hi) or not (0 < a_lo <= a <= a_hi and 0 < b_lo <= b <= b_hi):
        return None
    ratio, lo, hi = metrics.ratio_interval(a, a_lo, a_hi, b, b_lo, b_hi)
    settled = "faster" if lo > 1 else "slower" if hi < 1 else "not settled"
    return {"ratio": ratio, "lo": lo, "hi": hi, "settled": settled, "over": base["label"]}


def ladder(points: pl.DataFrame, order: Sequence[str], between: pl.DataFrame | None = None) -> list[dict[str, Any]]:
    """Per micro-batch measured (ascending), the rungs: every configuration (`label`) of the variants in `order` (the
    suite file's order: stock first, each next variant adding what its description says), in that order, with the
    measured configurations of `between` (sweep points of runs that changed settings, `name[key=value]`) that climb
    from one rung to the next a few settings at a time set between them (`_climb`), and with `changes` (what this rung
    changed over the rung below: `configurations.changed`, empty for the first), `over_previous` (this rung ÷ the
    rung below) and `over_stock` (÷ the stock rung at the same micro-batch, the first rung of tier "stock"), each
    `effect` or None, and `memory_ratio` (`memory_ratio`: steady-state memory ÷ stock's). A variant outside `order`
    goes last, by name."""
    if not points.height:
        return []
    rank = {name: i for i, name in enumerate(order)}
    rows = _rows(points).with_columns(
        order=pl.col("variant").replace_strict(rank, default=len(rank), return_dtype=pl.Int64)
    )
    steps = _rows(between) if between is not None and between.height else None
    out = []
    for (micro_batch,), group in rows.sort("micro_batch").group_by("micro_batch", maintain_order=True):
        pinned = group.sort("order", "variant", "label").drop("order").to_dicts()
        options = [] if steps is None else steps.filter(pl.col("micro_batch") == micro_batch).sort("label").to_dicts()
        rungs = pinned[:1]
        for lower, upper in itertools.pairwise(pinned):
            rungs += [*_climb(lower, upper, options), upper]
        stock = next((r for r in rungs if r["tier"] == "stock"), None)
        previous = None
        for rung in rungs:
            memory = memory_ratio(stock, rung)
            out.append(rung | {"micro_batch": micro_batch, "changes": _changes(previous, rung),
                               "over_previous": effect(previous, rung), "over_stock": effect(stock, rung),
                               "memory_ratio": memory})  # fmt: skip
            previous = rung
    return out


def _rows(points: pl.DataFrame) -> pl.DataFrame:
    """What a rung reads of sweep points (`COLUMNS`), with `curve_settings` (null where the points lack it)."""
    if "curve_settings" not in points.columns:
        points = points.with_columns(curve_settings=pl.lit(None, dtype=pl.String))
    return points.select(*COLUMNS, "curve_settings")


def _changes(lower: dict[str, Any] | None, upper: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    if lower is None or lower["curve_settings"] is None or upper["curve_settings"] is None:
        return []
    return configurations.changed(lower["curve_settings"], upper["curve_settings"])


def _climb(lower: dict[str, Any], upper: dict[str, Any], options: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The measured configurations between two rungs, one setting (or the fewest) at a time: each next one changes
    more of the settings `upper` changes over `lower`, every one of them to `upper`'s value, and nothing else, and
    is neither rung (`options`: the sweep points of runs that changed settings, at the rungs' micro-batch). Where
    none was measured the two rungs stay next to each other: a rung is never made up."""
    wanted = {key: after for key, _, after in _changes(lower, upper)}
    if not wanted:
        return []
    done: set[str] = set()
    climbed: list[dict[str, Any]] = []
    while True:
        fits: list[tuple[int, str, dict[str, Any], set[str]]] = []
        for option in options:
            moved = {key: after for key, _, after in _changes(lower, option)}
            if done < set(moved) < set(wanted) and all(wanted[key] == value for key, value in moved.items()):
                fits.append((len(moved), option["label"], option, set(moved)))
        if not fits:
            return climbed
        _, _, step, done = min(fits, key=lambda fit: fit[:2])  # the fewest settings more, then by name
        climbed.append(step)


def memory_ratio(base: dict[str, Any] | None, row: dict[str, Any]) -> float | None:
    """row's steady-state device memory (`peak_mem_steady_gib`: the peak over the steady steps, without the warm-up's
    compilation transient) ÷ base's; None where either lacks it. The whole-run peak is not divided: a compiled
    variant's step-0 transient would make the ratio about compilation, not about what the setting holds."""
    if base is None or not base.get("peak_mem_steady_gib") or row.get("peak_mem_steady_gib") is None:
        return None
    return float(row["peak_mem_steady_gib"]) / float(base["peak_mem_steady_gib"])


UNDECIDED = "undecided"
"""What the fastest figure is called where its interval does not settle it over every other rung."""


def best_per_micro_batch(rungs: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """The fastest rung at each micro-batch (by its figure), the end of that micro-batch's ladder, with `fastest`:
    "fastest" where its `effect` over every other rung of that micro-batch is settled "faster", else `UNDECIDED`, and
    `undecided_with`: the labels of the rungs it is not settled over (none settles which of them is fastest)."""
    best: dict[int, dict[str, Any]] = {}
    for rung in rungs:
        mb = rung["micro_batch"]
        if rung["steps_per_s"] is not None and (mb not in best or rung["steps_per_s"] > best[mb]["steps_per_s"]):
            best[mb] = rung
    out: dict[int, dict[str, Any]] = {}
    for mb, top in best.items():
        others = [r for r in rungs if r["micro_batch"] == mb and r is not top and r["steps_per_s"] is not None]
        open_ = [r["label"] for r in others if (e := effect(r, top)) is None or e["settled"] != "faster"]
        out[mb] = top | {"fastest": UNDECIDED if open_ else "fastest", "undecided_with": open_}
    return out


@dataclass(frozen=True)
class Tuning:
    """The "What tuning bought" page's figures: the seed's fight (None without it), its rungs by micro-batch, the best
    rung at each, and each variant's description in the suite's words."""

    fight: Any
    ladders: dict[int, list[dict[str, Any]]]
    best: dict[int, dict[str, Any]]
    described: dict[str, str]
    singles: list[dict[str, Any]]
    """One setting at a time: each run of the fight's suite that changed one setting, over its base
    (`single_settings.rows`)."""


def tuning(the_verdict: Any, summary: pl.DataFrame, singles: list[dict[str, Any]]) -> Tuning:
    """The ladder from stock to the best tuned configuration at each micro-batch of the verdict's sweep
    (`verdict.Verdict`: its fight and sweep points), from the committed runs (`summary`: one row per run), and the
    single-setting rows of the fight's suite (`singles`: `single_settings.rows`)."""
    if the_verdict is None:
        return Tuning(None, {}, {}, {}, [])
    fight = the_verdict.fight
    order = list((schema.suite_workloads(fight.suite).get(fight.workload) or {}).get("variants") or [])
    between = verdict.changed_sweep(summary, fight, the_verdict.spreads)
    rungs = ladder(the_verdict.points, order, between)
    named = summary.filter((pl.col("suite") == fight.suite) & pl.col("variant_description").is_not_null())
    described = dict(named.sort("started_at").select("variant", "variant_description").iter_rows())
    by_mb: dict[int, list[dict[str, Any]]] = {}
    for rung in rungs:
        by_mb.setdefault(rung["micro_batch"], []).append(rung)
    mine = [r for r in singles if r["suite"] == fight.suite]
    return Tuning(fight, by_mb, best_per_micro_batch(rungs), described, mine)
