"""A user's mistake is caught before anything runs and writes nothing (runners/preflight.py): unknown names with a
did-you-mean, `--set` keys and values through the engine's own check, packages missing from the Python that would
run the engine, an outside engine's command not found; `--dry-run` prints the plan. A run that starts and then fails
is a failure record, and the bench prints why."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import pytest

from runners import engines, preflight, spec
from tests.conftest import run_module

SMOKE = spec.load_suite("cpu-smoke")
WORKLOAD = "train-gpt-tiny-mb4"


def _bench(tmp_path: Path, *args: str, **env: str):
    data = tmp_path / "data"
    proc = run_module("runners", "bench", "--suite", "cpu-smoke", *args, "--data-dir", str(data), check=False, **env)
    return proc, data


def test_unknown_names_say_what_was_meant_and_write_nothing(tmp_path: Path) -> None:
    proc, data = _bench(tmp_path, "--workload", "train-gpt-tiny-mb44", "--variant", "ddp-tunned")
    assert proc.returncode == 2 and not data.exists()
    assert "did you mean 'train-gpt-tiny-mb4'" in proc.stderr and "did you mean 'ddp-tuned'" in proc.stderr
    assert "nothing was run, nothing written" in proc.stderr and "Traceback" not in proc.stderr


def test_a_mistyped_set_key_or_value_stops_the_session_before_it_starts(tmp_path: Path) -> None:
    """`bucket_cap=25` once made two failure records and a 60-line torchrun traceback."""
    proc, data = _bench(tmp_path, "--workload", WORKLOAD, "--variant", "ddp-tuned", "--set", "bucket_cap=25")
    assert proc.returncode == 2 and not data.exists()
    assert "has no setting 'bucket_cap'; did you mean 'bucket_cap_mb'" in proc.stderr
    proc, data = _bench(tmp_path, "--variant", "ddp-tuned", "--set", "bucket_cap_mb=abc")
    assert proc.returncode == 2 and not data.exists()
    assert "key 'bucket_cap_mb': expected float, got 'abc'" in proc.stderr  # the engine's own check, run first
    proc, data = _bench(tmp_path, "--workload", "llama-tiny", "--set", "n_batch=64")
    assert proc.returncode == 2 and "no training workload is selected" in proc.stderr and not data.exists()


def test_an_engine_missing_from_its_python_is_named_before_anything_runs(tmp_path: Path) -> None:
    """vLLM is not in the tests' environment (it has its own on CPU machines): pointing FAIRFIGHT_VLLM_PYTHON at
    this one is the mistake of a user who never made that environment."""
    proc, data = _bench(tmp_path, "--variant", "vllm-cpu", FAIRFIGHT_VLLM_PYTHON=sys.executable)
    assert proc.returncode == 2 and not data.exists()
    assert "vllm, loguru not importable in" in proc.stderr and "FAIRFIGHT_VLLM_PYTHON" in proc.stderr
    proc, _ = _bench(tmp_path, "--variant", "vllm-cpu", FAIRFIGHT_VLLM_PYTHON="/no/such/python")
    assert proc.returncode == 2 and "does not run" in proc.stderr


def test_each_engines_modules_are_looked_for_not_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    """A torch-less install (simulated by a module name no environment has: the engine itself is not touched)."""
    torch = engines.ENGINES["torch"]
    monkeypatch.setitem(engines.ENGINES, "torch", dataclasses.replace(torch, modules=("no_such_module_ff",)))
    args = argparse.Namespace(workload=[WORKLOAD], variant=["ddp-amp-stock"], set=None, steps=None, world_size=None)
    todo = [(SMOKE.workloads[0], SMOKE.variants["ddp-amp-stock"])]
    with pytest.raises(spec.SpecError, match=r"no_such_module_ff not importable .* pip install '\.\[torch\]'"):
        preflight.check(SMOKE, args, todo, [], [])


def test_an_outside_engines_command_must_be_found(tmp_path: Path) -> None:
    variants = tmp_path / "mine.toml"
    variants.write_text(
        '[variants.nowhere]\nengine = "external"\ntier = "stock"\ndescription = "a command that is not there"\n'
        '[variants.nowhere.settings]\ncommand = ["no-such-engine-binary", "--go"]\n'
    )
    proc, data = _bench(tmp_path, "--variants", str(variants), "--variant", "nowhere", "--workload", WORKLOAD)
    assert proc.returncode == 2 and not data.exists()
    assert "command 'no-such-engine-binary' not found on PATH" in proc.stderr


def test_dry_run_prints_the_plan_and_runs_nothing(tmp_path: Path) -> None:
    proc, data = _bench(tmp_path, "--workload", "train-gpt-tiny-mb4", "--variant", "ddp-tuned", "--dry-run")
    assert proc.returncode == 0 and not data.exists(), proc.stderr
    assert "train-gpt-tiny-mb4 · ddp-tuned (tuned, torch)" in proc.stdout and "settings {" in proc.stdout
    assert "1 run(s)" in proc.stdout and "nothing runs, nothing is written" in proc.stdout
    # a plan is printed only for a session that would start: every check runs first, with exit status 2
    proc, data = _bench(tmp_path, "--workload", WORKLOAD, "--steps", "2", "--dry-run")
    assert proc.returncode == 2 and "leaves no steady steps" in proc.stderr and "the plan" not in proc.stdout
    proc = run_module("runners", "bench", "--suite", "h100", "--workload", "train-gpt-1.27b-mb4", "--dry-run",
                      "--data-dir", str(data), check=False)  # fmt: skip
    assert proc.returncode == 2 and "needs 2 NVIDIA GPU(s)" in proc.stderr and not data.exists()


@pytest.mark.bench
def test_a_run_that_started_and_failed_says_why_on_the_console(tmp_path: Path) -> None:
    """An outside engine that starts, then fails: its failure record is written (it ran) and its reason printed."""
    engine = tmp_path / "broken.py"
    engine.write_text("import sys\nsys.stdin.read()\nprint('could not allocate', file=sys.stderr)\nsys.exit(3)\n")
    variants = tmp_path / "mine.toml"
    variants.write_text(
        '[variants.broken]\nengine = "external"\ntier = "stock"\ndescription = "exits 3"\n'
        f'[variants.broken.settings]\ncommand = ["python", "{engine}"]\n'
    )
    proc, data = _bench(tmp_path, "--variants", str(variants), "--variant", "broken", "--workload", WORKLOAD)
    assert proc.returncode == 1
    assert len(list((data / "cpu-smoke").rglob("*.parquet"))) == 1
    assert "failed" in proc.stdout and "exited with 3" in proc.stdout and "| " in proc.stdout
