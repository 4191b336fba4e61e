"""What a page writer makes from frames (a run list's gzipped CSV, a board's JSON, a chart's spec), kept by exactly
what it is made from: a warm build makes again only what a new run changed, not every list of every board.

A board's lists and its JSON hold every run of the board, so making them costs a build in proportion to the runs
even when a new run lands elsewhere; a chart's spec costs altair tens of milliseconds however few rows it draws.

An entry is a blob of the build store (`store`, kind `output-<name>`) keyed by its inputs: a frame by its schema, its
height and polars' hash of each row (`hash_rows`, as the downloads' parts are keyed), anything else by its `repr`; a
column whose values polars hashes alike but a page writes differently (a float column holding `-0.0`, equal to `0.0`;
a categorical, whose hash may follow its codes) is hashed as its text. The store adds the code and libraries that
make output (`fingerprint`) to every key, checks an entry's bytes against their own sha256 on reading, and keeps only
what a build used. Without a store in use (a library call, a test) everything is made afresh.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from generator import store


class Kind:
    """One kind of output (`name`): `made` returns its bytes."""

    def __init__(self, name: str) -> None:
        self.name = name

    def key(self, *inputs: object) -> str:
        """The store key of the entry made from `inputs` (frames by their rows, anything else by its repr)."""
        digest = hashlib.sha256(self.name.encode())
        for value in inputs:
            digest.update(b"\0")
            if isinstance(value, pl.DataFrame):
                digest.update(f"frame {value.schema!r} {value.height}\0".encode())
                digest.update(_row_hashes(value))
            else:
                digest.update(repr(value).encode())
        return f"{self.name}-{digest.hexdigest()}"

    def made(self, make: Callable[[], bytes], *inputs: object) -> bytes:
        """What `make()` returns for `inputs`: the store's entry for them when there is a whole one, else made and
        kept."""
        kept = store.active()
        if kept is None:
            return make()
        if any(isinstance(v, pl.DataFrame) and pl.Object in v.schema.dtypes() for v in inputs):
            return make()  # polars cannot hash an object column: made each time
        return kept.made(KIND, self.key(*inputs), make)


KIND = "outputs"
"""The store's kind for every output kept here (the key names the `Kind`)."""


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
