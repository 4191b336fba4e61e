"""A suite's name as the site shows it: the suite file's `title` (the suite named "h100" holds H200 runs), else its
name. The name itself stays what records, paths and commands use; only what a reader sees changes."""

from __future__ import annotations

import functools
import re

import polars as pl

from runners import spec

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


@functools.cache
def title(suite: str) -> str:
    """The suite file's title, or `suite` itself where it has none, has no file here, or its file does not load (a
    record names its suite; that name is never trusted to find anything but a file of that name)."""
    if not _NAME.fullmatch(suite):  # a path or anything but a plain name finds no file
        return suite
    try:
        return spec.load_suite(suite).title or suite
    except (spec.SpecError, OSError, ValueError):
        return suite


def with_titles(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with `suite_title` beside its `suite` column (a run page's row carries it, so a new title re-renders)."""
    names = frame["suite"].unique().drop_nulls().to_list()
    titles = {name: title(name) for name in names}
    return frame.with_columns(suite_title=pl.col("suite").replace_strict(titles, default=None, return_dtype=pl.String))
