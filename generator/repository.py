"""Which repository a site's Reproduce blocks clone: the builder's `--repo-url`, else the project's own metadata
(`[project.urls]` in pyproject.toml, or the installed package's Project-URL), else none, which the run pages then say
(site_src/templates/run.html.j2)."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
KEYS = ("Repository", "Source", "Source Code", "Homepage")
"""The `[project.urls]` labels that name where the code lives, in the order they are taken."""


DOCUMENTATION_KEYS = ("Documentation", "Docs")
"""The `[project.urls]` labels that name where the project's site is served (`documentation_url`)."""


def project_url(pyproject: Path = PYPROJECT, keys: tuple[str, ...] = KEYS) -> str | None:
    """The address the project's metadata names under the first of `keys` it has (by default the repository's),
    or None."""
    urls: dict[str, str] = {}
    if pyproject.is_file():
        try:
            found = tomllib.loads(pyproject.read_text()).get("project", {}).get("urls", {})
        except (OSError, tomllib.TOMLDecodeError):
            found = {}
        urls = {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}
    else:  # an installed copy without its pyproject.toml: the package's own metadata
        try:
            entries = metadata.metadata("fairfight").get_all("Project-URL") or []
        except metadata.PackageNotFoundError:
            entries = []
        urls = dict(tuple(part.strip() for part in e.split(",", 1)) for e in entries if "," in e)
    lowered = {k.lower(): v for k, v in urls.items()}
    return next((lowered[k.lower()] for k in keys if k.lower() in lowered), None)


def resolve(repo_url: str | None) -> str | None:
    """The builder's address when given, else the project's."""
    return repo_url or project_url()


def documentation_url(pyproject: Path = PYPROJECT) -> str | None:
    """Where the project's metadata says its site is served (`[project.urls] Documentation`), or None: the build's
    `site_url` when no `--site-url` is given."""
    return project_url(pyproject, DOCUMENTATION_KEYS)
