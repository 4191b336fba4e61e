"""A configuration's figure across harness commits, as asv's history charts show a benchmark across a project's
commits: per configuration (suite, workload, settings hash) and harness commit, the median of its counted runs'
figures with the interval `fairfight compare HASH@COMMIT` gives it (`evidence.of_runs`, the one function compare's
sides call: widened by the engine's pooled between-run spread of its kind on its hardware, none where one run is
unreplicated), and around the latest commit's figure the band of identical repeats (`metrics.spread_band` of the
A/A floor `compare` holds that commit's side to, `evidence.aa_floor`), with the commits `compare` calls faster or
slower than the latest. Pure: `Results.every_run` (what `compare` selects from) in, plain frames out (`history`, which
`derive.results` keeps as `Results.history`); no template, no chart."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

import generator.derive.commit_pairs as commit_pairs
import generator.derive.counting as counting
import generator.derive.evidence as evidence
from runners import metrics

KEYS = ["suite", "workload", "settings_hash"]

POINT_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "suite": pl.String, "workload": pl.String, "settings_hash": pl.String, "kind": pl.String, "figure": pl.String,
    "variant": pl.String, "harness_commit": pl.String, "dirty": pl.Boolean,
    "first_started_at": pl.Datetime("us", "UTC"),
    "order": pl.Int64, "runs": pl.Int64, "run_ids": pl.List(pl.String), "value": pl.Float64, "lo": pl.Float64,
    "hi": pl.Float64, "latest": pl.Boolean,
}  # fmt: skip
"""One point: a configuration's counted runs at one harness commit (`order` 0 for the earliest commit)."""

BAND_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "suite": pl.String, "workload": pl.String, "settings_hash": pl.String, "commits": pl.Int64, "center": pl.Float64,
    "spread": pl.Float64, "band_lo": pl.Float64, "band_hi": pl.Float64, "outside": pl.List(pl.String),
    "differs": pl.List(pl.String), "floor_basis": pl.String, "figure": pl.String,
}  # fmt: skip
"""One configuration: how many commits it ran at, the band around its latest figure (`center`) and the commits whose
figure lies outside it (further from the latest than identical repeats moved), and the commits `compare`'s verdict
against the latest calls faster or slower (`differs`, `metrics.compare_verdict`: a ratio interval that excludes 1 and a
difference beyond the larger floor of the two commits' runs; where there is a band, all of them lie outside it).
`figure`: what its points measure (steps/s, tokens/s), its latest commit's."""

RUN_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "run_id": pl.String,
    "history_band": pl.Struct({k: v for k, v in BAND_SCHEMA.items() if k not in KEYS}),
    "history_points": pl.List(pl.Struct({
        "commit": pl.String, "dirty": pl.Boolean, "started_at": pl.Datetime("us", "UTC"), "runs": pl.Int64,
        "run_ids": pl.List(pl.String), "value": pl.Float64, "lo": pl.Float64, "hi": pl.Float64, "latest": pl.Boolean,
    })),
    "history_excluded": pl.String,
}  # fmt: skip
"""One run, as its page's history section shows its configuration: the configuration's band (`BAND_SCHEMA` less the
keys), its points oldest commit first, and why this run is not among them (its `excluded`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class History:
    """Every configuration's figure across harness commits, derived once (`history`): what the run pages show of it,
    and what `compare` and the editions can read."""

    points: pl.DataFrame
    """One row per configuration and harness commit (`POINT_SCHEMA`, `points`)."""
    bands: pl.DataFrame
    """One row per configuration with a counted run (`BAND_SCHEMA`, `bands`): its A/A band, the commits outside it and
    those `compare` calls faster or slower."""
    configurations: dict[tuple[str, str, str], pl.DataFrame]
    """Each configuration's rows of `points`, oldest commit first, by (suite, workload, settings_hash): what its chart
    draws. A configuration with a null in its key is not here: it matches no run, as a comparison with null does."""
    of_runs: pl.DataFrame
    """One row per run of the run summary (`RUN_SCHEMA`); its band and points are null where its configuration has
    no counted run."""


def history(
    summary: pl.DataFrame,
    runs: pl.DataFrame,
    kind_floors: Mapping[evidence.FloorKey, float],
    spreads: Mapping[tuple[object, ...], metrics.PooledSpread],
    run_floors: Mapping[str, float] | None = None,
) -> History:
    """The history of every configuration, and each run's. `summary`: the run summary (run_id, the `KEYS`,
    harness_dirty); `runs`: `Results.every_run.runs`; `kind_floors`: `Results.kind_floors`; `spreads`: the pooled
    between-run spreads `compare` widens a side by (`evidence.spreads`); `run_floors`: the A/A spread of the repeats
    each counted run belongs to (`EveryRun.run_floors`): with `kind_floors`, the floor `compare` holds a side to."""
    points_ = points(runs, spreads, summary.select("run_id", "harness_dirty"))
    bands_ = bands(points_, runs, kind_floors, run_floors)
    table = (
        points_.sort("order")
        .group_by(KEYS, maintain_order=True)
        .agg(
            history_points=pl.struct(
                pl.col("harness_commit").alias("commit"), "dirty", pl.col("first_started_at").alias("started_at"),
                "runs", "run_ids", "value", "lo", "hi", "latest",
            )
        )
    )  # fmt: skip
    per_config = bands_.select(*KEYS, history_band=pl.struct(pl.exclude(KEYS))).join(table, on=KEYS)
    of_runs = (
        summary.select("run_id", *KEYS)
        .join(per_config, on=KEYS, how="left", maintain_order="left")
        .join(
            runs.select("run_id", history_excluded=pl.col("excluded")), on="run_id", how="left", maintain_order="left"
        )
        .select(list(RUN_SCHEMA))
    )
    by_key = points_.partition_by(KEYS, as_dict=True, maintain_order=True)  # split once, not filtered per configuration
    configurations = {(str(s), str(w), str(h)): v for (s, w, h), v in by_key.items() if None not in (s, w, h)}
    return History(points=points_, bands=bands_, configurations=configurations, of_runs=of_runs)


def points(
    runs: pl.DataFrame,
    spreads: Mapping[tuple[object, ...], metrics.PooledSpread],
    dirty: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Per configuration and harness commit, the figure and interval of its measured runs that count (`excluded`
    null), as `fairfight compare HASH@COMMIT` gives them (`evidence.of_runs`, widened by `spreads`: the pooled
    between-run spreads, `evidence.spreads`). `runs`: `Results.every_run.runs`; `dirty`: run_id and harness_dirty (a
    checkout with uncommitted changes is not quite the commit it names), optional. Commits are ordered by their first
    run's start; `latest` marks the last."""
    # the forms a commit is recorded in, of every record as `compare` reads them (`commit_pairs.full_commits`)
    full = commit_pairs.full_commits(runs["harness_commit"])
    counted = runs.filter(counting.MEASURED & pl.col("excluded").is_null() & pl.col("value").is_not_null())
    if dirty is not None:
        counted = counted.join(dirty.select("run_id", "harness_dirty"), on="run_id", how="left")
    else:
        counted = counted.with_columns(harness_dirty=pl.lit(None, pl.Boolean))
    out: list[dict] = []
    at_commit = [*KEYS, "harness_commit"]
    counted = counted.with_columns(harness_commit=pl.col("harness_commit").fill_null("unknown").replace(full)).sort(
        "started_at", "run_id"
    )
    grouped = (
        counted.group_by(at_commit, maintain_order=True)
        .agg(
            pl.col("kind").last(),
            pl.col("figure").last(),
            pl.col("variant").last(),
            dirty=pl.col("harness_dirty").fill_null(False).any(),
            first_started_at=pl.col("started_at").min(),
            run_ids=pl.col("run_id"),
        )
        .sort(*KEYS, "first_started_at", "harness_commit")
    )
    sides = counted.partition_by(at_commit, as_dict=True, maintain_order=True)
    for (_s, _w, _h), group in grouped.group_by(*KEYS, maintain_order=True):
        rows = group.to_dicts()
        for i, row in enumerate(rows):
            found, _ = evidence.of_runs(sides[tuple(row[k] for k in at_commit)], spreads)
            out.append(row | {"order": i, "runs": len(row["run_ids"]), "value": found.value, "lo": found.lo,
                              "hi": found.hi, "latest": i == len(rows) - 1})  # fmt: skip
    return pl.DataFrame(out, schema=POINT_SCHEMA)


def bands(
    points_: pl.DataFrame,
    runs: pl.DataFrame,
    kind_floors: Mapping[evidence.FloorKey, float],
    run_floors: Mapping[str, float] | None = None,
) -> pl.DataFrame:
    """Per configuration of `points_`, the A/A band around its latest commit's figure: the spread of identical repeats
    its latest runs belong to, else the largest of their kind of test on their hardware, device count and host
    condition (`evidence.aa_floor` of `run_floors`, `kind_floors`: the floor `compare` holds that side to); none (null
    band, `floor_basis` says why) where no repeats of that kind were measured there. A commit is outside it where
    `metrics.relative_spread` puts it further from the latest than that floor, as `compare_verdict` holds a difference
    to it. The commits it says differ are those `compare` calls faster or slower against the latest
    (`evidence.pair_floor`, `metrics.compare_verdict`), band or none: with no floor measured, compare decides by the
    ratio's interval alone."""
    run_floors = run_floors or {}
    where = runs.select("run_id", "kind", "accelerator", "accelerator_count", "shared_host").with_columns(
        pl.col("shared_host").fill_null(False)
    )
    indexed = points_.with_row_index("point")
    sides = (  # each point's runs, split once, not filtered out of every run per point
        indexed.select("point", run_id="run_ids")
        .explode("run_id")
        .join(where, on="run_id", how="left", maintain_order="left")
        .partition_by("point", as_dict=True, include_key=False, maintain_order=True)
    )
    out = []
    for (suite, workload, settings_hash), group in indexed.group_by(*KEYS, maintain_order=True):
        latest = group.filter(pl.col("latest")).row(0, named=True)
        mine = sides[(latest["point"],)]
        spread, basis = evidence.aa_floor(mine, run_floors, kind_floors, "the latest commit", _OWN)
        differs = [p["harness_commit"] for p in group.filter(~pl.col("latest")).to_dicts()
                   if _verdict(p, latest, evidence.pair_floor(sides[(p["point"],)], mine, run_floors,
                                                              kind_floors)[0]) in ("faster", "slower")]  # fmt: skip
        row = {"suite": suite, "workload": workload, "settings_hash": settings_hash, "commits": group.height,
               "center": latest["value"], "spread": None, "band_lo": None, "band_hi": None, "outside": [],
               "differs": differs, "floor_basis": _no_band(latest["value"], spread, basis),
               "figure": latest["figure"]}  # fmt: skip
        if spread > 0 and latest["value"] > 0 and spread < 2:
            lo, hi = metrics.spread_band(latest["value"], spread)
            outside = [c for c, v in group.select("harness_commit", "value").iter_rows()
                       if v <= 0 or metrics.relative_spread([latest["value"], v]) > spread]  # fmt: skip
            row |= {"spread": spread, "band_lo": lo, "band_hi": hi, "outside": outside, "floor_basis": basis}
        out.append(row)
    return pl.DataFrame(out, schema=BAND_SCHEMA)


_OWN = "the spread of the latest commit's repeats"
"""A latest commit's own floor, in `evidence.aa_floor`'s words: its repeats are its runs at that commit."""


def _no_band(center: float, spread: float, basis: str) -> str:
    """What the page says where `bands` draws no band around `center`, the latest commit's figure: its floor and why."""
    if center <= 0:
        return f"{basis}; the latest commit's figure is at or below zero, so no band"
    if spread >= 2:
        return f"{basis}, {spread:.0%} apart: no band, as no two positive figures are that far apart"
    if basis.startswith("none: "):  # the page capitalises it: "No repeats at one commit of … measured, so no floor"
        return f"{basis.removeprefix('none: ')}, and no band"
    return f"{basis}, which did not move: no band to draw"


def _verdict(point: dict, latest: dict, floor: float) -> str | None:
    """`metrics.compare_verdict` of the latest commit (B) against a commit's point (A), as `compare HASH@COMMIT
    HASH@LATEST` takes them (the other way round, the ratio's interval is its reciprocal only in exact arithmetic);
    None where either lacks an interval or a positive figure (compare: undecided, or no ratio)."""
    a, a_lo, a_hi, b, b_lo, b_hi = (point["value"], point["lo"], point["hi"], latest["value"], latest["lo"],
                                    latest["hi"])  # fmt: skip
    if None in (a_lo, a_hi, b_lo, b_hi) or not (0 < a_lo <= a <= a_hi and 0 < b_lo <= b <= b_hi):
        return None
    ratio_lo, ratio_hi = metrics.ratio_interval(a, a_lo, a_hi, b, b_lo, b_hi)[1:]
    return metrics.compare_verdict(a, b, ratio_lo, ratio_hi, floor)
