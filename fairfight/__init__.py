"""Fair Fight's front door: the `fairfight` command (fairfight/cli.py) and the wheelhouse for hosts without a network.

It sits above both halves: `runners/` (run suites, write result files) and `generator/` (build the site from them)
never import it, and it imports each command's module only when that command runs, so a bench host with torch but no
site stack can still run `fairfight bench`.
"""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

_CHECKOUT_PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def version() -> str:
    """The project's version: from pyproject.toml when this runs from a checkout (an older install in the same
    environment must not answer for it), else from the installed package's metadata."""
    if _CHECKOUT_PYPROJECT.exists():
        try:
            project = tomllib.loads(_CHECKOUT_PYPROJECT.read_text())["project"]
            if project["name"] == "fairfight":  # not some other project's file beside an installed package
                return str(project["version"])
        except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError):
            pass
    try:
        return metadata.version("fairfight")
    except metadata.PackageNotFoundError:
        return "unknown"
