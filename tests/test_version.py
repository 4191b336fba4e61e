"""The version from git (runners/version.py, which the build reads too): the tag's version at a tag, the next patch's
`.dev<commit time>+g<sha>` after it, `.dirty` with uncommitted changes to the tool (not to data/), the last release as
the base, the same for a commit however deep its clone, and an sdist's PKG-INFO where there is no checkout. Real git
repositories made in a temporary folder."""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from runners import version

WHEN = iter(range(1_796_460_000, 1_796_460_000 + 10**6, 3600))  # one commit an hour, from 2026-12-05


ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def _git(repo: Path, *args: str, **env: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True, env=os.environ | ENV | env
    )
    return done.stdout.strip()


def _commit(repo: Path, name: str) -> tuple[str, str]:
    """Commit a file; returns the commit's 7-digit id and its time as the version spells it."""
    (repo / name).write_text(name)
    _git(repo, "add", name)
    seconds = next(WHEN)
    _git(repo, "commit", "-qm", name, GIT_COMMITTER_DATE=f"@{seconds} +0100")  # the version takes UTC, not +01:00
    return _git(repo, "rev-parse", "HEAD")[:7], datetime.fromtimestamp(seconds, UTC).strftime("%Y%m%d%H%M%S")


def test_versions_between_and_at_tags(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _commit(repo, "a")
    sha, when = _commit(repo, "b")
    assert version.from_git(repo) == f"{version.next_patch(version.LAST_RELEASE)}.dev{when}+g{sha}"  # no tag yet
    _git(repo, "tag", "v0.1.0")
    assert version.from_git(repo) == "0.1.0"
    sha, when = _commit(repo, "c")
    assert version.from_git(repo) == f"0.1.1.dev{when}+g{sha}"
    (repo / "data").mkdir()
    (repo / "data" / "run.parquet").write_text("a result")
    _git(repo, "add", "data")
    assert version.from_git(repo) == f"0.1.1.dev{when}+g{sha}"  # a new result is not a change to the tool
    (repo / "a").write_text("changed")
    assert version.from_git(repo) == f"0.1.1.dev{when}+g{sha}.dirty"
    assert version.version(repo) == version.from_git(repo)
    _git(repo, "tag", "v0.2")
    assert version.next_patch("0.2") == "0.2.1"


def test_a_shallow_clone_names_a_commit_as_a_full_clone_does(tmp_path: Path) -> None:
    """CI clones with `--depth 1`: no history behind the commit, no tag but those on it. The version of a commit is
    its own (its time and id, a tag on it), so every clone of it gives the same one."""
    origin = tmp_path / "origin"
    origin.mkdir()
    _git(origin, "init", "-q", "-b", "main")
    for name in "abc":
        _commit(origin, name)
    _git(origin, "tag", "v0.1.0", "HEAD~1")
    for name in "def":
        _commit(origin, name)
    full, shallow = tmp_path / "full", tmp_path / "shallow"
    _git(tmp_path, "clone", "-q", str(origin), str(full))
    _git(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", str(shallow))
    assert _git(shallow, "rev-parse", "--is-shallow-repository") == "true"
    assert version.from_git(shallow) == version.from_git(full) == version.from_git(origin)
    assert ".dev" in (version.from_git(full) or "")
    tagged = tmp_path / "tagged"  # a shallow clone of the release itself
    _git(tmp_path, "clone", "-q", "--depth", "1", "--branch", "v0.1.0", f"file://{origin}", str(tagged))
    assert version.from_git(tagged) == "0.1.0"


def test_an_sdist_without_git_reads_its_pkg_info(tmp_path: Path) -> None:
    (tmp_path / "PKG-INFO").write_text("Metadata-Version: 2.4\nName: fairfight\nVersion: 0.1.1.dev7+gabcdef0\n")
    assert version.from_git(tmp_path) is None and version.version(tmp_path) == "0.1.1.dev7+gabcdef0"
    (tmp_path / "PKG-INFO").unlink()
    with pytest.raises(RuntimeError, match="neither a git checkout nor an unpacked sdist"):
        version.version(tmp_path)
