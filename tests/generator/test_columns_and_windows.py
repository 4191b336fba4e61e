"""Unit tests on synthetic frames, in seconds: the config flattened once (generator/load/columns.py) and the steady
windows a run's steps/s comes from (derive.window_intervals), each held to what the suite file and runners/metrics.py
say."""

from __future__ import annotations

import json

import polars as pl
import pytest

from generator import derive
from generator.load import columns
from runners import metrics, spec

SMOKE = spec.load_suite("cpu-smoke")
WORK = next(w for w in SMOKE.workloads if w.name == "train-gpt-tiny-mb4")


def _run(run_id: str, config: dict, variant: str = "ddp-tuned", **over: object) -> dict:
    return {
        "run_id": run_id,
        "suite": "cpu-smoke",
        "workload": WORK.name,
        "origin": "measured",
        "variant": variant,
        "engine": "torch",
        "engine_version": "2.13.0",
        "accelerator": "AMD EPYC",
        "accelerator_count": 2,
        "status": "ok",
        "config": json.dumps(config),
        "hardware": json.dumps({"device": "cpu", "cpu_cores": 2}),
        "calibration": json.dumps({"matmul_flops": 1e11, "matmul_precision": "fp32"}),
        **over,
    }


def _config(**work: object) -> dict:
    model = SMOKE.models[WORK.model]
    keys = ("name", "family", "vocab", "dim", "layers", "heads", "kv_heads", "ffn_dim", "context", "norm",
            "activation", "tied_embeddings")  # fmt: skip
    shapes = {k: getattr(model, k) for k in keys}
    workload = {
        "micro_batch": WORK.micro_batch,
        "seq_len": WORK.seq_len,
        "steps_requested": WORK.steps,
        "world_size": WORK.world_size,
        "warmup_steps": WORK.warmup_steps,
        "window_steps": WORK.window_steps,
    }
    return {"model": shapes, "workload": workload | work, "variant": {"settings": {"lr": 0.001, "bucket_cap_mb": 25}}}


def test_the_config_is_flattened_against_the_suite_file() -> None:
    runs = pl.DataFrame(
        [
            _run("as-pinned", _config()),
            _run("short", _config(steps_requested=20)),
            _run("other-batch", _config(micro_batch=8)),
            _run("one-device", _config(world_size=1), accelerator_count=1),
            _run("no-model", {"workload": {"micro_batch": "four"}}),
        ]
    )
    flat = {r["run_id"]: r for r in columns.flatten(runs).to_dicts()}
    pinned = flat["as-pinned"]
    assert pinned["full_length"] and pinned["suite_scale"] and not pinned["sweep_point"]
    assert pinned["baseline_variant"] == WORK.variants[0] and pinned["listed_variants"] == list(WORK.variants)
    assert pinned["variant_order"] == list(WORK.variants).index("ddp-tuned")
    assert pinned["tokens_per_step"] == WORK.micro_batch * WORK.seq_len * WORK.world_size
    assert pinned["flops_per_token"] == SMOKE.models[WORK.model].flops_per_token(WORK.seq_len)
    assert pinned["lr"] == "0.001" and pinned["micro_batch"] == WORK.micro_batch and pinned["device"] == "cpu"
    assert not flat["short"]["full_length"] and flat["other-batch"]["sweep_point"]
    assert not flat["one-device"]["suite_scale"]
    # a config that does not describe a model gets nulls, not an exception
    assert flat["no-model"]["flops_per_token"] is None and flat["no-model"]["micro_batch"] is None


def test_one_configuration_one_settings_hash() -> None:
    same = [_run(f"r{i}", _config()) for i in range(2)]
    other = _run("r2", _config() | {"variant": {"settings": {"lr": 0.001, "bucket_cap_mb": 100}}})
    flat = columns.flatten(pl.DataFrame([*same, other]))
    hashes = dict(flat.select("run_id", "settings_hash").iter_rows())
    assert hashes["r0"] == hashes["r1"] != hashes["r2"] and len(hashes["r0"]) == 12
    # the hash covers the engine's version: another version is another configuration
    newer = columns.flatten(pl.DataFrame([_run("r3", _config(), engine_version="2.14.0")]))
    assert newer["settings_hash"][0] != hashes["r0"]


def test_steps_per_s_is_the_median_of_complete_steady_windows() -> None:
    step_times = [0.5] * WORK.warmup_steps + [0.1, 0.1, 0.2, 0.1, 0.1] * 4 + [0.1, 0.1]  # 2 steps: no full window
    rows = pl.DataFrame(
        {
            "run_id": "r0",
            "trial": 0,
            "step": list(range(len(step_times))),
            "phase": ["warmup"] * WORK.warmup_steps + ["steady"] * (len(step_times) - WORK.warmup_steps),
            "metric": "step_time_s",
            "value": step_times,
        }
    )
    runs = pl.DataFrame({"run_id": ["r0"], "warmup_steps": [WORK.warmup_steps], "window_steps": [WORK.window_steps]})
    (row,) = derive.window_intervals(runs, rows).iter_rows(named=True)
    rates = metrics.window_rates(step_times[WORK.warmup_steps :], WORK.window_steps)
    assert len(rates) == 4 == row["windows"]  # the incomplete last window is left out
    assert row["steps_per_s"] == pytest.approx(metrics.median_ci(rates).median)
    assert row["steps_per_s_lo"] <= row["steps_per_s"] <= row["steps_per_s_hi"]
