"""The table `compare` selects from (`compare.Dataset`: one row per run with its figure, the A/A floors, the rejected
files), kept from the last site build or compare of the same data, so that `compare A B` on tens of thousands of
runs reads one table instead of loading and deriving every file.

Its key is everything the table is derived from: the code and the libraries (`fingerprint`), each result file's and
manifest's path, size, inode and times (a changed, added or removed file changes it: `load.stat_key`), and the commit
git has checked out (history's verdicts on rewritten files). The key also names the table's own sha256: a table that
is not what was written is rebuilt, never trusted. The floors and rejected files are stored as JSON, never as
pickles: a cache file is data, and data is hostile.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import polars as pl

from generator import fingerprint, history, load
from runners.cache import file_sha256


def _code_digest() -> str:
    """The code and the libraries the figures are made with (`fingerprint`)."""
    return fingerprint.fingerprint()


def key(data_dir: Path, entries: list[Path] | None = None) -> str:
    """What the table of `data_dir` is derived from, as one digest (computed before loading, so a file that changes
    meanwhile makes the next key differ, never the other way round). `entries`: `load.result_files(data_dir)`, when
    the caller has listed them (the site build lists them once, for this and the load)."""
    data_dir = Path(data_dir)
    digest = hashlib.sha256(_code_digest().encode())
    found = history.repo(data_dir)
    digest.update(b"head:" + (found.head.encode() if found else b"-"))
    entries = load.result_files(data_dir) if entries is None else entries
    manifests = sorted((data_dir / "editions").glob("*")) if (data_dir / "editions").is_dir() else []
    prefix = str(data_dir) + os.sep  # what every path found under it starts with: relpath is 30 times slower
    for path in [*entries, *manifests]:
        text = str(path)
        rel = text[len(prefix) :] if text.startswith(prefix) else os.path.relpath(path, data_dir)
        digest.update(f"{rel}\0{load.stat_key(path)}\n".encode())
    return digest.hexdigest()


def save(folder: Path, data_key: str, runs: pl.DataFrame, rest: dict[str, Any]) -> None:
    """Keep the table (`runs`) and the rest (JSON-able) under `folder/compare`, for `data_key`."""
    where = Path(folder) / "compare"
    try:
        where.mkdir(parents=True, exist_ok=True)
        (where / "key.txt").unlink(missing_ok=True)  # no key while half-written
        runs.write_ipc(where / "runs.arrow", compression="zstd")
        (where / "rest.json").write_text(json.dumps(rest))
        sums = [file_sha256(where / name) for name in ("runs.arrow", "rest.json")]
        (where / "key.txt").write_text("\n".join([data_key, *sums]))
    except OSError:  # a read-only or full disk: compare derives it next time
        return


def read(folder: Path, data_key: str) -> tuple[pl.DataFrame, dict[str, Any]] | None:
    """The table kept for `data_key`, or None (none kept, another key, or not the bytes its key names)."""
    where = Path(folder) / "compare"
    try:
        written = (where / "key.txt").read_text().split("\n")
        if written[0] != data_key or written[1:] != [file_sha256(where / n) for n in ("runs.arrow", "rest.json")]:
            return None
        return pl.read_ipc(where / "runs.arrow"), json.loads((where / "rest.json").read_text())
    except Exception:  # missing or damaged: derived again
        return None
