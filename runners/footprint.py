"""What an outside engine's run left in the checkout and the data folder: the bench's check that nothing appeared
or changed there but what the bench itself wrote.

An outside engine runs as the same user as the bench, so nothing stops it from writing wherever that user may
(runners/engines/external/untrusted.py keeps the paths from it, not the permissions). What the bench can do is look:
it notes every file of the checkout and of the data folder before the run (`snapshot`: type, size, times, inode,
never the contents) and compares after (`changes`). A result file or manifest that appeared under the data folder
is set aside (`quarantine`: renamed to a hidden `.quarantined-` name, which the site's loader skips and git shows),
so a planted record never ranks; every change is named in the run's failure record.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

SKIPPED_GIT = ("objects", "logs", "index", "index.lock", "FETCH_HEAD", "ORIG_HEAD", "gc.pid")
"""What git itself writes under .git while the bench asks it for the harness commit (`git status` refreshes the
index): not the code. Hooks, config and refs are watched."""
QUARANTINE_PREFIX = ".quarantined-"

State = tuple[int, int, int, int, int]
"""A file as lstat sees it: mode, size, mtime and ctime (ns), inode. The ctime cannot be set back by the writer."""


def _state(st: os.stat_result) -> State:
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def snapshot(root: Path, skip: tuple[Path, ...] = ()) -> dict[str, State]:
    """Every entry under `root` (files, links and special files, never followed), by path relative to it, but
    those under `skip` and git's own bookkeeping."""
    root = Path(root)
    if not root.is_dir():
        return {}
    skipped = {os.path.normpath(p) for p in (str(Path(s).absolute()) for s in skip)}
    out: dict[str, State] = {}
    for folder, dirs, files in os.walk(root.absolute()):
        dirs[:] = [
            d
            for d in dirs
            if os.path.join(folder, d) not in skipped and not (os.path.basename(folder) == ".git" and d in SKIPPED_GIT)
        ]
        names = files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]
        for name in names:
            if os.path.basename(folder) == ".git" and name in SKIPPED_GIT:
                continue
            path = os.path.join(folder, name)
            try:
                out[os.path.relpath(path, root.absolute())] = _state(os.lstat(path))
            except OSError:  # gone meanwhile
                continue
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
    """What differs between two snapshots of one folder, less the paths the bench wrote itself (`written`)."""
    return Changes(
        new=sorted(p for p in after.keys() - before.keys() if p not in written),
        changed=sorted(p for p in after.keys() & before.keys() if after[p] != before[p] and p not in written),
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
        found_data = changes(self._data, snapshot(self.data))
        found_code = changes(self._code, snapshot(self.code, skip=(self.data,)))
        moved = quarantine(self.data, found_data.new)
        out = found_code.describe(_shown(self.code)) + found_data.describe(_shown(self.data))
        return out + [f"{_shown(self.data)}/{name} (set aside)" for name in moved]


def _shown(path: Path) -> str:
    """A folder as a message names it: relative to the working directory when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
