"""The history section of a run page: its configuration's figure at each harness commit with the band of identical
repeats around the latest, as `Results.history` holds it (generator/derive/commit_history.py derives it,
`charts.commit_history` draws it). Each run gets its configuration's chart data and table as columns of the run pages'
frame, so a run page is re-rendered when its configuration's history changes (the run pages' cache keys hash their
row). The chart's spec less its data is one per figure and band (`shared_spec`), written once for every page
(`script`, render/runs.py `HISTORY_SCRIPT`): a page holds only its points (each page held its own 4 KB spec)."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence

import altair as alt
import polars as pl

import generator.derive.commit_history as commit_history
import generator.render.charts as charts
import generator.render.pages as pages
import generator.store.runcache as runcache

HISTORY_COLUMNS = ["history_chart", "history_data", "history_band", "history_points", "history_excluded"]
SPECS = runcache.Table("history-data")
"""Each history chart's shared spec's name and data, by its inputs (a warm build draws only a changed
configuration's again)."""
BAND_DATA, POINTS_DATA = "band", "commits"
"""The names of a history chart's two datasets: the A/A band and the commits' points."""


def with_history(page_runs: pl.DataFrame, history: commit_history.History) -> pl.DataFrame:
    """`page_runs` with its run's history (`Results.history.of_runs`: `history_band`, a struct of its configuration's
    band, `history_points`, a list of one struct per commit, and `history_excluded`, why a run does not count), and its
    configuration's chart: `history_chart` (its shared spec's name, `chart_name`) and `history_data` (the chart's
    datasets as JSON, escaped for a <script> block), both only where the configuration ran at two or more commits.
    Renders what `history` holds; derives nothing."""
    columns = [*commit_history.KEYS, "history_chart", "history_data"]
    charts_of = pl.DataFrame(_drawn(history), schema=dict.fromkeys(columns, pl.String), orient="row")
    return (
        page_runs.drop(HISTORY_COLUMNS, strict=False)
        .join(history.of_runs, on="run_id", how="left", maintain_order="left")
        .join(charts_of, on=commit_history.KEYS, how="left", maintain_order="left")
    )


def _drawn(history: commit_history.History) -> list[tuple[str, str, str, str | None, str | None]]:
    """Per configuration of `history.bands`, its key and its chart's name and data (None where it ran at one commit),
    from the site cache (`SPECS`) where its points, band and figure are those of a chart drawn before."""
    out: list[tuple[str, str, str, str | None, str | None]] = []
    made, kept = SPECS.read(), {}
    for band in history.bands.iter_rows(named=True):
        key = (band["suite"], band["workload"], band["settings_hash"])
        if band["commits"] < 2:
            out.append((*key, None, None))
            continue
        mine = history.configurations.get(key, history.points.clear())
        # the spec is its points', band's and figure's alone: kept by them for the next build (making altair's
        # objects again for every run page is most of a warm build's history work)
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
        out.append((*key, name, data))
    if kept.keys() != made.keys():
        SPECS.write(kept)  # this build's charts only: a configuration's older histories are never drawn again
    return out


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
