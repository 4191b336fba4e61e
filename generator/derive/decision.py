"""The decision card of "One GPU, every engine": per model × GPU and precision family, which engine to pick for
batch-1 decode, how sure that is, what would change it and what was not measured. Derived from the page's own rows
(`side_by_side.engine_rows`: the decode figure and interval, MBU and copy-bound fraction, TTFT and memory each row
already carries), never from a second reading of the runs; the template words it.

Whether the lead is settled is the boards' rule (`metrics.ranks_with_ties`, as `lead.board_lead` reads it): the
fastest row leads beyond doubt only when no other engine's best row shares its rank 1, i.e. no interval overlaps
its own. One difference from a board's top line: there a row without an interval "decides nothing" and is passed
over, while here an engine whose best row has no interval could be the faster one, so the lead is undecided (a
recommendation that an unreplicated figure could overturn is not one)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from runners import metrics

UNDECIDED = "undecided"
SETTLED = "settled"
ALONE = "only engine measured"
"""How sure a card's lead is: beyond every other engine's interval, within one (or beside a row without one), or
without a rival measured in its family on this model and GPU."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Contender:
    """One engine's best batch-1 decode row in a family (the fastest of its variants there)."""

    engine: str
    engine_name: str
    variant: str
    decode: float
    lo: float | None
    hi: float | None
    checked: bool
    """Cross-checked against the engine's own tool (its board ranks it), as the table marks it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FamilyDecision:
    """One sentence of a card: a precision family's fastest engine at batch 1 and what stands behind it."""

    family_bits: int
    weights: tuple[str, ...]
    """The weight types the family's rows record (`weights_label`), in the table's order: what the family is."""
    fastest: Contender
    mbu_datasheet: float | None
    copy_fraction: float | None
    """The fastest row's fraction of the datasheet bandwidth and of the measured copy bound (the row's own)."""
    limit_tokens_per_s: float | None
    """The copy bound in tokens/s for the bytes its token reads (the row's own)."""
    ttft_ms: float | None
    ttft_measured: bool | None
    """True: measured as served (vLLM); False: computed from the prefill test, a lower bound."""
    peak_mem_gib: float | None
    lead: str
    """`SETTLED`, `UNDECIDED` or `ALONE`."""
    overlapping: tuple[str, ...]
    """The engines (titles) whose best row's interval overlaps the fastest row's (it shares rank 1): undecided."""
    without_interval: tuple[str, ...]
    """The other engines (titles) whose best row has no interval (unreplicated): it could be as fast, undecided."""
    runner_up: Contender | None
    """The fastest other engine's best row (None when no other engine ran this family here)."""
    flip: float | None
    """How much faster the runner-up's figure would have to be to draw level with the fastest: fastest ÷ runner-up
    − 1 (what would change the recommendation, from the figures alone)."""
    absent: tuple[str, ...]
    """The page's engines (titles) with no decode row of this family on this model and GPU."""
    unmeasured: tuple[tuple[str, tuple[int, ...]], ...]
    """Per engine (title) of the family, the KV-cache depths some engine generated at on this model and GPU in this
    family but it did not (vLLM's served point counts as depth 0): where the recommendation says nothing."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DecisionCard:
    """One model on one GPU: a sentence per precision family, 16-bit first."""

    suite: str
    model_name: str
    accelerator: str
    families: tuple[FamilyDecision, ...]


def _contender(row: dict[str, Any]) -> Contender:
    return Contender(
        engine=row["engine"], engine_name=row["engine_name"], variant=row["variant"], decode=row["decode"],
        lo=row["decode_lo"], hi=row["decode_hi"], checked=bool(row["decode_checked"]),
    )  # fmt: skip


def family_decision(
    rows: list[dict[str, Any]], engine_names: dict[str, str], depths: dict[str, set[int]]
) -> FamilyDecision | None:
    """The decision of one family from its rows (`side_by_side.ROW_SCHEMA` dicts of one suite, model, GPU and family,
    any order); `engine_names`: the page's engines by name with their titles; `depths`: per engine, the KV-cache
    depths it generated at in this family here. None for a family without a decode figure."""
    rows = sorted((r for r in rows if r["decode"] is not None), key=lambda r: -r["decode"])
    if not rows:
        return None
    ranks = metrics.ranks_with_ties([(r["decode_lo"], r["decode_hi"]) for r in rows])
    top, top_rank = rows[0], ranks[0]
    best: dict[str, tuple[dict[str, Any], int | None]] = {}
    for row, rank in zip(rows, ranks, strict=True):
        best.setdefault(row["engine"], (row, rank))
    rivals = [(row, rank) for engine, (row, rank) in best.items() if engine != top["engine"]]
    overlapping = tuple(row["engine_name"] for row, rank in rivals if rank == 1)
    without = tuple(row["engine_name"] for row, rank in rivals if rank is None)
    if not rivals:
        lead = ALONE
    elif top_rank is None or overlapping or without:
        lead = UNDECIDED
    else:
        lead = SETTLED
    runner = rivals[0][0] if rivals else None  # rows are fastest first, so the first rival is the fastest one
    everywhere = set().union(*depths.values()) if depths else set()
    return FamilyDecision(
        family_bits=top["family_bits"],
        weights=tuple(dict.fromkeys(r["weights_label"] or r["weights"] for r in rows)),
        fastest=_contender(top),
        mbu_datasheet=top["mbu_datasheet"],
        copy_fraction=top["copy_fraction"],
        limit_tokens_per_s=top["limit_tokens_per_s"],
        ttft_ms=top["ttft_ms"],
        ttft_measured=top["ttft_measured"],
        peak_mem_gib=top["peak_mem_gib"],
        lead=lead,
        overlapping=overlapping if top_rank is not None else (),
        without_interval=without,
        runner_up=None if runner is None else _contender(runner),
        flip=None if runner is None or not runner["decode"] else top["decode"] / runner["decode"] - 1,
        absent=tuple(title for name, title in engine_names.items() if name not in best),
        unmeasured=tuple(
            (engine_names.get(engine, engine), tuple(sorted(everywhere - depths.get(engine, set()))))
            for engine in best
            if everywhere - depths.get(engine, set())
        ),
    )


def cards(
    rows: Iterable[dict[str, Any]], engine_names: dict[str, str], depths: dict[tuple[str, str, str, int, str], set[int]]
) -> list[DecisionCard]:
    """A card per (suite, model, GPU) of the page's rows (`side_by_side.engine_rows`, as dicts) with a family, in the
    order the rows come; `depths`: per (suite, model, GPU, family, engine) the KV-cache depths it generated at."""
    grouped: dict[tuple[str, str, str], dict[int, list[dict[str, Any]]]] = {}
    for row in rows:
        if row["family_bits"] is not None:
            key = (row["suite"], row["model_name"], row["accelerator"])
            grouped.setdefault(key, {}).setdefault(row["family_bits"], []).append(row)
    out = []
    for (suite, model, accelerator), families in grouped.items():
        decided = []
        for bits in sorted(families, reverse=True):
            here = {e: d for (s, m, a, b, e), d in depths.items() if (s, m, a, b) == (suite, model, accelerator, bits)}
            decision = family_decision(families[bits], engine_names, here)
            if decision is not None:
                decided.append(decision)
        out.append(DecisionCard(suite=suite, model_name=model, accelerator=accelerator, families=tuple(decided)))
    return out
