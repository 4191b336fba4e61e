"""The append-only store: one Parquet file per run, written atomically and never rewritten.

A run's file lives at `data/<suite>/<YYYY-MM>/<run_id>.parquet`, in the folder of the month (UTC) its run started,
so that a suite's folder holds a few dozen month folders rather than tens of thousands of files (files written
before 2026-12-02 sit in `data/<suite>/` itself, and stay there: a file is never moved; readers take both). It is
written in the current schema's layout (runners/layout.py: the run-level fields once, in the file's metadata).

A run is written to a hidden temporary file in its destination folder, flushed to disk, then hard-linked to
its final name (which fails if the name exists, so nothing is ever overwritten) and the temporary name
removed. A process killed at any point leaves either no result or a whole one; a stray `.tmp-*` file is
ignored by the loader and by git.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

from runners import bounds, layout, lifetime, schema

MONTH = re.compile(r"[0-9]{4}-(0[1-9]|1[0-2])")
"""A month folder's name: `2026-12`."""


def _checked_names(suite: str, run_id: str) -> None:
    for column, value in (("suite", suite), ("run_id", run_id)):
        problem = bounds.name_problem(column, value) if isinstance(value, str) else f"{value!r} is not a string"
        if problem:
            raise ValueError(f"refusing to name a result file after {column} {problem}")


def month(started_at: datetime) -> str:
    """The month folder of a run that started at `started_at`: its UTC year and month, `2026-12`."""
    return f"{started_at.astimezone(UTC):%Y-%m}"


def run_path(data_dir: Path, suite: str, run_id: str, started_at: datetime) -> Path:
    """Where a new run's file goes: `data/<suite>/<YYYY-MM>/<run_id>.parquet`, by the month its run started. Both
    names are checked before they name a file (no separators, no `..`, no hidden or odd names)."""
    _checked_names(suite, run_id)
    return Path(data_dir) / suite / month(started_at) / f"{run_id}.parquet"


def find(data_dir: Path, suite: str, run_id: str) -> Path | None:
    """The file of `run_id` in a suite's folder, wherever it lies (the suite's folder itself, as files written before
    month folders do, or any month folder), or None: what says a run is already recorded."""
    _checked_names(suite, run_id)
    folder = Path(data_dir) / suite
    name = f"{run_id}.parquet"
    if (folder / name).exists():
        return folder / name
    months = sorted(p for p in folder.iterdir() if MONTH.fullmatch(p.name)) if folder.is_dir() else []
    return next((m / name for m in months if (m / name).exists()), None)


def placement_problem(parts: tuple[str, ...], suite: str, started_at: datetime) -> str | None:
    """Why a file at `parts` (its path's folders and name under data/, as `Path.parts` gives them) is not where its
    run's file belongs: `<suite>/<run_id>.parquet` or `<suite>/<YYYY-MM>/<run_id>.parquet`, the month its run
    started. None when it is."""
    folders = parts[:-1]
    if len(folders) == 2 and MONTH.fullmatch(folders[1]):
        if folders[0] != suite:
            return (
                f"field 'suite': {suite!r}, but the file is in folder {folders[0]!r}/: a suite's files live in "
                f"data/{suite}/"
            )
        if folders[1] != month(started_at):
            return (
                f"field 'started_at': {started_at:%Y-%m-%d %H:%M} UTC, but the file is in month folder "
                f"{folders[1]!r}/: a run's file lives in data/{suite}/{month(started_at)}/"
            )
        return None
    if len(folders) == 1 and folders[0] == suite:
        return None
    where = "/".join(folders)
    return (
        f"field 'suite': {suite!r}, but the file is in folder {where!r}/: a suite's files live in data/{suite}/ "
        f"(or its month folders, data/{suite}/{month(started_at)}/)"
    )


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
    final = run_path(data_dir, suite, run_id, table.column("started_at")[0].as_py())
    earlier = find(data_dir, suite, run_id)
    if earlier is not None:  # in another month's folder, or the suite's own: one file per run
        raise FileExistsError(f"run {run_id!r} is already recorded in {earlier}; records are never rewritten")
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".tmp-{run_id}-{os.getpid()}.parquet")
    try:
        layout.write(table, tmp)
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
