"""The load's cache: the heads and rows of files an earlier load with the same code checked, kept in the build store by
path and sha256, and each file's stat key, which says without reading it that a file is the one hashed then.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Sequence
from pathlib import Path

import polars as pl

import generator.load.one_file as one_file
from generator import progress
from generator import store as build_store
from generator.load.worker import Read

LOADED = "loaded"
"""The store's kind for the load's cache."""
CACHE_FILES = ("heads", "rows")


def cached(cache_dir: Path | None, lean: bool = False) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """Heads and rows of files checked by an earlier build with the same code, or None: two entries of the build store
    in `cache_dir` (kind `loaded`), each read only once its bytes hash to the sha256 noted beside them (the store's
    key holds the code and the libraries)."""
    if cache_dir is None:
        return None
    kept = build_store.at(cache_dir)
    found = [kept.file(LOADED, f"{name} lean={lean}") for name in CACHE_FILES]
    if any(f is None for f in found):
        return None
    try:
        return tuple(pl.read_ipc(f[0]) for f in found if f is not None)  # type: ignore[return-value]
    except Exception:  # whole bytes that are not a table: only a slower build
        return None


def sorted_out(
    files: list[Path], root_parent: Path, heads: pl.DataFrame | None, stats: Sequence[str] | None
) -> tuple[dict[int, Read], list[tuple[int, Path]], dict[int, int], dict[int, str]]:
    """Which of `files` the cached `heads` hold, unchanged (the same path and sha256): their outcomes by index in
    `files`, the files left to read (with their index), each cached file's index then → its index now, and every
    file's stat key (`stats`, taken by the caller before any file was read, else taken here)."""
    known: dict[tuple[str, str], tuple[int, str]] = {}
    hashed: dict[tuple[str, str], str] = {}  # (path, stat_key) -> the sha256 it had when cached
    if heads is not None:
        for f, p, d, r, key in heads.select("_file", "path", "sha256", "run_id", "stat").iter_rows():
            known[(p, d)] = (f, r)
            if key:
                hashed[(p, key)] = d
    read_at: dict[int, Read] = {}  # by index in `files`
    todo: list[tuple[int, Path]] = []
    reuse: dict[int, int] = {}  # a file's index in the cache: its index now
    stats_at: dict[int, str] = {}
    with progress.Progress("checking the cache of result files", len(files) if known else 0) as bar:
        for index, path in enumerate(files):
            rel = _relative(path, root_parent)
            stats_at[index] = stat_key(path) if stats is None else stats[index]
            # a file whose size, inode and times are those it had when cached is not read again to be hashed
            digest = (hashed.get((rel, stats_at[index])) or _digest(path)) if known else ""
            if (rel, digest) in known:
                old, run_id = known[(rel, digest)]
                reuse[old] = index
                read_at[index] = Read(index, rel, digest, run_id, ())
            else:
                todo.append((index, path))
            bar.advance()
    return read_at, todo, reuse, stats_at


def earlier(cached: tuple[pl.DataFrame, pl.DataFrame], reuse: dict[int, int]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The cached heads and rows of the files reused (`sorted_out`), each `_file` its index now, in their order."""
    whole = len(reuse) == cached[0].height  # every cached file reused (a head per file): no rows to drop
    identity = whole and all(k == v for k, v in reuse.items())
    heads, rows = cached[0].drop("path", "sha256", "stat"), cached[1]
    if identity:
        return heads, rows
    return _renumbered(heads, reuse, whole), _renumbered(rows, reuse, whole)


def keep(
    cache_dir: Path | None,
    lean: bool,
    reads: list[Read],
    stats_at: dict[int, str],
    frames: tuple[pl.DataFrame, pl.DataFrame] | None,
) -> None:
    """Keep a load's good files' heads and rows in `cache_dir` for the next load (`frames`: None where every file came
    from the cache, whose entries are then this build's as they are)."""
    if cache_dir is None:
        return
    kept = build_store.at(cache_dir)
    if frames is None:
        for name in CACHE_FILES:
            kept.has(LOADED, f"{name} lean={lean}")
        return
    good = [r for r in reads if r.run_id is not None]
    where = pl.DataFrame(
        {"_file": [r.index for r in good], "path": [r.rel for r in good], "sha256": [r.sha256 for r in good],
         "stat": [stats_at[r.index] for r in good]},
        schema={"_file": pl.Int32, "path": pl.String, "sha256": pl.String, "stat": pl.String},
    )  # fmt: skip
    written, rows_written = frames[0].join(where, on="_file"), frames[1]

    def write() -> None:
        with contextlib.suppress(OSError):  # a read-only or full disk: the files were read anyway
            kept.put_file(LOADED, f"heads lean={lean}", lambda tmp: written.write_ipc(tmp, compression="zstd"))
            kept.put_file(LOADED, f"rows lean={lean}", lambda tmp: rows_written.write_ipc(tmp, compression="zstd"))

    kept.later(write)  # a build goes on meanwhile: nothing reads these entries before the next load


def stat_keys(paths: Sequence[Path]) -> list[str]:
    """`stat_key` of each path, in order: taken once by a build for both the compare key and the load."""
    return [stat_key(path) for path in paths]


def stat_key(path: str | os.PathLike[str]) -> str:
    """What says, without reading it, that a file is the one hashed before: its size, inode, and modification and
    change times in nanoseconds (git's index uses the same). Writing a file, replacing it or renaming another over it
    changes its change time, which no program can set back; "" for an entry that cannot be a result file."""
    try:
        st = os.lstat(path)
    except OSError:
        return ""
    if not stat.S_ISREG(st.st_mode):
        return ""
    return f"{st.st_size}:{st.st_ino}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _relative(path: Path, root_parent: Path) -> str:
    """`path.relative_to(root_parent).as_posix()`, by its text where it starts with the folder's: a warm build takes it
    of every file, and pathlib's parses both paths each time."""
    text, folder = str(path), str(root_parent)
    if folder == "." and not path.is_absolute() and path.parts[:1] != ("..",):
        rel: str | None = text  # a path below the current folder (`--data data`)
    else:
        prefix = folder.rstrip(os.sep) + os.sep
        rel = text[len(prefix) :] if prefix != os.sep and text.startswith(prefix) else None
    if rel is None:
        return path.relative_to(root_parent).as_posix()
    return rel if os.sep == "/" else rel.replace(os.sep, "/")


def _digest(path: Path) -> str:
    """A file's sha256, or "" when it is not a regular file one may read (it is then read, and refused, anew)."""
    try:
        return hashlib.sha256(one_file.read_bounded(path)).hexdigest()
    except (OSError, ValueError):
        return ""


def _renumbered(earlier: pl.DataFrame, reuse: dict[int, int], whole: bool = False) -> pl.DataFrame:
    """The cached rows (or heads) of the files reused, each `_file` its index now (`reuse`: cached index → index now),
    in their order: a gather through a lookup list, not a join (a join of millions of rows costs more, and need not
    keep their order). `whole`: every cached file is reused, so no row is dropped (the
    filter would copy millions of rows to drop none: a new file among cached ones renumbers those after it)."""
    top = earlier["_file"].max()
    size = max(top if isinstance(top, int) else 0, max(reuse, default=0)) + 1
    lookup = [-1] * size
    for old, new in reuse.items():
        lookup[old] = new
    table = pl.Series(lookup, dtype=pl.Int32)
    # gathered chunk by chunk of the rows: the new column chunked as the others are (one chunked unlike them is split
    # to match later, a copy of every row)
    chunks = earlier["_file"].get_chunks() or [earlier["_file"]]
    now = pl.concat([table.gather(chunk) for chunk in chunks], rechunk=False)
    if whole:
        return earlier.with_columns(_file=now)
    return earlier.with_columns(_file=now).filter(pl.col("_file") >= 0)  # a file gone or changed: its rows go
