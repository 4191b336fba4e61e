"""Same work, proven (issue 35): a run with another seed, other data or other initial weights never joins a
configuration's row and never passes loss parity, whether its record carries hashes or not, even when its loss curve
is the baseline's to the last digit; a run of the same work passes, and its page-level `same_work` says how that was
established. Records made here with the real record writer (runners/record.py) for cpu-smoke's training workload."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from generator import derive, load
from runners import record, schema, spec, store

SUITE = spec.load_suite("cpu-smoke")
WORK = SUITE.workload("train-gpt-tiny-mb4")
T0 = datetime(2026, 11, 20, tzinfo=UTC)
LOSSES = list(np.linspace(6.2, 4.0, WORK.steps))
SAME = {"initial_weights_sha256": "a" * 64, "initial_state_sha256": "b" * 64, "data_sha256": "c" * 64}


def _record(run_id: str, variant: str, n: int, *, seed: int = 0, recipes: dict | None = None,
            hashes: dict | None = None) -> schema.pa.Table:  # fmt: skip
    """A finished full-length run of `variant` on cpu-smoke's workload, its loss exactly LOSSES; `seed`, `recipes`
    and `hashes` are what its record states of its work (hashes None: an older record without them)."""
    work = WORK if seed == WORK.seed else spec.dataclasses.replace(WORK, seed=seed)
    config = record.config(SUITE, work, SUITE.variants[variant], world_size=2)
    config["compute_precision"] = "fp32"
    if recipes is not None:
        config["recipes"] = recipes
    if hashes is not None:
        config |= hashes | {"hashes_from": "fed"}
    started = T0 + timedelta(minutes=n)
    run = {
        "run_id": run_id, "suite": SUITE.name, "workload": WORK.name, "engine": "torch", "engine_version": "2.13.0",
        "variant": variant, "tier": SUITE.variants[variant].tier, "status": "ok", "error": None,
        "origin": "measured", "source": None, "started_at": started, "ended_at": started + timedelta(seconds=30),
        "harness_commit": "0" * 40, "harness_dirty": False, "accelerator": "cpu", "accelerator_count": 2,
        "config": json.dumps(config), "hardware": json.dumps({"device": "cpu", "cpu_cores": 2}), "software": "{}",
        "environment": "{}", "calibration": None,
    }  # fmt: skip
    rows = []
    for step, loss in enumerate(LOSSES):
        phase = "warmup" if step < WORK.warmup_steps else "steady"
        rows.append(dict(trial=0, step=step, phase=phase, metric="step_time_s", value=0.1 + 0.001 * n, unit="s"))
        rows.append(dict(trial=0, step=step, phase=phase, metric="loss", value=loss, unit="nats"))
    rows.append(dict(trial=0, step=None, phase="run", metric="steps_completed", value=float(WORK.steps), unit="steps"))
    rows.append(dict(trial=0, step=None, phase="run", metric="warmup_s", value=1.0, unit="s"))
    return schema.make_table(run, rows)


OTHER_DATA = {"data": "markov-successors8-v1", "initial_weights": schema.LEGACY_RECIPES["initial_weights"]}
OTHER_INIT = {"data": schema.LEGACY_RECIPES["data"], "initial_weights": "gpt2-normal-0.03-v1"}


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> pl.DataFrame:
    data = tmp_path_factory.mktemp("same-work") / "data"
    runs = {
        # the baseline (the workload's first variant) and a run of the same work, with hashes and without
        "base": ("ddp-fp32-stock", {}, SAME),
        "same": ("ddp-amp-stock", {}, SAME),
        "same-no-hashes": ("ddp-amp-stock", {}, None),
        # another seed, honestly recorded
        "seed": ("ddp-amp-stock", {"seed": 1}, None),
        "seed-hashed": ("ddp-amp-stock", {"seed": 1}, SAME | {"data_sha256": "d" * 64}),
        # other data: a recipe the record names, or a runner that fed other tokens under the workload's seed
        "data": ("ddp-amp-stock", {"recipes": OTHER_DATA}, None),
        "data-hashed": ("ddp-amp-stock", {}, SAME | {"data_sha256": "d" * 64}),
        # other initial weights: likewise
        "weights": ("ddp-amp-stock", {"recipes": OTHER_INIT}, None),
        "weights-hashed": ("ddp-amp-stock", {}, SAME | {"initial_state_sha256": "e" * 64}),
    }
    for n, (run_id, (variant, work, hashes)) in enumerate(runs.items()):
        store.write_run(data, _record(run_id, variant, n, hashes=hashes, **work))
    loaded = load.load(data)
    assert loaded.rejected == []
    return derive.run_summary(loaded.runs, loaded.rows)


OTHER = ("seed", "seed-hashed", "data", "data-hashed", "weights", "weights-hashed")


def test_other_work_never_passes_parity_with_hashes_or_without(summary: pl.DataFrame) -> None:
    rows = {r["run_id"]: r for r in summary.to_dicts()}
    assert {rows[r]["parity_baseline"] for r in rows} == {"base"}
    for run_id in ("same", "same-no-hashes"):
        assert rows[run_id]["loss_parity_ok"] is True and rows[run_id]["parity_problem"] is None, run_id
    assert rows["same"]["same_work"].startswith("proven: the hashes of the weights and tokens it fed its model")
    assert rows["same-no-hashes"]["same_work"].startswith("by record: the same seed and recipes as the baseline")
    for run_id in OTHER:
        assert rows[run_id]["loss_parity_ok"] is False, run_id
        assert rows[run_id]["loss_max_rel_gap"] == 0.0  # the loss alone could not have told
        assert rows[run_id]["same_work"] == "not the same work", run_id
    assert rows["seed"]["parity_problem"].startswith("another seed than its workload's")
    assert rows["data"]["parity_problem"].startswith("other work than the baseline's")
    assert rows["data-hashed"]["parity_problem"].startswith("other data than the baseline's (sha256 dddddddddddd")
    assert rows["weights-hashed"]["parity_problem"].startswith("other initial weights than the baseline's")


def test_other_work_never_joins_a_configurations_row(summary: pl.DataFrame) -> None:
    hashes = dict(summary.select("run_id", "settings_hash").iter_rows())
    # what the record states of its work is in the configuration: another seed or recipe is another configuration
    for run_id in ("seed", "seed-hashed", "data", "weights"):
        assert hashes[run_id] != hashes["same"], run_id
    assert hashes["same"] == hashes["same-no-hashes"] == hashes["data-hashed"] == hashes["weights-hashed"]
    board = derive.leaderboards(summary)[("cpu-smoke", WORK.name)]
    ranked = {r for ids in board["run_ids"] for r in ids}
    assert ranked == {"base", "same", "same-no-hashes"}
    (row,) = board.filter(pl.col("variant") == "ddp-amp-stock").iter_rows(named=True)
    assert sorted(row["run_ids"]) == ["same", "same-no-hashes"]
    # and no run of other work is among the runs that make the pooled between-run spread
    from generator.derive import configurations

    assert set(configurations.measured_runs(summary)["run_id"]) == {"base", "same", "same-no-hashes"}


def test_a_baseline_has_the_workloads_seed(tmp_path: Path) -> None:
    """A baseline-variant run of another seed is never the baseline: the run of the workload's seed is, so a run of
    the workload's own work passes and the odd baseline-variant run fails, though it is newer."""
    data = tmp_path / "data"
    store.write_run(data, _record("base", "ddp-fp32-stock", 0))
    store.write_run(data, _record("odd-base", "ddp-fp32-stock", 5, seed=7))
    store.write_run(data, _record("run", "ddp-amp-stock", 6))
    loaded = load.load(data)
    rows = {r["run_id"]: r for r in derive.run_summary(loaded.runs, loaded.rows).to_dicts()}
    assert rows["run"]["parity_baseline"] == "base" and rows["run"]["loss_parity_ok"] is True
    assert rows["odd-base"]["loss_parity_ok"] is False
