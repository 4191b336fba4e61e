"""What a single setting bought (generator/derive/single_settings.py): each changed run over its base at the same shape
and commit, with `tuning.effect`'s ratio and interval; a change with no base says so. Synthetic summaries by hand."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pytest

import generator.derive.evidence as evidence
from generator.derive import single_settings
from runners import metrics


def _summary() -> pl.DataFrame:
    rows = [  # run id, variant, env changes, micro-batch, steps, commit, steps/s, lo, hi, memory (steady), status
        ("base", "ddp-tuned", "CUDA_VISIBLE_DEVICES=0,1", 4, 120, "c1", 14.0, 13.8, 14.2, 30.0, "ok"),
        ("old-base", "ddp-tuned", "", 4, 120, "c0", 13.0, 12.9, 13.1, 30.0, "ok"),
        ("bucket", "ddp-tuned[bucket_cap_mb=400]", "", 4, 120, "c1", 14.1, 13.9, 14.3, 30.0, "ok"),
        ("hook", 'ddp-tuned[comm_hook="bf16_compress",bucket_cap_mb=25]', "", 4, 120, "c1", 13.0, 12.9, 13.1, 35.0,
         "ok"),
        ("nccl", "ddp-tuned", "NCCL_MIN_NCHANNELS=32 CUDA_VISIBLE_DEVICES=2,3", 4, 120, "c2", 14.0, 13.9, 14.1, 30.0,
         "ok"),
        ("orphan", "fsdp2-compile[reshard_after_forward=false]", "", 4, 120, "c1", 15.3, 15.0, 15.5, 14.0, "ok"),
        ("failed", "ddp-tuned[bucket_cap_mb=1]", "", 4, 120, "c1", None, None, None, None, "failed"),
        ("sweep", "ddp-tuned", "", 2, 300, "c1", 20.0, 19.9, 20.1, 25.0, "ok"),
    ]  # fmt: skip
    keys = ("run_id", "variant", "env_changes", "micro_batch", "steps_requested", "harness_commit", "steps_per_s",
            "steps_per_s_lo", "steps_per_s_hi", "peak_mem_steady_gib", "status")  # fmt: skip
    return pl.DataFrame(
        [
            dict(zip(keys, r, strict=True))
            | {
                "suite": "h100",
                "engine": "torch",
                "peak_mem_gib": 99.0,  # the whole run's peak (a compile transient): never what a ratio divides
                "workload": "w",
                "kind": None,
                "origin": "measured",
                "retracted_by": None,
                "unverified": None,
                "accelerator": "GPU",
                "accelerator_count": 2,
                "started_at": datetime(2026, 11, 1 + i, tzinfo=UTC),
            }
            for i, r in enumerate(rows)
        ],
        schema_overrides={"kind": pl.String, "retracted_by": pl.String, "unverified": pl.String},
    )


SPREAD = {("torch", "GPU", 2): metrics.PooledSpread(0.01, 6, 3)}
"""torch's between-run spread on 2 × GPU: 1% (6 degrees of freedom), wider than the runs' own intervals."""


def _widened(x: float, lo: float, hi: float) -> tuple[float, float, float]:
    found = evidence.interval([x], [(x, lo, hi)], SPREAD[("torch", "GPU", 2)])
    assert found.lo is not None and found.hi is not None
    return x, found.lo, found.hi


def test_each_change_over_its_base_of_the_same_commit_and_shape() -> None:
    found = {r["run_id"]: r for r in single_settings.rows(_summary(), SPREAD)}
    assert set(found) == {"bucket", "hook", "nccl", "orphan"}  # a failed run is no measurement; a base is no change
    bucket = found["bucket"]
    assert bucket["change"] == "bucket_cap_mb=400" and bucket["base"]["run_id"] == "base" and bucket["base_same_commit"]
    ratio, lo, hi = metrics.ratio_interval(*_widened(14.0, 13.8, 14.2), *_widened(14.1, 13.9, 14.3))
    assert (bucket["effect"]["ratio"], bucket["effect"]["lo"], bucket["effect"]["hi"]) == (ratio, lo, hi)
    assert bucket["effect"]["settled"] == "not settled" and bucket["memory_ratio"] == 1.0
    assert bucket["not_measured_at"] == [2]  # its base also ran at micro-batch 2; the change did not
    hook = found["hook"]
    assert hook["change"] == 'comm_hook="bf16_compress", bucket_cap_mb=25' and hook["effect"]["settled"] == "slower"
    assert hook["memory_ratio"] == pytest.approx(35 / 30)
    nccl = found["nccl"]  # an environment change; which devices ran is not a setting
    assert nccl["change"] == "NCCL_MIN_NCHANNELS=32" and nccl["base"]["run_id"] == "old-base"  # the latest started
    assert not nccl["base_same_commit"]  # none at its commit: the last to start at its shape, said so
    orphan = found["orphan"]
    assert orphan["base"] is None and orphan["effect"] is None


def test_a_single_run_effect_is_widened_by_its_engines_spread_as_a_board_row() -> None:
    """A change 1.5% faster than its base with tight own intervals: settled on the runs' own windows alone, "not
    settled" once each run's interval holds the between-run spread its board row would (`evidence.interval`)."""
    tight = {"base": 14.0, "bucket": 14.21}  # each run's own interval ±0.1%
    x = pl.col("run_id").replace_strict(tight, default=None, return_dtype=pl.Float64)
    summary = _summary().with_columns(
        steps_per_s=pl.coalesce(x, pl.col("steps_per_s")),
        steps_per_s_lo=pl.coalesce(x * 0.999, pl.col("steps_per_s_lo")),
        steps_per_s_hi=pl.coalesce(x * 1.001, pl.col("steps_per_s_hi")),
    )
    bucket = {r["run_id"]: r for r in single_settings.rows(summary, SPREAD)}["bucket"]
    assert metrics.ratio_interval(14.0, 14.0 * 0.999, 14.0 * 1.001, 14.21, 14.21 * 0.999, 14.21 * 1.001)[1] > 1
    assert bucket["effect"]["settled"] == "not settled"
    assert (bucket["steps_per_s_lo"], bucket["steps_per_s_hi"]) == _widened(14.21, 14.21 * 0.999, 14.21 * 1.001)[1:]


def test_without_its_engines_spread_a_single_run_is_unreplicated_and_claims_no_effect() -> None:
    found = {r["run_id"]: r for r in single_settings.rows(_summary(), {})}
    hook = found["hook"]  # 13.0 against 14.0 on its own windows: "slower" until nothing says where a rerun lands
    assert hook["unreplicated"] and hook["steps_per_s_lo"] is None and hook["effect"] is None
    assert hook["base"]["run_id"] == "base" and hook["base"]["unreplicated"]


def test_a_change_without_a_base_says_what_is_missing() -> None:
    """Issue 59: two 120-step changes of fsdp2-compile said "fsdp2-compile did not run at this shape" although it had
    run at their micro-batch, at other lengths. The reason names what is missing: the length, the micro-batch, or how
    the runs of the change's shape ended."""
    summary = _summary()
    orphan = {r["run_id"]: r for r in single_settings.rows(summary, SPREAD)}["orphan"]
    assert orphan["no_base"] == "fsdp2-compile never ran on w on 2 × GPU"
    full = summary.filter(pl.col("run_id") == "base").with_columns(variant=pl.lit("fsdp2-compile"), env_changes=None)
    runs = [full.with_columns(run_id=pl.lit(f"full-{i}"), steps_requested=pl.lit(2000, pl.Int64)) for i in range(4)]
    runs.append(full.with_columns(run_id=pl.lit("short"), steps_requested=pl.lit(200, pl.Int64)))
    with_lengths = pl.concat([summary, *runs], how="vertical_relaxed")
    orphan = {r["run_id"]: r for r in single_settings.rows(with_lengths, SPREAD)}["orphan"]
    assert orphan["base"] is None and orphan["effect"] is None  # a base of another length is no base
    assert orphan["no_base"] == (
        "no fsdp2-compile run of this length (120 steps) at micro-batch 4: its 5 runs there are 1 of 200 steps and "
        "4 of 2000 steps"
    )
    elsewhere = full.with_columns(run_id=pl.lit("mb2"), micro_batch=pl.lit(2, pl.Int64))
    orphan = {r["run_id"]: r for r in single_settings.rows(pl.concat([summary, elsewhere]), SPREAD)}["orphan"]
    assert orphan["no_base"] == "no fsdp2-compile run at micro-batch 4 on w on 2 × GPU: it ran at micro-batch 2"
    timed_out = full.with_columns(run_id=pl.lit("timed-out"), status=pl.lit("timeout"))
    orphan = {r["run_id"]: r for r in single_settings.rows(pl.concat([summary, timed_out]), SPREAD)}["orphan"]
    assert orphan["no_base"] == "its one run of this shape (120 steps, micro-batch 4) timed out"
    assert {r["run_id"]: r for r in single_settings.rows(summary, SPREAD)}["bucket"]["no_base"] is None
