"""One page per run: provenance, every setting and its difference from the engine's defaults, the command that
reproduces it, the result file's sha256, and the raw samples (a chart here, every row in the downloads)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2
import polars as pl

from generator import charts, pages


def run_href(run_id: str) -> str:
    """Where a run's page lives, relative to the docs root."""
    return pages.run_href(run_id)


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


def write_run_pages(
    env: jinja2.Environment, docs: Path, summary: pl.DataFrame, rows: pl.DataFrame, chart_sink: pages.Charts
) -> list[str]:
    """Render `runs/<run_id>.md` for every run; returns their paths relative to docs."""
    written = []
    samples = rows.filter(pl.col("step").is_not_null()).partition_by("run_id", as_dict=True)
    for run in summary.to_dicts():
        run_id = run["run_id"]
        config = json.loads(run["config"])
        run_rows = samples.get((run_id,))
        step_chart = ""
        if run_rows is not None and run_rows.height:
            chart = charts.step_samples(run_rows.filter(pl.col("trial") == 0))
            step_chart = chart_sink.html(f"chart-run-{pages.slug(run_id)}", chart, depth=1)
        href = run_href(run_id)
        pages.render(
            env,
            "run.md.j2",
            docs / href,
            run=run,
            config=config,
            settings=settings_rows(config),
            hardware=_flat(json.loads(run["hardware"])),
            software=_flat(json.loads(run["software"])),
            environment=_flat(json.loads(run["environment"])),
            calibration=_flat(json.loads(run["calibration"])) if run["calibration"] else [],
            workload_href=f"../leaderboards/{pages.slug(run['suite'], run['workload'])}.md",
            step_chart=step_chart,
        )
        written.append(href)
    return written
