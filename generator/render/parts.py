"""Large downloads in parts that a new run rarely moves, so a warm build rewrites only the part it lands in.

Runs are cut into parts at content-defined boundaries (as rsync and backup tools cut files): a run whose id hashes
to 0 modulo `RUNS_PER_PART` starts a new part, so parts hold about that many runs each, and a new run changes only
the part it sorts into; only when it is a boundary itself (one in `RUNS_PER_PART`) does it split that part in two.
A part is named after the run that starts it, so its name stays put as runs are added around it. Each part's
bytes are kept in the build store by what it holds, and an unchanged part is linked into the new site, not
written again.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

import polars as pl

import generator.render.pages as pages
from generator import store

RUNS_PER_PART = 512
"""About how many runs a part holds: at 50,000 runs, about a hundred parts per download."""

FIRST = "first"
"""The name of the part of the runs before the first boundary."""


def _starts_part(run_id: str) -> bool:
    digest = hashlib.sha256(run_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") % RUNS_PER_PART == 0


def part_names(run_ids: Iterable[str]) -> dict[str, str]:
    """Each run's part name: the slug of the run that starts its part in id order, or `FIRST`."""
    out: dict[str, str] = {}
    current = FIRST
    for run_id in sorted(set(run_ids)):
        if _starts_part(run_id):
            current = pages.slug(run_id)
        out[run_id] = current
    return out


def grouped(names: dict[str, str]) -> dict[str, list[str]]:
    """Part name → its run ids, in id order."""
    out: dict[str, list[str]] = {}
    for run_id in sorted(names):
        out.setdefault(names[run_id], []).append(run_id)
    return out


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


def samples_paths(summary: pl.DataFrame) -> dict[str, str]:
    """Each run's samples file, relative to the site's root: `downloads/samples/<suite>/<part>.parquet`, its suite's
    runs cut into parts (`part_names`). The run pages link it, and `render.catalog` writes it: both ask here."""
    out: dict[str, str] = {}
    for (suite,), ids in summary.select("suite", "run_id").group_by("suite"):
        for run_id, part in part_names(ids["run_id"].to_list()).items():
            out[run_id] = f"downloads/samples/{pages.slug(str(suite))}/{part}.parquet"
    return out


def gzipped(text: str, level: int = 9) -> bytes:
    """`text` gzipped the same way every build (no time stamp or file name in the header), so a file changes only
    when its content does. Gzip members joined end to end are one gzip file of the texts joined (RFC 1952), which
    is how a download in parts is one file to its reader."""
    return gzip.compress(text.encode(), compresslevel=level, mtime=0)
