"""What a single setting bought: every measured training run that changed one or a few settings of a suite's variant
(`--set key=value`, which names the run `variant[key=value]`, or an environment variable a sweep set, `env_changes`),
set over its base (the variant as the suite file writes it, at the same workload, micro-batch, hardware, device count
and steps, from the same harness commit where one ran there), with the ratio and its 95% interval
(`tuning.effect`, `metrics.ratio_interval`) and its steady-state memory against the base's (`tuning.memory_ratio`).
Each run's interval is the one its board row would have alone (`evidence.interval`, with its engine's pooled
between-run spread on its hardware and device count, `configurations.pooled_spreads`): a run's own interval holds only
its windows, and two runs of identical settings move further apart than that. A run whose engine has no such spread
is unreplicated: no interval, so no effect is claimed. Pure: the summary and the spreads in, plain rows out.
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl

import generator.derive.counting as counting
import generator.derive.evidence as evidence
import generator.derive.tuning as tuning
from runners import metrics

PLACEMENT = ("CUDA_VISIBLE_DEVICES=", "HIP_VISIBLE_DEVICES=", "ROCR_VISIBLE_DEVICES=")
"""Environment changes that say which devices ran, not how: never a setting."""

SHAPE = ["suite", "workload", "micro_batch", "accelerator", "accelerator_count", "steps_requested"]
"""What a change and its base share."""

_BETWEEN = re.compile(r",(?=[A-Za-z_][A-Za-z0-9_.]*=)")


def _counted(summary: pl.DataFrame) -> pl.DataFrame:
    """Measured, unretracted, finished, verified training runs with a figure and interval."""
    training = pl.col("kind").is_null() | (pl.col("kind") == "train")
    return summary.filter(
        training
        & counting.STANDING
        & (pl.col("status") == "ok")
        & pl.col("unverified").is_null()
        & pl.col("steps_per_s_lo").is_not_null()
    )


def _changes(variant: str, env: str | None) -> tuple[str, str]:
    """(base variant, what changed as `key=value, KEY=VALUE` text) from a run's variant name and env changes."""
    base, _, rest = variant.partition("[")
    settings = _BETWEEN.sub(", ", rest[:-1]) if rest.endswith("]") else ""
    envs = [e for e in (env or "").split() if not e.startswith(PLACEMENT)]
    return base, ", ".join(part for part in (settings, *envs) if part)


STATUS_WORDS = {"failed": "failed", "oom": "ran out of memory", "timeout": "timed out",
                "unsupported": "was unsupported"}  # fmt: skip
"""How a base run that ended without a figure ended, as the "no base" reason says it."""


def _counted_runs(n: int) -> str:
    return "one run" if n == 1 else f"{n} runs"


def no_base(change: dict[str, Any], tried: list[dict[str, Any]]) -> str:
    """Why a change has no base, naming what is missing (the page's "no base: …"): `tried` are every training run of
    the base variant unchanged on the change's suite, workload, hardware and device count, counted or not. In order:
    the base never ran there; it ran there only at other micro-batches; it ran at this micro-batch only at other
    lengths (the base must match the change's steps: a figure's warm-up share and window count depend on it); or its
    runs of this shape did not count (how each ended)."""
    base, mb, steps = change["base_variant"], change["micro_batch"], change["steps_requested"]
    where = f"{change['workload']} on {change['accelerator_count']} × {change['accelerator']}"
    if not tried:
        return f"{base} never ran on {where}"
    at_mb = [r for r in tried if r["micro_batch"] == mb]
    if not at_mb:
        others = ", ".join(str(m) for m in sorted({r["micro_batch"] for r in tried if r["micro_batch"] is not None}))
        return f"no {base} run at micro-batch {mb} on {where}: it ran at micro-batch {others}"
    same = [r for r in at_mb if r["steps_requested"] == steps]
    if not same:
        lengths = sorted({r["steps_requested"] for r in at_mb if r["steps_requested"] is not None})
        counts = [f"{sum(r['steps_requested'] == n for r in at_mb)} of {n} steps" for n in lengths]
        return (f"no {base} run of this length ({steps} steps) at micro-batch {mb}: its {_counted_runs(len(at_mb))} "
                f"there are {_listed(counts)}")  # fmt: skip
    ended = [_why_not_counted(r) for r in same]
    said = _listed([f"{ended.count(w)} {w}" if len(same) > 1 else w for w in dict.fromkeys(ended)])
    return f"its {_counted_runs(len(same))} of this shape ({steps} steps, micro-batch {mb}) {said}"


def _why_not_counted(run: dict[str, Any]) -> str:
    """Why a base run of the change's shape is not a base (`_counted`'s conditions, in its order)."""
    if run["origin"] != "measured":
        return f"is {run['origin']}, not measured"
    if run["retracted_by"] is not None:
        return "was retracted"
    if run["status"] != "ok":
        return STATUS_WORDS.get(str(run["status"]), f"ended {run['status']}")
    if run["unverified"] is not None:
        return "is unverified"
    return "has no interval"


def _listed(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _figure(run: dict[str, Any], spreads: dict[tuple[str, str, int], metrics.PooledSpread]) -> dict[str, Any]:
    """What `tuning.effect` reads of a run: its figure and the interval its board row would have alone
    (`evidence.interval` with its engine's spread on its hardware; null where it is unreplicated), and
    `unreplicated`."""
    x = run["steps_per_s"]
    spread = spreads.get((str(run.get("engine")), str(run["accelerator"]), int(run["accelerator_count"] or 0)))
    found = evidence.interval([x], [(x, run["steps_per_s_lo"], run["steps_per_s_hi"])], spread)
    return {"label": run["variant"], "steps_per_s": found.value, "steps_per_s_lo": found.lo,
            "steps_per_s_hi": found.hi, "unreplicated": found.unreplicated}  # fmt: skip


def rows(
    summary: pl.DataFrame, spreads: dict[tuple[str, str, int], metrics.PooledSpread] | None = None
) -> list[dict[str, Any]]:
    """One row per changed run (by suite file order of workloads as the summary has them, then micro-batch and
    change): its figure and interval (`_figure`: widened by `spreads`, `configurations.pooled_spreads` of steps/s, as a
    board row's), `base` (the base run's row, or None where none ran at its shape, with `no_base` saying why:
    `no_base`), `base_same_commit`, `effect`
    (`tuning.effect` of the change over its base) and `memory_ratio` (`tuning.memory_ratio`). A change measured at
    one shape only names in `not_measured_at` the micro-batches its base variant ran at on that workload and hardware
    without it."""
    spreads = spreads or {}
    for name, dtype in (("engine", pl.String), ("peak_mem_steady_gib", pl.Float64)):
        if name not in summary.columns:  # a summary of runs that never recorded it
            summary = summary.with_columns(pl.lit(None, dtype=dtype).alias(name))
    training = summary.filter(pl.col("kind").is_null() | (pl.col("kind") == "train"))
    parsed = [_changes(v, e) for v, e in training.select("variant", pl.col("env_changes")).iter_rows()]
    training = training.with_columns(
        base_variant=pl.Series([b for b, _ in parsed], dtype=pl.String),
        change=pl.Series([c for _, c in parsed], dtype=pl.String),
    ).sort("started_at", "run_id")
    runs = _counted(training)
    changed = runs.filter(pl.col("change") != "")
    bases = runs.filter(pl.col("change") == "")
    # every run of a base variant unchanged, counted or not: what a change without a base says of it (`no_base`)
    place = ["suite", "workload", "accelerator", "accelerator_count"]
    tried_of: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    asked = ["micro_batch", "steps_requested", "origin", "retracted_by", "status", "unverified"]
    for tried in training.filter(pl.col("change") == "").select(*place, "variant", *asked).iter_rows(named=True):
        tried_of.setdefault((*(tried[k] for k in place), tried["variant"]), []).append(tried)
    # each lookup below once as a dict (a filter of every base per changed run grows as runs times runs); a key
    # with a null never matches, as a filter on it would not
    near = [k for k in SHAPE if k not in ("micro_batch", "steps_requested")]
    kept = ["run_id", "variant", "engine", "accelerator", "accelerator_count", "harness_commit", "steps_per_s",
            "steps_per_s_lo", "steps_per_s_hi", "peak_mem_gib", "peak_mem_steady_gib"]  # fmt: skip
    same_shape_of: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    elsewhere_of: dict[tuple[Any, ...], set[Any]] = {}
    for base_run in bases.select(*dict.fromkeys([*SHAPE, *kept])).iter_rows(named=True):
        if None not in (key := (*(base_run[k] for k in SHAPE), base_run["variant"])):
            same_shape_of.setdefault(key, []).append(base_run)
        if None not in (key := (*(base_run[k] for k in near), base_run["variant"])):
            elsewhere_of.setdefault(key, set()).add(base_run["micro_batch"])
    measured_of: dict[tuple[Any, ...], set[Any]] = {}
    where = ["change", "base_variant", "workload", "accelerator_count"]
    for point in changed.select(*where, "micro_batch").iter_rows(named=True):
        if None not in (key := tuple(point[k] for k in where)):
            measured_of.setdefault(key, set()).add(point["micro_batch"])
    out = []
    for run in changed.iter_rows(named=True):
        same_shape = same_shape_of.get((*(run[k] for k in SHAPE), run["base_variant"]), [])
        same_commit = [b for b in same_shape if b["harness_commit"] == run["harness_commit"]]
        base = (same_commit or same_shape)[-1] if same_shape else None
        figure = _figure(run, spreads)
        base_figure = None if base is None else _figure(base, spreads)
        elsewhere = elsewhere_of.get((*(run[k] for k in near), run["base_variant"]), set())
        measured_at = measured_of.get(tuple(run[k] for k in where), set())
        memory = tuning.memory_ratio(base, run)
        out.append({
            "run_id": run["run_id"], "suite": run["suite"], "workload": run["workload"], "variant": run["variant"],
            "base_variant": run["base_variant"], "change": run["change"], "micro_batch": run["micro_batch"],
            "accelerator": run["accelerator"], "accelerator_count": run["accelerator_count"],
            "steps_requested": run["steps_requested"], "harness_commit": run["harness_commit"],
            "steps_per_s": figure["steps_per_s"], "steps_per_s_lo": figure["steps_per_s_lo"],
            "steps_per_s_hi": figure["steps_per_s_hi"], "unreplicated": figure["unreplicated"],
            "peak_mem_gib": run["peak_mem_gib"], "peak_mem_steady_gib": run["peak_mem_steady_gib"],
            "base": None if base is None or base_figure is None else {
                **{k: base[k] for k in ("run_id", "peak_mem_gib", "peak_mem_steady_gib", "harness_commit")},
                **{k: base_figure[k] for k in ("steps_per_s", "steps_per_s_lo", "steps_per_s_hi", "unreplicated")}},
            "base_same_commit": bool(same_commit),
            "effect": tuning.effect(base_figure, figure), "memory_ratio": memory,
            "not_measured_at": sorted(elsewhere - measured_at),
            "no_base": None if base is not None else no_base(
                run, tried_of.get((*(run[k] for k in place), run["base_variant"]), [])),
        })  # fmt: skip
    return sorted(out, key=lambda r: (r["suite"], r["workload"], r["accelerator_count"], r["micro_batch"],
                                      r["base_variant"], r["change"]))  # fmt: skip
