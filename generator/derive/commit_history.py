"""A configuration's figure across harness commits, as asv's history charts show a benchmark across a project's
commits: per configuration (suite, workload, settings hash) and harness commit, the median of its counted runs'
figures with the interval `fairfight compare HASH@COMMIT` gives it (`metrics.repeat_interval` over those runs: lowest
low to highest high), and around the latest commit's figure the band of identical repeats (`metrics.spread_band` of
the largest A/A spread of its kind of test on its hardware and host condition, the floor `compare` and the boards
hold a difference to). Pure: `Results.every_run` (what `compare` selects from) in, plain frames out; no template,
no chart."""

from __future__ import annotations

import statistics

import polars as pl

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
    "differs": pl.List(pl.String), "floor_basis": pl.String,
}  # fmt: skip
"""One configuration: how many commits it ran at, the band around its latest figure (`center`) and the commits whose
figure lies outside it (further from the latest than identical repeats moved), and of those the commits `compare`'s
verdict against the latest calls faster or slower (`metrics.compare_verdict`: outside the band and with a ratio
interval that excludes 1)."""


def points(runs: pl.DataFrame, dirty: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per configuration and harness commit, the figure of its measured runs that count (`excluded` null). `runs`:
    `Results.every_run.runs`; `dirty`: run_id and harness_dirty (a checkout with uncommitted changes is not
    quite the commit it names), optional. Commits are ordered by their first run's start; `latest` marks the last."""
    counted = runs.filter(
        (pl.col("origin") == "measured") & pl.col("excluded").is_null() & pl.col("value").is_not_null()
    )
    if dirty is not None:
        counted = counted.join(dirty.select("run_id", "harness_dirty"), on="run_id", how="left")
    else:
        counted = counted.with_columns(harness_dirty=pl.lit(None, pl.Boolean))
    out: list[dict] = []
    commit = pl.col("harness_commit").fill_null("unknown")
    grouped = (
        counted.with_columns(harness_commit=commit)
        .sort("started_at", "run_id")
        .group_by(*KEYS, "harness_commit", maintain_order=True)
        .agg(
            pl.col("kind").last(),
            pl.col("figure").last(),
            pl.col("variant").last(),
            dirty=pl.col("harness_dirty").fill_null(False).any(),
            first_started_at=pl.col("started_at").min(),
            run_ids=pl.col("run_id"),
            values=pl.col("value"),
            los=pl.col("lo"),
            his=pl.col("hi"),
        )
        .sort(*KEYS, "first_started_at", "harness_commit")
    )
    for (_s, _w, _h), group in grouped.group_by(*KEYS, maintain_order=True):
        rows = group.to_dicts()
        for i, row in enumerate(rows):
            values = row.pop("values")
            own = list(zip(row.pop("los"), row.pop("his"), strict=True))
            interval = any(lo is not None for lo, _ in own) or len(values) > 1
            lo, hi = metrics.with_width(*metrics.repeat_interval(values, own, None)) if interval else (None, None)
            out.append(row | {"order": i, "runs": len(values), "value": statistics.median(values), "lo": lo, "hi": hi,
                              "latest": i == len(rows) - 1})  # fmt: skip
    return pl.DataFrame(out, schema=POINT_SCHEMA)


def bands(
    points_: pl.DataFrame, runs: pl.DataFrame, kind_floors: dict[tuple[str, str, int, bool], float]
) -> pl.DataFrame:
    """Per configuration of `points_`, the A/A band around its latest commit's figure: the largest spread of repeats
    of its kind of test on its hardware, device count and host condition (`kind_floors`, `Results.kind_floors`);
    none (null band, `floor_basis` says why) where no repeats of that kind were measured there."""
    where = runs.select("run_id", "accelerator", "accelerator_count", "shared_host")
    hardware = {r: (a, c, bool(s)) for r, a, c, s in where.iter_rows()}
    out = []
    for (suite, workload, settings_hash), group in points_.group_by(*KEYS, maintain_order=True):
        latest = group.filter(pl.col("latest")).row(0, named=True)
        acc, count, shared = hardware[latest["run_ids"][-1]]
        spread = kind_floors.get((latest["kind"], acc, count, shared))
        where_text = f"{latest['kind']} tests on {count} × {acc}" + (", sharing the host" if shared else "")
        row = {"suite": suite, "workload": workload, "settings_hash": settings_hash, "commits": group.height,
               "center": latest["value"], "spread": spread, "band_lo": None, "band_hi": None, "outside": [],
               "differs": [], "floor_basis": f"no repeats of {where_text} measured: no band"}  # fmt: skip
        if spread is not None and latest["value"] > 0 and spread < 2:
            lo, hi = metrics.spread_band(latest["value"], spread)
            outside = group.filter((pl.col("value") < lo) | (pl.col("value") > hi))["harness_commit"].to_list()
            differs = [p["harness_commit"] for p in group.filter(pl.col("harness_commit").is_in(outside)).to_dicts()
                       if _verdict(latest, p, spread) in ("faster", "slower")]  # fmt: skip
            row |= {"band_lo": lo, "band_hi": hi, "outside": outside, "differs": differs,
                    "floor_basis": f"the largest spread of identical repeats of {where_text}"}  # fmt: skip
        out.append(row)
    return pl.DataFrame(out, schema=BAND_SCHEMA)


def _verdict(latest: dict, point: dict, spread: float) -> str | None:
    """`metrics.compare_verdict` of a commit's point (B) against the latest (A); None where either lacks an interval."""
    a, a_lo, a_hi, b, b_lo, b_hi = (latest["value"], latest["lo"], latest["hi"], point["value"], point["lo"],
                                    point["hi"])  # fmt: skip
    if None in (a_lo, a_hi, b_lo, b_hi) or not (0 < a_lo <= a <= a_hi and 0 < b_lo <= b <= b_hi):
        return None
    ratio_lo, ratio_hi = metrics.ratio_interval(a, a_lo, a_hi, b, b_lo, b_hi)[1:]
    return metrics.compare_verdict(a, b, ratio_lo, ratio_hi, spread)
