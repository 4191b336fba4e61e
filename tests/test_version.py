"""The version from git (runners/version.py, which the build reads too): the tag's version at a tag, the next
patch's `.devN+g<sha>` N commits after it, `.dirty` with uncommitted changes to the tool (not to data/), the last
release as the base before any tag, and an sdist's PKG-INFO where there is no checkout. Real git repositories made
in a temporary folder."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from runners import version


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True, env=os.environ | env)
    return done.stdout.strip()


def _commit(repo: Path, name: str) -> str:
    (repo / name).write_text(name)
    _git(repo, "add", name)
    _git(repo, "commit", "-qm", name)
    return _git(repo, "rev-parse", "--short=7", "HEAD")


def test_versions_between_and_at_tags(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    sha = _commit(repo, "a")
    sha = _commit(repo, "b")
    assert version.from_git(repo) == f"{version.next_patch(version.LAST_RELEASE)}.dev2+g{sha}"  # no tag yet
    _git(repo, "tag", "v0.1.0")
    assert version.from_git(repo) == "0.1.0"
    sha = _commit(repo, "c")
    assert version.from_git(repo) == f"0.1.1.dev1+g{sha}"
    (repo / "data").mkdir()
    (repo / "data" / "run.parquet").write_text("a result")
    _git(repo, "add", "data")
    assert version.from_git(repo) == f"0.1.1.dev1+g{sha}"  # a new result is not a change to the tool
    (repo / "a").write_text("changed")
    assert version.from_git(repo) == f"0.1.1.dev1+g{sha}.dirty"
    assert version.version(repo) == version.from_git(repo)
    _git(repo, "tag", "v0.2")
    assert version.next_patch("0.2") == "0.2.1"


def test_an_sdist_without_git_reads_its_pkg_info(tmp_path: Path) -> None:
    (tmp_path / "PKG-INFO").write_text("Metadata-Version: 2.4\nName: fairfight\nVersion: 0.1.1.dev7+gabcdef0\n")
    assert version.from_git(tmp_path) is None and version.version(tmp_path) == "0.1.1.dev7+gabcdef0"
    (tmp_path / "PKG-INFO").unlink()
    with pytest.raises(RuntimeError, match="neither a git checkout nor an unpacked sdist"):
        version.version(tmp_path)
