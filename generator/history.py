"""What git knows about the data folder: whether it is committed (an edition freezes only committed files), which
committed result files and manifests were changed after they were first committed, and a file's bytes at a commit.

Result files and edition manifests are append-only: once committed, a file is never modified, renamed or deleted.
A change git holds (in a later commit, or uncommitted in the work tree) is a rewrite of history, and the site and
`validate` name it. Outside a git checkout (a tarball, an installed copy) none of this can be checked, and the
editions page says so.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Repo:
    top: Path
    """The work tree's top folder."""
    head: str
    """The commit checked out."""


def _git(cwd: Path, *args: str, timeout_s: float = 120) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(cwd), *args], capture_output=True, text=True, timeout=timeout_s, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout


def repo(data_dir: Path) -> Repo | None:
    """The git work tree holding `data_dir`, or None (not in one, or no git)."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        return None
    top = _git(data_dir, "rev-parse", "--show-toplevel")
    head = _git(data_dir, "rev-parse", "--verify", "-q", "HEAD")
    if not top or not head:
        return None
    return Repo(Path(top.strip()), head.strip())


def _relative(repo_: Repo, data_dir: Path, top_relative: str) -> str:
    """A path as git names it (from the top), as the loader names files (from the data folder's parent)."""
    return os.path.relpath(repo_.top / top_relative, Path(data_dir).resolve().parent)


def uncommitted(data_dir: Path) -> list[str] | None:
    """Every path under `data_dir` with changes git has not committed (new, modified or deleted files), as the
    loader names them; None outside a git checkout."""
    found = repo(data_dir)
    if found is None:
        return None
    out = _git(Path(data_dir), "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--", ".")
    if out is None:
        return None
    return sorted(_relative(found, data_dir, entry[3:]) for entry in out.split("\0") if len(entry) > 3)


def rewritten(data_dir: Path) -> dict[str, str] | None:
    """Each committed file under `data_dir` that git shows changed after it was added, by the loader's name: modified
    or deleted in a later commit, or modified in the work tree since. None outside a git checkout."""
    found = repo(data_dir)
    if found is None:
        return None
    out: dict[str, str] = {}
    log = _git(
        Path(data_dir), "log", "--format=commit %H", "--name-status", "--no-renames", "--diff-filter=MDT", "--", "."
    )
    commit = ""
    for line in (log or "").splitlines():
        if line.startswith("commit "):
            commit = line.removeprefix("commit ")
        elif "\t" in line:
            status, path = line.split("\t", 1)
            verb = {"M": "modified", "D": "deleted", "T": "changed in type"}.get(status[:1], "changed")
            # the log runs newest first: the first mention is the latest change
            out.setdefault(
                _relative(found, data_dir, path),
                f"{verb} in commit {commit[:12]} after it was committed: result files and manifests are never "
                "rewritten (retract a run with a new record instead)",
            )
    changes = _git(Path(data_dir), "status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=no", "--", ".")
    for entry in (changes or "").split("\0"):
        if len(entry) > 3 and set(entry[:2]) & set("MDT"):
            out.setdefault(
                _relative(found, data_dir, entry[3:]),
                "changed since it was committed (uncommitted changes in the work tree): result files and manifests "
                "are never rewritten",
            )
    return out


def show(data_dir: Path, commit: str, path: str, limit: int) -> bytes | None:
    """The bytes of `path` (as the loader names it) at `commit`, or None when git cannot say (not a checkout, an
    unknown commit or path, or more than `limit` bytes)."""
    found = repo(data_dir)
    if found is None:
        return None
    top_relative = os.path.relpath(Path(data_dir).resolve().parent / path, found.top)
    size = _git(Path(data_dir), "cat-file", "-s", f"{commit}:{top_relative}")
    if size is None or not size.strip().isdigit() or int(size) > limit:
        return None
    try:
        return subprocess.run(
            ["git", "-C", str(data_dir), "cat-file", "blob", f"{commit}:{top_relative}"],
            capture_output=True,
            timeout=120,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
