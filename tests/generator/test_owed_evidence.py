"""The owed list's words come from the data: where the verdict lands against the claim (never a typed "above"), which
owed comparisons have only our side measured, and MLX's runs on the fight's model (how its 2-GPU run ended, its 1-GPU
row against stock PyTorch). The unit tests use synthetic verdicts; the last test reads the committed data/."""

from __future__ import annotations

import re
from typing import Any

import pytest

import generator.derive.verdict.owed_list as owed_list
from generator import derive
from generator.derive.verdict.said import Answer, Reading, Tuned


def _tuned(gap: float, lo: float | None, hi: float | None, decision: str = "undecided") -> Tuned:
    return Tuned(variant="x", label="x", curve_hash="c", steps_per_s=21.7 / gap, ratio=21.7 / gap / 14.1, gap=gap,
                 gap_lo=lo, gap_hi=hi, decision=decision)  # fmt: skip


def _answer(**headline: Any) -> Answer:
    """An answer whose headline reading has `headline`'s fields (the rest empty)."""
    empty = dict(column="steps_per_s", stock_points=(), matched_micro_batch=None, matched_tokens_per_step=None,
                 tuned=(), best=None, ddp=None, why_not=None)  # fmt: skip
    reading = Reading(**(empty | headline))
    return Answer(target=14.1, claimed_ratio=21.7 / 14.1, headline="steady", readings={"steady": reading})


@pytest.mark.parametrize(
    ("gap", "lo", "hi", "words"),
    [(0.9, 0.85, 0.95, "above"), (1.2, 1.1, 1.3, "below"), (1.0, 0.9, 1.1, "level with"), (1.2, None, None, "below")],
)
def test_the_direction_is_read_from_the_interval_of_claimed_over_ours(
    gap: float, lo: float | None, hi: float | None, words: str
) -> None:
    assert owed_list.against_claim(_tuned(gap, lo, hi), 21.7) == words


def test_the_answer_names_the_shape_and_the_ddp_decision() -> None:
    said = _answer(best=_tuned(1.2, 1.1, 1.3), ddp=_tuned(1.3, 1.2, 1.4, "does not"), matched_micro_batch=2.5,
                   matched_tokens_per_step=5120.0)  # fmt: skip
    words = owed_list.answer_words(said, 21.7, 1.1)
    assert "micro-batch 2.5, 5,120 tokens a step" in words
    assert "below the claimed 21.7" in words and "tuned DDP alone does not close the gap to 1.1×" in words
    assert owed_list.answer_words(_answer(why_not="no sweep yet"), 21.7, 1.1) == "no sweep yet"


def test_an_owed_comparison_is_one_side_measured_until_the_seeds_engine_runs() -> None:
    assert owed_list.one_side(challenger_ran=False, measured=True) == "one side measured"
    assert owed_list.one_side(challenger_ran=True, measured=True) == "measured"
    assert owed_list.one_side(challenger_ran=False, measured=False) == "not yet"


def test_the_committed_owed_list_agrees_with_the_verdict(committed_results: derive.Results) -> None:
    summary = committed_results.runs
    the_verdict = committed_results.verdict  # as the site derives it, with the boards' ranked rows
    assert the_verdict is not None
    fight, said = the_verdict.fight, the_verdict.said
    owed = {o["item"]: o for o in the_verdict.owed}
    answer = owed["A tuned PyTorch, same hardware, model and data, every advantage"]["detail"]
    best = said.best
    direction = "above" if best.gap_hi < 1 else "below" if best.gap_lo > 1 else "level with"
    assert f"{direction} the claimed" in answer and f"micro-batch {said.matched_micro_batch:.3g}" in answer
    tp = owed["vLLM tensor-parallel serving"]
    assert tp["status"] == "one side measured" and tp["href"] == "side-by-side.md"  # the sparse-first trainer never ran
    mlx = owed["MLX on Metal"]
    stopped = summary.filter(engine="mlx", workload=fight.workload, status="timeout").height
    assert f"{stopped} run stopped by its time budget" in mlx["detail"]
    ratio = re.search(r"runs [\d.]+ steps/s, ([\d.]+)× (\S+)", mlx["detail"])
    assert ratio and ratio[2] == "ddp-amp-stock" and float(ratio[1]) < 1  # MLX on one GPU, against stock PyTorch
    assert mlx["href"] == "leaderboards/h100-train-gpt-1.27b-1gpu-mb8.md"
