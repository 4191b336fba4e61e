"""The external-runner contract (runners/engines/external/runner.py): an engine Fair Fight does not ship, run by a
bench session
as a separate process, lands as an ordinary validated result file; bad output and crashes lose nothing."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from generator import load
from runners import layout, spec
from tests.conftest import ROOT, TRAIN, run_module

EXAMPLE = ROOT / "examples" / "engines" / "numpy.toml"


def _bench(data: Path, variants: Path, variant: str, *more: str, **env: str) -> tuple[dict, list[dict], str]:
    proc = run_module(
        "runners", "bench", "--suite", "cpu-smoke", "--workload", TRAIN, "--variants", str(variants),
        "--variant", variant, "--steps", "12", "--data-dir", str(data), *more, check=False, **env,
    )  # fmt: skip
    [path] = [p for p in (data / "cpu-smoke").rglob("*.parquet") if not p.name.startswith(".")]
    rows = layout.read(path).to_pylist()
    return rows[0], rows, proc.stdout + proc.stderr


STEPS = """
work = spec["workload"]
for step in range(work["steps"]):
    phase = "warmup" if step < work["warmup_steps"] else "steady"
    for metric, value, unit in (("step_time_s", 0.01, "s"), ("loss", 5.0 - step / 100, "nats")):
        print(json.dumps({"trial": 0, "step": step, "phase": phase, "metric": metric, "value": value, "unit": unit}),
              flush=True)
"""
"""An engine body's steps: every step of the workload's one trial, in its phase, with a time and a loss."""


def _engine(tmp_path: Path, body: str, **settings: str) -> Path:
    """A variants file whose one variant runs `body` as a Python script (a separate process); `settings` reach it
    in its spec (`spec["variant"]["settings"]`)."""
    script = tmp_path / "engine.py"
    script.write_text("import json, sys\nspec = json.load(sys.stdin)\n" + body)
    variants = tmp_path / "engines.toml"
    extra = "".join(f"{key} = {json.dumps(value)}\n" for key, value in settings.items())
    variants.write_text(
        '[variants.outside]\nengine = "external"\ntier = "tuned"\ndescription = "a test engine"\n'
        f"[variants.outside.settings]\ncommand = {json.dumps([sys.executable, str(script)])}\n{extra}"
    )
    return variants


def test_an_outside_engine_lands_as_an_ordinary_validated_record(tmp_path: Path) -> None:
    data = tmp_path / "data"
    head, rows, out = _bench(data, EXAMPLE, "numpy-bigram")
    assert head["status"] == "ok" and head["engine"] == "external" and head["variant"] == "numpy-bigram", out
    assert head["engine_version"].startswith("numpy-bigram 1")
    config = json.loads(head["config"])
    assert config["variant"]["settings"]["command"] == ["python", "numpy_bigram.py"]
    assert config["command"].endswith(f"--variants {EXAMPLE}")
    losses = [r["value"] for r in rows if r["metric"] == "loss"]
    assert len(losses) == 12 and losses[-1] < losses[0]  # it trained
    assert [r["value"] for r in rows if r["metric"] == "steps_completed"] == [12.0]
    loaded = load.load(data)
    assert loaded.rejected == [] and loaded.runs["engine"].to_list() == ["external"]
    assert "numpy-bigram" in out and "summary" in out


def test_bad_output_lines_are_kept_verbatim_and_named(tmp_path: Path) -> None:
    variants = _engine(
        tmp_path,
        """
def row(step, value, **extra):
    return json.dumps({"trial": 0, "step": step, "phase": "warmup", "metric": "step_time_s", "value": value,
                       "unit": "s", **extra})
print(json.dumps({"engine_version": "outside 0.1"}))
print(row(0, 0.5))
print("this is not JSON")
print(row(1, -0.5))
print(row(2, 0.5, colour="red"))
print(row(3, 0.25))
print(row(2**40, 0.25))
""",
    )
    head, rows, out = _bench(tmp_path / "data", variants, "outside")
    assert head["status"] == "failed" and head["engine_version"] == "outside 0.1", out
    error = head["error"]
    assert "4 output line(s) refused" in error and "line 3: not JSON" in error
    assert "line 4, field 'value': step_time_s = -0.5: must be above 0" in error
    assert "line 5, field 'colour': unknown" in error
    kept = json.loads(head["config"])["external"]
    assert "line 7, field 'step': 1099511627776 does not fit" in error
    assert [r["line"] for r in kept["rejected_lines"]] == [3, 4, 5, 7] and kept["rejected_count"] == 4
    assert kept["rejected_lines"][0]["text"] == "this is not JSON"
    assert '"colour": "red"' in kept["rejected_lines"][2]["text"]  # verbatim, as the engine wrote it
    times = [(r["step"], r["value"]) for r in rows if r["metric"] == "step_time_s"]
    assert times == [(0, 0.5), (3, 0.25)]  # the good rows are kept
    assert load.load(tmp_path / "data").rejected == []  # a failure record is a valid record


def test_a_crashing_outside_engine_keeps_the_rows_it_wrote(tmp_path: Path) -> None:
    variants = _engine(
        tmp_path,
        """
for step in range(3):
    print(json.dumps({"trial": 0, "step": step, "phase": "warmup", "metric": "loss", "value": 5.0 - step,
                      "unit": "nats"}), flush=True)
print("out of memory, say", file=sys.stderr)
sys.exit(3)
""",
    )
    head, rows, out = _bench(tmp_path / "data", variants, "outside")
    assert head["status"] == "failed" and "exited with 3" in head["error"], out
    assert head["engine_version"] == "unknown"
    assert [r["value"] for r in rows if r["metric"] == "loss"] == [5.0, 4.0, 3.0]
    assert "out of memory, say" in out  # its standard error reaches the bench log


def test_an_outside_variants_file_is_strict(tmp_path: Path) -> None:
    bad = tmp_path / "engines.toml"
    bad.write_text(EXAMPLE.read_text().replace('engine = "external"', 'engine = "torch"'))
    with pytest.raises(spec.SpecError, match=r"engines\.toml: \[variants\.numpy-bigram\]: engine must be 'external'"):
        spec.load_suite("cpu-smoke", external=bad)
    bad.write_text(EXAMPLE.read_text().replace("command = [", "command_line = ["))
    with pytest.raises(spec.SpecError, match=r"settings\.command must be a list of strings"):
        spec.load_suite("cpu-smoke", external=bad)
    suite = spec.load_suite("cpu-smoke", external=EXAMPLE)
    assert "numpy-bigram" in suite.workload(TRAIN).variants and suite.variants["numpy-bigram"].engine == "external"


def test_an_outside_engine_over_its_time_budget_is_stopped_and_keeps_its_rows(tmp_path: Path) -> None:
    variants = _engine(
        tmp_path,
        """
import time
for step in range(2):
    print(json.dumps({"trial": 0, "step": step, "phase": "warmup", "metric": "step_time_s", "value": 0.1,
                      "unit": "s"}), flush=True)
time.sleep(120)
""",
    )
    t0 = time.perf_counter()
    head, rows, out = _bench(tmp_path / "data", variants, "outside", "--time-budget", "1")
    assert time.perf_counter() - t0 < 60, out  # stopped after its budget and one more, not after the sleep
    assert head["status"] == "timeout" and "overran its time budget (2 s from its first step)" in head["error"], out
    assert [r["step"] for r in rows if r["metric"] == "step_time_s"] == [0, 1]


def test_an_outside_engines_set_up_is_not_counted_in_its_time_budget(tmp_path: Path) -> None:
    """As the built-in runners count theirs: 3 s of set-up, then 2 steps, under a 1 s budget (2 s with its grace)
    finish, where a clock started at the command's launch would have stopped it."""
    variants = _engine(
        tmp_path,
        """
import time
time.sleep(3)
print(json.dumps({"engine_version": "slow-start 1"}), flush=True)
"""
        + STEPS,
    )
    head, rows, out = _bench(tmp_path / "data", variants, "outside", "--time-budget", "1")
    assert head["status"] == "ok", out
    assert [r["step"] for r in rows if r["metric"] == "step_time_s"] == list(range(12))
