"""Per-run figures that one result file alone decides, cached by that file's sha256: a warm build, `compare` or
`validate` derives them again only for new or changed files.

The cache lives in an ignored build folder, never in data/: `FAIRFIGHT_SITE_CACHE` when set, else the site build's
`--work` folder's `cache/` (`build/cache` by default; `compare` and `validate` use the same default). It is not the
machine's cache (`FAIRFIGHT_CACHE`, runners/cache.py: builds and weights shared by every checkout): this one holds
one data folder's files, and two data folders sharing it would only evict each other's. Nothing is
cached until a command calls `use(folder)`, so a library call or a test computes everything afresh.

Each table is one Arrow file with a key beside it: the code and libraries that make output (`fingerprint`: every module
and library version, never a hand-kept list) and the file's own sha256. A table whose code changed, or whose bytes are
not those its key names (damaged, half-written, or replaced by another build meanwhile), is ignored and rebuilt, never
trusted. An entry is keyed by its file's sha256 (and whatever else of its record the figure takes), so a changed or
removed file's entry is never used again; new entries are added to the table (an edition's or a single file's figures
must not displace the site's), so entries of files long gone stay until the folder is removed (about a kilobyte a run).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from generator import fingerprint
from runners.cache import file_sha256

ENV = "FAIRFIGHT_SITE_CACHE"
_folder: Path | None = None


def folder_for(work_dir: Path) -> Path:
    """Where a command that works in `work_dir` keeps its cache: `FAIRFIGHT_SITE_CACHE`, else `work_dir/cache`."""
    named = os.environ.get(ENV)
    return Path(named) if named else Path(work_dir) / "cache"


def command_folder() -> Path | None:
    """The cache `compare` and `validate` use: `FAIRFIGHT_SITE_CACHE`, else `build/cache` where a site build made one in
    the current folder; None elsewhere (a check run in any folder leaves nothing behind)."""
    named = os.environ.get(ENV)
    if named:
        return Path(named)
    here = Path("build") / "cache"
    return here if here.is_dir() else None


def use(folder: Path | None) -> None:
    """Cache per-run figures under `folder` from now on in this process (None: cache nothing)."""
    global _folder
    _folder = None if folder is None else Path(folder)


def active() -> Path | None:
    return _folder


class Table:
    """One kind of per-run figure: entries (a key: a JSON value) under `name`, valid while the code and the libraries
    are unchanged (`fingerprint`)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def _fingerprint(self) -> str:
        return hashlib.sha256(f"{self.name} {fingerprint.fingerprint()}".encode()).hexdigest()

    def _paths(self, folder: Path) -> tuple[Path, Path]:
        return folder / f"figures-{self.name}.arrow", folder / f"figures-{self.name}.key"

    def read(self) -> dict[str, Any]:
        """Every entry cached (empty without a cache folder, or with one whose table is stale or damaged)."""
        frame = self._load(self._fingerprint())
        if frame is None:
            return {}
        try:
            return {k: json.loads(v) for k, v in frame.select("key", "value").iter_rows()}
        except Exception:  # a table of another shape: only a slower run
            return {}

    def write(self, entries: Mapping[str, Any]) -> None:
        """Replace the table with `entries`."""
        frame = pl.DataFrame(
            {"key": list(entries), "value": [json.dumps(v) for v in entries.values()]},
            schema={"key": pl.String, "value": pl.String},
        )
        self._store(frame, self._fingerprint())

    def _load(self, fingerprint: str) -> pl.DataFrame | None:
        """The table, when its key names `fingerprint` and the table's own sha256 (None without a cache folder, or with
        one whose table is missing, stale or damaged)."""
        if _folder is None:
            return None
        table, key = self._paths(_folder)
        try:
            named, digest = key.read_text().split("\n")
            if named != fingerprint or digest != file_sha256(table):
                return None
            return pl.read_ipc(table)
        except Exception:  # missing, stale or damaged: only a slower run
            return None

    def _store(self, frame: pl.DataFrame, fingerprint: str) -> None:
        """Replace the table with `frame`, its key naming `fingerprint` (nothing without a cache folder)."""
        if _folder is None:
            return
        table, key = self._paths(_folder)
        try:
            _folder.mkdir(parents=True, exist_ok=True)
            tmp = table.with_name(f".{table.name}.{os.getpid()}.tmp")
            frame.write_ipc(tmp, compression="zstd")
            digest = file_sha256(tmp)
            key.unlink(missing_ok=True)  # no key while the table changes: a reader in between rebuilds
            os.replace(tmp, table)
            tmp_key = key.with_name(f".{key.name}.{os.getpid()}.tmp")
            tmp_key.write_text(f"{fingerprint}\n{digest}")
            os.replace(tmp_key, key)
        except OSError:  # a read-only or full disk: the figures were computed anyway
            return


class Frames(Table):
    """One kind of per-run row: a frame with one row per result file, keyed by its sha256 (the `sha256` column), valid
    while the code and libraries are unchanged and for inputs of one shape (`tag`, e.g. the input frame's schema).
    What a warm build would otherwise work out again for every run from its run-level columns."""

    def read_frame(self, tag: str) -> pl.DataFrame | None:
        """Every row cached for inputs tagged `tag` (None without a cache folder, or with one whose table is stale,
        damaged or made for other inputs)."""
        return self._load(self._tagged(tag))

    def write_frame(self, frame: pl.DataFrame, tag: str) -> None:
        """Replace the table with `frame` (for inputs tagged `tag`)."""
        self._store(frame, self._tagged(tag))

    def _tagged(self, tag: str) -> str:
        return hashlib.sha256(f"{self._fingerprint()} {tag}".encode()).hexdigest()

    def by_file(
        self, runs: pl.DataFrame, inputs: list[str], compute: Callable[[pl.DataFrame], pl.DataFrame]
    ) -> pl.DataFrame:
        """`compute(runs)` (a frame of one row per run, by `run_id`), each run's row kept under its file's sha256 and
        the values of its `inputs` columns (what else of the run the figures take): only runs not kept are computed.
        Returns one row per run of `runs`, in their order: `run_id` and compute's columns (null where compute gave
        the run no row). Without a cache folder, or with runs lacking a digest or sharing one, computes them all."""
        if _folder is None or "sha256" not in runs.columns or not runs.height:
            return _one_per_run(runs, compute(runs))
        if runs["sha256"].null_count() or runs["sha256"].is_duplicated().any():
            return _one_per_run(runs, compute(runs))
        parts = [pl.col(c).cast(pl.String).fill_null("∅") for c in ("sha256", *inputs)]
        keyed = runs.select("run_id", _key=pl.concat_str(parts, separator="|"))
        tag = repr(runs.select(inputs).schema)
        cached = self.read_frame(tag)
        todo = keyed if cached is None else keyed.join(cached.select("_key"), on="_key", how="anti")
        table = cached
        if todo.height:
            wanted = runs.join(todo.select("run_id"), on="run_id", how="semi", maintain_order="left")
            fresh = _one_per_run(wanted, compute(wanted)).join(keyed, on="run_id", how="left").drop("run_id")
            try:
                table = fresh if cached is None else pl.concat([cached, fresh.select(cached.columns)])
            except pl.exceptions.PolarsError:  # kept columns of other types: only a slower run
                table = fresh if cached is None else None
            if table is None:
                return _one_per_run(runs, compute(runs))
            self.write_frame(table, tag)  # earlier files' rows stay: an edition's must not evict the site's
        assert table is not None
        return keyed.join(table, on="_key", how="left", maintain_order="left").drop("_key")


def _one_per_run(runs: pl.DataFrame, figures: pl.DataFrame) -> pl.DataFrame:
    """`figures` (one row per run it covers) as one row per run of `runs`, in their order."""
    return runs.select("run_id").join(figures, on="run_id", how="left", maintain_order="left")


class Arrays:
    """Numpy arrays worked out from many runs at once (the verdict's resamples), kept whole under the key of what they
    were made from: a build whose inputs are the same reads them back instead of working them out again. A few sets
    are kept (`KEPT`: the site's and its editions' each have their own key), the least recently used dropped first.
    Each set is one `.npz` (no pickles: loaded with `allow_pickle=False`) with its own sha256 in its key file."""

    KEPT = 8

    def __init__(self, name: str) -> None:
        self.table = Table(name)

    def _paths(self, key: str) -> tuple[Path, Path] | None:
        if _folder is None:
            return None
        digest = hashlib.sha256(f"{self.table._fingerprint()} {key}".encode()).hexdigest()[:32]
        stem = _folder / f"arrays-{self.table.name}-{digest}"
        return stem.with_suffix(".npz"), stem.with_suffix(".key")

    def read(self, key: str) -> dict[str, Any] | None:
        """The arrays kept under `key` (None without a cache folder, or when none are, or they are damaged)."""
        import numpy as np

        paths = self._paths(key)
        if paths is None:
            return None
        data, named = paths
        try:
            if named.read_text() != file_sha256(data):
                return None
            with np.load(data, allow_pickle=False) as kept:
                out = {name: kept[name] for name in kept.files}
            os.utime(named)  # recently used: kept longest
            return out
        except Exception:  # missing or damaged: only a slower run
            return None

    def write(self, key: str, arrays: Mapping[str, Any]) -> None:
        """Keep `arrays` under `key`, dropping the least recently used sets beyond `KEPT`."""
        import numpy as np

        paths = self._paths(key)
        if paths is None or _folder is None:
            return
        data, named = paths
        try:
            _folder.mkdir(parents=True, exist_ok=True)
            tmp = data.with_name(f".{data.stem}.{os.getpid()}.tmp.npz")
            np.savez(tmp, **arrays)
            digest = file_sha256(tmp)
            named.unlink(missing_ok=True)  # no key while the data changes: a reader in between works it out again
            os.replace(tmp, data)
            tmp_key = named.with_name(f".{named.name}.{os.getpid()}.tmp")
            tmp_key.write_text(digest)
            os.replace(tmp_key, named)
            sets = sorted(_folder.glob(f"arrays-{self.table.name}-*.key"), key=lambda p: p.stat().st_mtime_ns)
            for old in sets[: -self.KEPT]:
                old.unlink(missing_ok=True)
                old.with_suffix(".npz").unlink(missing_ok=True)
        except OSError:  # a read-only or full disk: the arrays were worked out anyway
            return
