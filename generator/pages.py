"""Pages: Jinja templates (site_src/templates) rendered to Markdown in the build directory.

Every generated page is declared in one place (`build.py` calls these functions); templates hold the words.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import altair as alt
import jinja2

TEMPLATES = Path(__file__).resolve().parent.parent / "site_src" / "templates"


def fmt(value: Any, digits: int = 3) -> str:
    """A number for a table: significant digits, a dash for missing."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, float):
        if value == 0:
            return "0"
        return f"{value:,.{digits}g}" if abs(value) < 10**digits else f"{value:,.0f}"
    return str(value)


def pct(value: Any) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


_MD_SPECIAL = {ch: f"&#{ord(ch)};" for ch in "\\`*_[]|<>#!&\"'{}"}


def md_text(value: Any) -> str:
    """Text from a record placed in Markdown: every HTML and Markdown special character becomes an entity."""
    return "".join(_MD_SPECIAL.get(ch, ch) for ch in str(value)).replace("\n", " ")


def chart_html(chart_id: str, chart: alt.Chart) -> str:
    """A chart placeholder plus its spec as inert JSON; assets/js/charts.js renders it with the local vega."""
    spec = json.dumps(chart.to_dict(), sort_keys=True, separators=(",", ":"))
    spec = spec.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return (
        f'<div class="ff-chart" id="{chart_id}" data-spec="{chart_id}-spec"></div>\n'
        f'<script type="application/json" id="{chart_id}-spec">{spec}</script>'
    )


def pre(value: Any) -> str:
    """Text for a <pre> block in a raw HTML line: escaped, with newlines as entities so Markdown leaves it whole."""
    return "".join(_MD_SPECIAL.get(ch, ch) for ch in str(value)).replace("\n", "&#10;")


def slug(*parts: str) -> str:
    """A file-name-safe slug of record values (letters, digits, '-' and '.')."""
    return "-".join("".join(c if c.isalnum() or c in "-." else "-" for c in p) for p in parts)


def run_href(run_id: str) -> str:
    """Where a run's page lives, relative to the docs root."""
    return f"runs/{slug(run_id)}.md"


def claim_unknowns(config: str) -> str:
    """What a claim's source leaves unsaid, from its record's config."""
    return ", ".join(json.loads(config).get("claim", {}).get("unknown", [])) or "–"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # output is Markdown: record text goes through md_text instead
    )
    env.filters.update(
        fmt=fmt,
        pct=pct,
        text=md_text,
        pre=pre,
        claim_unknowns=claim_unknowns,
        slug=slug,
        run_href=run_href,
    )
    return env


def render(env: jinja2.Environment, template: str, out: Path, **context: Any) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(env.get_template(template).render(**context))
    return out
