"""The history section of a run page: its configuration's figure at each harness commit with the band of identical
repeats around the latest (generator/commit_history.py derives it, `charts.commit_history` draws it). Each run gets
its configuration's chart spec and table as columns of the run pages' frame, so a run page is re-rendered when its
configuration's history changes (the run pages' cache keys hash their row)."""

from __future__ import annotations

import hashlib
import json

import altair as alt
import polars as pl

from generator import charts, commit_history, runcache

HISTORY_COLUMNS = ["history_spec", "history_band", "history_points", "history_excluded"]
SPECS = runcache.Table("history-specs")
"""Each history chart's Vega-Lite JSON, by its inputs (a warm build draws only a changed configuration's again)."""


def with_history(
    page_runs: pl.DataFrame,
    summary: pl.DataFrame,
    runs: pl.DataFrame,
    kind_floors: dict[tuple[str, str, int, bool], float],
) -> pl.DataFrame:
    """`page_runs` with `history_band` (a struct: commits, figure, center, spread, band_lo, band_hi, outside,
    floor_basis), `history_points` (a list: one struct per commit) and `history_spec` (the chart's Vega-Lite JSON,
    escaped for a <script> block; only where the configuration ran at two or more commits), null for a run whose
    configuration has no counted run; and `history_excluded`, why a run does not count. `runs`: one row per run with
    the figure its kind ranks by (`Results.every_run.runs`, what `compare` selects from); `kind_floors`: the A/A
    floors (`Results.kind_floors`)."""
    points = commit_history.points(runs, summary.select("run_id", "harness_dirty"))
    if not points.height:
        return page_runs.with_columns(pl.lit(None, pl.String).alias(c) for c in HISTORY_COLUMNS)
    bands = commit_history.bands(points, runs, kind_floors)
    figures = points.group_by(commit_history.KEYS).agg(pl.col("figure").last())
    bands = bands.join(figures, on=commit_history.KEYS, how="left")
    specs: list[tuple[str, str, str, str | None]] = []
    made, kept = SPECS.read(), {}
    # each configuration's points, split once (a filter per configuration went over every point each time)
    by_key = points.partition_by(commit_history.KEYS, as_dict=True, maintain_order=True)
    for band in bands.iter_rows(named=True):
        key = (band["suite"], band["workload"], band["settings_hash"])
        if band["commits"] < 2:
            specs.append((*key, None))
            continue
        # (a null in the key matches nothing, as a comparison with null does)
        mine = by_key.get(key, points.clear()) if None not in key else points.clear()
        # the spec is its points', band's and figure's alone: kept by them for the next build (altair's objects
        # took a second and a half of a warm build at 5,000 runs)
        inputs = json.dumps([mine.write_json(), band, alt.__version__, alt.theme.active], default=str, sort_keys=True)
        spec_key = hashlib.sha256(inputs.encode()).hexdigest()
        if spec_key in made:
            spec = made[spec_key]
        else:
            # unvalidated, as `pages.Charts` draws every chart: altair's JSON-schema check took 3 of a warm build's
            # seconds, and the browser tests render these charts (tests/test_browser_tables.py)
            chart = charts.commit_history(mine, band, band["figure"])
            spec = json.dumps(chart.to_dict(validate=False), separators=(",", ":"))
            spec = spec.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        kept[spec_key] = spec
        specs.append((*key, spec))
    if kept.keys() != made.keys():
        SPECS.write(kept)  # this build's charts only: a configuration's older histories are never drawn again
    spec_frame = pl.DataFrame(specs, schema=[*commit_history.KEYS, "history_spec"], orient="row")
    table = (
        points.sort("order")
        .group_by(commit_history.KEYS, maintain_order=True)
        .agg(
            history_points=pl.struct(
                pl.col("harness_commit").alias("commit"),
                "dirty",
                pl.col("first_started_at").alias("started_at"),
                "runs",
                "run_ids",
                "value",
                "lo",
                "hi",
                "latest",
            )
        )
    )
    per_config = (
        bands.select(*commit_history.KEYS, history_band=pl.struct(pl.exclude(commit_history.KEYS)))
        .join(table, on=commit_history.KEYS)
        .join(spec_frame, on=commit_history.KEYS, how="left")
    )
    excluded = runs.select("run_id", history_excluded=pl.col("excluded"))  # why this run is not among its points
    return (
        page_runs.drop(HISTORY_COLUMNS, strict=False)
        .join(per_config, on=commit_history.KEYS, how="left", maintain_order="left")
        .join(excluded, on="run_id", how="left", maintain_order="left")
    )
