"""Charts: small pure functions from a DataFrame to an altair Chart, styled once by a registered theme."""

from __future__ import annotations

import collections

import altair as alt
import polars as pl

import generator.derive.readable as readable
from runners import engines

THEME = "fairfight"
TIER_COLORS = {"stock": "#8c8c8c", "tuned": "#1f6feb", "claim": "#d4a017"}


@alt.theme.register(THEME, enable=False)
def fairfight_theme() -> alt.theme.ThemeConfig:
    """One look for every chart: quiet axes, readable labels, the site's font."""
    return {
        "config": {
            "font": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif",
            "view": {"stroke": None},
            "axis": {
                "labelFontSize": 12,
                "labelLimit": 320,
                "titleFontSize": 12,
                "gridColor": "#e6e6e6",
                "domainColor": "#888",
            },
            "legend": {"labelFontSize": 12, "titleFontSize": 12, "orient": "bottom", "columns": 2},
            "title": {"fontSize": 14, "anchor": "start"},
        }
    }


def interval_columns(median: str, lo: str, hi: str) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """A figure and its 95% interval's ends as the columns every interval chart reads: `median`, `lo`, `hi`."""
    return pl.col(median).alias("median"), pl.col(lo).alias("lo"), pl.col(hi).alias("hi")


def throughput(board: pl.DataFrame, unit: str, *, metric: str = "steps_per_s") -> alt.LayerChart:
    """Median per run with its 95% interval, one row per run, coloured by tier; `unit`: what `metric` is in
    (`Board.unit`)."""
    data = board.select(
        _row_label(board),
        "variant",
        "tier",
        "accelerator",
        "accelerator_count",
        *interval_columns(metric, f"{metric}_lo", f"{metric}_hi"),
    )
    tier = _tier_color(data)
    described = [alt.Tooltip("variant:N"), alt.Tooltip("tier:N"), alt.Tooltip("accelerator:N")]
    described.append(alt.Tooltip("accelerator_count:Q", title="devices"))
    return _interval_bars(data, f"{unit} (median, 95% interval)", tier, described, ".4g")


def _row_label(board: pl.DataFrame) -> pl.Expr:
    """A board row's label on its charts: its variant, and where the board has other rows of that name, what sets
    this one apart in words (its `differs`, as the ranking writes it: "compile_loss on"), so two configurations of
    one variant stay two labels; the first six digits of its configuration's hash (the board's Configuration
    column) only where no such words tell two rows apart."""
    variant = pl.col("variant")
    cut = pl.when(variant.str.len_chars() > 20).then(variant.str.slice(0, 18) + pl.lit("…")).otherwise(variant)
    if "settings_hash" not in board.columns:  # one run per label (a loss curve): its time and random suffix
        stamp = pl.col("run_id").str.slice(0, 15) + pl.lit("…") + pl.col("run_id").str.slice(-6)
        return pl.format("{} · {}", cut, stamp).alias("run")
    if "differs" not in board.columns:
        return pl.format("{} · {}", cut, pl.col("settings_hash").str.slice(0, 6)).alias("run")
    rows = board.select(cut.alias("cut"), "settings_hash", "differs").rows()
    said = {h: f"{c} · {readable.settings(d)}" if d else c for c, h, d in rows}
    repeated = {label for label, n in collections.Counter(said.values()).items() if n > 1}
    labels = {h: f"{label} · {h[:6]}" if label in repeated else label for h, label in said.items()}
    return pl.col("settings_hash").replace_strict(labels, default=None, return_dtype=pl.String).alias("run")


ROW_AXIS = alt.Axis(labelLimit=190)
"""The row labels' axis: long variant names are cut with an ellipsis rather than take a phone's whole width."""


def _interval_bars(
    data: pl.DataFrame,
    x_title: str,
    color: alt.Color,
    described: list[alt.Tooltip],
    number: str,
    stroke: alt.Stroke | None = None,
) -> alt.LayerChart:
    """One bar per row of `data` (columns run, median, lo, hi and those `described` names) at its median, with
    whiskers over its interval; with `stroke` (the colour's field and scale) and a `ranked` column, the rows that do
    not rank are outlines."""
    # every layer sorts the rows by the median and titles the value axis alike: Vega-Lite merges differing sorts
    # and titles into none (rows alphabetical, the axis untitled)
    base = alt.Chart(data).encode(y=alt.Y("run:N", sort=largest_first("median"), title=None, axis=ROW_AXIS))
    marked = {}
    if stroke is not None:  # a run that does not rank (`ranked` false) is drawn hollow: its outline, no fill
        marked = dict(fillOpacity=alt.condition("datum.ranked", alt.value(0.85), alt.value(0.0)), stroke=stroke)
    bars = base.mark_bar(strokeWidth=1.5).encode(
        x=alt.X("median:Q", title=x_title),
        color=color,
        **marked,
        tooltip=[
            *described,
            alt.Tooltip("median:Q", format=number),
            alt.Tooltip("lo:Q", format=number, title="95% lo"),
            alt.Tooltip("hi:Q", format=number, title="95% hi"),
        ],
    )
    whiskers = base.mark_errorbar(ticks=True, color="black").encode(x=alt.X("lo:Q", title=x_title), x2="hi:Q")
    return (bars + whiskers).properties(width="container", height=alt.Step(28))


def _tier_color(data: pl.DataFrame) -> alt.Color:
    """Colour by tier, with a legend of the tiers drawn only (no "claim" entry on a chart with no claim)."""
    present = [t for t in TIER_COLORS if t in set(data["tier"].to_list())] or list(TIER_COLORS)
    return alt.Color("tier:N", scale=alt.Scale(domain=present, range=[TIER_COLORS[t] for t in present]), title="tier")


def largest_first(field: str) -> alt.EncodingSortField:
    """Rows sorted by a value, largest first, the same in every layer."""
    return alt.EncodingSortField(field=field, op="max", order="descending")


def loss_curves(losses: pl.DataFrame) -> alt.Chart:
    """Loss against step for each run given (window means): same weights and data, so the curves should agree."""
    data = losses.select(
        _row_label(losses),
        "step",
        pl.col("value").alias("loss"),
    )
    return (
        alt.Chart(data)
        .mark_line(strokeWidth=1.5)
        .encode(
            x=alt.X("step:Q", title="step"),
            y=alt.Y("loss:Q", title="training loss (nats)", scale=alt.Scale(zero=False)),
            # every run in the legend: two columns of full labels (one row of many was cut at the chart's edge)
            color=alt.Color("run:N", title="run", legend=alt.Legend(columns=2, labelLimit=300, symbolLimit=0)),
            tooltip=[alt.Tooltip("run:N"), alt.Tooltip("step:Q"), alt.Tooltip("loss:Q", format=".4f")],
        )
        .properties(width="container", height=260)
    )


def step_samples_spec(csv_url: str) -> dict:
    """Step time (ms, log) and loss of every step of one run's trial 0, warm-up and steady told apart, drawn from
    the run's CSV beside its page (`csv_url`): the samples are not shipped twice, and one spec serves every run
    page with only its URL changed."""
    phase = alt.Color("phase:N", scale=alt.Scale(domain=["warmup", "steady"], range=["#d4a017", "#1f6feb"]))
    samples = "datum.trial === 0 && isValid(datum.step) && datum.metric === "
    time_panel = (
        alt.Chart()
        .transform_filter(samples + "'step_time_s'")
        .transform_calculate(ms="datum.value * 1000")
        .mark_point(size=12, filled=True)
        .encode(
            x=alt.X("step:Q", title="step"),
            y=alt.Y("ms:Q", title="step time (ms)", scale=alt.Scale(zero=False, type="log")),
            color=phase,
            tooltip=[alt.Tooltip("step:Q"), alt.Tooltip("phase:N"), alt.Tooltip("ms:Q", format=".4g")],
        )
        .properties(width="container", height=180)
    )
    loss_panel = (
        alt.Chart()
        .transform_filter(samples + "'loss'")
        .mark_line()
        .encode(
            x=alt.X("step:Q", title="step"),
            y=alt.Y("value:Q", title="loss (nats)", scale=alt.Scale(zero=False)),
            color=phase,
            tooltip=[alt.Tooltip("step:Q"), alt.Tooltip("value:Q", title="loss", format=".4f")],
        )
        .properties(width="container", height=180)
    )
    parse = {"trial": "number", "step": "number", "value": "number"}
    data = alt.UrlData(url=csv_url, format=alt.CsvDataFormat(type="csv", parse=parse))
    return alt.vconcat(time_panel, loss_panel, data=data).to_dict()


def speedup(board: pl.DataFrame) -> alt.Chart:
    """Median speedup of each ranked run over its stock baseline on the same hardware (1× = the baseline)."""
    data = board.filter(pl.col("speedup").is_not_null()).select(
        _row_label(board),
        "tier",
        "speedup",
        pl.format("{} × {}, µbatch {}", "accelerator_count", "accelerator", "micro_batch").alias("hardware"),
    )
    bars = (
        alt.Chart(data)
        .mark_bar(opacity=0.85)
        .encode(
            y=alt.Y("run:N", sort=largest_first("speedup"), title=None, axis=ROW_AXIS),
            x=alt.X("speedup:Q", title=SPEEDUP_TITLE),
            color=_tier_color(data),
            tooltip=[alt.Tooltip("run:N"), alt.Tooltip("hardware:N"), alt.Tooltip("speedup:Q", format=".3g")],
        )
    )
    one = alt.Chart(alt.Data(values=[{"x": 1.0}])).mark_rule(color="black").encode(x=alt.X("x:Q", title=SPEEDUP_TITLE))
    return (bars + one).properties(width="container", height=alt.Step(22))


SPEEDUP_TITLE = "speedup over the stock baseline (×, medians)"


def mfu(board: pl.DataFrame) -> alt.Chart:
    """Each run's MFU against the datasheet and the calibrated peak, beside the 100% physical limit."""
    data = (
        board.select(
            _row_label(board),
            pl.col("mfu_datasheet").alias("datasheet peak"),
            pl.col("mfu_calibrated").alias("calibrated peak"),
            # a float8 run's figures above are against the fp8 peaks; against bf16's it reads beside bf16 runs
            (pl.col("mfu_datasheet_reference") if "mfu_datasheet_reference" in board.columns else pl.lit(None))
            .cast(pl.Float64)
            .alias("bf16 datasheet (fp8 runs)"),
        )
        .unpivot(index="run", variable_name="against", value_name="mfu")
        .filter(pl.col("mfu").is_not_null())
    )
    points = (
        alt.Chart(data)
        .mark_point(filled=True, size=60)
        .encode(
            y=alt.Y("run:N", sort=largest_first("mfu"), title=None, axis=ROW_AXIS),
            x=alt.X(
                "mfu:Q", title="model FLOPs utilisation", axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1])
            ),
            color=alt.Color("against:N", title="against"),
            shape=alt.Shape("against:N", title="against"),
            tooltip=[alt.Tooltip("run:N"), alt.Tooltip("against:N"), alt.Tooltip("mfu:Q", format=".1%")],
        )
    )
    return points.properties(width="container", height=alt.Step(22))


def step_time_distribution(board: pl.DataFrame) -> alt.LayerChart:
    """Steady step times of each run as a box: 25th–75th percentile, whiskers 5th–95th, tick at the median."""
    data = board.filter(pl.col("step_ms_p50").is_not_null()).select(
        _row_label(board),
        "tier",
        *[f"step_ms_p{q}" for q in (5, 25, 50, 75, 95)],
    )
    base = alt.Chart(data).encode(y=alt.Y("run:N", sort=largest_first("step_ms_p50"), title=None, axis=ROW_AXIS))
    # a linear axis: the runs of one board differ by a few times at most, and a log axis crushed the boxes
    title, scale = "steady step time (ms): 5–25–50–75–95th percentiles", alt.Scale(zero=False)
    whisker = base.mark_rule().encode(x=alt.X("step_ms_p5:Q", title=title, scale=scale), x2="step_ms_p95:Q")
    box = base.mark_bar(size=12, opacity=0.85).encode(
        x=alt.X("step_ms_p25:Q", title=title, scale=scale),
        x2="step_ms_p75:Q",
        color=_tier_color(data),
        tooltip=[alt.Tooltip("run:N"), *[alt.Tooltip(f"step_ms_p{q}:Q", format=".4g") for q in (5, 25, 50, 75, 95)]],
    )
    median = base.mark_tick(color="black", thickness=2, size=14).encode(
        x=alt.X("step_ms_p50:Q", title=title, scale=scale)
    )
    return (whisker + box + median).properties(width="container", height=alt.Step(22))


def scaling(points: pl.DataFrame) -> alt.LayerChart:
    """Weak-scaling efficiency against device count, one line per variant (100% = one device's tokens/s per
    device kept at every count); square points mark figures from runs that shared the host with other jobs."""
    data = points.filter(pl.col("efficiency").is_not_null()).select(
        "variant",
        "tier",
        pl.col("accelerator_count").alias("devices"),
        "efficiency",
        "tokens_per_s_per_device",
        pl.when(pl.col("shared_host")).then(pl.lit("shared host")).otherwise(pl.lit("alone")).alias("host"),
    )
    counts = sorted(set(data["devices"].to_list())) or [1]
    base = alt.Chart(data).encode(
        x=alt.X("devices:Q", title="devices", scale=alt.Scale(type="log", base=2), axis=alt.Axis(values=counts)),
        y=alt.Y("efficiency:Q", title="scaling efficiency (tokens/s per device vs one)", axis=alt.Axis(format="%")),
        color=alt.Color("variant:N", title="variant"),
    )
    lines = base.mark_line()
    dots = base.mark_point(size=70, filled=True).encode(
        shape=alt.Shape(
            "host:N", title="host", scale=alt.Scale(domain=["alone", "shared host"], range=["circle", "square"])
        ),
        tooltip=[
            alt.Tooltip("variant:N"),
            alt.Tooltip("devices:Q"),
            alt.Tooltip("efficiency:Q", format=".1%"),
            alt.Tooltip("tokens_per_s_per_device:Q", format=",.0f", title="tokens/s per device"),
            alt.Tooltip("host:N"),
        ],
    )
    full = (
        alt.Chart(alt.Data(values=[{"y": 1.0}]))
        .mark_rule(color="black", strokeDash=[4, 3])
        .encode(y=alt.Y("y:Q", title="scaling efficiency (tokens/s per device vs one)"))
    )
    return (lines + dots + full).properties(width="container", height=260)


def engine_colour(data: pl.DataFrame, field: str, title: str) -> alt.Color:
    """A colour by engine (`field` holds engines' or their own tools' record names, or engines' titles) from the one
    map the engine registry gives (`engines.colours`): the same engine is the same colour on every chart. The scale
    holds the engines present, in registry order, so the legend lists no engine the chart does not draw; a name the
    registry does not know takes a spare colour after them."""
    return alt.Color(f"{field}:N", scale=_engine_scale(data, field), title=title)


def engine_stroke(data: pl.DataFrame, field: str, title: str) -> alt.Stroke:
    """The outline in the same colours and with the same title as `engine_colour` (a hollow bar keeps its engine's
    colour): Vega-Lite then draws the two as one legend, where an outline without a legend hid the fill's too."""
    return alt.Stroke(f"{field}:N", scale=_engine_scale(data, field), title=title)


def _engine_scale(data: pl.DataFrame, field: str) -> alt.Scale:
    known = engines.colours()
    present = set(data[field].drop_nulls().to_list())
    domain = [name for name in known if name in present]
    unknown = sorted(present - set(known))
    spare = [c for c in engines.SPARE_COLOURS if c not in known.values()] or list(engines.SPARE_COLOURS)
    colours = [known[name] for name in domain] + [spare[i % len(spare)] for i in range(len(unknown))]
    return alt.Scale(domain=domain + unknown, range=colours)


def engine_throughput(tests: pl.DataFrame, unit: str) -> alt.LayerChart:
    """An inference test's tokens/s per run (median of repetitions, 95% interval): the runner's measurements and
    the engine's own tool's (llama-bench, mlx_lm.benchmark) on the same weights side by side, coloured by which
    measured them."""
    ranked = pl.col("ranked") if "ranked" in tests.columns else pl.lit(True)
    data = tests.filter(pl.col("rate_med").is_not_null()).select(
        # variant, who measured it (the runner's engine or its own tool) and the run's random suffix: unique and short;
        # a run that does not rank says so first in its label (its bar is hollow)
        pl.when(ranked)
        .then(pl.lit(""))
        .otherwise(pl.lit("unranked: "))
        .add(pl.format("{} · {} · {}", pl.col("variant"), pl.col("engine"), pl.col("run_id").str.slice(-6)))
        .alias("run"),
        ranked.alias("ranked"),
        "variant",
        "engine",
        "accelerator",
        *interval_columns("rate_med", "rate_lo", "rate_hi"),
    )
    engine = engine_colour(data, "engine", "measured by")
    described = [alt.Tooltip("variant:N"), alt.Tooltip("engine:N", title="measured by"), alt.Tooltip("accelerator:N"),
                 alt.Tooltip("ranked:N")]  # fmt: skip
    title = f"{unit} (median of repetitions, 95% interval)"
    if not data["ranked"].all():
        title += "; hollow bars: runs that do not rank"
    return _interval_bars(data, title, engine, described, ",.1f", engine_stroke(data, "engine", "measured by"))


def sweep(
    points: pl.DataFrame,
    claims: pl.DataFrame,
    matched_tokens: float | None,
    crossings: pl.DataFrame | None = None,
    *,
    narrow: bool = False,
) -> alt.LayerChart:
    """steps/s against tokens per step for each curve of the sweep (`label`: one configuration at every micro-batch;
    median and 95% interval per point), the claims as horizontal rules, the matched shape (where stock meets the
    claim's stock figure) as a vertical one, and where each curve crosses it (`crossings`: label, steps_per_s) as a
    marked, numbered point. `narrow`: drawn for a phone's width (fixed 250 px, larger type, shorter titles)."""
    if "label" not in points.columns:
        points = points.with_columns(label=pl.col("variant"))
    data = points.select(
        "variant",
        pl.col("label").fill_null(pl.col("variant")),
        "tier",
        "micro_batch",
        "tokens_per_step",
        *interval_columns("steps_per_s", "steps_per_s_lo", "steps_per_s_hi"),
        "runs",
    )
    ticks = sorted({float(t) for t in points["tokens_per_step"].drop_nulls()})
    # a little room each side, so the first tick's label clears the y-axis and the last point is not on the edge
    domain = [ticks[0] / 1.15, ticks[-1] * 1.15] if ticks else None
    x = alt.X(
        "tokens_per_step:Q",
        scale=alt.Scale(type="log", base=2, domain=domain, nice=False) if domain else alt.Scale(type="log", base=2),
        axis=alt.Axis(values=ticks, format=",d", labelOverlap=True),
        title="tokens per step" if narrow else "tokens per step (both GPUs; one tick per micro-batch measured)",
    )
    # one curve, one configuration: a variant with several settings draws one line for each, named by what differs
    legend = alt.Legend(columns=1, labelLimit=200 if narrow else 480, labelFontSize=13 if narrow else 12)
    base = alt.Chart(data).encode(x=x, color=alt.Color("label:N", title="configuration", legend=legend))
    tips = [alt.Tooltip("label:N", title="configuration"), alt.Tooltip("micro_batch:Q", title="micro-batch per GPU"),
            alt.Tooltip("median:Q", title="steps/s", format=".4g"), alt.Tooltip("lo:Q", format=".4g"),
            alt.Tooltip("hi:Q", format=".4g"), alt.Tooltip("runs:Q")]  # fmt: skip
    lines = base.mark_line(point=True).encode(y=alt.Y("median:Q", title="steps/s (median, 95% interval)"),
                                              tooltip=tips)  # fmt: skip
    bars = base.mark_errorbar().encode(y=alt.Y("lo:Q", title="steps/s (median, 95% interval)"), y2="hi:Q")
    rules = (
        alt.Chart(claims.select("label", "steps_per_s"))
        .mark_rule(strokeDash=[6, 4], color=TIER_COLORS["claim"])
        .encode(
            y=alt.Y("steps_per_s:Q", title="steps/s (median, 95% interval)"),
            tooltip=[alt.Tooltip("label:N", title="claim"), alt.Tooltip("steps_per_s:Q")],
        )
    )
    # the claims' names at the right end, where the curves have fallen below them (they fall with tokens per step)
    labels = (
        alt.Chart(claims.select("label", "steps_per_s"))
        .mark_text(align="right", dx=-4, dy=-6, color=TIER_COLORS["claim"], fontWeight="bold")
        .encode(y=alt.Y("steps_per_s:Q", title="steps/s (median, 95% interval)"), x=alt.value("width"), text="label:N")
    )
    layers = [bars, lines, rules, labels]
    if matched_tokens is not None:
        layers += _matched_shape(x, matched_tokens, crossings, narrow)
    # LayerChart itself: alt.layer may return a FacetChart, which it does only for layers with facet encodings
    size = dict(width=250, height=300) if narrow else dict(width="container", height=320)
    chart = alt.LayerChart(layer=layers).properties(**size)
    return chart.configure_axis(labelFontSize=13, titleFontSize=13) if narrow else chart


def _matched_shape(x: alt.X, matched_tokens: float, crossings: pl.DataFrame | None, narrow: bool) -> list[alt.Chart]:
    """The sweep's matched shape (`matched_tokens` tokens a step) as a vertical rule with its label, and where each
    curve crosses it (`crossings`: label, steps_per_s) as a diamond with its figure."""
    words = f"matched: {matched_tokens:,.0f}" if narrow else f"matched shape: {matched_tokens:,.0f} tokens/step"
    marked = pl.DataFrame({"tokens_per_step": [matched_tokens], "label": [words]})
    mark = alt.Chart(marked).encode(x=x, tooltip=[alt.Tooltip("tokens_per_step:Q", format=",.0f")])
    layers = [
        mark.mark_rule(color="#444"),
        mark.mark_text(align="left", dx=4, y=8, color="#444").encode(text="label:N"),
    ]
    if crossings is None or not crossings.height:
        return layers
    at = crossings.select("label", "steps_per_s").with_columns(
        tokens_per_step=pl.lit(matched_tokens),
        text=pl.col("steps_per_s").map_elements(lambda v: f"{v:.3g}", return_dtype=pl.String),
    )
    cross = alt.Chart(at).encode(
        x=x,
        y=alt.Y("steps_per_s:Q", title="steps/s (median, 95% interval)"),
        tooltip=[alt.Tooltip("label:N", title="crosses the matched shape"), alt.Tooltip("steps_per_s:Q", format=".4g")],
    )
    layers.append(cross.mark_point(shape="diamond", size=140, filled=True, color="#111"))
    # the figure beside each diamond, right of the rule on a phone (the y-axis labels sit close on the left)
    side = (
        cross.mark_text(align="left", dx=9, fontWeight="bold", color="#111")
        if narrow
        else cross.mark_text(align="right", dx=-9, fontWeight="bold", color="#111")
    )
    return [*layers, side.encode(text="text:N")]


def commit_history(points: pl.DataFrame, band: dict | None, figure: str) -> alt.LayerChart:
    """One configuration's figure at each harness commit (`commit_history.points`: median of its runs, 95% interval),
    in commit order, joined by a line, with the band of identical repeats around the latest commit's figure
    (`band`: band_lo, band_hi, center; none where no repeats of its kind were measured) as a shaded strip and a rule:
    a commit outside the strip moved more than repeats of the same code do."""
    dirty = pl.when(pl.col("dirty")).then(pl.lit("*")).otherwise(pl.lit(""))
    data = points.select(
        pl.format("{}{}", pl.col("harness_commit").str.slice(0, 7), dirty).alias("commit"),
        "order",
        pl.col("first_started_at").dt.strftime("%Y-%m-%d").alias("date"),
        "runs",
        pl.col("value").alias("median"),
        pl.col("lo").fill_null(pl.col("value")).alias("lo"),
        pl.col("hi").fill_null(pl.col("value")).alias("hi"),
    )
    title = f"{figure} (median, interval)"
    # at a phone's width the commits' labels ran into each other: a narrow chart drops some, never overlaps them
    axis = alt.Axis(labelAngle=0, labelLimit=90, labelOverlap="greedy")
    x = alt.X("commit:N", sort=alt.EncodingSortField(field="order", order="ascending"), axis=axis,
              title="harness commit, oldest first (*: uncommitted)")  # fmt: skip
    scale = alt.Scale(zero=False)
    layers: list[alt.Chart] = []
    if band is not None and band.get("band_lo") is not None:
        strip = alt.Chart(
            pl.DataFrame(
                {"lo": [band["band_lo"]], "hi": [band["band_hi"]], "center": [band["center"]], "label": ["A/A band"]}
            )
        )
        tips = [
            alt.Tooltip("lo:Q", format=".4g", title="band low"),
            alt.Tooltip("hi:Q", format=".4g", title="band high"),
        ]
        layers += [
            strip.mark_rect(color="#1f6feb", opacity=0.12).encode(
                y=alt.Y("lo:Q", title=title, scale=scale), y2="hi:Q", tooltip=tips
            ),
            strip.mark_rule(color="#1f6feb", strokeDash=[4, 3]).encode(y=alt.Y("center:Q", title=title, scale=scale)),
            strip.mark_text(align="right", baseline="top", dx=-4, dy=4, color="#1f6feb").encode(
                y=alt.Y("hi:Q", title=title, scale=scale), x=alt.value("width"), text="label:N"
            ),
        ]
    base = alt.Chart(data).encode(x=x)
    tips = [alt.Tooltip("commit:N"), alt.Tooltip("date:N", title="first run"), alt.Tooltip("runs:Q")]
    tips += [alt.Tooltip(f"{name}:Q", format=".4g") for name in ("median", "lo", "hi")]
    layers += [
        base.mark_rule(color="black").encode(y=alt.Y("lo:Q", title=title, scale=scale), y2="hi:Q"),
        base.mark_tick(color="black", size=14, thickness=1.5).encode(y=alt.Y("lo:Q", title=title, scale=scale)),
        base.mark_tick(color="black", size=14, thickness=1.5).encode(y=alt.Y("hi:Q", title=title, scale=scale)),
        base.mark_line(point=alt.OverlayMarkDef(size=60, filled=True, color="#111"), color="#111").encode(
            y=alt.Y("median:Q", title=title, scale=scale), tooltip=tips
        ),
    ]
    return alt.LayerChart(layer=layers).properties(width="container", height=220)
