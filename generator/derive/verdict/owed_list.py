"""The words of the seed's owed list that depend on the data: where the verdict lands against the claim, and the best
evidence for an owed comparison whose other side (the seed's own engine) never ran here. Pure: frames and dicts in,
text and page paths out (no template, no chart), so the owed list can never say "above" where the verdict's own
intervals say otherwise."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import polars as pl

import generator.derive.counting as counting
import generator.derive.words as say
import generator.load.slugs as slugs
from generator.derive.verdict.said import Answer, Tuned


class Fight(Protocol):
    """What the owed list reads of the verdict's fight (`verdict.Fight`)."""

    @property
    def suite(self) -> str: ...
    @property
    def workload(self) -> str: ...
    @property
    def challenger(self) -> dict[str, Any]: ...


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


def items(
    summary: pl.DataFrame,
    the_fight: Fight,
    said: Answer,
    gap_asked: float,
    leaderboards: Mapping[tuple[str, str], pl.DataFrame] | None = None,
) -> list[dict[str, Any]]:
    """The seed's list of what it still owes, each with a status and where its evidence is (`href` relative to
    the docs root; None where there is none yet). `leaderboards`: the training boards' ranked rows, by (suite,
    workload), as the site ranks them (MLX's one-GPU evidence is its best row there)."""
    ok = summary.filter(  # finished, or stopped by its time budget with a steady-state figure
        counting.MEASURED
        & ((pl.col("status") == "ok") | pl.col("steps_per_s_lo").is_not_null())
        & pl.col("retracted_by").is_null()
    )

    def board(frame: pl.DataFrame) -> str | None:
        if not frame.height:
            return None
        row = frame.sort("started_at").row(-1, named=True)
        return f"leaderboards/{slugs.slug(row['suite'], row['workload'])}.md"

    fight_board = f"leaderboards/{slugs.slug(the_fight.suite, the_fight.workload)}.md"
    metal = ok.filter(pl.col("device") == "metal")
    mlx_here = ok.filter((pl.col("engine") == "mlx") & (pl.col("workload") == the_fight.workload))
    tp = ok.filter((pl.col("engine") == "vllm") & (pl.col("tensor_parallel_size") > 1))
    big = ok.filter((pl.col("engine") == "llamacpp") & (pl.col("total_params") >= 13e9))
    challenger = ok.filter(pl.col("engine") == the_fight.challenger["engine"])
    answered = said.best is not None
    mlx_words, mlx_href = mlx_evidence(summary, the_fight.suite, the_fight.workload, leaderboards or {})
    return [
        {
            "item": "A tuned PyTorch, same hardware, model and data, every advantage",
            "status": "answered" if answered else "measuring",
            "detail": answer_words(said, the_fight.challenger["steps_per_s"], gap_asked),
            "href": fight_board,
        },
        {
            "item": "MLX on Metal",
            "status": "measured" if metal.height else "not yet",
            "detail": f"{say.counted(metal.height, 'run')} on Apple Silicon"
            if metal.height
            else "needs an Apple Silicon Mac (nox -s bench-apple); meanwhile MLX trained the same model on the same "
            f"data on the fight's GPUs through its CUDA backend: {mlx_words or 'no run yet'}",
            "href": board(metal) or mlx_href or board(mlx_here),
        },
        {
            "item": "vLLM tensor-parallel serving",
            "status": one_side(bool(challenger.height), bool(tp.height)),
            "detail": f"{say.counted(tp.height, 'run')} at tensor-parallel size 2 or more; each board says which "
            "ran beside vllm bench"
            + (
                ""
                if challenger.height
                else "; the seed's own engine did not run here: the best cross-engine "
                "evidence is batch-1 decode on one GPU, every engine side by side"
            ),
            "href": (board(tp) if challenger.height else SIDE_BY_SIDE) if tp.height else None,
        },
        {
            "item": "llama.cpp at 14B+, where memory pressure and the KV cache matter",
            "status": one_side(bool(challenger.height), bool(big.height)),
            "detail": _big_llama_detail(big) if big.height else "",
            "href": "side-by-side.md" if big.height else None,
        },
        {
            "item": "The sparse-first trainer itself",
            "status": "measured" if challenger.height else "claim only",
            "detail": f"{say.counted(challenger.height, 'run')}"
            if challenger.height
            else "not reproduced: its author can run it here through the external-runner contract",
            "href": board(challenger) or "add-an-engine.md",
        },
    ]


def _big_llama_detail(big: pl.DataFrame) -> str:
    """What the llama.cpp runs of 13B+ models cover, from the runs: models, devices, depths and KV-cache types."""
    models = ", ".join(
        f"{name} ({p / 1e9:.1f}B)"
        for p, name in sorted(set(big.select("total_params", "model_name").drop_nulls().iter_rows()))
    )
    devices = sorted(set(big["accelerator_count"].drop_nulls().to_list()))
    on = "one GPU" if devices == [1] else f"{' or '.join(str(d) for d in devices)} GPUs"
    caches = sorted({str(t).upper() for t in big["type_k"].drop_nulls().to_list()}) if "type_k" in big.columns else []
    cached = f" ({' and '.join(caches)} KV caches)" if caches else ""
    deepest = max(big["depth"].drop_nulls().to_list(), default=0)
    return (
        f"{say.counted(big.height, 'run')} of {models} on {on}, at KV-cache depths up to {deepest:,}{cached}, "
        "beside vLLM and MLX where they ran; the seed's own engine did not run here"
    )
