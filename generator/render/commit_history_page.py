"""The history section of a run page: its configuration's figure at each harness commit with the band of identical
repeats around the latest (generator/derive/commit_history.py derives it, `charts.commit_history` draws it). Each run
gets its configuration's chart data and table as columns of the run pages' frame, so a run page is re-rendered when its
configuration's history changes (the run pages' cache keys hash their row). The chart's spec less its data is one
per figure and band (`shared_spec`), written once for every page (`script`, render/runs.py `HISTORY_SCRIPT`): a page
holds only its points (each page held its own 4 KB spec)."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence

import altair as alt
import polars as pl

from generator.derive import commit_history
from generator.render import charts, pages
from generator.store import runcache

HISTORY_COLUMNS = ["history_chart", "history_data", "history_band", "history_points", "history_excluded"]
SPECS = runcache.Table("history-data")
"""Each history chart's shared spec's name and data, by its inputs (a warm build draws only a changed
configuration's again)."""
BAND_DATA, POINTS_DATA = "band", "commits"
"""The names of a history chart's two datasets: the A/A band and the commits' points."""


def with_history(
    page_runs: pl.DataFrame,
    summary: pl.DataFrame,
    runs: pl.DataFrame,
    kind_floors: dict[tuple[str, str, int, bool], float],
) -> pl.DataFrame:
    """`page_runs` with `history_band` (a struct: commits, figure, center, spread, band_lo, band_hi, outside,
    floor_basis), `history_points` (a list: one struct per commit), `history_chart` (its shared spec's name,
    `chart_name`) and `history_data` (the chart's datasets as JSON, escaped for a <script> block; both only where the
    configuration ran at two or more commits), null for a run whose
    configuration has no counted run; and `history_excluded`, why a run does not count. `runs`: one row per run with
    the figure its kind ranks by (`Results.every_run.runs`, what `compare` selects from); `kind_floors`: the A/A
    floors (`Results.kind_floors`)."""
    points = commit_history.points(runs, summary.select("run_id", "harness_dirty"))
    if not points.height:
        return page_runs.with_columns(pl.lit(None, pl.String).alias(c) for c in HISTORY_COLUMNS)
    bands = commit_history.bands(points, runs, kind_floors)
    figures = points.group_by(commit_history.KEYS).agg(pl.col("figure").last())
    bands = bands.join(figures, on=commit_history.KEYS, how="left")
    specs: list[tuple[str, str, str, str | None, str | None]] = []
    made, kept = SPECS.read(), {}
    # each configuration's points, split once (a filter per configuration went over every point each time)
    by_key = points.partition_by(commit_history.KEYS, as_dict=True, maintain_order=True)
    for band in bands.iter_rows(named=True):
        key = (band["suite"], band["workload"], band["settings_hash"])
        if band["commits"] < 2:
            specs.append((*key, None, None))
            continue
        # (a null in the key matches nothing, as a comparison with null does)
        mine = by_key.get(key, points.clear()) if None not in key else points.clear()
        # the spec is its points', band's and figure's alone: kept by them for the next build (altair's objects
        # took a second and a half of a warm build at 5,000 runs)
        inputs = json.dumps([mine.write_json(), band, alt.__version__, alt.theme.active], default=str, sort_keys=True)
        spec_key = hashlib.sha256(inputs.encode()).hexdigest()
        if spec_key in made:
            name, data = made[spec_key]
        else:
            name = chart_name(band["figure"], band.get("band_lo") is not None)
            spec, datasets = split(charts.commit_history(mine, band, band["figure"]))
            if spec != shared_spec(name):  # one spec per name, whatever the points: never a page's chart drawn wrong
                raise AssertionError(f"history chart {name!r}: its spec is not the shared one")
            data = pages.script_safe(json.dumps(drawn_values(datasets), separators=(",", ":")))
        kept[spec_key] = [name, data]
        specs.append((*key, name, data))
    if kept.keys() != made.keys():
        SPECS.write(kept)  # this build's charts only: a configuration's older histories are never drawn again
    spec_frame = pl.DataFrame(specs, schema=[*commit_history.KEYS, "history_chart", "history_data"], orient="row")
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


def chart_name(figure: str, banded: bool) -> str:
    """A history chart's shared spec's name: its figure (steps/s, tokens/s, ...) and whether it draws an A/A band."""
    return f"{figure}|{'band' if banded else 'no band'}"


def split(chart: alt.LayerChart) -> tuple[dict, dict[str, list]]:
    """A history chart's Vega-Lite spec less its data, and its datasets by their names (`BAND_DATA`, `POINTS_DATA`).
    Unvalidated, as `pages.Charts` draws every chart: altair's JSON-schema check took seconds of a warm build, and the
    browser tests render these charts (tests/test_browser_tables.py)."""
    spec = chart.to_dict(validate=False)
    found = spec.pop("datasets", {})
    names = {old: BAND_DATA if rows and "label" in rows[0] else POINTS_DATA for old, rows in found.items()}
    if sorted(names.values()) not in ([POINTS_DATA], [BAND_DATA, POINTS_DATA]):
        raise AssertionError(f"a history chart's datasets are not a band and its points: {sorted(names.values())}")
    for holder in (spec, *spec.get("layer", [])):  # altair names a dataset all layers share once, at the top
        if "data" in holder:
            holder["data"] = {"name": names[holder["data"]["name"]]}
    return spec, {names[old]: rows for old, rows in found.items()}


DRAWN_DIGITS = 6
"""Significant digits a history chart's numbers keep on its page: more than the 4 its table prints and far finer than
a pixel of the chart, where a float's 17 repeated on every run page weighed on a large site's size."""


def drawn_values(value: object) -> object:
    """`value` (a chart's datasets) with every float cut to `DRAWN_DIGITS` significant digits."""
    if isinstance(value, float):
        return float(f"{value:.{DRAWN_DIGITS}g}")
    if isinstance(value, dict):
        return {k: drawn_values(v) for k, v in value.items()}
    if isinstance(value, list):
        return [drawn_values(v) for v in value]
    return value


@functools.cache
def _shared(name: str, theme: str) -> str:
    figure, _, banded = name.rpartition("|")
    band = {"band_lo": 0.0, "band_hi": 1.0, "center": 0.5} if banded == "band" else None
    empty = pl.DataFrame(schema={"harness_commit": pl.String, "dirty": pl.Boolean, "order": pl.Int64,
                                 "first_started_at": pl.Datetime("us", "UTC"), "runs": pl.Int64, "value": pl.Float64,
                                 "lo": pl.Float64, "hi": pl.Float64})  # fmt: skip
    return json.dumps(split(charts.commit_history(empty, band, figure))[0], sort_keys=True)


def shared_spec(name: str) -> dict:
    """The spec every history chart named `name` draws with its own data, in the active theme."""
    return json.loads(_shared(name, str(alt.theme.active)))


def script(names: Sequence[str | None]) -> str:
    """The history charts' script (render/runs.py `HISTORY_SCRIPT`): the shared spec of every history chart `names`
    holds, by name."""
    specs = {name: shared_spec(name) for name in sorted({n for n in names if n})}
    return "window.FF_HISTORY = " + pages.script_safe(json.dumps(specs, separators=(",", ":"), sort_keys=True)) + ";\n"
