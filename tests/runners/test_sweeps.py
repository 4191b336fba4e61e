"""`--set key=a,b,c` is a sweep: one run per value (every combination for several keys), each value checked by the
pre-flight before anything runs, each shown by `--dry-run`, each a record whose variant name carries its value.
The real runs are the NumPy example engine's (runners/engines/external), a few steps each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from generator import load
from runners import spec
from tests.conftest import ROOT, run_module

NUMPY = ROOT / "examples" / "engines" / "numpy.toml"


def _bench(tmp_path: Path, *args: str) -> tuple[object, Path]:
    data = tmp_path / "data"
    proc = run_module("fairfight", "bench", "--suite", "cpu-smoke", *args, "--data-dir", str(data), check=False)
    return proc, data


def test_sweep_points_are_every_combination_in_the_order_given() -> None:
    assert spec.sweep_points(None) == [[]]
    assert spec.sweep_points(["a=1,2", "b=x,y"]) == [["a=1", "b=x"], ["a=1", "b=y"], ["a=2", "b=x"], ["a=2", "b=y"]]
    assert spec.sweep_points(["sizes=[1,2]", 'name="p,q"']) == [["sizes=[1,2]", 'name="p,q"']]  # a value's own commas
    for bad, said in ((["a=1,,2"], "an empty value"), (["a=[1,2"], "unclosed"), (["a=1", "a=2"], "more than once"),
                      (["a"], "expected KEY=VALUE")):  # fmt: skip
        with pytest.raises(spec.SpecError, match=said):
            spec.sweep_points(bad)


def test_dry_run_shows_each_value_and_a_bad_one_stops_all_of_them(tmp_path: Path) -> None:
    args = ("--workload", "train-gpt-tiny-mb4", "--variant", "ddp-tuned", "--dry-run")
    proc, data = _bench(tmp_path, *args, "--set", "bucket_cap_mb=1,2,4")
    assert proc.returncode == 0 and not data.exists(), proc.stderr
    for value in (1, 2, 4):
        assert f"ddp-tuned[bucket_cap_mb={value}]" in proc.stdout and f"'bucket_cap_mb': {value}," in proc.stdout
    assert "3 run(s)" in proc.stdout
    proc, data = _bench(tmp_path, *args, "--set", "bucket_cap_mb=1,2", "--format", "json")
    plan = json.loads(proc.stdout)
    assert plan["total_runs"] == 2 and [r["settings"]["bucket_cap_mb"] for r in plan["runs"]] == [1, 2]
    proc, data = _bench(tmp_path, *args[:-1], "--set", "bucket_cap_mb=1,lots,4")  # no --dry-run: it would run
    assert proc.returncode == 2 and not data.exists() and "Traceback" not in proc.stderr
    assert (
        "'bucket_cap_mb'" in proc.stderr
        and "'lots'" in proc.stderr
        and "nothing was run, nothing written" in proc.stderr
    )
    proc, data = _bench(tmp_path, *args[:-1], "--set", "bucket_cap_mb=1,[2")
    assert proc.returncode == 2 and not data.exists() and "unclosed" in proc.stderr


def test_a_sweep_runs_once_per_value_and_each_record_names_its_value(tmp_path: Path) -> None:
    proc, data = _bench(
        tmp_path, "--workload", "train-gpt-tiny-1dev", "--variants", str(NUMPY), "--variant", "numpy-bigram",
        "--steps", "12", "--set", "lr=0.5,0.25", "--format", "json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert [r["variant"] for r in summary["runs"]] == ["numpy-bigram[lr=0.5]", "numpy-bigram[lr=0.25]"]
    assert "[1/2]" in proc.stderr and "[2/2]" in proc.stderr
    loaded = load.load(data)
    assert loaded.rejected == [] and sorted(loaded.runs["variant"]) == ["numpy-bigram[lr=0.25]", "numpy-bigram[lr=0.5]"]
    lrs = sorted(json.loads(c)["variant"]["settings"]["lr"] for c in loaded.runs["config"])
    assert lrs == [0.25, 0.5]  # each run's engine was given its own value (it reads them in its spec)


def test_an_outside_engines_command_and_unknown_settings_cannot_be_set(tmp_path: Path) -> None:
    base = ("--workload", "train-gpt-tiny-1dev", "--variants", str(NUMPY), "--variant", "numpy-bigram")
    proc, data = _bench(tmp_path, *base, "--set", 'command=["sh"]')
    assert proc.returncode == 2 and not data.exists() and "cannot change its command" in proc.stderr
    proc, data = _bench(tmp_path, *base, "--set", "lrr=0.1,0.2")
    assert proc.returncode == 2 and not data.exists() and "did you mean 'lr'" in proc.stderr
