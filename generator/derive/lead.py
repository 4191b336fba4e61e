"""What a board says first: its answer in one line (its ranking's first row, its figure and interval, how many
rows, and whether the top is settled).

Nothing here makes a figure or a decision of its own: the top is settled exactly when no other row shares the first
row's rank, and a rank is `metrics.ranks_with_ties` (one plus the rows whose interval lies wholly above a row's), so a
second row ranked 1 is a row whose interval overlaps the first's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl


@dataclass(frozen=True, slots=True, kw_only=True)
class Lead:
    """A board's answer in one line."""

    first: dict[str, Any] | None
    """The ranking's first row, as the page lists it (its best-ranked, fastest row; a row without a rank where none
    ranks); None for a board without rows."""
    value: float | None
    """The first row's figure."""
    lo: float | None
    """Its 95% interval's low (None: the row has no interval)."""
    hi: float | None
    """Its 95% interval's high."""
    rows: int
    """Rows in the ranking."""
    placed: int
    """Rows with a rank (an interval): a row without one could overlap any other, so it decides nothing."""
    tied: tuple[str, ...]
    """The variants of the other rows that share the first row's rank 1: their intervals overlap its interval."""

    @property
    def ranks(self) -> bool:
        """Whether the first row has a rank (some row of the board has an interval)."""
        return self.first is not None and self.first.get("rank") is not None

    @property
    def settled(self) -> bool:
        """Whether the top is settled: the first row ranks and no other row shares its rank."""
        return self.ranks and not self.tied


def board_lead(ranked: pl.DataFrame, figure: tuple[str, str, str]) -> Lead:
    """The answer of a board whose ranking is `ranked` (`Board.ranked`, in the page's order: ranked rows by rank,
    then rows without one), read by its `figure` columns (value, interval low, interval high)."""
    value, lo, hi = figure
    if ranked.height == 0:
        return Lead(first=None, value=None, lo=None, hi=None, rows=0, placed=0, tied=())
    first = ranked.row(0, named=True)
    ranks = ranked["rank"].to_list()
    tied = tuple(v for v, r in zip(ranked["variant"].to_list()[1:], ranks[1:], strict=True) if r == 1 == first["rank"])
    return Lead(
        first=first,
        value=first[value],
        lo=first[lo],
        hi=first[hi],
        rows=ranked.height,
        placed=sum(r is not None for r in ranks),
        tied=tied,
    )
