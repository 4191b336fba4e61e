"""One worker's part of the files: each read and checked (`one_file`), the good ones' run-level values (heads) and rows
each concatenated into one table, tagged by the file's index in `_file`, and whatever the caller works out of each file
while its every row is in hand (`PerFile`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc

import generator.load.columns as columns
import generator.load.one_file as one_file
import generator.load.places as places
from runners import metrics, schema

ROW_COLUMNS = ["run_id", "trial", "step", "phase", "metric", "value", "unit"]
SAMPLE_COLUMNS = ROW_COLUMNS[1:]
"""What a row carries across processes and into the cache: its run id comes back from its file's head (a join
on `_file`), so millions of copies of the same id never get copied or pickled."""
SAMPLE_SCHEMA = pa.schema([schema.SCHEMA.field(c) for c in SAMPLE_COLUMNS])
_HEAD_SCHEMA = pa.schema(
    [
        *(schema.SCHEMA.field(c) for c in schema.RUN_COLUMNS),
        pa.field("_file", pa.int32()),
        pa.field("_held", pa.int64()),
    ]
)


HELD_OUT = tuple(m for m in metrics.SERVED_SAMPLES if m != "duration_s")
"""Per-request samples of a served point (one row per request and per generated token: the most of all rows). Only a
served point's own figures (worked out as its file is read, `PerFile`) and the downloads read them, so a lean load
leaves them in their files; `duration_s` is a run-level figure and stays."""


PerFile = Callable[[str, dict[str, Any], pa.Table], tuple[str, Any] | None]
"""A caller's work on each good file while its every row is in hand (`load`'s `per_file`): given the file's sha256,
its row 0 (the run-level values) and its every row in `Loaded.rows`' columns less `run_id` (before a lean load sets
any aside), a (key, value) entry, or None. It runs in the reading processes, so it is a module-level function (a
spawned worker gets it by name)."""


@dataclass(frozen=True, slots=True)
class Read:
    """One file's outcome: where it is, its digest, its run id (None when bad) and its problems."""

    index: int
    rel: str
    sha256: str
    run_id: str | None
    problems: tuple[str, ...]
    held: tuple[str, int, int] | None = None
    """Where a lean read put the file's every row aside (`Loaded.held_in`), if it did."""


def read_files(
    indexed: list[tuple[int, Path]],
    root_parent: Path,
    contents: dict[int, bytes] | None = None,
    lean: bool = False,
    per_file: PerFile | None = None,
    held: Path | None = None,
) -> tuple[list[Read], pa.Table | None, pa.Table | None, dict[str, Any]]:
    """Read and check files: the unit of work of one worker (or of this process, for a small data dir).

    Returns each file's outcome, and the heads (run-level columns, one row per good file) and rows of the good
    files, each concatenated once and tagged with the file's index in `_file` (tables cross processes far faster
    as two large tables than as thousands of small ones). `lean`: the rows less `HELD_OUT` samples (`_lean`), the
    heads counting them in `_held`. `per_file`: the caller's entries of each good file (`PerFile`), made while
    its every row is in hand (a lean load then sets some aside). `held`: a folder of this build's own where a lean
    read puts each file's every row aside when it holds samples out, in one Arrow IPC file per part
    (`Loaded.held_in`): taken back from there, a cold build's downloads and run pages do not read and decode those
    files a second time."""
    reads: list[Read] = []
    heads: list[dict[str, Any]] = []
    rows: list[pa.Table] = []
    made: dict[str, Any] = {}
    aside = _Aside(held / f"{indexed[0][0]}-{os.getpid()}.arrow") if held is not None and lean and indexed else None
    try:
        _read_each(indexed, root_parent, contents, lean, per_file, aside, reads, heads, rows, made)
    finally:
        if aside is not None:
            aside.close()
    if not heads:
        return reads, None, None, made
    return reads, pa.Table.from_pylist(heads, schema=_HEAD_SCHEMA), pa.concat_tables(rows), made


class _Aside:
    """A part's rows put aside (`read_files`' `held`): one Arrow IPC file, zstd-compressed, opened at its first
    table; `put` returns where a table's batches went."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.writer: pa.ipc.RecordBatchFileWriter | None = None
        self.batches = 0

    def put(self, table: pa.Table) -> tuple[str, int, int]:
        if self.writer is None:
            options = pa.ipc.IpcWriteOptions(compression="zstd")
            self.writer = pa.ipc.new_file(str(self.path), SAMPLE_SCHEMA, options=options)
        batches = table.to_batches()
        for batch in batches:
            self.writer.write_batch(batch)
        first, self.batches = self.batches, self.batches + len(batches)
        return str(self.path), first, len(batches)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def _read_each(
    indexed: list[tuple[int, Path]],
    root_parent: Path,
    contents: dict[int, bytes] | None,
    lean: bool,
    per_file: PerFile | None,
    aside: _Aside | None,
    reads: list[Read],
    heads: list[dict[str, Any]],
    rows: list[pa.Table],
    made: dict[str, Any],
) -> None:
    """`read_files`' loop: each file's outcome, head, rows and `per_file` entry added to those given."""
    for index, path in indexed:
        rel = path.relative_to(root_parent).as_posix()
        # by its path alone: whatever it holds, it is not published from there (a linked folder is named as a link)
        if rel.endswith(".parquet") and (where := places.misplaced(rel)):
            reads.append(Read(index, rel, "", None, (where,)))
            continue
        try:
            content = contents[index] if contents is not None else one_file.read_bounded(path)
        except (OSError, ValueError) as e:
            reads.append(Read(index, rel, "", None, (str(e) if isinstance(e, ValueError) else f"unreadable: {e}",)))
            continue
        table, first, problems = one_file.read_checked(path, content)
        digest = hashlib.sha256(content).hexdigest()
        if table is None or first is None:  # both or neither
            reads.append(Read(index, rel, digest, None, tuple(problems)))
            continue
        tag = pa.repeat(pa.scalar(index, pa.int32()), table.num_rows)
        # the head as one row of plain values (the file's dictionaries differ, so dictionary columns would not
        # concatenate); the rows as read, cast only where a migration left another type
        head = {key: first[key] for key in schema.RUN_COLUMNS}
        head["_file"] = index
        samples = table.select(SAMPLE_COLUMNS)
        if not samples.schema.equals(SAMPLE_SCHEMA):
            samples = samples.cast(SAMPLE_SCHEMA)
        every = samples
        samples = samples.append_column("_file", tag)
        kept = _lean(samples) if lean else samples
        head["_held"] = samples.num_rows - kept.num_rows
        put = aside.put(every) if aside is not None and head["_held"] else None
        if per_file is not None and (entry := per_file(digest, first, every)) is not None:
            made[entry[0]] = entry[1]
        heads.append(head)
        rows.append(kept)
        reads.append(Read(index, rel, digest, head["run_id"], (), put))


def _lean(rows: pa.Table) -> pa.Table:
    """A file's rows less its `HELD_OUT` samples, its first row always kept: every run keeps rows, in file order, so
    whatever orders or counts runs by their rows (the samples download's parts, the run pages) sees each one."""
    held = pc.is_in(rows.column("metric"), pa.array(HELD_OUT, pa.string()))
    if not pc.any(held).as_py():
        return rows
    first = pa.array([i == 0 for i in range(rows.num_rows)], pa.bool_())
    return rows.filter(pc.or_(pc.invert(held), first))


def frame_of(table: pa.Table) -> pl.DataFrame:
    """`pl.from_arrow` of a table, which gives a DataFrame (it is typed to give a Series too, for arrays)."""
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame


def as_frames(
    part: tuple[list[Read], pa.Table | None, pa.Table | None, dict[str, Any]],
) -> tuple[list[Read], pl.DataFrame | None, pl.DataFrame | None, dict[str, Any]]:
    """A part read (`read_files`) with its heads and rows as polars frames, the heads with each file's served model
    (`MODEL`) for `collisions`."""
    reads, heads, rows, made = part
    head = None if heads is None else frame_of(heads).with_columns(columns.column("model_name").alias(MODEL))
    return reads, head, None if rows is None else frame_of(rows), made


MODEL = "_model"
"""A head's served model (config.model.name), taken from its config JSON once per file as it is read and kept in the
cache, so that a warm build parses no head's JSON again for `collisions`."""


def read_part(
    indexed: list[tuple[int, Path]],
    root_parent: Path,
    contents: None,
    lean: bool,
    per_file: PerFile | None,
    held: Path | None,
) -> tuple[list[Read], pl.DataFrame | None, pl.DataFrame | None, dict[str, Any]]:
    """A worker's part (`read_files`), its tables made polars frames there: a frame crosses to this process as
    polars' own buffers, while an Arrow table arrives as views of its pickle, which a zero-copy conversion then kept
    whole (the text of every part, read or not, for the rest of the build), and its text is converted on the workers'
    cores."""
    return as_frames(read_files(indexed, root_parent, contents, lean, per_file, held))
