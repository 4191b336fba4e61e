"""Per-run figures that one result file alone decides, cached by that file's sha256: a warm build, `compare` or
`validate` derives them again only for new or changed files.

The cache lives in an ignored build folder, never in data/: `FAIRFIGHT_SITE_CACHE` when set, else the site build's
`--work` folder's `cache/` (`build/cache` by default; `compare` and `validate` use the same default). It is not the
machine's cache (`FAIRFIGHT_CACHE`, runners/cache.py: builds and weights shared by every checkout): this one holds
one data folder's files, and two data folders sharing it would only evict each other's. Nothing is
cached until a command calls `use(folder)`, so a library call or a test computes everything afresh.

Every table is the build store's (`store`: the rows primitive, kind `figures`), keyed by its name and the shape of
its inputs; the store adds the code and libraries that make output (`fingerprint`) to the key and checks the table's
bytes against their own sha256 on reading. An entry is keyed by its file's sha256 (and whatever else of its record the
figure takes), so a changed or removed file's entry is never used again; a build asks for the entries of the files it
holds (`ask`, or by reading them), and the store keeps those rows only (`store.prune`). `compare` and `validate` add
entries and remove none, so an edition's or a single file's figures never displace the site's.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from generator import store

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
    """Cache per-run figures, and every other entry of the build store, under `folder` from now on in this process
    (None: cache nothing)."""
    global _folder
    _folder = None if folder is None else Path(folder)
    store.use(_folder)


def active() -> Path | None:
    return _folder


KIND = "figures"
"""The store's kind for every table here."""


class _Asked(dict[str, Any]):
    """A table's entries, each one looked up counted as asked for (the store keeps those: `store.prune`)."""

    def __init__(self, entries: dict[str, Any], ask: Callable[[Iterable[str]], None]) -> None:
        super().__init__(entries)
        self._ask = ask

    def __contains__(self, key: object) -> bool:
        found = super().__contains__(key)
        if found:
            self._ask([str(key)])
        return found

    def __getitem__(self, key: str) -> Any:
        value = super().__getitem__(key)
        self._ask([key])
        return value

    def get(self, key: str, default: Any = None) -> Any:
        if super().__contains__(key):
            self._ask([key])
        return super().get(key, default)


class Table:
    """One kind of per-run figure: entries (a key: a JSON value) under `name`, valid while the code and the libraries
    are unchanged (the store's key)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._kept: set[str] = set()

    def _tag(self, tag: str = "") -> str:
        return f"{self.name} {tag}"

    def ask(self, keys: Iterable[str]) -> None:
        """Count `keys` as this build's: `store.prune` keeps their entries."""
        kept = store.active()
        if kept is not None:
            kept.ask_rows(KIND, self._tag(), "key", keys)

    def read(self) -> dict[str, Any]:
        """Every entry cached (empty without a store, or with one whose table is stale or damaged); each one looked up
        is counted as asked for."""
        kept = store.active()
        frame = None if kept is None else kept.read_rows(KIND, self._tag(), "key")
        if frame is None:
            self._kept = set()
            return {}
        try:
            entries = {k: json.loads(v) for k, v in frame.select("key", "value").iter_rows()}
        except Exception:  # a table of another shape: only a slower run
            entries = {}
        self._kept = set(entries)
        return _Asked(entries, self.ask)

    def write(self, entries: Mapping[str, Any]) -> None:
        """Replace the table with `entries` (those not read before counted as asked for)."""
        kept = store.active()
        if kept is None:
            return
        self.ask(set(entries) - self._kept)
        frame = pl.DataFrame(
            {"key": list(entries), "value": [json.dumps(v) for v in entries.values()]},
            schema={"key": pl.String, "value": pl.String},
        )
        kept.write_rows(KIND, self._tag(), frame)
        self._kept = set(entries)


class Frames(Table):
    """One kind of per-run row: a frame with one row per result file, keyed by its sha256 (the `key` column), valid
    while the code and libraries are unchanged and for inputs of one shape (`tag`, e.g. the input frame's schema).
    What a warm build would otherwise work out again for every run from its run-level columns."""

    def read_frame(self, tag: str, key: str, asked: Iterable[str]) -> pl.DataFrame | None:
        """Every row cached for inputs tagged `tag`, keyed by the column `key` (None without a store, or with one
        whose table is stale, damaged or made for other inputs); `asked`: the keys this build holds."""
        kept = store.active()
        if kept is None:
            return None
        kept.ask_rows(KIND, self._tag(tag), key, asked)
        return kept.read_rows(KIND, self._tag(tag), key)

    def write_frame(self, frame: pl.DataFrame, tag: str) -> None:
        """Replace the table with `frame` (for inputs tagged `tag`)."""
        kept = store.active()
        if kept is not None:
            kept.write_rows(KIND, self._tag(tag), frame)

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
        cached = self.read_frame(tag, "_key", keyed["_key"].to_list())
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
    were made from: a build whose inputs are the same reads them back instead of working them out again. Each set is
    one `.npz` blob of the store (no pickles: loaded with `allow_pickle=False`)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def read(self, key: str) -> dict[str, Any] | None:
        """The arrays kept under `key` (None without a store, or when none are, or they are damaged)."""
        import numpy as np

        kept = store.active()
        data = None if kept is None else kept.get(KIND, f"arrays {self.name} {key}")
        if data is None:
            return None
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
                return {name: arrays[name] for name in arrays.files}
        except Exception:  # whole bytes of another shape: only a slower run
            return None

    def write(self, key: str, arrays: Mapping[str, Any]) -> None:
        """Keep `arrays` under `key`."""
        import numpy as np

        kept = store.active()
        if kept is None:
            return
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        kept.put(KIND, f"arrays {self.name} {key}", buffer.getvalue())
