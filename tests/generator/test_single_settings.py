"""What a single setting bought (generator/single_settings.py): each changed run over its base at the same shape and
commit, with `tuning.effect`'s ratio and interval; a change with no base says so. Synthetic summaries by hand."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pytest

from generator import single_settings
from runners import metrics


def _summary() -> pl.DataFrame:
    rows = [  # run id, variant, env changes, micro-batch, steps, commit, steps/s, lo, hi, memory, status
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
            "steps_per_s_lo", "steps_per_s_hi", "peak_mem_gib", "status")  # fmt: skip
    return pl.DataFrame(
        [
            dict(zip(keys, r, strict=True))
            | {
                "suite": "h100",
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


def test_each_change_over_its_base_of_the_same_commit_and_shape() -> None:
    found = {r["run_id"]: r for r in single_settings.rows(_summary())}
    assert set(found) == {"bucket", "hook", "nccl", "orphan"}  # a failed run is no measurement; a base is no change
    bucket = found["bucket"]
    assert bucket["change"] == "bucket_cap_mb=400" and bucket["base"]["run_id"] == "base" and bucket["base_same_commit"]
    ratio, lo, hi = metrics.ratio_interval(14.0, 13.8, 14.2, 14.1, 13.9, 14.3)
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
