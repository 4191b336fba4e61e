"""Claims enter as unranked records; a run whose loss departs from its baseline is flagged, not ranked."""

from __future__ import annotations

import contextlib
import io
import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from generator import derive, load
from generator.commands import validate
from generator.derive import checks
from runners import claims, layout, metrics, retract, schema, spec, store
from tests.conftest import ROOT, run_module

SEED_CLAIMS = spec.SUITES_DIR.parent / "claims" / "seed.toml"


def test_seed_claims_import_once_and_are_never_rewritten(tmp_path: Path) -> None:
    first = claims.import_claims(SEED_CLAIMS, tmp_path)
    assert [line.split(":")[0] for line in first] == ["seed-sparse-first-2xh100", "seed-pytorch-ddp-stock-2xh100"]
    again = claims.import_claims(SEED_CLAIMS, tmp_path)
    assert all("already imported" in line for line in again)
    loaded = load.load(tmp_path)
    assert loaded.rejected == []
    summary = derive.run_summary(loaded.runs, loaded.rows)
    got = dict(summary.select("variant", "steps_per_s").iter_rows())
    assert got == {"sparse-first-trainer": 21.7, "ddp-stock": 14.1}  # as the seed states them
    assert set(summary["origin"]) == {"claim"} and set(summary["tier"]) == {"claim"}
    boards = derive.leaderboards(summary)
    assert list(boards) == [("h100", "train-gpt-1.27b-mb4")]
    assert boards[("h100", "train-gpt-1.27b-mb4")].height == 0  # claims are never ranked


def test_claim_files_are_strict(tmp_path: Path) -> None:
    bad = tmp_path / "c.toml"
    bad.write_text(SEED_CLAIMS.read_text().replace("steps_per_s = 21.7", "steps_per_s = 21.7\nspeedup = 1.54"))
    with pytest.raises(spec.SpecError, match=r"c\.toml: \[\[claims\]\] #1: unknown key 'speedup'"):
        claims.load_claims(bad)


def _training_run(
    run_id: str,
    variant: str,
    losses: list[float],
    started: datetime,
    accelerator: str = "cpu",
    width: int = 16,
    hashes: tuple[str, str] | None = None,
    workload: str = "w",
    commit: str | None = None,
) -> schema.pa.Table:
    """A training record of a GPT-style model `width` wide (its FLOPs per token follow from the shapes, as the site
    computes them), of `workload`, measured by harness `commit`."""
    model = dict(name="m", family="gpt", vocab=64, dim=width, layers=4, heads=2, kv_heads=2, ffn_dim=4 * width,
                 context=64, norm="layernorm", activation="gelu", tied_embeddings=False)  # fmt: skip
    flops_per_token = metrics.train_flops_per_token_of(model, 64)
    work = {
        "name": workload,
        "warmup_steps": 2,
        "window_steps": 4,
        "steps_requested": len(losses),
        "micro_batch": 4,
        "variants": ["base", "fast"],
        "world_size": 2,
        "seq_len": 64,
    }
    config = {
        "model": model,
        "workload": work,
        "compute_precision": "bf16",
        "derived": {"tokens_per_step": 512, "flops_per_token": flops_per_token},
        **({"initial_weights_sha256": hashes[0], "data_sha256": hashes[1]} if hashes else {}),
    }
    run = {
        "run_id": run_id,
        "suite": "cpu-smoke",
        "workload": workload,
        "engine": "torch",
        "engine_version": "2",
        "variant": variant,
        "tier": "stock" if variant == "base" else "tuned",
        "status": "ok",
        "error": None,
        "origin": "measured",
        "source": None,
        "started_at": started,
        "ended_at": started + timedelta(seconds=1),
        "harness_commit": commit,
        "harness_dirty": None,
        "accelerator": accelerator,
        "accelerator_count": 2,
        "config": json.dumps(config),
        "hardware": json.dumps({"device": "cuda" if "NVIDIA" in accelerator else "cpu", "cpu_cores": 2}),
        "software": "{}",
        "environment": "{}",
        "calibration": None,
    }
    rows = []
    for step, loss in enumerate(losses):
        phase = "warmup" if step < 2 else "steady"
        rows.append(dict(trial=0, step=step, phase=phase, metric="step_time_s", value=0.1, unit="s"))
        rows.append(dict(trial=0, step=step, phase=phase, metric="loss", value=loss, unit="nats"))
    rows.append(dict(trial=0, step=None, phase="run", metric="steps_completed", value=float(len(losses)), unit="steps"))
    return schema.make_table(run, rows)


def test_a_departing_loss_curve_is_flagged_and_not_ranked(tmp_path: Path) -> None:
    t0 = datetime(2026, 11, 29, tzinfo=UTC)
    base = list(np.linspace(6.2, 4.0, 26))
    store.write_run(tmp_path, _training_run("base-1", "base", base, t0))
    within = [base[0]] + [x * 1.01 for x in base[1:]]  # same first loss, then 1% off: within tolerance
    store.write_run(tmp_path, _training_run("fast-ok", "fast", within, t0))
    drifting = base[:10] + [x * 1.10 for x in base[10:]]  # same start, then 10% above: another model
    store.write_run(tmp_path, _training_run("fast-drift", "fast", drifting, t0))
    loaded = load.load(tmp_path)
    summary = derive.run_summary(loaded.runs, loaded.rows)
    parity = {r["run_id"]: r for r in summary.to_dicts()}
    assert parity["base-1"]["loss_parity_ok"] is True
    assert parity["fast-ok"]["loss_parity_ok"] is True
    assert parity["fast-drift"]["loss_parity_ok"] is False
    assert parity["fast-drift"]["loss_max_rel_gap"] == pytest.approx(0.10)
    board = derive.leaderboards(summary)[("cpu-smoke", "w")]
    assert sorted(board["run_id"]) == ["base-1", "fast-ok"]
    assert board.filter(pl.col("run_id") == "base-1")["speedup"].to_list() == [1.0]


def test_a_run_faster_than_its_hardware_can_be_is_rejected_with_its_retraction(tmp_path: Path) -> None:
    """Steps that imply more than 100% MFU of the datasheet peak cannot be: the site build and `nox -s validate`
    reject the run (and a retraction of it), naming the file and the field, and keep the plausible run."""
    t0 = datetime(2026, 11, 29, tzinfo=UTC)
    losses = list(np.linspace(6.2, 4.0, 26))
    data = tmp_path / "data"
    store.write_run(data, _training_run("plausible", "base", losses, t0, "NVIDIA H200"))
    # 512 tokens per 0.1 s step of a model 65,536 wide (1.24e12 FLOPs per token) on two H200s (989 TFLOP/s bf16
    # each): 320% MFU
    store.write_run(data, _training_run("too-fast", "fast", losses, t0, "NVIDIA H200", width=65536))
    retraction = retract.retract(data, "too-fast", "testing a retraction of a rejected run")
    loaded, summary = checks.checked(load.load(data))
    assert summary["run_id"].to_list() == ["plausible"] and loaded.runs["run_id"].to_list() == ["plausible"]
    assert set(loaded.rows["run_id"].unique()) == {"plausible"}
    problems = {r.path: r.problems[0] for r in loaded.rejected}
    written = retraction.relative_to(tmp_path).as_posix()  # in the month it was made
    assert set(problems) == {"data/cpu-smoke/2026-11/too-fast.parquet", written}
    too_fast = problems["data/cpu-smoke/2026-11/too-fast.parquet"]
    assert "field 'value': these steps imply 320% MFU, above the NVIDIA H200" in too_fast
    assert "retracts 'too-fast', which is rejected" in problems[written]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert validate.main([str(data / "cpu-smoke" / "2026-11" / "too-fast.parquet")]) == 1
    assert f"{data / 'cpu-smoke' / '2026-11' / 'too-fast.parquet'}: rows of metric 'step_time_s'" in out.getvalue()


def test_other_initial_weights_or_data_fail_parity_whatever_the_loss_says(tmp_path: Path) -> None:
    """Proof of the same work: records carry the sha256 of their initial weights and token stream; a run whose
    hashes differ from its baseline's fails parity with the reason, even with an identical loss curve."""
    t0 = datetime(2026, 11, 29, tzinfo=UTC)
    losses = list(np.linspace(6.2, 4.0, 26))
    same, weights, data = "a" * 64, "b" * 64, "c" * 64
    store.write_run(tmp_path, _training_run("base-1", "base", losses, t0, hashes=(same, same)))
    store.write_run(tmp_path, _training_run("same-work", "fast", losses, t0, hashes=(same, same)))
    store.write_run(tmp_path, _training_run("other-weights", "fast", losses, t0, hashes=(weights, same)))
    store.write_run(tmp_path, _training_run("other-data", "fast", losses, t0, hashes=(same, data)))
    loaded = load.load(tmp_path)
    rows = {r["run_id"]: r for r in derive.run_summary(loaded.runs, loaded.rows).to_dicts()}
    assert rows["same-work"]["loss_parity_ok"] is True and rows["same-work"]["parity_problem"] is None
    assert rows["other-weights"]["loss_parity_ok"] is False
    assert rows["other-weights"]["parity_problem"].startswith("other initial weights than the baseline's")
    assert rows["other-data"]["loss_parity_ok"] is False and "other data" in rows["other-data"]["parity_problem"]
    unranked = derive.candidates(derive.run_summary(loaded.runs, loaded.rows))
    reasons = dict(unranked.select("run_id", "unranked").iter_rows())
    assert reasons["same-work"] is None and reasons["other-data"].startswith("other data")


DEFECTS = '''\
"""Fault injection for tests/generator/test_claims_and_parity.py: a runner that trains something else than it says."""
import os

_defect = os.environ.get("FAIRFIGHT_TEST_DEFECT")
if _defect:
    from runners.engines.torch import model as torch_model

    _load = torch_model.GPT.load_numpy

    def load_numpy(self, weights):
        _load(self, weights)
        if _defect == "frozen":  # the first block never trains
            self.blocks[0].requires_grad_(False)
        elif _defect == "missing":  # the last block is dropped after loading
            self.blocks = self.blocks[:-1]

    torch_model.GPT.load_numpy = load_numpy
'''


def _fp32_runs_under_hook(
    tmp_path: Path, hook: str, runs: dict[str, tuple[tuple[str, ...], dict[str, str]]]
) -> tuple[Path, dict[str, str]]:
    """Real runs of the tiny model on CPU under tmp_path/data: the fp32 stock baseline, then for each label of `runs`
    one fp32 run (its extra arguments and environment, noted with the label) with `hook` as the sitecustomize module
    on its path. Returns the data folder and each label's run id."""
    data = tmp_path / "data"
    folder = tmp_path / "hook"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(hook)
    bench = ("runners", "bench", "--suite", "cpu-smoke", "--workload", "train-gpt-tiny-mb4", "--data-dir", str(data))
    fp32 = ("--variant", "ddp-amp-stock", "--set", "precision=fp32")
    path = os.pathsep.join([str(folder), str(ROOT)])
    run_module(*bench, "--variant", "ddp-fp32-stock")
    notes = {}
    for label, (extra, env) in runs.items():
        before = set(data.rglob("*.parquet"))
        run_module(*bench, *fp32, *extra, "--note", label, PYTHONPATH=path, **env)
        (made,) = set(data.rglob("*.parquet")) - before
        notes[label] = made.stem
    return data, notes


@pytest.mark.slow
@pytest.mark.bench
def test_a_frozen_or_missing_layer_or_another_learning_rate_fails_parity(tmp_path: Path, torch_engine: str) -> None:
    """Real runs of the tiny model on CPU in full fp32 against the fp32 stock baseline: the same settings pass, and a
    run whose first block is frozen, whose last block is missing (both injected into the real trainer through a
    sitecustomize module, as a defective runner would do it), or whose learning rate is halved fails, each with its
    reason. The weights file and the data are the baseline's in all of them: the loss curve (within 0.1% for a pair of
    fp32 runs), the optimizer settings, or, for the missing block, the hash of the weights the process loaded tell."""
    data, notes = _fp32_runs_under_hook(
        tmp_path,
        DEFECTS,
        {
            "same": ((), {"FAIRFIGHT_TEST_DEFECT": ""}),
            "lr": (("--set", "lr=0.0005"), {"FAIRFIGHT_TEST_DEFECT": ""}),
            "frozen": ((), {"FAIRFIGHT_TEST_DEFECT": "frozen"}),
            "missing": ((), {"FAIRFIGHT_TEST_DEFECT": "missing"}),
        },
    )
    loaded = load.load(data)
    rows = {r["run_id"]: r for r in derive.run_summary(loaded.runs, loaded.rows).to_dicts()}
    same, lr, frozen, missing = (rows[notes[k]] for k in ("same", "lr", "frozen", "missing"))
    rows_by_variant = {r["variant"]: r["run_id"] for r in rows.values() if r["note"] is None}
    assert same["loss_parity_ok"] is True and same["loss_parity_tol"] == metrics.LOSS_PARITY_REL_TOL_FP32
    for run in (frozen, missing):
        assert run["loss_parity_ok"] is False, run
        assert run["loss_max_rel_gap"] > metrics.LOSS_PARITY_REL_TOL_FP32
        assert run["loss_max_rel_gap"] < metrics.LOSS_PARITY_REL_TOL  # the bf16 tolerance would have let it pass
        assert run["weights_sha256"] == same["weights_sha256"] and run["data_sha256"] == same["data_sha256"]
    # a frozen block holds the same weights: only the loss tells; a missing one is another model, and the hash of
    # what the process loaded says so (the weights file was the same)
    assert frozen["parity_problem"] is None and frozen["state_sha256"] == same["state_sha256"]
    assert missing["parity_problem"].startswith("other initial weights than the baseline's")
    assert lr["loss_parity_ok"] is False and lr["parity_problem"].startswith("other optimizer settings")
    # over the whole run too, against the full-length fp32 stock run: the mean window gap alone would catch it
    assert lr["whole_run_baseline"] == rows_by_variant["ddp-fp32-stock"]
    assert lr["loss_mean_rel_gap"] > metrics.LOSS_PARITY_MEAN_REL_TOL
    reasons = dict(
        derive.candidates(derive.run_summary(loaded.runs, loaded.rows)).select("run_id", "unranked").iter_rows()
    )
    assert reasons[same["run_id"]] is None
    assert reasons[frozen["run_id"]].startswith("loss departs from the baseline's")
    assert reasons[missing["run_id"]].startswith("other initial weights")


OTHER_WORK = '''\
"""Fault injection for tests/generator/test_claims_and_parity.py: a runner that trains on other work than its
workload's, in the training process itself: another seed (recorded, as the runner records its workload), other
tokens or other initial weights (recorded nowhere but in what the process fed its model)."""
import os

_defect = os.environ.get("FAIRFIGHT_TEST_WORK")
if _defect == "seed":
    import dataclasses

    from runners import spec

    _load = spec.load_suite

    def load_suite(*args, **kwargs):
        suite = _load(*args, **kwargs)
        workloads = tuple(dataclasses.replace(w, seed=w.seed + 1) for w in suite.workloads)
        return dataclasses.replace(suite, workloads=workloads)

    spec.load_suite = load_suite
elif _defect == "data":
    from runners import artifacts

    _batches = artifacts.token_batches

    def token_batches(*, seed, **kwargs):
        return _batches(seed=seed + 1, **kwargs)

    artifacts.token_batches = token_batches
elif _defect == "weights":
    from runners.engines.torch import model as torch_model

    _load_numpy = torch_model.GPT.load_numpy

    def load_numpy(self, weights):
        _load_numpy(self, {name: value * 1.05 for name, value in weights.items()})

    torch_model.GPT.load_numpy = load_numpy
'''


def _without_hashes(source: Path, target: Path) -> None:
    """Every record under `source` written again under `target` without its hashes (as a record made before they
    were recorded would be), through the store's own checks."""

    from runners.store import write_run

    for path in sorted(source.rglob("*.parquet")):
        table = layout.read(path)
        config = json.loads(table["config"][0].as_py())
        for key in ("initial_weights_sha256", "initial_state_sha256", "data_sha256", "hashes_from"):
            config.pop(key, None)
        column = table.schema.get_field_index("config")
        write_run(target, table.set_column(column, "config", schema.pa.array([json.dumps(config)] * table.num_rows)))


@pytest.mark.slow
@pytest.mark.bench
def test_a_run_of_other_work_never_passes_parity_nor_joins_a_row(tmp_path: Path, torch_engine: str) -> None:
    """Real runs of the tiny model on CPU in full fp32 (issue 35). The runner hashes what its process fed the model:
    a clean run's hashes are those of the seeded weights and token stream computed here, and a run whose process
    trained on another seed, other tokens or other initial weights (injected into the real trainer through a
    sitecustomize module) records other hashes and fails parity for that reason, though it records the workload's
    seed (but the seeded one). With every hash stripped, the run of another seed still fails (its record says its
    seed) and is another configuration; the other two fail on their loss curves, no longer on proof."""
    from runners import artifacts

    data, notes = _fp32_runs_under_hook(
        tmp_path,
        OTHER_WORK,
        {
            label: ((), {"FAIRFIGHT_TEST_WORK": label if label != "same" else ""})
            for label in ("same", "seed", "data", "weights")
        },
    )
    loaded = load.load(data)
    summary = derive.run_summary(loaded.runs, loaded.rows)
    rows = {r["run_id"]: r for r in summary.to_dicts()}
    same, seed, other_data, weights = (rows[notes[k]] for k in ("same", "seed", "data", "weights"))
    suite = spec.load_suite("cpu-smoke")
    work = suite.workload("train-gpt-tiny-mb4")
    model = suite.models[work.model]
    expected_state = artifacts.state_sha256(artifacts.init_weights(model, work.seed))
    tokens = artifacts.token_batches(vocab=model.vocab, seed=work.seed, steps=range(work.steps), global_batch=8,
                                     seq_len=work.seq_len)  # fmt: skip
    assert same["state_sha256"] == expected_state and same["data_sha256"] == artifacts.tokens_sha256(tokens)
    assert same["hashes_from"] == "fed" and same["loss_parity_ok"] is True
    assert same["same_work"].startswith("proven: the hashes of the weights and tokens it fed its model")
    assert seed["parity_problem"].startswith("another seed than its workload's")
    assert other_data["parity_problem"].startswith("other data than the baseline's")
    assert weights["parity_problem"].startswith("other initial weights than the baseline's")
    # the weights file was the baseline's: only the hash of what was loaded tells
    assert weights["weights_sha256"] == same["weights_sha256"] and weights["state_sha256"] != same["state_sha256"]
    board = derive.leaderboards(summary)[("cpu-smoke", "train-gpt-tiny-mb4")]
    ranked = {r for ids in board["run_ids"] for r in ids}
    assert notes["same"] in ranked and not {notes[k] for k in ("seed", "data", "weights")} & ranked

    stripped = tmp_path / "stripped"
    _without_hashes(data, stripped)
    loaded = load.load(stripped)
    summary = derive.run_summary(loaded.runs, loaded.rows)
    rows = {r["run_id"]: r for r in summary.to_dicts()}
    same, seed, other_data, weights = (rows[notes[k]] for k in ("same", "seed", "data", "weights"))
    assert same["loss_parity_ok"] is True and same["same_work"].startswith("by record")
    assert seed["parity_problem"].startswith("another seed than its workload's")
    assert seed["settings_hash"] != same["settings_hash"]
    for run in (other_data, weights):
        assert run["loss_parity_ok"] is False and run["loss_max_rel_gap"] > metrics.LOSS_PARITY_REL_TOL_FP32
    board = derive.leaderboards(summary)[("cpu-smoke", "train-gpt-tiny-mb4")]
    ranked = {r for ids in board["run_ids"] for r in ids}
    assert notes["same"] in ranked and not {notes[k] for k in ("seed", "data", "weights")} & ranked
