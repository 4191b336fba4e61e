"""Synthetic result files for scale checks: valid records shaped like real bench runs (never committed).

    python -m tests.synthetic DIR --runs 5000 --steps 2000

Each run has `steps` step times and losses (2 rows a step) plus run-level values, spread over suites,
workloads, variants and hardware like a busy leaderboard's; the values are random, so nothing here is a result.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

from runners import layout, record, schema, spec, store

SUITE = spec.load_suite("h100")
VERSION = 2
"""Bumped when the files written change (the scale check keeps its data per version)."""
VARIANTS = [("ddp-fp32-stock", "stock"), ("ddp-amp-stock", "stock"), ("ddp-tuned", "tuned"), ("fsdp2-compile", "tuned")]


def make_run(i: int, steps: int, rng: np.random.Generator, start: datetime) -> pa.Table:
    variant, tier = VARIANTS[i % len(VARIANTS)]
    suite = SUITE.name  # a record's suite must have a suite file; 20 workloads spread the runs as 5 suites did
    workload = f"train-w{i % 20}"
    count = 1 + (i // 20) % 2
    started = start + timedelta(minutes=i)
    config = record.config(SUITE, SUITE.workloads[0], SUITE.variants[variant], steps=steps, world_size=count)
    config["suite"] = suite
    config["workload"]["name"] = workload
    config["compute_precision"] = "bf16"
    n = 2 * steps + 2
    step_idx = np.repeat(np.arange(steps, dtype=np.int32), 2)
    is_time = np.tile([True, False], steps)
    base = 0.07 * (1 + (i % 4) / 10)
    values = np.where(is_time, rng.normal(base, base * 0.02, 2 * steps).clip(1e-4), 11 - np.log1p(step_idx))
    cols = {
        "schema_version": pa.array(np.full(n, schema.SCHEMA_VERSION, np.int32)),
        "run_id": [f"syn-{i:05d}"] * n,
        "suite": [suite] * n,
        "workload": [workload] * n,
        "engine": ["torch"] * n,
        "engine_version": ["2.11.0"] * n,
        "variant": [variant] * n,
        "tier": [tier] * n,
        "status": ["ok"] * n,
        "error": pa.nulls(n, pa.string()),
        "origin": ["measured"] * n,
        "source": pa.nulls(n, pa.string()),
        "started_at": pa.array([started] * n, schema.UTC_TS),
        "ended_at": pa.array([started + timedelta(minutes=3)] * n, schema.UTC_TS),
        "harness_commit": ["0" * 40] * n,
        "harness_dirty": [False] * n,
        "accelerator": ["NVIDIA H200"] * n,
        "accelerator_count": pa.array(np.full(n, count, np.int32)),
        "config": [json.dumps(config)] * n,
        "hardware": ["{}"] * n,
        "software": ["{}"] * n,
        "environment": ["{}"] * n,
        "calibration": [json.dumps({"matmul_flops": 7.8e14})] * n,
        "trial": pa.array(np.zeros(n, np.int32)),
        "step": pa.array(
            np.concatenate([step_idx, [0, 0]]).astype(np.int32), mask=np.r_[np.zeros(2 * steps, bool), True, True]
        ),
        "phase": [*np.where(np.concatenate([step_idx, [0, 0]]) < 20, "warmup", "steady").tolist()[:-2], "run", "run"],
        "metric": [*np.where(is_time, "step_time_s", "loss").tolist(), "steps_completed", "peak_mem_gib"],
        "value": pa.array(np.concatenate([values, [steps, 20.0]])),
        "unit": [*np.where(is_time, "s", "nats").tolist(), "steps", "GiB"],
    }
    return pa.Table.from_pydict(cols, schema=schema.SCHEMA)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.synthetic", description=__doc__.splitlines()[0])
    p.add_argument("dir", type=Path)
    p.add_argument("--runs", type=int, default=5000)
    p.add_argument("--steps", type=int, default=2000)
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for i in range(args.runs):
        table = make_run(i, args.steps, rng, start)
        path = store.run_path(
            args.dir, table["suite"][0].as_py(), table["run_id"][0].as_py(), table["started_at"][0].as_py()
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        layout.write(table, path)  # a fixture: no fsync, no atomic link needed
    print(f"{args.runs} synthetic runs × {2 * args.steps + 2} rows under {args.dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
