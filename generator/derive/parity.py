"""Loss parity: each training run's loss curve against its baseline's (the same start, the same data, a curve within
tolerance) and against the full-length stock run's over the whole run, and how its same work was established
(`same_work`). The curves are each run's own (`loss_curves`: trial 0's first loss and steady-window means).

Every formula comes from `runners.metrics`; this module only groups, joins and orders.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

import polars as pl

import generator.derive.counting as counting
import generator.load.columns as columns
from runners import metrics, schema


@dataclass(frozen=True, slots=True)
class Curve:
    """A run's loss curve as parity compares it: trial 0's first loss and its steady windows' mean losses."""

    first: float
    windows: list[float]


def loss_curves(runs: pl.DataFrame, rows: pl.DataFrame) -> dict[str, Curve]:
    """Trial 0's first loss and steady-window mean losses per run: `metrics.window_means` of the losses after the
    warm-up, computed for every run in one polars pass (the same complete windows of consecutive steps)."""
    losses = (
        rows.lazy()
        .filter(pl.col("metric") == "loss", pl.col("trial") == 0)
        .join(runs.lazy().select("run_id", "warmup_steps", "window_steps"), on="run_id")
        .sort("run_id", "step")
        .with_columns(pos=pl.int_range(pl.len()).over("run_id"))
    )
    first = losses.group_by("run_id").agg(first=pl.col("value").first())
    windows = (
        losses.filter(pl.col("pos") >= pl.col("warmup_steps"))
        .with_columns(window=(pl.col("pos") - pl.col("warmup_steps")) // pl.col("window_steps"))
        .group_by("run_id", "window")
        .agg(mean=pl.col("value").sum() / pl.len(), n=pl.len(), size=pl.col("window_steps").first())
        .filter(pl.col("n") == pl.col("size"))
        .sort("run_id", "window")
        .group_by("run_id", maintain_order=True)
        .agg(pl.col("mean"))
    )
    curves = first.join(windows, on="run_id", how="left").collect()
    return {run_id: Curve(f, list(means or [])) for run_id, f, means in curves.iter_rows()}


def loss_parity(runs: pl.DataFrame, rows: pl.DataFrame, curves: dict[str, Curve] | None = None) -> pl.DataFrame:
    """Each measured run's loss against its baseline: the run of the workload's first variant with the same
    accelerator, device count and micro-batch that has the most steady loss windows, the latest of those (null
    where there is none). A baseline stopped by its time budget still counts: the stock fp32 run rarely finishes
    2000 steps, and the comparison covers the windows both runs have. Over the whole run, each run is also held
    against the latest full-length run of the first stock variant the suite lists on the same key
    (`whole_run_baseline`: bf16 DDP on the seed's workloads), by the mean window gap (`metrics.loss_parity_whole`).

    The same work comes first: a baseline has the workload's seed (as its suite file says it now) and, where one
    has hashes, is such a run; a run with another seed, other recipes, or hashes that differ from its baseline's
    fails parity with that reason, whatever its loss says (`_same_work`). `same_work` says how it was
    established. `curves`: the runs' `loss_curves`, when already worked out."""
    curves = loss_curves(runs, rows) if curves is None else curves
    windows = pl.DataFrame(
        [(r, len(c.windows)) for r, c in curves.items()],
        schema={"run_id": pl.String, "loss_windows": pl.Int64},
        orient="row",
    )
    seeds = _workload_seeds(runs)
    runs = runs.with_columns(
        hashed=pl.col("data_sha256").is_not_null() & pl.col("weights_sha256").is_not_null(),
        workload_seed_ok=pl.col("run_id").replace_strict(seeds, default=True, return_dtype=pl.Boolean),
    )
    with_windows = runs.join(windows, on="run_id")
    paired = runs.join(_parity_baselines(with_windows), on=_PARITY_KEYS, how="left", nulls_equal=True).join(
        _whole_run_baselines(with_windows), on=_PARITY_KEYS, how="left", nulls_equal=True
    )
    held = functools.partial(
        _parity_row,
        curves=curves,
        work={r[0]: r[1:] for r in runs.select(*_WORK_COLUMNS).iter_rows()},
        precision=dict(runs.select("run_id", "compute_precision").iter_rows()),
        optimizer=dict(runs.select("run_id", "optimizer_settings").iter_rows()),
        seeds=seeds,
    )
    out = [held(*row) for row in paired.select("run_id", "baseline_run", "whole_baseline").iter_rows()]
    return pl.DataFrame(out, schema=_PARITY_SCHEMA, orient="row")


_PARITY_KEYS = ["suite", "workload", "accelerator", "accelerator_count", "micro_batch"]
"""A run and its parity baselines share these."""

_PARITY_SCHEMA = {
    "run_id": pl.String,
    "parity_baseline": pl.String,
    "loss_first_gap": pl.Float64,
    "loss_max_rel_gap": pl.Float64,
    "loss_parity_tol": pl.Float64,
    "whole_run_baseline": pl.String,
    "loss_mean_rel_gap": pl.Float64,
    "loss_mean_rel_tol": pl.Float64,
    "loss_parity_ok": pl.Boolean,
    "parity_problem": pl.String,
    "same_work": pl.String,
}
"""`loss_parity`'s frame, one row per run."""


def _parity_baselines(runs: pl.DataFrame) -> pl.DataFrame:
    """`baseline_run` per key: the workload's first variant's run with the most steady loss windows (the latest of
    those), one with hashes first (the proof needs both)."""
    return (
        runs.filter(
            (pl.col("variant") == pl.col("baseline_variant"))
            & pl.col("retracted_by").is_null()
            & pl.col("status").is_in(["ok", "timeout"])
            & counting.MEASURED
            & (pl.col("loss_windows") > 0)
            & pl.col("workload_seed_ok")
        )
        # a baseline with hashes first (the proof needs both); runs that started at once, by id: a file added
        # elsewhere never changes which of them is a run's baseline (nor so every page that names it)
        .sort("hashed", "loss_windows", "started_at", "run_id")
        .group_by(_PARITY_KEYS)
        .agg(baseline_run=pl.col("run_id").last())
    )


def _whole_run_baselines(runs: pl.DataFrame) -> pl.DataFrame:
    """`whole_baseline` per key: the latest full-length run of the first stock variant the suite lists that has one
    on the key."""
    return (
        runs.filter(
            pl.col("full_length")
            & (pl.col("tier") == "stock")
            & pl.col("variant_order").is_not_null()
            & pl.col("retracted_by").is_null()
            & (pl.col("status") == "ok")
            & counting.MEASURED
            & (pl.col("loss_windows") > 0)
            & pl.col("workload_seed_ok")
        )
        .sort("variant_order", "started_at", "run_id", descending=[True, False, False])  # ties by id, as above
        .group_by(_PARITY_KEYS)
        .agg(whole_baseline=pl.col("run_id").last())
    )


def _parity_row(
    run_id: str,
    baseline: str | None,
    whole_run: str | None,
    *,
    curves: dict[str, Curve],
    work: dict[str, tuple[Any, ...]],
    precision: dict[str, Any],
    optimizer: dict[str, Any],
    seeds: dict[str, bool],
) -> tuple[object, ...]:
    """One run's row of `_PARITY_SCHEMA`: its loss against its baseline's, the same work, and its whole run against
    the full-length stock run's."""
    if baseline is None or run_id not in curves:
        return (run_id, baseline, None, None, None, None, None, None, None, None, None)
    run, base = curves[run_id], curves[baseline]
    tol = metrics.loss_parity_tolerance(precision[run_id], precision[baseline])
    first_gap, rel, ok = metrics.loss_parity(run.first, base.first, run.windows, base.windows, tol)
    problem, same_work = _same_work(work[run_id], work[baseline], run_id == baseline, seeds.get(run_id, True))
    if problem is None and optimizer[run_id] and optimizer[baseline] and optimizer[run_id] != optimizer[baseline]:
        problem = (
            f"other optimizer settings than the baseline's ({' '.join(columns.OPTIMIZER_KEYS)}: "
            f"{optimizer[run_id]} against {optimizer[baseline]})"
        )
    # over the whole run, against a full-length stock run (the fp32 baseline above stops on its time budget)
    mean_gap = None
    if whole_run is not None and whole_run != run_id and curves[whole_run].windows:
        mean_gap, whole_ok = metrics.loss_parity_whole(run.windows, curves[whole_run].windows)
        if problem is None and not whole_ok:
            problem = (
                f"loss drifts from the full-length stock run's over the whole run (mean window gap "
                f"{mean_gap:.2%}, tolerance {metrics.LOSS_PARITY_MEAN_REL_TOL:.0%})"
            )
    whole_tol = None if mean_gap is None else metrics.LOSS_PARITY_MEAN_REL_TOL
    return (run_id, baseline, first_gap, rel, tol, whole_run, mean_gap, whole_tol, ok and problem is None, problem,
            same_work)  # fmt: skip


_WORK_COLUMNS = ("run_id", "work_recipe", "state_sha256", "weights_sha256", "data_sha256", "hashes_from",
                 "steps_requested")  # fmt: skip
"""What a run says of its work: its recipe (seed, data and initial-weights recipes) and its hashes."""


def _workload_seeds(runs: pl.DataFrame) -> dict[str, bool]:
    """Per run, whether its seed is its workload's as the suite file defines it now (True where no suite file defines
    the workload: then there is nothing to hold it to)."""
    out = {}
    for run_id, suite, workload, recipe in runs.select("run_id", "suite", "workload", "work_recipe").iter_rows():
        defined = schema.suite_workloads(suite).get(workload)
        if defined is not None and recipe is not None:
            out[run_id] = json.loads(recipe).get("seed") == defined["seed"]
    return out


def _same_work(mine: tuple, theirs: tuple, is_baseline: bool, seed_ok: bool) -> tuple[str | None, str]:
    """(why the run did not do its baseline's work or None, how its same work was established). A run and its
    baseline must state the same seed and recipes, the workload's seed, and equal hashes of each kind both carry
    (the data hash covers the steps a run asked for: it is compared between runs asking for as many)."""
    recipe, state, weights, data, source, steps = mine
    b_recipe, b_state, b_weights, b_data, b_source, b_steps = theirs
    if not seed_ok:
        return f"another seed than its workload's ({recipe})", "not the same work"
    if recipe != b_recipe:
        return f"other work than the baseline's (seed and recipes {recipe} against {b_recipe})", "not the same work"
    pairs = [("initial weights", state, b_state), ("initial weights", weights, b_weights)]
    pairs += [("data", data, b_data)] if steps == b_steps else []
    for what, a, b in pairs:
        if a and b and a != b:
            return f"other {what} than the baseline's (sha256 {a[:12]} against {b[:12]})", "not the same work"
    if is_baseline:
        return None, "the baseline itself"
    compared = [what for what, a, b in pairs if a and b]
    if "data" in compared and "initial weights" in compared:
        if source == b_source == "fed":
            return None, "proven: the hashes of the weights and tokens it fed its model equal the baseline's"
        return None, (
            "by hashes of its spec: its initial-weights file and a token stream recomputed from its seed hash as the "
            "baseline's (records of 2026-12-01 hashed those, not what the process fed its model)"
        )
    return None, (
        "by record: the same seed and recipes as the baseline and a loss curve within tolerance; no hashes of "
        + ("its tokens " if "initial weights" in compared else "its weights and tokens ")
        + "to compare (records before 2026-12-01 carry none)"
    )
