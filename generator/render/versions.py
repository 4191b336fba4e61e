"""What built the site: Fair Fight's own version (`runners.provenance.project_version`) and the versions of the
libraries that turn its records into pages, read from the installed packages (importlib.metadata) at build time.
The footer names the main ones (`footer`); the downloads page lists them all."""

from __future__ import annotations

import html
import json
from importlib import metadata

from runners import provenance

PACKAGES = {
    "fairfight": "Fair Fight",
    "polars": "polars",
    "pyarrow": "pyarrow",
    "altair": "altair",
    "vl-convert-python": "vl-convert-python",
    "jinja2": "Jinja2",
    "mkdocs": "MkDocs",
    "mkdocs-material": "MkDocs Material",
}
"""Distribution name → how the site names it, in the order the downloads page lists them."""
IN_FOOTER = ("polars", "altair", "mkdocs-material")
"""The libraries the footer names after Fair Fight: the data, the charts, the pages."""


def generator() -> list[dict[str, str]]:
    """Each of `PACKAGES` as `{package, name, version}`: Fair Fight's from `provenance.project_version` (a checkout's
    pyproject.toml: the tree being built, installed or not), every other one's from its installed distribution ("not
    installed" if none)."""
    out = []
    for package, name in PACKAGES.items():
        if package == "fairfight":
            version = provenance.project_version()
        else:
            try:
                version = metadata.version(package)
            except metadata.PackageNotFoundError:
                version = "not installed"
        out.append(dict(package=package, name=name, version=version))
    return out


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
