"""One page per run: provenance, every setting and its difference from the engine's defaults, the command that
reproduces it, the result file's sha256, and the raw samples (a chart, and every row as CSV beside the page).

Run pages are many (one per result file, thousands on a busy leaderboard), so they are rendered straight to
HTML with the site's own stylesheets after MkDocs has built the rest: the samples chart is one shared spec
with each run's data filled in, and its static SVG is drawn directly, so a page costs milliseconds.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import jinja2
import polars as pl

from generator import charts, pages


def settings_rows(config: dict[str, Any]) -> list[dict[str, Any]]:
    """Each setting with the engine's default beside it and whether the variant changed it."""
    settings = config.get("variant", {}).get("settings", {})
    defaults = config.get("engine_defaults", {})
    return [
        {
            "key": key,
            "value": json.dumps(value),
            "default": json.dumps(defaults[key]) if key in defaults else "–",
            "changed": key in defaults and defaults[key] != value,
        }
        for key, value in sorted(settings.items())
    ]


def _flat(obj: Any, prefix: str = "") -> list[tuple[str, str]]:
    """A nested JSON object as (dotted key, value) pairs for a two-column table."""
    if isinstance(obj, dict):
        out: list[tuple[str, str]] = []
        for key, value in sorted(obj.items()):
            out += _flat(value, f"{prefix}{key}.")
        return out
    return [(prefix.rstrip("."), json.dumps(obj) if not isinstance(obj, str) else obj)]


SVG_WIDTH, SVG_PANEL = 720, 150
PLOT_X, PLOT_W = 40, SVG_WIDTH - 50  # the plot area inside each panel


def sample_texts(rows: pl.DataFrame) -> pl.DataFrame:
    """Per run, in one vectorised pass over every row: the JSON columns of its samples chart and the polyline
    points of its static SVG, for step time (ms) and loss of trial 0.

    Columns: run_id, then for m in (time, loss): `{m}_json` (the object text of the chart's data set),
    `{m}_points`, `{m}_lo`, `{m}_hi`, `{m}_warm_x` (where the warm-up shading ends)."""
    base = rows.lazy().filter(pl.col("step").is_not_null(), pl.col("trial") == 0)
    out = None
    for name, metric, column, digits, log in (
        ("time", "step_time_s", "ms", 4, True),
        ("loss", "loss", "loss", 6, False),
    ):
        value = pl.col("value") * 1e3 if log else pl.col("value")
        per = (
            base.filter(pl.col("metric") == metric)
            .with_columns(v=value)
            .sort("run_id", "step")
            .with_columns(
                i=pl.int_range(pl.len()).over("run_id"),
                n=pl.len().over("run_id"),
                warm=(pl.col("phase") == "warmup").sum().over("run_id"),
            )
            .with_columns(stride=pl.max_horizontal(pl.lit(1), pl.col("n") // PLOT_W))
        )
        chart = per.group_by("run_id").agg(
            pl.concat_str(
                pl.lit('{"step":['),
                pl.col("step").cast(pl.String).str.join(","),
                pl.lit('],"p":['),
                (pl.col("phase") != "warmup").cast(pl.Int8).cast(pl.String).str.join(","),
                pl.lit(f'],"{column}":['),
                pl.col("v").round_sig_figs(digits).cast(pl.String).str.join(","),
                pl.lit("]}"),
            ).alias(f"{name}_json")
        )
        # The static SVG: about one point per pixel column (every stride-th step), log scale for step times.
        drawn = (
            per.filter((pl.col("i") % pl.col("stride") == 0) & ((pl.col("v") > 0) if log else pl.lit(True)))
            .with_columns(y=pl.col("v").log10() if log else pl.col("v"))
            .with_columns(
                k=pl.int_range(pl.len()).over("run_id"),
                m=pl.len().over("run_id"),
                lo=pl.col("y").min().over("run_id"),
                hi=pl.col("y").max().over("run_id"),
            )
            .with_columns(
                span=pl.when(pl.col("hi") > pl.col("lo")).then(pl.col("hi") - pl.col("lo")).otherwise(1.0),
                last=pl.max_horizontal(pl.col("m") - 1, pl.lit(1)),
            )
            .group_by("run_id")
            .agg(
                pl.format(
                    "{},{}",
                    (PLOT_X + PLOT_W * pl.col("k") / pl.col("last")).round(1),
                    (10 + (SVG_PANEL - 30) * (1 - (pl.col("y") - pl.col("lo")) / pl.col("span"))).round(1),
                )
                .str.join(" ")
                .alias(f"{name}_points"),
                pl.col("lo").first().alias(f"{name}_lo"),
                pl.col("hi").first().alias(f"{name}_hi"),
                (
                    PLOT_X
                    + PLOT_W
                    * pl.min_horizontal(pl.col("warm").first() // pl.col("stride").first(), pl.col("last").first())
                    / pl.col("last").first()
                ).alias(f"{name}_warm_x"),
            )
        )
        both = chart.join(drawn, on="run_id", how="left")
        out = both if out is None else out.join(both, on="run_id", how="full", coalesce=True)
    return out.collect()


CSV_COLUMNS = ["run_id", "trial", "step", "phase", "metric", "value", "unit"]


def _csv_field(expr: pl.Expr) -> pl.Expr:
    """A CSV field (RFC 4180): quoted, with quotes doubled, when it holds a comma, a quote or a line break."""
    text = expr.cast(pl.String).fill_null("")
    quoted = pl.lit('"') + text.str.replace_all('"', '""', literal=True) + pl.lit('"')
    return pl.when(text.str.contains('[",\r\n]')).then(quoted).otherwise(text)


def csv_texts(rows: pl.DataFrame) -> dict[str, str]:
    """Every run's rows as CSV text (header included), built for all runs in one vectorised pass, rows in the
    order of the run's file."""
    header = ",".join(CSV_COLUMNS)
    lines = (
        rows.lazy()
        .select("run_id", pl.concat_str([_csv_field(pl.col(c)) for c in CSV_COLUMNS], separator=",").alias("line"))
        .group_by("run_id", maintain_order=True)
        .agg(pl.col("line").str.join("\n"))
        .collect()
    )
    return {run_id: f"{header}\n{text}\n" for run_id, text in lines.iter_rows()}


def samples_svg(texts: dict[str, Any]) -> str:
    """A static SVG of step time (log scale) and loss per step, for readers without JavaScript, from the points
    `sample_texts` computed."""

    def panel(name: str, top: int, log: bool, label: str) -> str:
        points = texts.get(f"{name}_points")
        if not points:
            return ""
        lo, hi, warm_x = texts[f"{name}_lo"], texts[f"{name}_hi"], texts[f"{name}_warm_x"]
        fmt = (lambda v: f"{10**v:.3g}") if log else (lambda v: f"{v:.3g}")
        return (
            f'<g transform="translate(0,{top})">'
            f'<rect x="{PLOT_X}" y="10" width="{warm_x - PLOT_X:.1f}" height="{SVG_PANEL - 30}" fill="#fdf3d8"/>'
            f'<polyline fill="none" stroke="#1f6feb" stroke-width="1" points="{points}"/>'
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


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(pages.TEMPLATES),
        undefined=jinja2.StrictUndefined,
        autoescape=True,  # an HTML page: every record value is escaped
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(fmt=pages.fmt, pct=pages.pct)
    return env


def _code_key(stylesheets: list[str]) -> str:
    """What every run page also depends on besides its own record: this module, the chart spec, the helpers,
    the template and the stylesheet names."""
    digest = hashlib.sha256()
    for path in (Path(__file__), Path(charts.__file__), Path(pages.__file__), pages.TEMPLATES / "run.html.j2"):
        digest.update(path.read_bytes())
    digest.update("\n".join(stylesheets).encode())
    return digest.hexdigest()


def write_run_pages(
    site: Path, summary: pl.DataFrame, rows: pl.DataFrame, kept: Path | None = None, manifest: Path | None = None
) -> int:
    """Render `runs/<run>.html`, its samples SVG and its rows as CSV for every run into the built site; returns
    how many runs were rendered.

    Incremental when given `kept` (the previous build's runs/ directory, moved aside while MkDocs rebuilt the
    rest) and `manifest` (what each kept page was made from): a run whose inputs are unchanged (its summary row,
    which carries its result file's sha256, and this code) keeps its files; new and changed runs are rendered,
    and the files of runs no longer present are removed. The bytes are the same as a full render's."""
    env = _environment()
    template = env.get_template("run.html.j2")
    stylesheets = sorted(p.relative_to(site).as_posix() for p in (site / "assets" / "stylesheets").glob("*.min.css"))
    out_dir = site / "runs"
    if kept is not None and kept.exists() and not out_dir.exists():
        os.replace(kept, out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    code = _code_key(stylesheets)
    runs = summary.to_dicts()
    keys = {
        run["run_id"]: hashlib.sha256((code + json.dumps(run, sort_keys=True, default=str)).encode()).hexdigest()
        for run in runs
    }
    before = json.loads(manifest.read_text()) if manifest is not None and manifest.exists() else {}
    todo = [
        run
        for run in runs
        if before.get(run["run_id"]) != keys[run["run_id"]]
        or not (out_dir / f"{pages.slug(run['run_id'])}.html").exists()
    ]
    current = {pages.slug(run["run_id"]) for run in runs}
    for path in out_dir.iterdir():  # runs no longer in data/ (a removed or now rejected file)
        if path.stem not in current:
            path.unlink()
    if todo:
        if len(todo) < len(runs):
            rows = rows.filter(pl.col("run_id").is_in([run["run_id"] for run in todo]))
        _render(template, out_dir, todo, rows, stylesheets)
    if manifest is not None:
        manifest.parent.mkdir(parents=True, exist_ok=True)
        tmp = manifest.with_suffix(".tmp")
        tmp.write_text(json.dumps(keys, sort_keys=True))
        tmp.replace(manifest)
    return len(todo)


def _render(
    template: jinja2.Template, out_dir: Path, runs: list[dict[str, Any]], rows: pl.DataFrame, stylesheets: list[str]
) -> None:
    texts = {row["run_id"]: row for row in sample_texts(rows).iter_rows(named=True)}
    csvs = csv_texts(rows)
    spec_text = json.dumps(charts.step_samples_spec(), separators=(",", ":"))
    spec_text = spec_text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    for run in runs:
        run_id = run["run_id"]
        slug = pages.slug(run_id)
        config = json.loads(run["config"])
        chart_json, svg_name = None, None
        run_texts = texts.get(run_id)
        if run_texts is not None and (run_texts.get("time_json") or run_texts.get("loss_json")):
            datasets = (
                f'"{charts.SAMPLE_TIMES}":[{run_texts.get("time_json") or "{}"}],'
                f'"{charts.SAMPLE_LOSSES}":[{run_texts.get("loss_json") or "{}"}]'
            )
            chart_json = spec_text[:-1] + ',"datasets":{' + datasets + "}}"  # numbers only: nothing to escape
            svg_name = f"{slug}.svg"
            (out_dir / svg_name).write_text(samples_svg(run_texts))
        else:
            (out_dir / f"{slug}.svg").unlink(missing_ok=True)
        csv_name = None
        if run_id in csvs:
            csv_name = f"{slug}.csv"
            (out_dir / csv_name).write_text(csvs[run_id])
        else:
            (out_dir / f"{slug}.csv").unlink(missing_ok=True)
        html = template.render(
            run=run,
            csv_name=csv_name,
            config=config,
            settings=settings_rows(config),
            hardware=_flat(json.loads(run["hardware"])),
            software=_flat(json.loads(run["software"])),
            environment=_flat(json.loads(run["environment"])),
            calibration=_flat(json.loads(run["calibration"])) if run["calibration"] else [],
            workload_href=f"../leaderboards/{pages.slug(run['suite'], run['workload'])}.html",
            stylesheets=stylesheets,
            chart_json=chart_json,
            chart_id=f"chart-run-{slug}",
            svg_name=svg_name,
        )
        (out_dir / f"{slug}.html").write_text(html)
