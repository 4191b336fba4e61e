"""Hatchling build hook (pyproject.toml `[tool.hatch.build.hooks.custom]`): bakes the harness commit into the package.

An installed Fair Fight has no checkout to ask which commit it is, yet every record it writes must name one, and
`fairfight --version` prints it. At build time, in the checkout, this writes `runners/_build.json` ({"commit",
"dirty"}) into the wheel and the sdist; a wheel built from that sdist keeps the file the sdist carried. Not part
of the installed package.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

TARGET = "runners/_build.json"


def _git(root: str, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=20, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


class CommitHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        root = self.root
        if not (Path(root) / ".git").exists():
            carried = Path(root) / TARGET  # built from an sdist: keep the file it carries (git ignores it)
            if carried.exists():
                build_data["force_include"][str(carried)] = TARGET
            return
        commit = _git(root, "rev-parse", "HEAD")
        if commit is None:
            return
        status = _git(root, "status", "--porcelain", "--", ".", ":(exclude)data")
        tmp = Path(tempfile.mkdtemp(prefix="fairfight-build-")) / "_build.json"
        tmp.write_text(json.dumps({"commit": commit, "dirty": None if status is None else bool(status)}) + "\n")
        build_data["force_include"][str(tmp)] = TARGET
