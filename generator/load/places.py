"""Where a result file may lie, from its path alone: the data folder's one name, the files under it, and the folder a
file named on its own belongs to.
"""

from __future__ import annotations

import os
from pathlib import Path

from runners import store


def canonical(data_dir: Path) -> Path:
    """A data folder's one name: absolute, `..` and links resolved, so that every way of naming it (`--data
    data/cpu-smoke/..`, `--data ./data`, a link to it) loads the same files under the same paths (`data/<suite>/...`,
    relative to its parent) and builds the same site."""
    return Path(os.path.realpath(data_dir))


def misplaced(rel: str) -> str | None:
    """Why a file at `rel` (its path from the data folder's parent, `data/<suite>/<run>.parquet`) is not where a
    result file may lie, from its path alone: in its suite's folder or a month folder of it, and nowhere else (a
    folder deeper, a suite folder inside another, a file at the top); None where it may. That its folder is its own
    suite's and its month its run's is checked once it is read (runners/store.py `placement_problem`)."""
    under = rel.split("/")[1:]
    if len(under) == 2 or (len(under) == 3 and store.MONTH.fullmatch(under[1])):
        return None
    where = f"in folder {'/'.join(under[:-1])!r}/ of the data folder" if len(under) > 1 else "at its data folder's top"
    return (
        f"{where}: a result file lives in data/<suite>/ or data/<suite>/<YYYY-MM>/ and nowhere else (deeper, or in "
        "another folder): refused unread, never published (move it to its suite's folder)"
    )


def result_files(data_dir: Path) -> list[Path]:
    """Every `*.parquet` entry under data_dir (whatever it is: a link or a FIFO of that name is listed, to be refused
    by name, never opened) and every linked folder (never followed), sorted, skipping hidden names (the store's
    temporary files, a bench's quarantined ones)."""
    out = []
    for folder, dirs, files in os.walk(Path(data_dir)):
        linked = [d for d in dirs if os.path.islink(os.path.join(folder, d))]
        dirs[:] = [d for d in dirs if d not in linked and not d.startswith(".")]
        out += [Path(folder, name) for name in linked if not name.startswith(".")]
        out += [Path(folder, name) for name in files if name.endswith(".parquet") and not name.startswith(".")]
    return sorted(out, key=lambda path: path.parts)  # a path's order; its parts split once, not at every comparison


def placed(path: Path) -> tuple[str, ...]:
    """A file's folders and name as far up as its suite's folder: (suite, month, name) in a month folder, else
    (folder, name)."""
    parent = path.parent
    if store.MONTH.fullmatch(parent.name):
        return (parent.parent.name, parent.name, path.name)
    return (parent.name, path.name)


def data_folder(path: Path) -> Path:
    """The data folder a result file named on its own lies in: the nearest folder above it that shows itself one
    (`_is_data_folder`: it holds editions, it is a checkout's `data/`, or the `data/` of the folder the command runs
    in), so that a file deeper than its place is judged from that folder and refused by `misplaced` as the site
    refuses it; else, outside any, two folders up (data/<suite>/), three from a month folder (data/<suite>/<YYYY-MM>/).
    `path`'s folders resolved (`canonical`)."""
    default = canonical(Path("data"))
    for folder in path.parents:
        if folder == default or _is_data_folder(folder):
            return folder
    return path.parents[len(placed(path)) - 1]


def _is_data_folder(folder: Path) -> bool:
    """A folder that shows itself a data folder: it holds `editions/` (only a data folder has them), or it is named
    `data` at the top of a git checkout (the project's layout)."""
    return (folder / "editions").is_dir() or (folder.name == "data" and (folder.parent / ".git").exists())
