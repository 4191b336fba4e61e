"""What a page writer makes from frames (a run list's gzipped CSV, a board's JSON, a chart's spec), kept by exactly
what it is made from: a warm build makes again only what a new run changed, not every list of every board.

A board's lists and its JSON hold every run of the board, so making them costs a build in proportion to the runs
even when a new run lands elsewhere; a chart's spec costs altair tens of milliseconds however few rows it draws.

An entry's name is the sha256 of its kind, the code and libraries that make output (`fingerprint`: every module,
template and library version, never a hand-kept list) and its inputs: a frame by its schema, its height and polars'
hash of each row (`hash_rows`, as the downloads' parts are keyed), anything else by its `repr`; a column whose values
polars hashes alike but a page writes differently (a float column holding `-0.0`, equal to `0.0`; a categorical,
whose hash may follow its codes) is hashed as its text. Its file holds its bytes after their
own sha256: an entry whose bytes are not those it names (damaged, half-written) is made again and replaced, never
trusted.

The entries live under the build's cache folder (`runcache.active()`, in `OUTPUTS`); nothing is kept without one,
so a library call or a test makes everything afresh. A build keeps only the entries it used (`keep_used`): the
folder holds one build's outputs, as the page cache holds one build's pages.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from generator import fingerprint, runcache

OUTPUTS = "outputs"
"""The folder under the build's cache folder that holds the entries."""

_used: set[str] = set()  # the entries this build read or made, by file name (`keep_used` removes the others)


class Kind:
    """One kind of output (`name`): `made` returns its bytes."""

    def __init__(self, name: str) -> None:
        self.name = name

    def fingerprint(self) -> str:
        """The code's and libraries' part of every key (`fingerprint`, read once per process)."""
        return hashlib.sha256(f"{self.name} {fingerprint.fingerprint()}".encode()).hexdigest()

    def key(self, *inputs: object) -> str:
        """The name of the entry made from `inputs` (frames by their rows, anything else by its repr)."""
        digest = hashlib.sha256(self.fingerprint().encode())
        for value in inputs:
            digest.update(b"\0")
            if isinstance(value, pl.DataFrame):
                digest.update(f"frame {value.schema!r} {value.height}\0".encode())
                digest.update(_row_hashes(value))
            else:
                digest.update(repr(value).encode())
        return f"{self.name}-{digest.hexdigest()}"

    def made(self, make: Callable[[], bytes], *inputs: object) -> bytes:
        """What `make()` returns for `inputs`: the entry kept for them when there is one whose bytes are whole, else
        made and kept."""
        folder = runcache.active()
        if folder is None:
            return make()
        if any(isinstance(v, pl.DataFrame) and pl.Object in v.schema.dtypes() for v in inputs):
            return make()  # polars cannot hash an object column: made each time
        name = self.key(*inputs)
        path = folder / OUTPUTS / name
        _used.add(name)
        kept = _read(path)
        if kept is not None:
            return kept
        data = make()
        _write(path, data)
        return data


def keep_used() -> None:
    """Remove the entries this build did not use (outputs since changed or gone), then start counting afresh."""
    folder = runcache.active()
    used = set(_used)
    _used.clear()
    if folder is None or not (folder / OUTPUTS).is_dir():
        return
    for path in (folder / OUTPUTS).iterdir():
        if path.name not in used and not path.name.startswith("."):
            path.unlink(missing_ok=True)


def _row_hashes(frame: pl.DataFrame) -> bytes:
    """Polars' hash of each row of `frame`, after the columns it would hash alike but writes differently are made
    text: a float column holding a negative zero (-0.0 and 0.0 are equal as numbers), categoricals, and nested
    columns holding either. Which columns were made text is hashed too."""
    if frame.width == 0:
        return b""
    schema = frame.schema
    floats = [c for c, t in schema.items() if t.is_float()]
    values = frame.select(floats).to_numpy() if floats else np.zeros((0, 0))  # nulls as NaN: not a zero
    found = ((values == 0) & np.signbit(values)).any(axis=0)  # numpy: a tenth of a polars query's time on a board
    textual: dict[Any, Any] = {c: pl.String() for c, negative_zero in zip(floats, found, strict=True) if negative_zero}
    textual |= {c: _hashable(t) for c, t in schema.items() if not t.is_float() and _hashable(t) != t}
    hashes = (frame.cast(textual) if textual else frame).hash_rows(seed=0)
    return f"{sorted(textual)}\0".encode() + hashes.to_numpy().tobytes()


def _hashable(dtype: Any) -> Any:
    """`dtype` with every float and categorical in it (nested too) as text."""
    if dtype.is_float() or isinstance(dtype, pl.Categorical | pl.Enum):
        return pl.String()
    if isinstance(dtype, pl.List):
        return pl.List(_hashable(dtype.inner))
    if isinstance(dtype, pl.Array):
        return pl.Array(_hashable(dtype.inner), dtype.size)
    if isinstance(dtype, pl.Struct):
        return pl.Struct({f.name: _hashable(f.dtype) for f in dtype.fields})
    return dtype


def _read(path: Path) -> bytes | None:
    """An entry's bytes, when its file holds them whole after their sha256 (None: missing or damaged)."""
    try:
        stored = path.read_bytes()
    except OSError:
        return None
    digest, _, data = stored.partition(b"\n")
    return data if digest == hashlib.sha256(data).hexdigest().encode() else None


def _write(path: Path, data: bytes) -> None:
    """Keep `data` at `path` after its sha256, written aside then renamed (a reader never sees half an entry)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(hashlib.sha256(data).hexdigest().encode() + b"\n" + data)
        os.replace(tmp, path)
    except OSError:  # a read-only or full disk: the output was made anyway
        return
