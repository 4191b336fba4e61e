"""The append-only store: one Parquet file per run, written atomically and never rewritten.

A run is written to a hidden temporary file in its destination folder, flushed to disk, then hard-linked to
its final name (which fails if the name exists, so nothing is ever overwritten) and the temporary name
removed. A process killed at any point leaves either no result or a whole one; a stray `.tmp-*` file is
ignored by the loader and by git.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from runners import bounds, lifetime, schema


def run_path(data_dir: Path, suite: str, run_id: str) -> Path:
    """Where a run's file lives: `data/<suite>/<run_id>.parquet`. Both names are checked before they name a file
    (no separators, no `..`, no hidden or odd names)."""
    for column, value in (("suite", suite), ("run_id", run_id)):
        problem = bounds.name_problem(column, value) if isinstance(value, str) else f"{value!r} is not a string"
        if problem:
            raise ValueError(f"refusing to name a result file after {column} {problem}")
    return Path(data_dir) / suite / f"{run_id}.parquet"


def write_run(data_dir: Path, table: pa.Table) -> Path:
    """Validate and atomically append one run's table; returns the new file's path."""
    problems = schema.check_table(table)
    if problems:
        listed = "; ".join(str(p) for p in problems[:5])
        raise ValueError(f"refusing to write an invalid run record: {listed}")
    if lifetime.orphaned():
        raise RuntimeError(
            f"not writing: the bench that started this run ({lifetime.BENCH_PID_ENV}="
            f"{os.environ[lifetime.BENCH_PID_ENV]}) is gone, so this run was cancelled"
        )
    suite = table.column("suite")[0].as_py()
    run_id = table.column("run_id")[0].as_py()
    final = run_path(data_dir, suite, run_id)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".tmp-{run_id}-{os.getpid()}.parquet")
    try:
        pq.write_table(table, tmp, compression="zstd")
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.link(tmp, final)  # atomic, and refuses to replace an existing run
    finally:
        tmp.unlink(missing_ok=True)
    dir_fd = os.open(final.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return final
