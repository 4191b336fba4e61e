"""One page per run: provenance, every setting and its difference from the engine's defaults, the command that
reproduces it, the result file's sha256, and the raw samples (a chart, and every row in the downloads).

Run pages are many (one per result file, thousands on a busy leaderboard), so they are rendered straight to
HTML with the site's own stylesheets after MkDocs has built the rest: the samples chart is one shared spec
with each run's data filled in, and its static SVG is drawn directly, so a page costs milliseconds.
"""

from __future__ import annotations

import json
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


def samples_svg(times_ms: list[float], losses: list[float], warmup: int, width: int = 720, height: int = 150) -> str:
    """A static SVG of step time (log scale) and loss per step, for readers without JavaScript."""
    import math

    def panel(values: list[float], top: int, log: bool, label: str) -> str:
        stride = max(1, len(values) // (width - 50))  # about one point per pixel column
        vals = [math.log10(v) if log else v for v in values[::stride] if v > 0 or not log]
        if not vals:
            return ""
        lo, hi = min(vals), max(vals)
        span = (hi - lo) or 1.0
        n = max(len(vals) - 1, 1)
        pts = " ".join(
            f"{40 + (width - 50) * i / n:.1f},{top + 10 + (height - 30) * (1 - (v - lo) / span):.1f}"
            for i, v in enumerate(vals)
        )
        x_warm = 40 + (width - 50) * min(warmup // stride, n) / n
        fmt = (lambda v: f"{10**v:.3g}") if log else (lambda v: f"{v:.3g}")
        return (
            f'<rect x="40" y="{top + 10}" width="{x_warm - 40:.1f}" height="{height - 30}" fill="#fdf3d8"/>'
            f'<polyline fill="none" stroke="#1f6feb" stroke-width="1" points="{pts}"/>'
            f'<text x="0" y="{top + 14}" font-size="10">{fmt(hi)}</text>'
            f'<text x="0" y="{top + height - 20}" font-size="10">{fmt(lo)}</text>'
            f'<text x="40" y="{top + 8}" font-size="11">{label}</text>'
        )

    body = panel(times_ms, 0, True, "step time (ms, log scale); warm-up shaded") + panel(
        losses, height, False, "loss (nats)"
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{2 * height}" '
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


def write_run_pages(site: Path, summary: pl.DataFrame, rows: pl.DataFrame) -> list[Path]:
    """Render `runs/<run_id>.html` (and its samples SVG) for every run into the built site."""
    env = _environment()
    template = env.get_template("run.html.j2")
    stylesheets = sorted(p.relative_to(site).as_posix() for p in (site / "assets" / "stylesheets").glob("*.min.css"))
    spec = charts.step_samples_spec()
    out_dir = site / "runs"
    out_dir.mkdir(parents=True, exist_ok=True)
    samples = (
        rows.filter(pl.col("step").is_not_null(), pl.col("trial") == 0, pl.col("metric").is_in(["step_time_s", "loss"]))
        .sort("run_id", "step")
        .partition_by("run_id", as_dict=True)
    )
    written = []
    for run in summary.to_dicts():
        run_id = run["run_id"]
        slug = pages.slug(run_id)
        config = json.loads(run["config"])
        chart_json, svg_name = None, None
        run_rows = samples.get((run_id,))
        if run_rows is not None and run_rows.height:
            data = run_rows.select("step", "phase", "metric", "value")
            # columns, not rows: the chart's flatten transform turns them back into rows (a third of the bytes)
            spec["datasets"] = {charts.SAMPLES: [data.to_dict(as_series=False)]}
            text = json.dumps(spec, separators=(",", ":"))
            chart_json = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            times = data.filter(pl.col("metric") == "step_time_s")["value"].to_list()
            losses = data.filter(pl.col("metric") == "loss")["value"].to_list()
            svg_name = f"{slug}.svg"
            (out_dir / svg_name).write_text(
                samples_svg([t * 1e3 for t in times], losses, int(run.get("warmup_steps") or 0))
            )
        html = template.render(
            run=run,
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
        path = out_dir / f"{slug}.html"
        path.write_text(html)
        written.append(path)
    return written
