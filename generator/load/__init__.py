"""Scan `data/`, upgrade and validate every result file; a bad file is reported by name and kept out.

Nothing is dropped silently: every file found is either loaded or listed in `Loaded.rejected` with the row and
field at fault, and the site's "Rejected files" page shows that list.

Where a file may lie (`places`), reading and checking one (`one_file`), a worker's part of the files (`worker`), the
cache of files checked before (`read_cache`), every file read in order (`read_all`), what keeps a file out because of
the others (`collisions`), and what a load gives (`records`). The loader works out no figure: a caller's work on each
file while its every row is in hand is handed in (`PerFile`) and comes back in `Loaded.per_file`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

import generator.load.collisions as collisions
import generator.load.read_all as read_all
import generator.load.worker as worker
from generator.load.one_file import MAX_FILE_BYTES, not_regular, read_bounded, read_one
from generator.load.places import canonical, data_folder, misplaced, result_files
from generator.load.read_cache import LOADED, stat_key, stat_keys
from generator.load.records import Loaded, Rejected, full_rows, run_slices, subset, with_run_ids
from generator.load.worker import HELD_OUT, MODEL, ROW_COLUMNS, PerFile, Read, frame_of
from runners import schema

# what callers name as `load.X`: copies of the modules' names, so a test that patches one patches it in its module
__all__ = [
    "HELD_OUT",
    "LOADED",
    "MAX_FILE_BYTES",
    "Loaded",
    "PerFile",
    "Rejected",
    "canonical",
    "data_folder",
    "full_rows",
    "load",
    "load_contents",
    "misplaced",
    "not_regular",
    "read_bounded",
    "read_one",
    "result_files",
    "run_slices",
    "stat_key",
    "stat_keys",
    "subset",
]


def load_contents(data_dir: Path, contents: dict[str, bytes]) -> Loaded:
    """Files given by their bytes (by path relative to data_dir's parent, as `Loaded.runs.path` names them), checked
    as `load` checks files on disk: an edition's frozen versions, read back from git (generator/load/editions.py)."""
    root = Path(data_dir).parent
    indexed = list(enumerate(root / rel for rel in sorted(contents)))
    reads, heads, rows, _ = worker.read_files(
        indexed, root, {i: contents[p.relative_to(root).as_posix()] for i, p in indexed}
    )
    rejected = [Rejected(r.rel, r.problems) for r in reads if r.run_id is None]
    good = [r for r in reads if r.run_id is not None]
    if not good or heads is None or rows is None:
        return _nothing(rejected)
    runs = frame_of(heads).join(_files(good), on="_file")
    return Loaded(runs=runs.drop("_file", "_held"), rows=with_run_ids(frame_of(rows), runs), rejected=rejected)


def load(
    data_dir: Path,
    cache_dir: Path | None = None,
    files: list[Path] | None = None,
    lean: bool = False,
    held: Path | None = None,
    stats: Sequence[str] | None = None,
    per_file: PerFile | None = None,
) -> Loaded:
    """Load every good result file under data_dir (or just `files`, named relative to data_dir's parent); report
    the others. `cache_dir` (the site build's) keeps the checked contents of files by path and sha256, so an
    unchanged file is not read and checked again. `lean`: the rows less the per-request samples (`HELD_OUT`), which
    stay in their files until `full_rows` reads them (the site build, `validate` and `compare`: memory for what the
    figures need, not for every token's time). `held`: an empty folder of the caller's, kept while it uses the
    records, where the files read (not those taken from the cache) put their every row aside (`Loaded.held_in`).
    `stats`: the `stat_key` of each of `files`, taken before any was read (`stat_keys`). `per_file`: the caller's
    work on each file read while its every row is in hand (`PerFile`), its entries in `Loaded.per_file`."""
    root = Path(data_dir) if files is not None else canonical(data_dir)  # named files: relative to it as named
    if held is not None:
        held.mkdir(parents=True, exist_ok=True)
    listed = result_files(root) if files is None else files
    reads, heads, rows, made = read_all.read_all(
        listed, root.parent, cache_dir, lean, held, None if files is None else stats, per_file
    )
    kept, rejected = collisions.kept(reads, heads)
    if not kept or heads is None or rows is None:  # kept files brought their heads and rows
        return _nothing(rejected, made)
    kept_files = _files(kept)
    runs = heads.join(kept_files, on="_file")
    if len(kept) < len(reads):  # a duplicate or a bad retraction: drop its rows (bad files brought none)
        rows = rows.filter(pl.col("_file").is_in(kept_files["_file"].implode()))
    held_out = {run_id: n for run_id, n in runs.select("run_id", "_held").iter_rows() if n}
    held_in = {r.run_id: r.held for r in kept if r.held is not None and r.run_id is not None and r.run_id in held_out}
    return Loaded(runs=runs.drop("_file", "_held", MODEL).sort("started_at", "run_id"), rows=with_run_ids(rows, runs),
                  rejected=rejected, held_out=held_out, root=root.parent, held_in=held_in, per_file=made)  # fmt: skip


def _files(reads: list[Read]) -> pl.DataFrame:
    """Each kept file's index, path and sha256: what its head is joined with to become its run's row."""
    return pl.DataFrame(
        {"_file": [r.index for r in reads], "path": [r.rel for r in reads], "sha256": [r.sha256 for r in reads]},
        schema={"_file": pl.Int32, "path": pl.String, "sha256": pl.String},
    )


def _nothing(rejected: list[Rejected], per_file: dict[str, Any] | None = None) -> Loaded:
    """A load that kept no file: no runs and no rows, in their columns and types, and the files rejected."""
    empty = frame_of(schema.SCHEMA.empty_table())
    runs = empty.select(schema.RUN_COLUMNS).with_columns(
        path=pl.lit(None, dtype=pl.String), sha256=pl.lit(None, dtype=pl.String)
    )
    return Loaded(runs=runs, rows=empty.select(ROW_COLUMNS), rejected=rejected, per_file=per_file or {})
