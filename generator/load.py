"""Scan `data/`, upgrade and validate every result file; a bad file is reported by name and kept out.

Nothing is dropped silently: every file found is either loaded or listed in `Loaded.rejected` with the row and
field at fault, and the site's "Rejected files" page shows that list.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from runners import schema


@dataclass(frozen=True, slots=True)
class Rejected:
    """A result file kept out of the leaderboard, and why."""

    path: str
    problems: tuple[str, ...]


@dataclass(slots=True)
class Loaded:
    runs: pl.DataFrame
    """One row per run: the run-level columns plus `path` and the file's `sha256`."""
    rows: pl.DataFrame
    """Every measurement: run_id, trial, step, phase, metric, value, unit."""
    rejected: list[Rejected] = field(default_factory=list)


def result_files(data_dir: Path) -> list[Path]:
    """Every `*.parquet` under data_dir, sorted, skipping the store's hidden temporary files."""
    return sorted(p for p in Path(data_dir).rglob("*.parquet") if not p.name.startswith("."))


_DICT_COLUMNS = [f.name for f in schema.SCHEMA if f.name in schema.RUN_COLUMNS and pa.types.is_string(f.type)]


def read_one(path: Path, content: bytes | None = None) -> tuple[pa.Table | None, list[str]]:
    """Read (or parse `content` of), upgrade and check one file: (table, []) when good, (None, problems) when not."""
    try:
        # run-level strings repeat on every row: keep them dictionary-encoded while checking (a file of 4,000 rows
        # would otherwise expand its config JSON 4,000 times)
        source = pa.BufferReader(Path(path).read_bytes() if content is None else content)
        # ParquetFile.read: no dataset layer and no thread pool, about half read_table's cost on small files
        table = pq.ParquetFile(source, read_dictionary=_DICT_COLUMNS).read(use_threads=False)
    except Exception as e:  # any unreadable file: truncated, not Parquet, wrong encoding
        return None, [f"not a readable Parquet file: {type(e).__name__}: {e}"]
    try:
        table = schema.upgrade(table)
    except ValueError as e:
        return None, [str(e)]
    problems = schema.check_table(table)
    if problems:
        return None, [str(p) for p in problems]
    if table.column("run_id")[0].as_py() != path.stem:
        return None, [f"field 'run_id': {table.column('run_id')[0].as_py()!r} does not match the file name"]
    return table, []


def _retraction_problem(config: str, loaded_ids: set[str]) -> str | None:
    """A retraction (given its config) must name a run that a loaded (good) file holds, not another retraction."""
    target = (json.loads(config).get("retraction") or {}).get("retracts")
    if not isinstance(target, str) or not target:
        return "row 0, field 'config': a retraction must name the run it retracts (retraction.retracts)"
    if target not in loaded_ids:
        return f"row 0, field 'config': retracts {target!r}, which no loaded result file holds"
    if target.startswith("retraction-"):
        return f"row 0, field 'config': retracts {target!r}, itself a retraction"
    return None


_ROW_COLUMNS = ["run_id", "trial", "step", "phase", "metric", "value", "unit"]
_RUN_SCHEMA = pa.schema([schema.SCHEMA.field(c) for c in schema.RUN_COLUMNS])
_ROW_SCHEMA = pa.schema([schema.SCHEMA.field(c) for c in _ROW_COLUMNS])
PARALLEL_FROM = 200
"""Files below which loading stays in this process (a worker pool costs about a second to start)."""


@dataclass(frozen=True, slots=True)
class _Read:
    """One file's outcome: where it is, its digest, its run id (None when bad) and its problems."""

    index: int
    rel: str
    sha256: str
    run_id: str | None
    problems: tuple[str, ...]


def _read_files(
    indexed: list[tuple[int, Path]], root_parent: Path
) -> tuple[list[_Read], pa.Table | None, pa.Table | None]:
    """Read and check files: the unit of work of one worker (or of this process, for a small data dir).

    Returns each file's outcome, and the heads (run-level columns, one row per good file) and rows of the good
    files, each concatenated once and tagged with the file's index in `_file` (tables cross processes far faster
    as two large tables than as thousands of small ones)."""
    reads, heads, rows = [], [], []
    for index, path in indexed:
        content = path.read_bytes()
        table, problems = read_one(path, content)
        rel, digest = path.relative_to(root_parent).as_posix(), hashlib.sha256(content).hexdigest()
        if table is None:
            reads.append(_Read(index, rel, digest, None, tuple(problems)))
            continue
        tag = pa.repeat(pa.scalar(index, pa.int32()), table.num_rows)
        heads.append(table.select(schema.RUN_COLUMNS).slice(0, 1).cast(_RUN_SCHEMA).append_column("_file", tag[:1]))
        rows.append(table.select(_ROW_COLUMNS).cast(_ROW_SCHEMA).append_column("_file", tag))
        reads.append(_Read(index, rel, digest, table.column("run_id")[0].as_py(), ()))
    if not heads:
        return reads, None, None
    return reads, pa.concat_tables(heads), pa.concat_tables(rows)


def _read_all(files: list[Path], root_parent: Path) -> tuple[list[_Read], list[pa.Table], list[pa.Table]]:
    """Every file read and checked, in `files` order; spread over the machine's cores when there are many."""
    indexed = list(enumerate(files))
    workers = min(os.cpu_count() or 1, 8)
    if len(files) < PARALLEL_FROM or workers < 2:
        parts = [_read_files(indexed, root_parent)]
    else:
        size = -(-len(indexed) // (workers * 4))
        chunks = [indexed[i : i + size] for i in range(0, len(indexed), size)]  # in order: no sort afterwards
        # spawn, not fork: this process may already run polars' and arrow's thread pools
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            parts = list(pool.map(_read_files, chunks, [root_parent] * len(chunks)))
    reads = [r for part in parts for r in part[0]]
    return reads, [p[1] for p in parts if p[1] is not None], [p[2] for p in parts if p[2] is not None]


def load(data_dir: Path) -> Loaded:
    """Load every good result file under data_dir; report the others."""
    root = Path(data_dir)
    reads, head_parts, row_parts = _read_all(result_files(root), root.parent)
    heads = pl.from_arrow(pa.concat_tables(head_parts)) if head_parts else None
    rejected: list[Rejected] = []
    seen: dict[str, str] = {}
    good: list[_Read] = []
    for read in reads:
        if read.run_id is None:
            rejected.append(Rejected(read.rel, read.problems))
        elif read.run_id in seen:
            problem = f"row 0, field 'run_id': {read.run_id!r} already loaded from {seen[read.run_id]}"
            rejected.append(Rejected(read.rel, (problem,)))
        else:
            seen[read.run_id] = read.rel
            good.append(read)
    retracting = (
        {}
        if heads is None
        else dict(heads.filter(pl.col("origin") == "retraction").select("_file", "config").iter_rows())
    )
    kept = []
    for read in good:
        problem = _retraction_problem(retracting[read.index], set(seen)) if read.index in retracting else None
        if problem:
            rejected.append(Rejected(read.rel, (problem,)))
        else:
            kept.append(read)
    if not kept:
        empty = pl.from_arrow(schema.SCHEMA.empty_table())
        runs = empty.select(schema.RUN_COLUMNS).with_columns(
            path=pl.lit(None, dtype=pl.String), sha256=pl.lit(None, dtype=pl.String)
        )
        return Loaded(runs=runs, rows=empty.select(_ROW_COLUMNS), rejected=rejected)
    files = pl.DataFrame(
        {"_file": [r.index for r in kept], "path": [r.rel for r in kept], "sha256": [r.sha256 for r in kept]},
        schema={"_file": pl.Int32, "path": pl.String, "sha256": pl.String},
    )
    runs = heads.join(files, on="_file").drop("_file")
    rows = pl.from_arrow(pa.concat_tables(row_parts))
    if len(kept) < len(reads):  # a duplicate or a bad retraction: drop its rows (bad files brought none)
        rows = rows.filter(pl.col("_file").is_in(files["_file"].implode()))
    return Loaded(runs=runs.sort("started_at", "run_id"), rows=rows.drop("_file"), rejected=rejected)
