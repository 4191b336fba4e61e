"""Large downloads in parts that a new run rarely moves, so a warm build rewrites only the part it lands in.

Runs are cut into parts at content-defined boundaries (as rsync and backup tools cut files): in run-id order, a run
whose id hashes to 0 modulo `RUNS_PER_PART` starts a new part, so parts hold about that many runs each, and a new run
changes only the part it sorts into; only when it is a boundary itself (one in `RUNS_PER_PART`) does it split that
part in two. A samples part is named by its place in its suite's order (`samples-<suite>-001.parquet` holds the
suite's first runs by id), and the downloads page lists each part's first and last run and the kinds of run it
holds. A run id begins with the time the run started, so a new run sorts near the end (only claims, `claim-…`, sort
after every time): the parts before the one it lands in keep their names, and only one that starts a part renumbers
the few after it. Each part's bytes are kept in the build store by what it holds, not by its name (a part renumbered
is linked under its new name, not written again), as an unchanged part is linked into the new site.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

import generator.render.pages as pages
from generator import store

RUNS_PER_PART = 512
"""About how many runs a part holds: at 50,000 runs, about a hundred parts per download."""


def _starts_part(run_id: str) -> bool:
    digest = hashlib.sha256(run_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") % RUNS_PER_PART == 0


def cut(run_ids: Iterable[str]) -> list[list[str]]:
    """`run_ids` cut into parts in id order, each part's runs in id order: a run that `_starts_part` begins a new one
    (the runs before the first such run are the first part)."""
    out: list[list[str]] = []
    for run_id in sorted(set(run_ids)):
        if not out or _starts_part(run_id):
            out.append([])
        out[-1].append(run_id)
    return out


def samples_file(suite: str, number: int) -> str:
    """The samples part `number` (from 1, in id order) of `suite`'s runs, relative to the site's root:
    `downloads/samples/<suite>/samples-<suite>-<number>.parquet`, the number in three digits or more (so that names
    sort as the parts do up to 999 parts) and the suite in the file's own name (so that parts of two suites saved
    side by side keep apart)."""
    suite = pages.slug(suite)
    return f"downloads/samples/{suite}/samples-{suite}-{number:03d}.parquet"


def listed_at(suite: str) -> str:
    """Where the downloads page lists `suite`'s samples parts, relative to the site's root."""
    return f"downloads.html#samples-{pages.slug(suite)}"


def placed(target: Path, cache: store.Store, key: str, make: Callable[[Path], None]) -> str:
    """Put at `target` the bytes that `make(path)` writes, from the store `cache` when a part of the same `key` was
    made before (`kept`; hard-linked where the file system allows, copied otherwise). Returns their sha256."""
    cached, digest = kept(cache, key, make)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    try:
        os.link(cached, target)
    except OSError:
        shutil.copyfile(cached, target)
    return digest


KIND = "downloads"
"""The store's kind for download parts."""


def kept(cache: store.Store, key: str, make: Callable[[Path], None]) -> tuple[Path, str]:
    """The part `key` in the store `cache` and its bytes' sha256: the one kept, when whole (the store checks it),
    else made by `make(path)` and kept (a damaged, half-written or foreign entry is made again, never published)."""
    return cache.made_file(KIND, key, make)


def noted(cache: store.Store, key: str) -> bool:
    """Whether the part `key` is in `cache` (without reading it: `kept` checks its bytes)."""
    return cache.has(KIND, key)


def key_of(*parts: object) -> str:
    """A cache key from what a part holds (text, numbers, lists of them)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(repr(part).encode())
        digest.update(b"\0")
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class SamplesPart:
    """One samples part of a suite's runs (`samples_parts`)."""

    suite: str
    number: int
    """Its place in the suite's parts, from 1, in run-id order."""
    path: str
    """Its file, relative to the site's root (`samples_file`)."""
    run_ids: tuple[str, ...]
    """The runs cut into it (`cut`), in id order; a run that recorded no rows is among them and not in the file."""


def samples_parts(summary: pl.DataFrame) -> list[SamplesPart]:
    """Each suite's runs cut into parts (`cut`), by suite and number. The run pages link a run's part
    (`samples_paths`), and `render.catalog` writes and lists them: both ask here."""
    out = []
    for (suite,), ids in sorted(summary.select("suite", "run_id").group_by("suite"), key=lambda g: str(g[0][0])):
        for number, members in enumerate(cut(ids["run_id"].to_list()), start=1):
            out.append(SamplesPart(str(suite), number, samples_file(str(suite), number), tuple(members)))
    return out


def samples_paths(summary: pl.DataFrame) -> dict[str, str]:
    """Each run's samples file (`samples_parts`)."""
    return {run_id: part.path for part in samples_parts(summary) for run_id in part.run_ids}


def gzipped(text: str, level: int = 9) -> bytes:
    """`text` gzipped the same way every build (no time stamp or file name in the header), so a file changes only
    when its content does. Gzip members joined end to end are one gzip file of the texts joined (RFC 1952), which
    is how a download in parts is one file to its reader."""
    return gzip.compress(text.encode(), compresslevel=level, mtime=0)
