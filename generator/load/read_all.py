"""Every file read and checked, in order: those the cache holds taken from it, the rest read in parts, over a pool of
worker processes when there are many, and put together in file order.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import polars as pl

import generator.load.read_cache as read_cache
import generator.load.worker as worker
from generator import progress
from generator.load.worker import PerFile, Read

PARALLEL_FROM = 200
"""Files below which loading stays in this process (a worker pool costs about a second to start)."""


def read_all(
    files: list[Path],
    root_parent: Path,
    cache_dir: Path | None = None,
    lean: bool = False,
    held: Path | None = None,
    stats: Sequence[str] | None = None,
    per_file: PerFile | None = None,
) -> tuple[list[Read], pl.DataFrame | None, pl.DataFrame | None, dict[str, Any]]:
    """Every file read and checked, in `files` order; spread over the machine's cores when there are many.

    With a cache dir, a file whose path and sha256 match one an earlier build checked (with the same code) is
    taken from the cache instead of being read and checked again; the cache is then rewritten. `stats`: the files'
    `stat_key`s, taken by the caller before this reads any of them (else taken here). Last, the `per_file` entries
    of the files read."""
    if stats is not None and len(stats) != len(files):
        raise ValueError(f"{len(stats):,} stat keys for {len(files):,} files")
    cached = read_cache.cached(cache_dir, lean)
    read_at, todo, reuse, stats_at = read_cache.sorted_out(
        files, root_parent, None if cached is None else cached[0], stats
    )
    parts = _read_parts(todo, root_parent, lean, per_file, held)
    for part in parts:
        for read in part[0]:
            read_at[read.index] = read
    made = {key: value for part in parts for key, value in part[3].items()}
    reads = [read_at[index] for index in range(len(files))]
    heads = [p[1] for p in parts if p[1] is not None]
    rows = [p[2] for p in parts if p[2] is not None]
    if cached is not None and reuse:
        earlier_heads, earlier_rows = read_cache.earlier(cached, reuse)
        heads.insert(0, earlier_heads)
        rows.insert(0, earlier_rows)
    # one chunk: the parts' (and the cache's) heads concatenated would stay as many chunks, into the cache and back,
    # and every query over the runs that follow would walk them
    head = pl.concat(heads, rechunk=True) if heads else None
    row: pl.DataFrame | None = None
    for frame in rows:  # every file's rows in file order, files in path order: each frame is, so they merge
        row = frame if row is None else _merged(row, frame)
    if row is not None and not row["_file"].is_sorted():  # never (each part is in order): rather sort than mix
        row = row.sort("_file", maintain_order=True)
    fresh = (head, row) if todo and head is not None and row is not None else None  # else the entries read are kept
    read_cache.keep(cache_dir, lean, reads, stats_at, fresh)
    return reads, head, row, made


def _read_parts(
    todo: list[tuple[int, Path]], root_parent: Path, lean: bool, per_file: PerFile | None, held: Path | None
) -> list[tuple[list[Read], pl.DataFrame | None, pl.DataFrame | None, dict[str, Any]]]:
    """`todo` read in parts, in order (`worker.read_part`): over a pool of worker processes when there are many."""
    workers = min(os.cpu_count() or 1, 8)
    parts = []
    with progress.Progress("reading result files", len(todo)) as bar:
        if len(todo) < PARALLEL_FROM or workers < 2:
            size = max(1, len(todo) // 20)
            for i in range(0, len(todo), size):
                parts.append(worker.read_part(todo[i : i + size], root_parent, None, lean, per_file, held))
                bar.advance(len(todo[i : i + size]))
        else:
            size = -(-len(todo) // (workers * 16))
            chunks = [todo[i : i + size] for i in range(0, len(todo), size)]  # in order: no sort afterwards
            # spawn, not fork: this process may already run polars' and arrow's thread pools
            with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
                args = (root_parent, None, lean, per_file, held)
                work = pool.map(worker.read_part, chunks, *([arg] * len(chunks) for arg in args))
                for chunk, part in zip(chunks, work, strict=True):
                    parts.append(part)
                    bar.advance(len(chunk))
    return parts


def _merged(a: pl.DataFrame, b: pl.DataFrame) -> pl.DataFrame:
    """Two tables of rows, each in `_file` order with no file in both, as one in `_file` order. Where `b` goes into `a`
    in a few places (a few new files among the cached ones), slices of both, put together without a copy; else a merge
    (which copies every row, though less than sorting the whole table again)."""
    if not a.height or not b.height or a["_file"][-1] < b["_file"][0]:
        return pl.concat([a, b])
    # where each row of `b` goes in `a`: a file's rows all go to one place (no file is in both)
    at = a["_file"].search_sorted(b["_file"], side="left")
    places = at.rle()
    if places.len() > MERGE_SLICES:
        return a.merge_sorted(b, key="_file")
    pieces, taken, start = [], 0, 0
    for length, place in places.struct.unnest().iter_rows():
        pieces += [a.slice(taken, place - taken), b.slice(start, length)]
        taken, start = place, start + length
    pieces.append(a.slice(taken))
    return pl.concat([p for p in pieces if p.height], rechunk=False)


MERGE_SLICES = 64
"""Places where new files' rows go among the cached ones, at most, for `_merged` to put slices together."""
