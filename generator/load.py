"""Scan `data/`, upgrade and validate every result file; a bad file is reported by name and kept out.

Nothing is dropped silently: every file found is either loaded or listed in `Loaded.rejected` with the row and
field at fault, and the site's "Rejected files" page shows that list.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from generator import columns
from runners import engines, retract, schema, shapes


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
    table, _, problems = _read_checked(path, content)
    return table, problems


def _read_checked(path: Path, content: bytes | None) -> tuple[pa.Table | None, dict[str, Any] | None, list[str]]:
    """`read_one`, also returning the good table's row 0 as a dict (its run-level values)."""
    try:
        # run-level strings repeat on every row: keep them dictionary-encoded while checking (a file of 4,000 rows
        # would otherwise expand its config JSON 4,000 times)
        source = pa.BufferReader(Path(path).read_bytes() if content is None else content)
        # ParquetFile.read: no dataset layer and no thread pool, about half read_table's cost on small files
        # no pre-buffering: the whole file is in memory already
        meta = pq.ParquetFile(source).metadata
        if meta.num_rows > shapes.MAX_ROWS:
            return None, None, [f"{meta.num_rows:,} rows, more than the {shapes.MAX_ROWS:,} one run may hold"]
        names = set(meta.schema.to_arrow_schema().names)  # a missing column is named by the schema check
        dictionary = [c for c in _DICT_COLUMNS if c in names]
        table = pq.ParquetFile(source, read_dictionary=dictionary, pre_buffer=False).read(use_threads=False)
    except Exception as e:  # any unreadable file: truncated, not Parquet, wrong encoding
        return None, None, [f"not a readable Parquet file: {type(e).__name__}: {e}"]
    try:
        table = schema.upgrade(table)
    except ValueError as e:
        return None, None, [str(e)]
    except Exception as e:  # a hostile value a migration trips over: the file is rejected, the build goes on
        return None, None, [f"could not be upgraded to schema {schema.SCHEMA_VERSION}: {type(e).__name__}: {e}"]
    first, problems = schema.check_run(table)
    if first is None:
        return None, None, [str(p) for p in problems]
    if first["run_id"] != path.stem:
        return None, None, [f"field 'run_id': {first['run_id']!r} does not match the file name"]
    if first["suite"] != Path(path).parent.name:
        return (
            None,
            None,
            [
                f"field 'suite': {first['suite']!r}, but the file is in folder {Path(path).parent.name!r}/: "
                f"a suite's files live in data/{first['suite']}/"
            ],
        )
    return table, first, []


def _retraction_problem(config: str, loaded_ids: set[str]) -> str | None:
    """A retraction (given its config) must name a run that a loaded (good) file holds, not another retraction."""
    parsed = columns.parsed(config)
    target = ((parsed if isinstance(parsed, dict) else {}).get("retraction") or {}).get("retracts")
    if not isinstance(target, str) or not target:
        return "row 0, field 'config': a retraction must name the run it retracts (retraction.retracts)"
    if target not in loaded_ids:
        return f"row 0, field 'config': retracts {target!r}, which no loaded result file holds"
    if target.startswith(retract.PREFIX):
        return f"row 0, field 'config': retracts {target!r}, itself a retraction"
    return None


_ROW_COLUMNS = ["run_id", "trial", "step", "phase", "metric", "value", "unit"]
_SAMPLE_COLUMNS = _ROW_COLUMNS[1:]
"""What a row carries across processes and into the cache: its run id comes back from its file's head (a join
on `_file`), so millions of copies of the same id never get copied or pickled."""
_SAMPLE_SCHEMA = pa.schema([schema.SCHEMA.field(c) for c in _SAMPLE_COLUMNS])
_HEAD_SCHEMA = pa.schema([*(schema.SCHEMA.field(c) for c in schema.RUN_COLUMNS), pa.field("_file", pa.int32())])
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
        table, first, problems = _read_checked(path, content)
        rel, digest = path.relative_to(root_parent).as_posix(), hashlib.sha256(content).hexdigest()
        if table is None or first is None:  # both or neither
            reads.append(_Read(index, rel, digest, None, tuple(problems)))
            continue
        tag = pa.repeat(pa.scalar(index, pa.int32()), table.num_rows)
        # the head as one row of plain values (the file's dictionaries differ, so dictionary columns would not
        # concatenate); the rows as read, cast only where a migration left another type
        head = {key: first[key] for key in schema.RUN_COLUMNS}
        head["_file"] = index
        heads.append(head)
        samples = table.select(_SAMPLE_COLUMNS)
        if not samples.schema.equals(_SAMPLE_SCHEMA):
            samples = samples.cast(_SAMPLE_SCHEMA)
        rows.append(samples.append_column("_file", tag))
        reads.append(_Read(index, rel, digest, head["run_id"], ()))
    if not heads:
        return reads, None, None
    return reads, pa.Table.from_pylist(heads, schema=_HEAD_SCHEMA), pa.concat_tables(rows)


def _fingerprint() -> str:
    """What a cached check depends on: this module's code and the record checks' (the schema, the declared shapes,
    the engine registry they name engines from)."""
    digest = hashlib.sha256()
    for path in (Path(__file__), Path(schema.__file__), Path(shapes.__file__), Path(engines.__file__)):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _frame(table: pa.Table) -> pl.DataFrame:
    """`pl.from_arrow` of a table, which gives a DataFrame (it is typed to give a Series too, for arrays)."""
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame


def _cached(cache_dir: Path | None) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """Heads and rows of files checked by an earlier build with the same code, or None."""
    if cache_dir is None or not (cache_dir / "key.txt").exists():
        return None
    if (cache_dir / "key.txt").read_text() != _fingerprint():
        return None
    try:
        return pl.read_ipc(cache_dir / "heads.arrow"), pl.read_ipc(cache_dir / "rows.arrow")
    except Exception:  # a damaged cache is only a slower build
        return None


def _read_all(
    files: list[Path], root_parent: Path, cache_dir: Path | None = None
) -> tuple[list[_Read], pl.DataFrame | None, pl.DataFrame | None]:
    """Every file read and checked, in `files` order; spread over the machine's cores when there are many.

    With a cache dir, a file whose path and sha256 match one an earlier build checked (with the same code) is
    taken from the cache instead of being read and checked again; the cache is then rewritten."""
    cached = _cached(cache_dir)
    known: dict[tuple[str, str], tuple[int, str]] = {}
    if cached is not None:
        known = {(p, d): (f, r) for f, p, d, r in cached[0].select("_file", "path", "sha256", "run_id").iter_rows()}
    read_at: dict[int, _Read] = {}  # by index in `files`
    todo: list[tuple[int, Path]] = []
    reuse: dict[int, int] = {}  # a file's index in the cache: its index now
    for index, path in enumerate(files):
        rel = path.relative_to(root_parent).as_posix()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if known else ""
        if (rel, digest) in known:
            old, run_id = known[(rel, digest)]
            reuse[old] = index
            read_at[index] = _Read(index, rel, digest, run_id, ())
        else:
            todo.append((index, path))
    workers = min(os.cpu_count() or 1, 8)
    if len(todo) < PARALLEL_FROM or workers < 2:
        parts = [_read_files(todo, root_parent)] if todo else []
    else:
        size = -(-len(todo) // (workers * 4))
        chunks = [todo[i : i + size] for i in range(0, len(todo), size)]  # in order: no sort afterwards
        # spawn, not fork: this process may already run polars' and arrow's thread pools
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            parts = list(pool.map(_read_files, chunks, [root_parent] * len(chunks)))
    for part in parts:
        for read in part[0]:
            read_at[read.index] = read
    reads = [read_at[index] for index in range(len(files))]
    heads = [_frame(p[1]) for p in parts if p[1] is not None]
    rows = [_frame(p[2]) for p in parts if p[2] is not None]
    if cached is not None and reuse:
        mapping = pl.DataFrame(
            {"_file": list(reuse), "_new": list(reuse.values())}, schema={"_file": pl.Int32, "_new": pl.Int32}
        )
        for frames, earlier in ((heads, cached[0].drop("path", "sha256")), (rows, cached[1])):
            identity = len(reuse) == earlier["_file"].n_unique() and all(k == v for k, v in reuse.items())
            frames.insert(
                0, earlier if identity else earlier.join(mapping, on="_file").drop("_file").rename({"_new": "_file"})
            )
    head = pl.concat(heads) if heads else None
    row = pl.concat(rows) if rows else None
    if row is not None and not row["_file"].is_sorted():
        row = row.sort("_file", maintain_order=True)  # every file's rows in file order, files in path order
    if cache_dir is not None and todo and head is not None and row is not None:
        cache_dir.mkdir(parents=True, exist_ok=True)
        (cache_dir / "key.txt").unlink(missing_ok=True)  # no key while half-written: an interrupted write is unused
        good = [r for r in reads if r.run_id is not None]
        where = pl.DataFrame(
            {"_file": [r.index for r in good], "path": [r.rel for r in good], "sha256": [r.sha256 for r in good]},
            schema={"_file": pl.Int32, "path": pl.String, "sha256": pl.String},
        )
        head.join(where, on="_file").write_ipc(cache_dir / "heads.arrow")
        row.write_ipc(cache_dir / "rows.arrow")
        (cache_dir / "key.txt").write_text(_fingerprint())
    return reads, head, row


def load(data_dir: Path, cache_dir: Path | None = None, files: list[Path] | None = None) -> Loaded:
    """Load every good result file under data_dir (or just `files`, named relative to data_dir's parent); report
    the others. `cache_dir` (the site build's) keeps the checked contents of files by path and sha256, so an
    unchanged file is not read and checked again."""
    root = Path(data_dir)
    reads, heads, rows = _read_all(result_files(root) if files is None else files, root.parent, cache_dir)
    rejected: list[Rejected] = []
    copies: dict[str, list[_Read]] = {}
    for read in reads:
        if read.run_id is None:
            rejected.append(Rejected(read.rel, read.problems))
        else:
            copies.setdefault(read.run_id, []).append(read)
    seen: dict[str, str] = {}
    good: list[_Read] = []
    for read in reads:
        run_id = read.run_id
        if run_id is None:
            continue
        same = copies[run_id]
        if len(same) > 1 and len({r.sha256 for r in same}) > 1:
            # no file wins: a doctored copy must not displace the genuine run, nor the other way round
            others = ", ".join(r.rel for r in same if r is not read)
            problem = f"row 0, field 'run_id': {run_id!r} is also in {others}, with other contents"
            rejected.append(Rejected(read.rel, (problem,)))
        elif run_id in seen:
            problem = f"row 0, field 'run_id': a byte-identical copy of {seen[run_id]}, loaded once from there"
            rejected.append(Rejected(read.rel, (problem,)))
        else:
            seen[run_id] = read.rel
            good.append(read)
    retracting = (
        {}
        if heads is None
        else dict(heads.filter(pl.col("origin") == "retraction").select("_file", "config").iter_rows())
    )
    kept = []
    for read in good:
        bad_retraction = _retraction_problem(retracting[read.index], set(seen)) if read.index in retracting else None
        if bad_retraction:
            rejected.append(Rejected(read.rel, (bad_retraction,)))
        else:
            kept.append(read)
    if not kept or heads is None or rows is None:  # kept files brought their heads and rows
        empty = _frame(schema.SCHEMA.empty_table())
        runs = empty.select(schema.RUN_COLUMNS).with_columns(
            path=pl.lit(None, dtype=pl.String), sha256=pl.lit(None, dtype=pl.String)
        )
        return Loaded(runs=runs, rows=empty.select(_ROW_COLUMNS), rejected=rejected)
    kept_files = pl.DataFrame(
        {"_file": [r.index for r in kept], "path": [r.rel for r in kept], "sha256": [r.sha256 for r in kept]},
        schema={"_file": pl.Int32, "path": pl.String, "sha256": pl.String},
    )
    runs = heads.join(kept_files, on="_file")
    if len(kept) < len(reads):  # a duplicate or a bad retraction: drop its rows (bad files brought none)
        rows = rows.filter(pl.col("_file").is_in(kept_files["_file"].implode()))
    # each row gets its run id back from its file's head (the left join keeps the rows' order)
    rows = rows.join(runs.select("_file", "run_id"), on="_file", how="left", maintain_order="left")
    return Loaded(
        runs=runs.drop("_file").sort("started_at", "run_id"), rows=rows.select(_ROW_COLUMNS), rejected=rejected
    )
