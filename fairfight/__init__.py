"""Fair Fight's front door: the `fairfight` command (fairfight/cli.py) and the wheelhouse for hosts without a network.

It sits above both halves: `runners/` (run suites, write result files) and `generator/` (build the site from them)
never import it, and it imports each command's module only when that command runs, so a bench host with torch but no
site stack can still run `fairfight bench`.
"""

from __future__ import annotations

from runners.provenance import project_version as version

__all__ = ["version"]
