"""The words of the seed's owed list that depend on the data: where the verdict lands against the claim, and the best
evidence for an owed comparison whose other side (the seed's own engine) never ran here. Pure: frames and dicts in,
text and page paths out (no template, no chart), so the owed list can never say "above" where the verdict's own
intervals say otherwise."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

import generator.derive.counting as counting
import generator.derive.words as say
import generator.load.slugs as slugs
from generator.derive.verdict.answer import Answer, Tuned

SIDE_BY_SIDE = "side-by-side.md"
"""The page that sets every engine side by side on one model and GPU (batch-1 decode among its tables)."""


def against_claim(t: Tuned | None, claimed: float) -> str | None:
    """'above', 'below' or 'level with': our figure at the matched shape against the claimed one, read from the
    interval of claimed ÷ ours (`gap_lo`, `gap_hi`); from the point figure alone when there are no resamples."""
    if t is None:
        return None
    lo, hi = t.gap_lo, t.gap_hi
    if lo is None or hi is None:
        lo = hi = t.gap
    if hi < 1:
        return "above"
    if lo > 1:
        return "below"
    return "level with"


def answer_words(said: Answer, claimed: float, gap_asked: float) -> str:
    """Where the verdict stands, in one line: at which shape, the best tuned PyTorch's figure against the claim, and
    the decision for tuned DDP alone (the seed's own words), every word from `said` (`verdict.answer`)."""
    best, ddp = said.best, said.ddp
    if best is None:
        return said.why_not or ""
    shape = f"at the matched shape (micro-batch {say.fmt(said.matched_micro_batch)}"
    if said.matched_tokens_per_step is not None:
        shape += f", {say.fmt(said.matched_tokens_per_step)} tokens a step"
    words = (
        f"{shape}), the best tuned PyTorch ({best.label}) runs {say.fmt(best.steps_per_s)} steps/s, "
        f"{against_claim(best, claimed)} the claimed {say.fmt(claimed)}"
    )
    if ddp is not None and ddp.decision:
        decided = {"closes": "closes", "does not": "does not close"}.get(ddp.decision)
        words += (
            f"; tuned DDP alone {decided} the gap to {gap_asked}×"
            if decided
            else f"; whether tuned DDP alone closes the gap to {gap_asked}× is undecided"
        )
    return words


def mlx_evidence(
    summary: pl.DataFrame, fight_suite: str, fight_workload: str, leaderboards: Mapping[tuple[str, str], pl.DataFrame]
) -> tuple[str, str | None]:
    """What MLX's training runs on the fight's model show, from the runs: how its runs of the fight's own workload
    ended (e.g. stopped by their time budget), and its best ranked row on one GPU with its speedup over that board's
    stock baseline (`leaderboards`: the training boards' ranked rows, as the site ranks them). Returns (words, the
    one-GPU board's page, or the fight's board where MLX has no ranked row)."""
    measured = summary.filter(counting.STANDING)
    fight_runs = measured.filter((pl.col("suite") == fight_suite) & (pl.col("workload") == fight_workload))
    model = fight_runs["model_name"].drop_nulls()
    mlx = measured.filter((pl.col("engine") == "mlx") & pl.col("model_name").is_in(model.unique().implode()))
    parts: list[str] = []
    here = mlx.filter(pl.col("workload") == fight_workload)
    if here.height:
        ended = ", ".join(
            f"{say.counted(n, 'run')} {_ended(status)}"
            for status, n in sorted(here.group_by("status").len().rows(), key=lambda sn: -sn[1])
        )
        gpus = " or ".join(str(g) for g in sorted(set(here["accelerator_count"].to_list())))
        parts.append(f"on {gpus} GPUs ({fight_workload}), {ended}")
    href: str | None = None
    one = mlx.filter((pl.col("accelerator_count") == 1) & (pl.col("status") == "ok"))
    best: dict[str, Any] | None = None
    for (suite, workload), _ in one.group_by("suite", "workload", maintain_order=True):
        rows = leaderboards.get((str(suite), str(workload)))
        if rows is None or not rows.height:
            continue
        ranked = rows.filter(pl.col("engine") == "mlx").sort("steps_per_s", descending=True)
        if ranked.height and (best is None or ranked["steps_per_s"][0] > best["steps_per_s"]):
            best = ranked.row(0, named=True)
    if best is not None:
        href = f"leaderboards/{slugs.slug(best['suite'], best['workload'])}.md"
        ratio = f", {say.fmt(best['speedup'])}× {best['speed_baseline']}" if best.get("speedup") is not None else ""
        parts.append(
            f"on one GPU ({best['workload']}) its best ranked row, {best['variant']}, runs "
            f"{say.fmt(best['steps_per_s'])} steps/s{ratio}"
        )
    elif here.height:
        href = f"leaderboards/{slugs.slug(fight_suite, fight_workload)}.md"
    return "; ".join(parts), href


def _ended(status: str) -> str:
    return {"ok": "finished", "timeout": "stopped by its time budget", "oom": "out of memory"}.get(status, status)


def one_side(challenger_ran: bool, measured: bool) -> str:
    """An owed comparison with the seed's own engine: measured only where that engine ran too."""
    if not measured:
        return "not yet"
    return "measured" if challenger_ran else "one side measured"
