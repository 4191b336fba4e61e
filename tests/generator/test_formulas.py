"""The number published is the number the formula computes: on committed result files (a training run, a generation
test and a served point, all measured on H200s), the leaderboard's rates, MFU and MBU columns equal what the
functions of runners/metrics.py return for that row's own numbers."""

from __future__ import annotations

import polars as pl
import pytest

from generator import derive, load
from generator.derive import copy_bound, inference, serving
from runners import metrics
from tests.conftest import ROOT

FILES = (
    "20261129T175040Z-train-gpt-1.27b-mb4-ddp-tuned-ae4fb9",
    "20261129T200656Z-train-gpt-1.27b-mb4-fsdp2-compile-19b4d3",
    "20261130T203528Z-llama-8b-tg128-d0-mlx-f16-2ae8ab",
    "20261130T201439Z-llama-8b-serve-c1-i512-o128-vllm-tp1-6272d4",
)


@pytest.fixture(scope="module")
def loaded() -> load.Loaded:
    paths = []
    for stem in FILES:
        found = sorted((ROOT / "data" / "h100").glob(f"{stem}*.parquet"))
        assert found, stem
        paths.append(found[0])
    return load.load(ROOT / "data", files=paths)


def test_training_rates_and_mfu_are_the_formulas(loaded: load.Loaded) -> None:
    summary = derive.run_summary(loaded.runs, loaded.rows).filter(pl.col("steps_per_s").is_not_null())
    assert summary.height == 2
    for row in summary.iter_rows(named=True):
        times = (
            loaded.rows.filter(
                (pl.col("run_id") == row["run_id"])
                & (pl.col("metric") == "step_time_s")
                & (pl.col("phase") == "steady")
            )
            .sort("trial", "step")["value"]
            .to_list()
        )
        rates = metrics.window_rates(times, row["window_steps"])
        assert row["steps_per_s"] == pytest.approx(metrics.median_ci(rates).median, rel=1e-12)
        assert row["tokens_per_s"] == metrics.tokens_per_s(row["steps_per_s"], row["tokens_per_step"])
        assert row["flops_per_token"] == metrics.train_flops_per_token_of(*_model_and_seq(row))
        n = row["accelerator_count"]
        peak = metrics.datasheet_peak_flops(row["accelerator"], "bf16")
        assert row["mfu_datasheet"] == metrics.mfu(row["flops_per_token"], row["tokens_per_s"], peak, n)
        assert row["mfu_calibrated"] == metrics.mfu(
            row["flops_per_token"], row["tokens_per_s"], row["model_matmul_flops"], n
        )
        assert 0 < row["mfu_calibrated"] < 1


def _model_and_seq(row: dict) -> tuple[dict, int]:
    import json

    config = json.loads(row["config"])
    return config["model"], config["workload"]["seq_len"]


def test_decode_mbu_is_the_formula(loaded: load.Loaded) -> None:
    summary = derive.run_summary(loaded.runs, loaded.rows)
    bandwidths = copy_bound.copy_bandwidths(summary)
    (tg,) = inference.per_run_figures(summary, loaded.rows, bandwidths).iter_rows(named=True)
    bandwidth = metrics.datasheet_memory(tg["accelerator"])[1]
    assert tg["mbu_datasheet"] == metrics.mbu(tg["decode_bytes_per_token"], tg["rate_med"], bandwidth)
    (served,) = serving.per_run_figures(summary, loaded.rows, bandwidths).iter_rows(named=True)
    assert served["decode_rate"] == metrics.decode_tokens_per_s(served["median_tpot_ms"])
    assert served["mbu_datasheet"] == metrics.mbu(
        served["decode_bytes_per_token"], served["decode_rate"], bandwidth * served["accelerator_count"]
    )
    assert 0 < tg["mbu_datasheet"] < 1 and 0 < served["mbu_datasheet"] < 1
