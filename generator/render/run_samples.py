"""A run's samples as its page draws them and ships them: the static SVG of its steps (step time and loss of trial 0,
as paths worked out for every run in one vectorised pass: `sample_texts`, drawn by `samples_svg`) and its rows as CSV
text (`csv_texts`), which the interactive chart reads beside the page (generator/render/runs.py writes them)."""

from __future__ import annotations

import math
from typing import Any

import polars as pl

import generator.render.pages as pages

SVG_WIDTH, SVG_PANEL = 720, 150
PLOT_X, PLOT_W = 40, SVG_WIDTH - 50  # the plot area inside each panel
SVG_BUCKETS = PLOT_W // 2
"""Buckets of steps a static samples chart draws, two pixel columns each (`sample_texts`)."""


def _tenths(tenths: pl.Expr) -> pl.Expr:
    """A whole number of tenths as the shortest decimal an SVG path reads (20 as `2`, 21 as `2.1`, -3 as `-.3`)."""
    whole, tenth = tenths.abs() // 10, tenths.abs() % 10
    return pl.concat_str(
        pl.when(tenths < 0).then(pl.lit("-")).otherwise(pl.lit("")),
        pl.when((whole == 0) & (tenth != 0)).then(pl.lit("")).otherwise(whole.cast(pl.String)),
        pl.when(tenth == 0).then(pl.lit("")).otherwise(pl.lit(".") + tenth.cast(pl.String)),
    )


def sample_texts(rows: pl.DataFrame) -> pl.DataFrame:
    """Per run, in one vectorised pass over every row: the path of its static samples SVG, for step time (ms) and
    loss of trial 0 (the interactive chart reads the run's CSV instead). Each point is to a tenth of a pixel; after the
    first, each is written as its move from the one before (`l` in SVG's path data): fewer bytes than each point's two
    coordinates, for the same line.

    Steps are cut into at most `SVG_BUCKETS` buckets of equal length, two pixel columns each, and each bucket is drawn
    by its lowest and highest value in the order the steps ran (one point where they are one): a one-step spike in a
    2,000-step run is drawn, where every other step alone could skip it, and the axis labels are the run's true range.

    Columns: run_id, then for m in (time, loss): `{m}_path`, `{m}_lo`, `{m}_hi`, `{m}_warm_x` (where the
    warm-up shading ends)."""
    # each run's rows are contiguous (one file each): an integer id per block makes the windows cheap, and the
    # rows need sorting only if some file lists a metric's steps out of order
    base = (
        rows.lazy()
        .with_columns(_run=pl.col("run_id").rle_id())
        .filter(pl.col("step").is_not_null(), pl.col("trial") == 0)
    )
    out: pl.LazyFrame | None = None
    for name, metric, log in (("time", "step_time_s", True), ("loss", "loss", False)):
        value = pl.col("value") * 1e3 if log else pl.col("value")
        per = base.filter(pl.col("metric") == metric).with_columns(v=value)
        unordered = per.select(((pl.col("step").diff() < 0) & (pl.col("_run").diff() == 0)).any()).collect().item()
        per = (
            (per.sort("_run", "step", maintain_order=True) if unordered else per)
            .with_columns(
                i=pl.int_range(pl.len()).over("_run"),
                n=pl.len().over("_run"),
                warm=(pl.col("phase") == "warmup").sum().over("_run"),
            )
            .with_columns(size=(pl.col("n") + SVG_BUCKETS - 1) // SVG_BUCKETS)  # steps a bucket (at least 1)
            .with_columns(last=pl.max_horizontal((pl.col("n") + pl.col("size") - 1) // pl.col("size") - 1, pl.lit(1)))
        )
        # a bucket's lowest and highest value, in the order they ran; log scale for step times
        buckets = (
            per.filter((pl.col("v") > 0) if log else pl.lit(True))
            .with_columns(y=pl.col("v").log10() if log else pl.col("v"), bucket=pl.col("i") // pl.col("size"))
            .group_by("_run", "bucket", maintain_order=True)
            .agg(
                pl.col("run_id", "size", "last", "warm").first(),
                low=pl.col("y").min(),
                high=pl.col("y").max(),
                low_first=pl.col("y").arg_min() <= pl.col("y").arg_max(),
            )
            .with_columns(
                y=pl.when(pl.col("low") == pl.col("high"))
                .then(pl.concat_list("low"))
                .when(pl.col("low_first"))
                .then(pl.concat_list("low", "high"))
                .otherwise(pl.concat_list("high", "low"))
            )
            .explode("y")
            .with_columns(lo=pl.col("y").min().over("_run"), hi=pl.col("y").max().over("_run"))
            .with_columns(span=pl.when(pl.col("hi") > pl.col("lo")).then(pl.col("hi") - pl.col("lo")).otherwise(1.0))
        )
        # each point to a tenth of a pixel, the first one absolute and each next one as its move from the last
        x = (10 * (PLOT_X + PLOT_W * pl.col("bucket") / pl.col("last"))).round().cast(pl.Int64)
        y = (10 * (10 + (SVG_PANEL - 30) * (1 - (pl.col("y") - pl.col("lo")) / pl.col("span")))).round().cast(pl.Int64)
        moves = pl.concat_str(_tenths(x.diff()), pl.when(y.diff() < 0).then(pl.lit("")).otherwise(pl.lit(",")),
                              _tenths(y.diff())).slice(1).str.join(" ")  # fmt: skip
        start = pl.format("M{},{}", _tenths(x.first()), _tenths(y.first()))
        drawn = buckets.group_by("_run", maintain_order=True).agg(
            pl.col("run_id").first(),
            pl.when(pl.len() > 1).then(pl.format("{}l{}", start, moves)).otherwise(start).alias(f"{name}_path"),
            pl.col("lo").first().alias(f"{name}_lo"),
            pl.col("hi").first().alias(f"{name}_hi"),
            (
                PLOT_X
                + PLOT_W
                * pl.min_horizontal(pl.col("warm").first() // pl.col("size").first(), pl.col("last").first())
                / pl.col("last").first()
            ).alias(f"{name}_warm_x"),
        )
        drawn = drawn.drop("_run")
        out = drawn if out is None else out.join(drawn, on="run_id", how="full", coalesce=True)
    assert out is not None  # both metrics drawn
    return out.collect()


CSV_COLUMNS = ["trial", "step", "phase", "metric", "value", "unit"]
"""A run's CSV: every row as its file holds it, less the run id (the CSV and its page are named after it)."""


def csv_file(run_id: str) -> str:
    """A charted run's rows as gzipped CSV, beside its page under `runs/`."""
    return f"{pages.slug(run_id)}.csv.gz"


def _csv_field(expr: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """A CSV field (RFC 4180): quoted, with quotes doubled, when it holds a comma, a quote or a line break (only
    text can; a number is written as it is)."""
    text = expr.cast(pl.String).fill_null("")
    if dtype != pl.String:
        return text
    text = pages.csv_inert(text)
    quoted = pl.lit('"') + text.str.replace_all('"', '""', literal=True) + pl.lit('"')
    return pl.when(text.str.contains('[",\r\n]')).then(quoted).otherwise(text)


def csv_texts(rows: pl.DataFrame) -> dict[str, str]:
    """Every run's rows as CSV text (header included), built for all runs in one vectorised pass, rows in the
    order of the run's file."""
    header = ",".join(CSV_COLUMNS)
    schema = rows.schema
    lines = (
        rows.lazy()
        .select(
            pl.col("run_id").rle_id().alias("_run"),  # each run's rows are contiguous: group by an integer
            "run_id",
            pl.concat_str([_csv_field(pl.col(c), schema[c]) for c in CSV_COLUMNS], separator=",").alias("line"),
        )
        .group_by("_run", maintain_order=True)
        .agg(pl.col("run_id").first(), pl.col("line").str.join("\n"))
        .collect()
    )
    out: dict[str, str] = {}
    for _, run_id, text in lines.iter_rows():  # a run split in blocks (never written so) still gets every row
        out[run_id] = f"{out[run_id]}{text}\n" if run_id in out else f"{header}\n{text}\n"
    return out


def _label(value: Any) -> str:
    """An axis label: three significant digits, or a dash where the value is not a finite number."""
    return f"{value:.3g}" if isinstance(value, int | float) and math.isfinite(value) else "–"


def _log_label(exponent: Any) -> str:
    """The label of a log-scale axis at 10^exponent (a dash where that is not a finite number: never `inf`)."""
    if not (isinstance(exponent, int | float) and math.isfinite(exponent)) or abs(exponent) > 300:
        return "–"
    return _label(10.0**exponent)


def samples_svg(texts: dict[str, Any]) -> str:
    """A static SVG of step time (log scale) and loss per step, for readers without JavaScript, from the paths
    `sample_texts` computed."""

    def panel(name: str, top: int, log: bool, label: str) -> str:
        path = texts.get(f"{name}_path")
        if not path:
            return ""
        lo, hi, warm_x = texts[f"{name}_lo"], texts[f"{name}_hi"], texts[f"{name}_warm_x"]
        fmt = _log_label if log else _label
        return (
            f'<g transform="translate(0,{top})">'
            f'<rect x="{PLOT_X}" y="10" width="{warm_x - PLOT_X:.1f}" height="{SVG_PANEL - 30}" fill="#fdf3d8"/>'
            f'<path fill="none" stroke="#1f6feb" stroke-width="1" d="{path}"/>'
            f'<text x="0" y="14" font-size="10">{fmt(hi)}</text>'
            f'<text x="0" y="{SVG_PANEL - 20}" font-size="10">{fmt(lo)}</text>'
            f'<text x="{PLOT_X}" y="8" font-size="11">{label}</text></g>'
        )

    body = panel("time", 0, True, "step time (ms, log scale); warm-up shaded") + panel(
        "loss", SVG_PANEL, False, "loss (nats)"
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{SVG_WIDTH}" height="{2 * SVG_PANEL}" '
        f'font-family="sans-serif">{body}</svg>\n'
    )
