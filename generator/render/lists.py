"""A page's list of runs, bounded: a page shows at most `SHOWN` of a list that grows with the number of runs (a
board's unranked runs, its failures, the runs since the latest edition), the newest, and says how many there are
in all and where every one of them is: a gzipped CSV beside the other downloads
(`downloads/lists/<name>.csv.gz`).

A page holding every run costs its build and its reader in proportion to the data (the editions page and a board's
unranked runs grow with every run); bounded, every page but a run's own stays the same size however many runs
there are. A list within the bound is shown whole, as before, and no file is written."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

import generator.render.pages as pages
import generator.render.parts as parts
import generator.store.output_cache as output_cache
from runners import bounds

SHOWN = 50
"""The most rows of a run list a page shows: the newest of them (a reader scanning a table reads about this many)."""

RUN_LINKS = 10
"""The most run links a ranked row shows (its latest; site_src/templates/_run_links.md.j2): a configuration
repeated many times is one row, and the board's JSON lists every run of it."""

PAGE_RUN_LINKS = 5
"""The most run links a run page's row of one harness commit shows (its latest, and the page's own run): every run
page of a configuration carries the row, so each link is repeated once a run; `runs.csv.gz` lists every run."""

LEFT_OUT = (*bounds.JSON_LIMITS, "settings", "curve_settings")
"""Columns a list's CSV leaves out: the record's JSON documents (config, hardware, software, environment,
calibration) and the configuration's canonical JSON, kilobytes a row, which each run's page and the runs download
(`downloads/runs.parquet`) hold; with them the lists were mostly repeated JSON."""

NEWEST_FIRST = ("started_at", "run_id")
"""The order a bounded list is shown and written in, each column descending: newest start first."""

LIST_CSV = output_cache.Kind("list-csv")
"""A list's gzipped CSV, kept by the rows it is written from: a list a new run did not join is not written again."""


@dataclass(frozen=True, slots=True)
class Shown:
    """The rows a page lists of one list, and where the rest are."""

    rows: list[dict[str, Any]]
    """What the page shows: every row when the list is within `SHOWN`, in the order given; else the `SHOWN`
    newest, newest first."""
    total: int
    """How many rows the list has in all."""
    href: str | None
    """The gzipped CSV of every row, relative to the page; None when the page shows them all."""

    @property
    def name(self) -> str | None:
        """The CSV's file name (what the page's link says)."""
        return None if self.href is None else self.href.rsplit("/", 1)[-1]


def bounded(frame: pl.DataFrame, docs: Path, page: Path, name: str) -> Shown:
    """`frame` as `page` (under `docs`) lists it: whole when it has at most `SHOWN` rows, else its `SHOWN` newest
    (`NEWEST_FIRST`), with every row written newest first to `downloads/lists/<name>.csv.gz` (its flat columns, as
    `csv_ready` makes them, but `LEFT_OUT`)."""
    if frame.height <= SHOWN:
        return Shown(frame.to_dicts(), frame.height, None)
    newest = frame.sort(NEWEST_FIRST, descending=True, nulls_last=True)
    target = docs / "downloads" / "lists" / f"{pages.slug(name)}.csv.gz"
    target.parent.mkdir(parents=True, exist_ok=True)
    written = _flat(newest.drop(LEFT_OUT, strict=False))
    target.write_bytes(LIST_CSV.made(lambda: parts.gzipped(csv_ready(written).write_csv(), level=6), written))
    href = Path(os.path.relpath(target, page.parent)).as_posix()
    return Shown(newest.head(SHOWN).to_dicts(), frame.height, href)


def csv_ready(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` as a CSV download holds it: its flat columns only (a list or struct has no CSV cell), times in UTC
    ISO 8601, and text a spreadsheet would run as a formula made inert (`pages.csv_inert`)."""
    flat = _flat(frame)
    text = [c for c, t in flat.schema.items() if t == pl.String]
    return flat.with_columns(
        pl.col(pl.Datetime).dt.to_string("%Y-%m-%dT%H:%M:%S%.6fZ"), *(pages.csv_inert(pl.col(c)) for c in text)
    )


def _flat(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame`'s flat columns: a list or struct has no CSV cell."""
    return frame.select([c for c, t in frame.schema.items() if not isinstance(t, pl.List | pl.Struct | pl.Object)])
