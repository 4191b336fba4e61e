"""Charts of one model across engines, GPUs and settings: a served model's tensor-parallel scaling and latency
against throughput, every engine side by side at batch 1 beside its copy bound, and generation by KV-cache depth.
Small pure functions from a DataFrame to an altair Chart, in the theme and engine colours of `charts`."""

from __future__ import annotations

import altair as alt
import polars as pl

from generator.render.charts import ROW_AXIS, engine_colour, engine_stroke, interval_columns, largest_first


def tp_scaling(points: pl.DataFrame) -> alt.LayerChart:
    """Tensor-parallel strong-scaling efficiency against GPU count for one serving test (100% = k times the GPUs give
    k times the output tokens/s of the base, the fewest GPUs measured)."""
    data = points.select(
        "variant",
        pl.col("weights_label").fill_null("weights not named").alias("weights"),
        pl.col("accelerator_count").alias("gpus"),
        "efficiency",
        "speedup",
        pl.col("out_rate").alias("output_tokens_per_s"),
        "base_gpus",
    )
    counts = sorted(set(data["gpus"].to_list())) or [1]
    base = alt.Chart(data).encode(
        x=alt.X("gpus:Q", title="GPUs (tensor-parallel size)", scale=alt.Scale(type="log", base=2),
                axis=alt.Axis(values=counts)),
        y=alt.Y("efficiency:Q", title="scaling efficiency", axis=alt.Axis(format="%"), scale=alt.Scale(zero=True)),
    )  # fmt: skip
    line = base.mark_line(color="#1f6feb").encode(detail="weights:N")  # a line per weights: one curve each
    dots = base.mark_point(size=70, filled=True, color="#1f6feb").encode(
        tooltip=[
            alt.Tooltip("variant:N"),
            alt.Tooltip("weights:N"),
            alt.Tooltip("gpus:Q", title="GPUs"),
            alt.Tooltip("output_tokens_per_s:Q", format=",.0f", title="output tokens/s"),
            alt.Tooltip("speedup:Q", format=".2f", title="speedup over the base"),
            alt.Tooltip("base_gpus:Q", title="base (GPUs)"),
            alt.Tooltip("efficiency:Q", format=".1%"),
        ]
    )
    full = (
        alt.Chart(alt.Data(values=[{"y": 1.0}]))
        .mark_rule(color="black", strokeDash=[4, 3])
        .encode(y=alt.Y("y:Q", title="scaling efficiency"))
    )
    return (line + dots + full).properties(width="container", height=220)


def latency_throughput(points: pl.DataFrame) -> alt.LayerChart:
    """One model served: median TPOT against output tokens/s per GPU, a line per GPU model, tensor-parallel size and
    weights through its concurrencies (a point of one GPU model never joins another's line), with the range of each
    point's runs both ways (the chart for choosing a TP size: lower right is better)."""
    data = points.select(
        pl.format(
            "{} × {} · {}",
            pl.col("accelerator_count"),
            pl.col("accelerator").fill_null("GPU not named"),
            pl.col("weights_label").fill_null("weights not named"),
        ).alias("tp"),
        "concurrency",
        "runs",
        "per_gpu",
        "per_gpu_lo",
        "per_gpu_hi",
        "tpot_ms",
        "tpot_lo",
        "tpot_hi",
    )
    x_title, y_title = "output tokens/s per GPU (median of runs)", "TPOT (ms, median of runs)"
    # a line per row of the legend, its label whole: a GPU model's name is long, and at a phone's width two to a row
    # ran past the chart's edge
    legend = alt.Legend(columns=1, labelLimit=0, titleLimit=0)
    base = alt.Chart(data).encode(color=alt.Color("tp:N", title="GPUs (tensor-parallel) · weights", legend=legend))
    line = base.mark_line(point=True).encode(
        x=alt.X("per_gpu:Q", title=x_title),
        y=alt.Y("tpot_ms:Q", title=y_title, scale=alt.Scale(zero=False)),
        order="concurrency:Q",
        tooltip=[
            alt.Tooltip("tp:N", title="GPUs · weights"),
            alt.Tooltip("concurrency:Q", title="in flight"),
            alt.Tooltip("per_gpu:Q", format=",.0f", title="tokens/s per GPU"),
            alt.Tooltip("tpot_ms:Q", format=".2f", title="TPOT (ms)"),
            alt.Tooltip("runs:Q"),
        ],
    )
    across = base.mark_rule().encode(x=alt.X("per_gpu_lo:Q", title=x_title), x2="per_gpu_hi:Q",
                                     y=alt.Y("tpot_ms:Q", title=y_title))  # fmt: skip
    up = base.mark_rule().encode(y=alt.Y("tpot_lo:Q", title=y_title), y2="tpot_hi:Q",
                                 x=alt.X("per_gpu:Q", title=x_title))  # fmt: skip
    labels = base.mark_text(dx=6, dy=-6, align="left").encode(
        x=alt.X("per_gpu:Q", title=x_title), y=alt.Y("tpot_ms:Q", title=y_title), text="concurrency:Q"
    )
    return (line + across + up + labels).properties(width="container", height=320)


def side_by_side(rows: pl.DataFrame) -> alt.LayerChart:
    """One model's engines of one precision family: batch-1 decode tokens/s (bar, with its interval) beside the
    bound the calibrated copy bandwidth sets for a token's bytes (a black tick), so the gap to the physical limit is in
    view; a row not cross-checked against its own tool is drawn hollow."""
    data = rows.filter(pl.col("decode").is_not_null()).select(
        pl.col("variant").alias("run"),
        "variant",
        pl.col("engine_name").alias("engine"),
        *interval_columns("decode", "decode_lo", "decode_hi"),
        pl.col("limit_tokens_per_s").alias("limit"),
        pl.when(pl.col("decode_checked")).then(pl.lit("cross-checked")).otherwise(pl.lit("not cross-checked"))
        .alias("checked"),
    )  # fmt: skip
    title = ["decode tokens/s (bars)", "copy bound (ticks)"]  # two lines: one is cut at a phone's width
    base = alt.Chart(data).encode(y=alt.Y("run:N", sort=largest_first("median"), title=None, axis=ROW_AXIS))
    bars = base.mark_bar(strokeWidth=2).encode(
        x=alt.X("median:Q", title=title),
        color=engine_colour(data, "engine", "engine"),
        stroke=engine_stroke(data, "engine", "engine"),
        fillOpacity=alt.FillOpacity(
            "checked:N",
            scale=alt.Scale(domain=["cross-checked", "not cross-checked"], range=[0.85, 0.1]),
            title="own-tool check",
        ),
        tooltip=[
            alt.Tooltip("engine:N"),
            alt.Tooltip("variant:N"),
            alt.Tooltip("checked:N"),
            alt.Tooltip("median:Q", format=",.1f", title="tokens/s"),
            alt.Tooltip("limit:Q", format=",.1f", title="copy bound (a reference, not a ceiling)"),
        ],
    )
    whiskers = base.mark_errorbar(ticks=True, color="black").encode(x=alt.X("lo:Q", title=title), x2="hi:Q")
    limit = base.mark_tick(color="black", thickness=3, size=24).encode(x=alt.X("limit:Q", title=title))
    return (bars + whiskers + limit).properties(width="container", height=alt.Step(30))


def kv_depth(points: pl.DataFrame) -> alt.LayerChart:
    """llama.cpp's generation tokens/s against the KV-cache depth, one line per variant (its weights by colour, its
    KV cache's type by dash), points with their intervals."""
    data = points.select(
        "variant",
        "depth",
        pl.col("weights").str.to_uppercase().alias("weights"),
        pl.col("kv_type").str.to_uppercase().alias("kv cache"),
        *interval_columns("rate", "rate_lo", "rate_hi"),
    )
    x = alt.X("depth:Q", title="KV-cache depth (tokens already in context)")
    y_title = "generation tokens/s (median, interval)"
    base = alt.Chart(data).encode(x=x, color=alt.Color("weights:N", title="weights"),
                                  strokeDash=alt.StrokeDash("kv cache:N", title="KV cache"))  # fmt: skip
    line = base.mark_line(point=True).encode(
        y=alt.Y("median:Q", title=y_title),
        detail="variant:N",
        tooltip=[
            alt.Tooltip("variant:N"),
            alt.Tooltip("depth:Q", format=","),
            alt.Tooltip("median:Q", format=",.1f", title="tokens/s"),
        ],
    )
    bars = base.mark_errorbar().encode(y=alt.Y("lo:Q", title=y_title), y2="hi:Q", detail="variant:N")
    return (line + bars).properties(width="container", height=240)
