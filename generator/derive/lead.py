"""What a board and a run page say first: a board's answer in one line (its ranking's first row, its figure and
interval, how many rows, and whether the top is settled) and a run's standing (ranked, or why not).

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


STANDING_SCHEMA = {"run_id": pl.String, "board_rank": pl.Int64, "standing": pl.String}
"""A run's standing on its board (`standings`): its configuration's rank (null: none), and in words."""


def standings(boards: list[tuple[pl.DataFrame, pl.DataFrame]]) -> pl.DataFrame:
    """Every run a board lists, with its standing: a ranked row's runs by its rank ("ranked N"), or "on its board's
    ranking, no rank: <how its interval was made>" for a row without an interval; an unranked run by its own reason
    ("not ranked: <reason>"). `boards`: each board's ranked rows and unranked runs (`Board.ranked`,
    `Board.unranked`)."""
    out: list[tuple[str, int | None, str]] = []
    for ranked, unranked in boards:
        for run_ids, rank, basis in ranked.select("run_ids", "rank", "interval_basis").iter_rows():
            said = f"ranked {rank} on its board" if rank is not None else f"on its board's ranking, no rank: {basis}"
            out += [(run_id, rank, said) for run_id in run_ids]
        reasons = unranked.select("run_id", "unranked").iter_rows()
        out += [(run_id, None, f"not ranked: {why}") for run_id, why in reasons]
    return pl.DataFrame(out, schema=STANDING_SCHEMA, orient="row").unique("run_id", keep="first", maintain_order=True)


def standing_elsewhere() -> pl.Expr:
    """The standing of a run no board lists, from its own record: what it is (a claim, an imported tool record, a
    retracted run, a stopped run, one on another device count than its workload's), null where none of these is so."""
    return (
        pl.when(pl.col("retracted_by").is_not_null())
        .then(pl.lit("not ranked: retracted"))
        .when(pl.col("origin") == "claim")
        .then(pl.lit("not ranked: a claim, reported elsewhere and not reproduced"))
        .when(pl.col("origin") == "imported")
        .then(pl.lit("not ranked: the engine's own tool's record, imported to cross-check a runner's"))
        .when(pl.col("status") != "ok")
        .then(pl.lit("not ranked: it did not finish (status ") + pl.col("status") + pl.lit(")"))
        .when(pl.col("suite_scale").not_())
        .then(pl.lit("not ranked: not on its workload's device count (its board's scaling section shows it)"))
        .otherwise(pl.lit(None, dtype=pl.String))
    )
