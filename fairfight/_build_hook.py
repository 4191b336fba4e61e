"""Hatchling build hook (pyproject.toml `[tool.hatch.build.hooks.custom]`): bakes the harness commit into the package.

An installed Fair Fight has no checkout to ask which commit it is, yet every record it writes must name one, and
`fairfight --version` prints it. At build time, in the checkout, this writes `runners/_build.json` ({"commit",
"dirty"}) into the wheel and the sdist; a wheel built from that sdist keeps the file the sdist carried. Not part
of the installed package.
"""

from __future__ import annotations

import importlib.util
import json
import tempfile
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

TARGET = "runners/_build.json"


def _git(root: str, *args: str) -> str | None:
    """git's answer in the checkout, or None: runners/version.py's own call, loaded by its path as hatchling's version
    source loads it (standard library only; the hook cannot import the package it is building)."""
    spec = importlib.util.spec_from_file_location("_fairfight_version", Path(root) / "runners" / "version.py")
    assert spec is not None and spec.loader is not None
    version = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(version)
    return version._git(Path(root), *args)


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
