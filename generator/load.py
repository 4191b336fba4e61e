"""Scan `data/`, upgrade and validate every result file; a bad file is reported by name and kept out.

Nothing is dropped silently: every file found is either loaded or listed in `Loaded.rejected` with the row and
field at fault, and the site's "Rejected files" page shows that list.
"""

from __future__ import annotations

import hashlib
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
        table = pq.read_table(
            pa.BufferReader(Path(path).read_bytes() if content is None else content), read_dictionary=_DICT_COLUMNS
        )
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


def load(data_dir: Path) -> Loaded:
    """Load every good result file under data_dir; report the others."""
    tables, rejected, paths, digests = [], [], [], []
    seen: dict[str, str] = {}
    root = Path(data_dir)
    for path in result_files(root):
        rel = path.relative_to(root.parent).as_posix()
        content = path.read_bytes()
        table, problems = read_one(path, content)
        if table is not None:
            run_id = table.column("run_id")[0].as_py()
            if run_id in seen:
                table, problems = None, [f"row 0, field 'run_id': {run_id!r} already loaded from {seen[run_id]}"]
            else:
                seen[run_id] = rel
        if table is None:
            rejected.append(Rejected(rel, tuple(problems)))
            continue
        tables.append(table)
        paths.append(rel)
        digests.append(hashlib.sha256(content).hexdigest())
    if not tables:
        empty = pl.from_arrow(schema.SCHEMA.empty_table())
        runs = empty.select(schema.RUN_COLUMNS).with_columns(
            path=pl.lit(None, dtype=pl.String), sha256=pl.lit(None, dtype=pl.String)
        )
        return Loaded(
            runs=runs,
            rows=empty.select("run_id", "trial", "step", "phase", "metric", "value", "unit"),
            rejected=rejected,
        )
    run_schema = pa.schema([schema.SCHEMA.field(c) for c in schema.RUN_COLUMNS])
    heads = [t.select(schema.RUN_COLUMNS).slice(0, 1).cast(run_schema) for t in tables]  # decode one row only
    runs = pl.from_arrow(pa.concat_tables(heads)).with_columns(path=pl.Series(paths), sha256=pl.Series(digests))
    row_columns = ["run_id", "trial", "step", "phase", "metric", "value", "unit"]
    row_schema = pa.schema([schema.SCHEMA.field(c) for c in row_columns])
    rows = pl.from_arrow(pa.concat_tables([t.select(row_columns).cast(row_schema) for t in tables]))
    return Loaded(runs=runs.sort("started_at", "run_id"), rows=rows, rejected=rejected)
