"""What git knows about the data folder: whether it is committed (an edition freezes only committed files), which
committed result files and manifests were changed after they were first committed, and a file's bytes at a commit.

Result files and edition manifests are append-only: once committed, a file is never modified, renamed or deleted.
A change git holds (in a later commit, or uncommitted in the work tree) is a rewrite of history, and the site and
`validate` name it with the commit that made it: a modified or moved file is rejected where it is now, and a deleted
or moved-away one is named where it was (`removed`). Outside a git checkout (a tarball, an installed copy) none of
this can be checked, and the editions page says so.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
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


NEVER = "result files and manifests are never rewritten, moved or deleted (retract a run with a new record instead)"
"""Why a change git holds to a committed file is named: the rule it breaks, and what to do instead."""


_asked: dict[str, dict[str, str] | None] | None = None
"""`rewritten`'s answers while `once` holds (by the data folder's real path), else None: asked every time."""


@contextlib.contextmanager
def once() -> Iterator[None]:
    """Ask git what was rewritten once per data folder while this holds (a site build asks for each of its steps:
    the audit, the editions, the compare table), so every step sees the same answer."""
    global _asked
    outer, _asked = _asked, {} if _asked is None else _asked
    try:
        yield
    finally:
        _asked = outer


def rewritten(data_dir: Path) -> dict[str, str] | None:
    """Each committed file under `data_dir` that git shows changed after it was added, by the loader's name, with what
    happened to it and the commit that did it: modified, deleted or moved (renamed with the same bytes, which git's
    exact rename detection pairs: the old path "moved to" the new, the new "moved here from" the old) in a later
    commit, or modified, deleted or moved in the work tree since. None outside a git checkout. Under `once`, git is
    asked once per folder."""
    if _asked is None:
        return _rewritten(data_dir)
    key = os.path.realpath(data_dir)
    if key not in _asked:
        _asked[key] = _rewritten(data_dir)
    found = _asked[key]
    return None if found is None else dict(found)  # a copy: a caller may change its own


def _rewritten(data_dir: Path) -> dict[str, str] | None:
    found = repo(data_dir)
    if found is None:
        return None
    out: dict[str, str] = {}

    def name(path: str) -> str:
        return _relative(found, data_dir, path)

    log = _git(
        Path(data_dir), "log", "--format=commit %H", "--name-status", "--find-renames=100%", "--diff-filter=MDRT",
        "--", ".",
    )  # fmt: skip
    commit = ""
    for line in (log or "").splitlines():
        if line.startswith("commit "):
            commit = line.removeprefix("commit ")[:12]
        elif "\t" in line:
            status, *paths = line.split("\t")
            # the log runs newest first: the first mention is the latest change
            if status.startswith("R") and len(paths) == 2:
                old, new = (name(p) for p in paths)
                out.setdefault(old, f"moved to {new} in commit {commit} after it was committed: {NEVER}")
                out.setdefault(new, f"moved here from {old} in commit {commit} after it was committed: {NEVER}")
                continue
            verb = {"M": "modified", "D": "deleted", "T": "changed in type"}.get(status[:1], "changed")
            out.setdefault(name(paths[0]), f"{verb} in commit {commit} after it was committed: {NEVER}")
    changes = _git(
        Path(data_dir), "status", "--porcelain=v1", "-z", "--find-renames=100%", "--untracked-files=no", "--", "."
    )
    entries = (changes or "").split("\0")
    uncommitted = "in the work tree (not committed) after it was committed"
    i = 0
    while i < len(entries):
        entry, i = entries[i], i + 1
        if len(entry) <= 3:
            continue
        status, path = entry[:2], name(entry[3:])
        if status[0] == "R" and i < len(entries):  # a staged move: `XY new`, then the old path as an entry of its own
            old, i = name(entries[i]), i + 1
            out.setdefault(old, f"moved to {path} {uncommitted}: {NEVER}")
            out.setdefault(path, f"moved here from {old} {uncommitted}: {NEVER}")
        elif "D" in status:
            out.setdefault(path, f"deleted {uncommitted}: {NEVER}")
        elif set(status) & set("MT"):
            out.setdefault(path, f"changed since it was committed (uncommitted changes in the work tree): {NEVER}")
    return out


def removed(data_dir: Path, changed: dict[str, str]) -> list[tuple[str, str]]:
    """Of `changed` (`rewritten`), each file that is no longer there, deleted or moved away, with why: what the
    history lost, which no file left to reject can say."""
    root = Path(data_dir).resolve().parent
    return sorted((path, why) for path, why in changed.items() if not os.path.lexists(root / path))


def added_order(data_dir: Path, folder: str = ".") -> dict[str, int] | None:
    """Each file under `data_dir` (or its `folder`) that a commit added, by the loader's name, with its order: 0 for
    the commit that added the first, higher for later ones (files added by one commit share it). None outside a git
    checkout."""
    found = repo(data_dir)
    if found is None:
        return None
    log = _git(Path(data_dir), "log", "--reverse", "--format=commit %H", "--name-only", "--diff-filter=A", "--", folder)
    out: dict[str, int] = {}
    order = -1
    for line in (log or "").splitlines():
        if line.startswith("commit "):
            order += 1
        elif line:
            out.setdefault(_relative(found, data_dir, line), order)  # the first commit that added it
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
