"""The verdict's resampling: draws of every sweep point's figure in each reading of steps/s, from what was measured.

Two stages, as the data were made (a hierarchical bootstrap; A. C. Davison and D. V. Hinkley, "Bootstrap Methods
and their Application", 1997, §3.8):

- **windows within a run**: each run's steady windows, resampled in blocks of consecutive windows (neighbouring
  windows are correlated: `metrics.block_resample`), give its figure again: the median window rate (steady state),
  or its warm-up plus the workload's other steps at the resample's mean step time (end to end,
  `metrics.end_to_end_steps_per_s`); a point's figure is the median over its runs;
- **between runs**: a point of one or two runs cannot be resampled over runs, so each draw moves the point by
  exp(s · T / √n), T from Student's t with the pooled spread's degrees of freedom (drawn as z / √(V/df), z normal
  and V chi-square) and s the between-run spread pooled over
  every group of identical settings on the hardware (`configurations.pooled_spreads`): the same spread and
  quantile as a board row's interval. The pooled spread is of runs' figures and so holds some window noise
  already: counted twice, it widens the interval, never narrows it.

The generator is seeded (`SEED`), so the same data always give the same draws and the same site.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np
import polars as pl

import generator.derive.configurations as configurations
import generator.derive.summaries as summaries
import generator.derive.verdict as verdict
import generator.store.runcache as runcache
from generator.derive.verdict.said import crossings
from runners import metrics

DRAWS = 4000
"""Resamples per point: the 2.5% and 97.5% quantiles of 4000 draws move by about 0.1% of a figure between seeds."""
SEED = 35
"""The resampling's seed: fixed, so that a site built twice from the same data is the same, byte for byte."""


def draws(
    points: pl.DataFrame,
    summary: pl.DataFrame,
    rows: pl.DataFrame,
    spreads: dict[str, configurations.Spreads],
    devices: int,
) -> dict[str, verdict.Draws]:
    """Per reading (`verdict.READINGS`) and point (curve, micro-batch) of the sweep (`verdict.sweep`), `DRAWS`
    resampled figures. `rows` are the loaded record rows (the runs' step times); `spreads` the pooled spreads per
    reading."""
    ids = sorted({r for ids in points["run_ids"] for r in ids})
    runs = summary.filter(pl.col("run_id").is_in(ids))
    # without their files' digests (a summary made by hand) nothing says the runs are the same: drawn, not kept
    inputs = _inputs(points, runs, spreads, devices) if "sha256" in runs.columns else None
    kept = RESAMPLES.read(inputs) if inputs is not None else None
    if kept is not None:
        return _unpacked(kept)
    rates = dict(summaries.window_rates(runs, rows.filter(pl.col("run_id").is_in(ids))).iter_rows())
    facts = {r[0]: r[1:] for r in runs.select("run_id", "workload_steps", "warmup_s", "warmup_steps").iter_rows()}
    rng = np.random.default_rng(SEED)
    out: dict[str, verdict.Draws] = {reading: {} for reading in verdict.READINGS}
    for row in points.sort("curve_hash", "micro_batch").iter_rows(named=True):
        steady, end_to_end = [], []
        for run_id in sorted(row["run_ids"]):
            resampled = metrics.block_resample(rates[run_id], DRAWS, rng)
            steady.append(np.median(resampled, axis=1))
            steps, warmup_s, warmup_steps = facts[run_id]
            if steps is not None and warmup_s is not None:
                step_s = np.mean(1 / resampled, axis=1)
                end_to_end.append(metrics.end_to_end_steps_per_s(steps, warmup_s, warmup_steps, step_s))
        key = (row["curve_hash"], row["micro_batch"])
        for reading, figures in (("steady", steady), ("end_to_end", end_to_end)):
            if len(figures) < len(row["run_ids"]):
                continue  # a run without a warm-up time has no end-to-end figure: nor has its point
            within = np.median(np.vstack(figures), axis=0)
            spread = spreads.get(reading, {}).get((row["engine"], row["accelerator"], devices))
            z = rng.standard_normal(DRAWS)
            # z / chi is Student's t with the pooled spread's degrees of freedom (its standard construction)
            chi = np.sqrt(rng.chisquare(spread.df, DRAWS) / spread.df) if spread else np.ones(DRAWS)
            out[reading][key] = verdict.PointDraws(
                within, z, chi, spread.sd if spread else 0.0, len(figures), spread.df if spread else 0
            )
    if inputs is not None:
        RESAMPLES.write(inputs, _packed(out))
    return out


RESAMPLES = runcache.Arrays("sweep-draws")
"""The draws of the last few sets of sweep runs (the resampling is seeded, so the same inputs give the same draws):
a build that adds a run elsewhere does not draw them again (drawing grows with the sweep's runs)."""


def _inputs(points: pl.DataFrame, runs: pl.DataFrame, spreads: dict[str, configurations.Spreads], devices: int) -> str:
    """Everything the draws are made from, as text: the points and their runs, each run's file (its sha256: its
    rows) and the summary figures the draws read, the pooled spreads of the points' hardware, the device count,
    `DRAWS` and `SEED`."""
    facts = runs.select("run_id", "sha256", "warmup_steps", "window_steps", "workload_steps", "warmup_s").sort("run_id")
    used = {(engine, accelerator, devices) for engine, accelerator in points.select("engine", "accelerator").rows()}
    shown = points.select("curve_hash", "micro_batch", pl.col("run_ids").list.sort(), "engine", "accelerator")
    return json.dumps(
        {
            "points": shown.sort("curve_hash", "micro_batch").rows(),
            "runs": facts.rows(),
            "spreads": {  # only those the points use: a run on other hardware changes none of the draws
                r: sorted([*k, v.sd, v.df, v.groups] for k, v in s.items() if k in used)
                for r, s in sorted(spreads.items())
            },
            "devices": devices,
            "draws": DRAWS,
            "seed": SEED,
        },
        default=str,
    )


def _packed(out: dict[str, verdict.Draws]) -> dict[str, np.ndarray]:
    """The draws as named arrays (`RESAMPLES`), their points and scalars in one JSON text."""
    arrays: dict[str, np.ndarray] = {}
    points = []
    for reading, draws_ in out.items():
        for i, ((curve, micro_batch), point) in enumerate(draws_.items()):
            points.append([reading, curve, micro_batch, point.sd, point.runs, i, point.df])
            for part in ("within", "z", "chi"):
                arrays[f"{reading}-{i}-{part}"] = np.asarray(getattr(point, part))
    arrays["points"] = np.array(json.dumps(points))
    return arrays


def _unpacked(kept: Mapping[str, np.ndarray]) -> dict[str, verdict.Draws]:
    """`_packed` read back."""
    out: dict[str, verdict.Draws] = {reading: {} for reading in verdict.READINGS}
    for reading, curve, micro_batch, sd, runs, i, *df in json.loads(str(kept["points"])):
        within, z, chi = (kept[f"{reading}-{i}-{part}"] for part in ("within", "z", "chi"))
        out[reading][(curve, micro_batch)] = verdict.PointDraws(within, z, chi, sd, runs, *df)
    return out


def compute(
    summary: pl.DataFrame,
    rows: pl.DataFrame,
    spreads: dict[str, configurations.Spreads] | None = None,
    leaderboards: Mapping[tuple[str, str], pl.DataFrame] | None = None,
) -> verdict.Verdict | None:
    """The verdict as the home page states it, derived once: the fight, its sweep points and the answer with every
    interval from the resamples; None without the seed's claims. `spreads`: the pooled spreads per reading
    (`configurations.pooled_spreads` of each `verdict.READINGS` column), computed here when not given."""
    the_fight = verdict.fight(summary)
    if the_fight is None:
        return None
    if spreads is None:
        spreads = {r: configurations.pooled_spreads(summary, column) for r, column in verdict.READINGS.items()}
    points = verdict.sweep(summary, the_fight, spreads)
    resampled = draws(points, summary, rows, spreads, the_fight.devices) if points.height else None
    said = verdict.answer(points, the_fight, resampled)
    accelerator = _accelerator(points)
    pooled = spreads["steady"].get((the_fight.stock["engine"], accelerator, the_fight.devices)) if accelerator else None
    return verdict.Verdict(
        fight=the_fight,
        points=points,
        said=said,
        spreads=spreads,
        pooled=pooled,
        owed=verdict.owed(summary, the_fight, said, leaderboards),
        claims=verdict.claim_lines(the_fight),
        crossings=crossings(said),
        t975=metrics.student_t_quantile(0.975, pooled.df) if pooled else None,
        full_steps=verdict.full_steps(the_fight.suite, the_fight.workload),
    )


def _accelerator(points: pl.DataFrame) -> str | None:
    return str(points["accelerator"][0]) if points.height else None
