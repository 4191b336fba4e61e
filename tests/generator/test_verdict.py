"""The verdict (generator/verdict.py) on synthetic summaries: the matched shape, the figures there, the wording on
the home page, and an honest "not yet" where the sweep does not bracket the claim."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from generator import pages, verdict
from runners import metrics


def _claim(run_id: str, variant: str, engine: str, steps_per_s: float) -> dict:
    return dict(run_id=run_id, variant=variant, engine=engine, steps_per_s=steps_per_s, origin="claim",
                accelerator="NVIDIA H100 SXM", accelerator_count=2)  # fmt: skip


def _point(variant: str, tier: str, micro_batch: int, rate: float, **extra) -> dict:
    return dict(
        run_id=f"{variant}-{micro_batch}",
        variant=variant,
        tier=tier,
        engine=extra.pop("engine", "torch"),
        micro_batch=micro_batch,
        steps_per_s=rate,
        steps_per_s_lo=rate * 0.99,
        steps_per_s_hi=rate * 1.01,
        origin="measured",
        accelerator="NVIDIA H200",
        accelerator_count=2,
        **extra,
    )


def _summary(points: list[dict]) -> pl.DataFrame:
    claims = [
        _claim("claim-seed-sparse-first-2xh100", "sparse-first-trainer", "sparse-first", 21.7),
        _claim("claim-seed-pytorch-ddp-stock-2xh100", "ddp-stock", "torch", 14.1),
        _claim("claim-aaa-forged", "ddp-stock", "torch", 1.0),  # a submitted claim cannot move the question
    ]
    rows = []
    for r in [*claims, *points]:
        measured = r["origin"] == "measured"
        rows.append(
            {
                "suite": "h100",
                "workload": "train-gpt-1.27b-mb4",
                "status": "ok",
                "model_name": "gpt-1.27b",  # the flattened config (generator/columns.py)
                "tensor_parallel_size": None,
                "total_params": 1.27e9,
                "retracted_by": None,
                "unverified": None,
                "loss_parity_ok": True if measured else None,
                "steps_completed": 2000.0,
                "full_length": True,
                "tokens_per_step": float(r.get("micro_batch", 0) * 2048),
                "tokens_per_s_per_device": 1.0,
                "mfu_datasheet": 0.5,
                "compute_precision": "bf16",
                "peak_mem_gib": 20.0,
                "started_at": datetime(2026, 12, 1, tzinfo=UTC),
                "device": "cuda",
                "steps_per_s_lo": None,
                "steps_per_s_hi": None,
                "micro_batch": None,
                "tier": "claim",
                **r,
            }
        )
    return pl.DataFrame(rows)


STOCK = [(1, 20.0), (2, 14.7), (3, 12.6), (4, 10.9)]
TUNED = [(2, 22.0), (3, 19.0), (4, 16.0)]


def test_interpolation_stays_between_measured_points() -> None:
    x = metrics.crossing(STOCK, 14.1)
    assert x == pytest.approx(2 + 0.6 / 2.1)
    assert metrics.interpolate(STOCK, x) == pytest.approx(14.1)
    assert metrics.crossing(STOCK, 25.0) is None and metrics.interpolate(STOCK, 5) is None


def test_the_matched_shape_and_tuned_over_stock_there() -> None:
    summary = _summary(
        [_point("ddp-amp-stock", "stock", m, r) for m, r in STOCK]
        + [_point("fsdp2-float8", "tuned", m, r) for m, r in TUNED]
        + [_point("ddp-tuned", "tuned", m, r - 3.0) for m, r in TUNED]  # "tuned DDP" in the seed's own words
        + [_point("mlx-bf16-compile", "tuned", m, 30.0, engine="mlx") for m in (2, 3)]  # another engine: not PyTorch
    )
    fight = verdict.fight(summary)
    assert fight is not None and fight.claimed_ratio == pytest.approx(21.7 / 14.1)
    points = verdict.sweep(summary, fight)
    assert "mlx-bf16-compile" not in points["variant"].to_list()
    said = verdict.answer(points, fight)
    matched = 2 + 0.6 / 2.1
    assert said["matched_micro_batch"] == pytest.approx(matched)
    best = said["best"]
    tuned_there = 22.0 - 3.0 * (matched - 2)
    assert best["variant"] == "fsdp2-float8" and best["steps_per_s"] == pytest.approx(tuned_there)
    assert best["ratio"] == pytest.approx(tuned_there / 14.1)
    assert best["ratio_lo"] < best["ratio"] < best["ratio_hi"]
    assert best["gap"] == pytest.approx(21.7 / tuned_there) and said["closes"] == "yes"
    assert best["gap_lo"] <= best["gap"] <= best["gap_hi"]
    # one-run points widened to the A/A spread of their hardware: the ratio's interval takes it in
    widened = verdict.answer(verdict.sweep(summary, fight, {("NVIDIA H200", 2, False): 0.10}), fight)["best"]
    assert widened["steps_per_s"] == pytest.approx(best["steps_per_s"])
    assert (
        widened["steps_per_s_lo"] <= tuned_there * 0.95 + 1e-9
        and widened["steps_per_s_hi"] >= tuned_there * 1.05 - 1e-9
    )
    assert widened["ratio_lo"] < best["ratio_lo"] and widened["ratio_hi"] > best["ratio_hi"]
    ddp = said["ddp"]  # DDP alone, 3 steps/s slower: the claim is 21.7 / 17.14 = 1.27x of it, beyond 1.1x
    assert ddp["variant"] == "ddp-tuned" and ddp["gap"] == pytest.approx(21.7 / (tuned_there - 3.0))
    assert ddp["closes"] == "no"


def test_a_sweep_that_does_not_bracket_the_claim_says_so_on_the_home_page(tmp_path: Path) -> None:
    summary = _summary([_point("ddp-amp-stock", "stock", m, r) for m, r in STOCK[2:]])
    fight = verdict.fight(summary)
    points = verdict.sweep(summary, fight)
    said = verdict.answer(points, fight)
    assert said["best"] is None and "smallest micro-batch measured (3)" in said["why_not"]
    context = dict(fight=fight, said=said, points=points.to_dicts(), owed=verdict.owed(summary, fight, said),
                   chart="", href="x.md", stock=verdict.STOCK, min_steps=300, gap_asked=1.1)  # fmt: skip
    out = pages.render(pages.environment(), "index.md.j2", tmp_path / "index.md", verdict=context, boards=[],
                       claims=[], rejected=[], total_runs=0, failed_runs=0)  # fmt: skip
    text = out.read_text()
    assert "## The verdict" in text and "Not answered yet" in text and "1.54×" in text
    assert "The sparse-first trainer itself | **claim only**" in text
