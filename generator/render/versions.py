"""What built the site, as its footer says it: Fair Fight's own version and the main libraries that turn its records
into pages (`footer`), from the versions read at build time (generator/load/packages.py `built_with`); the downloads
page lists them all."""

from __future__ import annotations

import html
import json

IN_FOOTER = ("polars", "altair", "mkdocs-material")
"""The libraries the footer names after Fair Fight: the data, the charts, the pages."""


def footer_text(versions: list[dict[str, str]]) -> str:
    """The footer's line as text: "Built by Fair Fight 0.1.0 with polars 2.1.0, altair 6.3.0, MkDocs Material
    9.8.2" (run pages print it through their template, which escapes)."""
    by = {v["package"]: v for v in versions}
    own = by["fairfight"]
    used = ", ".join(f"{by[p]['name']} {by[p]['version']}" for p in IN_FOOTER)
    return f"Built by {own['name']} {own['version']} with {used}"


def footer(versions: list[dict[str, str]]) -> str:
    """The footer's line as HTML, escaped here: MkDocs' templates print it as it is."""
    return html.escape(footer_text(versions))


FOOTER_SCRIPT = "assets/js/built-with.js"
"""The run pages' footer line (`footer_script`), one file for all of them: in each page, a new version of the generator
(every commit, through git describe) would make every run page again."""


def footer_script(versions: list[dict[str, str]]) -> str:
    """`FOOTER_SCRIPT`'s text: puts the footer's line (`footer_text`) in each element marked `data-ff-built-with` (a
    run page shows "Built by Fair Fight" there without JavaScript, and links every version)."""
    line = json.dumps(footer_text(versions))  # a JavaScript string; set as text, never parsed as HTML
    return (
        "/* The footer's line naming the generator's versions, written by the build "
        "(generator/render/versions.py). */\n"
        f'document.querySelectorAll("[data-ff-built-with]").forEach(function (e) {{ e.textContent = {line}; }});\n'
    )
