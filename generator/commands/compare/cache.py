"""The table `compare` selects from (`compare.Dataset`: one row per run with its figure, the A/A floors, the rejected
files), kept from the last site build or compare of the same data, so that `compare A B` on tens of thousands of
runs reads one table instead of loading and deriving every file.

Two blobs of the build store (kind `compare`): the table as Arrow and the rest as JSON (never a pickle: a cache file
is data, and data is hostile). Their key is everything the table is derived from: each result file's and manifest's
path, size, inode and times (a changed, added or removed file changes it: `load.stat_key`), and the last commit that
touched the data folder (history's verdicts on rewritten files): a commit of docs or code leaves it, and the store
adds the code and libraries (`fingerprint`) to every key. Each blob is read only when its bytes hash to their noted
sha256.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import polars as pl

import generator.load.history as history
from generator import load, store

KIND = "compare"
"""The store's kind for the table."""


def key(data_dir: Path, entries: list[Path] | None = None, stats: list[str] | None = None) -> str:
    """What the table of `data_dir` is derived from, as one text (computed before loading, so a file that changes
    meanwhile makes the next key differ, never the other way round). `entries`: `load.result_files(data_dir)`, when
    the caller has listed them, and `stats` their `load.stat_keys` (the site build takes both once, for this and the
    load)."""
    data_dir = Path(data_dir)
    lines = [f"data commit:{_data_commit(data_dir)}"]
    if entries is None:
        entries, stats = load.result_files(data_dir), None
    stats = load.stat_keys(entries) if stats is None else stats
    if len(stats) != len(entries):
        raise ValueError(f"{len(stats):,} stat keys for {len(entries):,} files")
    manifests = sorted((data_dir / "editions").glob("*")) if (data_dir / "editions").is_dir() else []
    prefix = str(data_dir) + os.sep  # what every path found under it starts with: relpath is 30 times slower
    for path, stat in [*zip(entries, stats, strict=True), *((m, load.stat_key(m)) for m in manifests)]:
        text = str(path)
        rel = text[len(prefix) :] if text.startswith(prefix) else os.path.relpath(path, data_dir)
        lines.append(f"{rel}\0{stat}")
    return "\n".join(lines)


def _data_commit(data_dir: Path) -> str:
    """The last commit that changed anything under `data_dir` ("-" outside a git checkout)."""
    if history.repo(data_dir) is None:
        return "-"
    out = history._git(data_dir, "log", "-1", "--format=%H", "--", ".")
    return out.strip() if out else "-"


def save(folder: Path, data_key: str, runs: pl.DataFrame, rest: dict[str, Any]) -> None:
    """Keep the table (`runs`) and the rest (JSON-able) in the store of the cache folder `folder`, for `data_key`."""
    kept = store.at(folder)
    buffer = io.BytesIO()
    runs.write_ipc(buffer, compression="zstd")
    kept.put(KIND, f"runs {data_key}", buffer.getvalue())
    kept.put(KIND, f"rest {data_key}", json.dumps(rest).encode())


def read(folder: Path, data_key: str) -> tuple[pl.DataFrame, dict[str, Any]] | None:
    """The table kept for `data_key`, or None (none kept, or not the bytes their notes name)."""
    kept = store.at(folder)
    runs, rest = kept.get(KIND, f"runs {data_key}"), kept.get(KIND, f"rest {data_key}")
    if runs is None or rest is None:
        return None
    try:
        return pl.read_ipc(io.BytesIO(runs)), json.loads(rest)
    except Exception:  # whole bytes of another shape: derived again
        return None
