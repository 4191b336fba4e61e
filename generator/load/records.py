"""What a load gives: the runs, their rows (less the per-request samples a lean load set aside) and the files kept out;
and every row of some runs, taken from the rows or read back from where they were set aside.
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.ipc
import pyarrow.parquet as pq

import generator.load.one_file as one_file
from generator.load.worker import ROW_COLUMNS, SAMPLE_COLUMNS, SAMPLE_SCHEMA, frame_of
from runners import footer, schema


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
    """Every measurement: run_id, trial, step, phase, metric, value, unit; loaded `lean`, less the per-request
    samples (`HELD_OUT`) after each file's first row, which `held_out` counts and `full_rows` reads again."""
    rejected: list[Rejected] = field(default_factory=list)
    held_out: dict[str, int] = field(default_factory=dict)
    """Per run, how many of its file's rows `rows` leaves out (none: `rows` holds every row of the run)."""
    root: Path | None = None
    """What the runs' `path`s are relative to (the data folder's parent): where `full_rows` reads held-out rows."""
    held_in: dict[str, tuple[str, int, int]] = field(default_factory=dict)
    """Per run read by this load with a `held` folder, where its every row was put aside as it was read: (Arrow IPC
    file, first record batch, batches); `full_rows` takes them from there instead of reading the file again."""
    per_file: dict[str, Any] = field(default_factory=dict)
    """What the caller's `per_file` made of each file this load read (not those its cache gave, and rejected ones
    too, as they were read), by the keys it gave."""


def with_run_ids(rows: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """The rows (tagged by `_file`) with their run ids back from their files' heads, in their order. Gathered, not
    joined: each row's id is a view of the one copy of its run's id, never a copy of the text (16 bytes a row instead
    of about 65: copied, the ids were most of the rows' memory)."""
    files = runs["_file"].to_list()
    position = [-1] * (max(files, default=-1) + 1)  # a file's index: its head's row
    for row, index in enumerate(files):
        position[index] = row
    where = pl.Series(position, dtype=pl.Int64)
    ids = runs["run_id"]
    parts = []
    # gathered from the heads' own column, chunk by chunk of the rows: each id is a view of the heads' one copy (a
    # scattered copy of the column is gathered as copies, and a column chunked unlike the others is split to match,
    # which copies the text too)
    for chunk in rows["_file"].get_chunks():
        at = where.gather(chunk)
        if (at < 0).any():  # never (the rows are the heads' files'): fail rather than give a row another's id
            raise ValueError("rows of a file without a head")
        parts.append(ids.gather(at))
    # the ids chunked as the other columns are (a part read per chunk), and not rechunked: one chunk per column was a
    # copy of every row while the rows it was copied from were still held; a run's rows are taken as a slice of one
    # chunk each (`run_slices`), so the downloads' bytes are as before
    return rows.with_columns(run_id=pl.concat(parts, rechunk=False)).select(ROW_COLUMNS)


def full_rows(loaded: Loaded, run_ids: Sequence[str]) -> pl.DataFrame:
    """Every row of these runs' files, as `Loaded.rows` holds them (columns, types, each file's order, runs in the
    order of `rows`): from `rows` where it holds all of a run's rows, else read again from the run's file, which must
    still hash to the sha256 it was checked with (the same bytes, so the same checks pass). Callers take runs a part
    at a time: memory for a part's rows, not the data's."""
    held = {r for r in run_ids if loaded.held_out.get(r)}
    root = loaded.root
    if held and root is None:
        raise ValueError("rows were held out of a load with no folder to read them again from")
    where = {
        run_id: (path, digest)
        for run_id, path, digest in loaded.runs.filter(pl.col("run_id").is_in(list(held)))
        .select("run_id", "path", "sha256")
        .iter_rows()
    }
    frames = [
        (_put_aside(run_id, loaded.held_in[run_id]) if run_id in loaded.held_in else _read_again(root, *where[run_id]))
        if root is not None and run_id in held
        else frame
        for run_id, frame in run_slices(loaded.rows, run_ids)
    ]  # a run held out kept its file's first row, so it is in `rows`, in its place
    # one chunk per run, as slices of the rows were (Parquet's row groups follow chunks: the same bytes as before)
    return pl.concat(frames, rechunk=False) if frames else loaded.rows.clear()


def run_slices(rows: pl.DataFrame, run_ids: Sequence[str]) -> list[tuple[str, pl.DataFrame]]:
    """The rows of each of `run_ids` that `rows` holds, one frame of one chunk per run, in the order of `rows`: a
    slice where each run's rows are contiguous (as a load leaves them, `_spans`), found once per frame instead of
    filtering every row for each batch of runs; else filtered."""
    spans = _spans(rows)
    if spans is None:
        wanted = pl.Series(list(run_ids), dtype=pl.String).implode()
        grouped = rows.filter(pl.col("run_id").is_in(wanted)).partition_by("run_id", as_dict=True, maintain_order=True)
        return [(str(run_id), frame) for (run_id,), frame in grouped.items()]
    at = sorted((spans[r], r) for r in set(run_ids) if r in spans)
    return [(run_id, rows.slice(start, length).rechunk()) for (start, length), run_id in at]


def subset(loaded: Loaded, run_ids: Sequence[str]) -> Loaded:
    """These runs' records alone, enough for `full_rows` of them elsewhere (a worker process writing a download): their
    rows (slices of `rows`, copied only when pickled), which of them were held out, and `runs` with only their ids,
    paths and sha256s (where `full_rows` reads a held-out run's file again)."""
    slices = run_slices(loaded.rows, run_ids)
    ids = [run_id for run_id, _ in slices]
    return Loaded(
        runs=loaded.runs.filter(pl.col("run_id").is_in(ids)).select("run_id", "path", "sha256"),
        rows=pl.concat([frame for _, frame in slices], rechunk=False) if slices else loaded.rows.clear(),
        held_out={run_id: loaded.held_out[run_id] for run_id in ids if loaded.held_out.get(run_id)},
        root=loaded.root,
        held_in={run_id: loaded.held_in[run_id] for run_id in ids if run_id in loaded.held_in},
    )


_SPANS: dict[int, tuple[weakref.ref[pl.DataFrame], dict[str, tuple[int, int]] | None]] = {}
"""Per rows frame alive (by id, dropped with the frame), each run's (offset, length) in it (`_spans`)."""


def _spans(rows: pl.DataFrame) -> dict[str, tuple[int, int]] | None:
    """Each run's rows in `rows` as (offset, length), from the run-length encoding of `run_id`, worked out once per
    frame; None when a run's rows are not contiguous (a frame put together otherwise than by a load)."""
    known = _SPANS.get(id(rows))
    if known is not None and known[0]() is rows:
        return known[1]
    found: dict[str, tuple[int, int]] = {}
    start, stretches = 0, 0
    for length, run_id in rows.select(pl.col("run_id").rle()).unnest("run_id").iter_rows():
        found.setdefault(run_id, (start, length))
        start, stretches = start + length, stretches + 1
    spans = found if len(found) == stretches else None  # a run met twice: its rows are apart
    key = id(rows)

    def forget(_: object, key: int = key) -> None:
        _SPANS.pop(key, None)

    _SPANS[key] = (weakref.ref(rows, forget), spans)
    return spans


def _put_aside(run_id: str, where: tuple[str, int, int]) -> pl.DataFrame:
    """A run's every row as its load put them aside (`Loaded.held_in`: this build's own file, written by its read
    of the run's file, whose checks those rows passed), as `_read_again` gives them."""
    path, first, count = where
    with pa.OSFile(path) as source:
        reader = pa.ipc.open_file(source)
        table = pa.Table.from_batches([reader.get_batch(i) for i in range(first, first + count)], schema=SAMPLE_SCHEMA)
    return frame_of(table).with_columns(run_id=pl.lit(run_id, dtype=pl.String)).select(ROW_COLUMNS)


def _read_again(root: Path, rel: str, sha256: str) -> pl.DataFrame:
    """One loaded file's every row, read again (`full_rows`); a ValueError naming the file when its bytes are no
    longer those it was loaded with. The same bytes passed every check when they were loaded, so they are read and
    upgraded as then (`one_file.read_checked`), not checked again (checking them again was a large part of the
    downloads' time); the run id is the file's name, which the load checked the record's against."""
    path = root / rel
    content = one_file.read_bounded(path)
    if hashlib.sha256(content).hexdigest() != sha256:
        raise ValueError(f"{rel}: changed since this build loaded it (its sha256 is no longer {sha256}): build again")
    source = pa.BufferReader(content)
    meta = pq.ParquetFile(source).metadata
    table = schema.upgrade(one_file.read_record(source, meta, dict(footer.key_values(content, meta.metadata or {}))))
    samples = table.select(SAMPLE_COLUMNS)
    if not samples.schema.equals(SAMPLE_SCHEMA):
        samples = samples.cast(SAMPLE_SCHEMA)
    return frame_of(samples).with_columns(run_id=pl.lit(path.stem, dtype=pl.String)).select(ROW_COLUMNS)
