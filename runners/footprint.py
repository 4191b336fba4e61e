"""What an outside engine's run left in the checkout and the data folder: the bench's check that nothing appeared
or changed there but what the bench itself wrote.

An outside engine runs as the same user as the bench, so nothing stops it from writing wherever that user may
(runners/engines/external/untrusted.py keeps the paths from it, not the permissions). What the bench can do is look:
it notes every file of the checkout and of the data folder before the run (`snapshot`: what lstat shows, and for a
file of more than one link what its bytes hash to) and compares after (`changes`). A result file or manifest that
appeared under the data folder is set aside (`quarantine`: renamed to a hidden `.quarantined-` name, which the
site's loader skips and git shows), so a planted record never ranks; every change is named in the run's failure
record.

The ctime is what shows a rewrite whose writer set the mtime back. But a file of several links (uv hardlinks each
installed file from its cache into `.nox/*/site-packages`) also gets a new ctime whenever a link to it is made or
removed anywhere on the disk, as other environments come and go, its bytes untouched. So the first snapshot notes
what such a file's bytes hash to: for an installed file, the sha256 its installer listed in the RECORD of its
`.dist-info` (the file itself is not read: an environment's 50,000 linked files hold 2 GB), for any other its
bytes, hashed. Where afterwards only its ctime and link count moved, it is hashed again, and unchanged if the
sha256 is the one noted. The link count alone decides nothing (a writer can make or remove a link as well as
write), and a file of one link at the start, with nothing noted, has changed when its ctime moved. The RECORDs are
read before the engine runs, so rewriting one does not help it; the one write let by is a linked installed file
put back to exactly what its RECORD listed at the start, never bytes of the engine's own. Linked files are also
the ones the read-only views cannot protect: their other link, outside the checkout, stays writable.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

SKIPPED_GIT = ("objects", "logs", "index", "index.lock", "FETCH_HEAD", "ORIG_HEAD", "gc.pid")
"""What git itself writes under .git while the bench asks it for the harness commit (`git status` refreshes the
index): not the code. Hooks, config and refs are watched."""
QUARANTINE_PREFIX = ".quarantined-"
RECORD_MAX_BYTES = 64 << 20
"""A RECORD larger than this is not read (torch's is 1.5 MB): its files are hashed instead."""


class State(NamedTuple):
    """A file as lstat sees it (times in ns; the ctime cannot be set back by the writer), and for a file or symbolic
    link of more than one link the sha256 its bytes had (or, installed, were recorded with) at the first snapshot,
    or have at a later one where its ctime or link count alone moved; None elsewhere."""

    mode: int
    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int
    nlink: int
    uid: int
    gid: int
    sha256: bytes | None = None


def _state(st: os.stat_result) -> State:
    return State(st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_nlink, st.st_uid, st.st_gid)


def _links_alone_moved(before: State, after: State) -> bool:
    """Whether two states of a file differ at most in ctime and link count (what a link made or removed elsewhere
    changes)."""
    return after._replace(ctime_ns=before.ctime_ns, nlink=before.nlink, sha256=before.sha256) == before


def unchanged(before: State, after: State) -> bool:
    """Whether a file is as it was: all lstat shows is equal, or only its ctime and link count moved and its bytes
    hash to what was noted at the start."""
    if after._replace(sha256=before.sha256) == before:
        return True
    return before.sha256 is not None and after.sha256 == before.sha256 and _links_alone_moved(before, after)


@contextmanager
def _opened(path: str, ino: int) -> Iterator[io.BufferedReader | None]:
    """The regular file lstat saw at `path` (the same inode), open for reading, or None where it is gone, replaced
    or unreadable. Never follows a link, never blocks on a FIFO put in its place."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        yield None
        return
    with open(fd, "rb") as f:
        try:
            now = os.fstat(fd)
        except OSError:
            yield None
            return
        yield f if stat.S_ISREG(now.st_mode) and now.st_ino == ino else None


def _sha256(path: str, st: State) -> bytes | None:
    """What the bytes of the file lstat saw at `path` hash to (a symbolic link's: its target), None where it cannot
    be read as that file."""
    if stat.S_ISLNK(st.mode):
        try:
            return hashlib.sha256(os.readlink(os.fsencode(path))).digest()
        except OSError:
            return None
    with _opened(path, st.ino) as f:
        try:
            return None if f is None else hashlib.file_digest(f, "sha256").digest()
        except OSError:
            return None


def _installed(root: str, records: list[str], wanted: set[str], out: dict[str, State]) -> dict[str, bytes]:
    """The sha256 of each `wanted` file as a RECORD lists it (PEP 376: `path,sha256=<urlsafe base64>,size`), by
    path relative to `root`: only where the size it lists is the size lstat saw, never for a file two RECORDs
    disagree on. A listed path is taken below the RECORD's own site-packages and must name a file the walk found
    there, so a `..` or an absolute path reaches nothing."""
    found: dict[str, bytes] = {}
    disputed: set[str] = set()
    for record in records:
        with _opened(os.path.join(root, record), out[record].ino) as f:
            try:
                text = None if f is None else f.read(RECORD_MAX_BYTES + 1)
            except OSError:
                text = None
        if text is None or len(text) > RECORD_MAX_BYTES:
            continue
        base = os.path.dirname(os.path.dirname(record))
        prefix = base + os.sep if base else ""
        for line in text.decode(errors="replace").splitlines():
            row = next(csv.reader([line])) if line.startswith('"') else line.rsplit(",", 2)  # quoted: a comma in it
            if len(row) != 3 or not row[1].startswith("sha256=") or not row[2].isdigit():
                continue
            name = prefix + row[0].replace("/", os.sep)
            if name not in wanted or out[name].size != int(row[2]) or not stat.S_ISREG(out[name].mode):
                continue
            try:
                digest = base64.urlsafe_b64decode(row[1].removeprefix("sha256=") + "==")
            except ValueError:
                continue
            if found.setdefault(name, digest) != digest:
                disputed.add(name)
    return {name: digest for name, digest in found.items() if name not in disputed and len(digest) == 32}


def snapshot(root: Path, skip: tuple[Path, ...] = (), before: dict[str, State] | None = None) -> dict[str, State]:
    """Every entry under `root` (files, links and special files, never followed), by path relative to it, but
    those under `skip` and git's own bookkeeping. With no `before` (the first snapshot), each file or symbolic link
    of more than one link gets its sha256 (as its RECORD lists it, or hashed); given the first, those of them whose
    ctime or link count alone moved since are hashed."""
    root = Path(root)
    if not root.is_dir():
        return {}
    top = str(root.absolute())
    skipped = {os.path.normpath(p) for p in (str(Path(s).absolute()) for s in skip)}
    out: dict[str, State] = {}
    to_hash: list[str] = []
    records: list[str] = []
    folders = [(top, "")]  # a stack, not recursion: a data folder may be nested deeper than Python recurses
    while folders:
        folder, rel = folders.pop()
        in_git = os.path.basename(folder) == ".git"
        try:
            with os.scandir(folder) as entries:
                listed = list(entries)
        except OSError:  # gone or unreadable meanwhile, as os.walk skips it
            continue
        for entry in listed:
            if in_git and entry.name in SKIPPED_GIT:
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.path not in skipped:
                        folders.append((entry.path, rel + entry.name + os.sep))
                    continue
                st = _state(entry.stat(follow_symlinks=False))
            except OSError:  # gone meanwhile
                continue
            name = rel + entry.name
            out[name] = st
            if before is None:
                hashed = (stat.S_ISREG(st.mode) or stat.S_ISLNK(st.mode)) and st.nlink > 1
                if entry.name == "RECORD" and folder.endswith(".dist-info") and stat.S_ISREG(st.mode):
                    records.append(name)
            else:
                was = before.get(name)
                hashed = (
                    was is not None
                    and was.sha256 is not None
                    and was._replace(sha256=None) != st
                    and _links_alone_moved(was, st)
                )
            if hashed:
                to_hash.append(name)
    installed = _installed(top, records, set(to_hash), out) if to_hash and before is None else {}
    for name in to_hash:
        digest = installed.get(name) or _sha256(os.path.join(top, name), out[name])
        out[name] = out[name]._replace(sha256=digest)
    return out


@dataclass(frozen=True, slots=True)
class Changes:
    new: list[str]
    changed: list[str]
    removed: list[str]

    def __bool__(self) -> bool:
        return bool(self.new or self.changed or self.removed)

    def describe(self, where: str) -> list[str]:
        return (
            [f"{where}/{p} (new)" for p in self.new]
            + [f"{where}/{p} (changed)" for p in self.changed]
            + [f"{where}/{p} (removed)" for p in self.removed]
        )


def changes(before: dict[str, State], after: dict[str, State], written: frozenset[str] = frozenset()) -> Changes:
    """What differs between two snapshots of one folder (`after` taken with `before`, so that the linked files
    whose ctime moved are hashed), less the paths the bench wrote itself (`written`)."""
    kept = after.keys() & before.keys()
    return Changes(
        new=sorted(p for p in after.keys() - before.keys() if p not in written),
        changed=sorted(p for p in kept if p not in written and not unchanged(before[p], after[p])),
        removed=sorted(before.keys() - after.keys()),
    )


def quarantine(root: Path, paths: list[str]) -> list[str]:
    """Rename each new entry under `root` to a hidden `.quarantined-NAME` beside it (never followed, never read):
    the site's loader skips hidden names, so it cannot rank, and nothing is deleted. Returns the new names."""
    out = []
    for rel in paths:
        path = Path(root) / rel
        target = path.with_name(QUARANTINE_PREFIX + path.name)
        try:
            if stat.S_ISDIR(os.lstat(path).st_mode):
                continue
            os.replace(path, target)
        except OSError:
            continue
        out.append(os.path.relpath(target, root))
    return out


class Watch:
    """The checkout (`code`) and the data folder around one outside engine's run: `start()` before it, `finish()`
    after it and everything it started have ended, which sets aside what appeared under the data folder and
    returns every change found, named (empty when there is none)."""

    def __init__(self, data_dir: Path, code: Path) -> None:
        self.data, self.code = Path(data_dir).absolute(), Path(code).absolute()
        self._data: dict[str, State] = {}
        self._code: dict[str, State] = {}

    def start(self) -> None:
        self._data = snapshot(self.data)
        self._code = snapshot(self.code, skip=(self.data,))

    def finish(self) -> list[str]:
        found_data = changes(self._data, snapshot(self.data, before=self._data))
        found_code = changes(self._code, snapshot(self.code, skip=(self.data,), before=self._code))
        moved = quarantine(self.data, found_data.new)
        out = found_code.describe(_shown(self.code)) + found_data.describe(_shown(self.data))
        return out + [f"{_shown(self.data)}/{name} (set aside)" for name in moved]


def _shown(path: Path) -> str:
    """A folder as a message names it: relative to the working directory when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
