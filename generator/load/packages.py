"""What builds the site, read at build time: Fair Fight's own version (`runners.provenance.project_version`: git
describe in a checkout) and the versions of the libraries that turn its records into pages (importlib.metadata).
The footer names the main ones (generator/render/versions.py); the downloads page lists them all."""

from __future__ import annotations

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


def built_with() -> list[dict[str, str]]:
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
