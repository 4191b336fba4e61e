"""`bench`'s summary holds numbers (issue 55, item 9): each run's figure, its own 95% interval and its unit as
separate fields, from the one function the boards and `compare` use for a run's own interval (`metrics.window_interval`
for training, `metrics.repetition_interval` for tests), a tokens/s figure never under a steps/s name, and the host's
load around the run, with the flags `compare` raises. Read from committed records and from real records written by
the bench; `provenance.host_load` asks this machine (no GPU here: its GPU count is None)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import polars as pl
import pytest

from generator import compare
from runners import bench, bench_report, layout, metrics, provenance

ROOT = Path(__file__).resolve().parents[2]
TRAIN = ROOT / "data/cpu-smoke/20261129T182238Z-train-gpt-tiny-mb4-ddp-amp-stock-c01ae0.parquet"


def _window_steps(path: Path) -> int:
    config = json.loads(pl.read_parquet(path, columns=["config"])["config"][0])
    return int(config["workload"]["window_steps"])


COMMITTED = {
    "pp": ROOT / "data/h100/20261201T060041Z-llama-14b-pp512-d0-mlx-f16-e47d2a.parquet",
    "offline": ROOT / "data/h100/20261201T234330Z-llama-70b-throughput-i512-o128-vllm-tp1-fp8-3374fd.parquet",
}
"""A committed MLX pp512 test and a vLLM offline throughput test, each with repetitions."""


def test_a_training_line_is_numbers_and_its_interval_is_compares(tmp_path: Path) -> None:
    """The bench's line of a committed training record carries the same figure and own interval as `compare` has for
    that run (one function for both), as numbers, in steps/s."""
    line = bench.summarize(TRAIN, _window_steps(TRAIN))
    (data := tmp_path / "data" / "cpu-smoke").mkdir(parents=True)
    (data / TRAIN.name).write_bytes(TRAIN.read_bytes())
    ds = compare.load_dataset(tmp_path / "data")
    run = ds.runs.filter(pl.col("run_id") == TRAIN.stem).row(0, named=True)
    assert (line["figure"], line["low"], line["high"]) == pytest.approx((run["value"], run["lo"], run["hi"]))
    assert line["unit"] == "steps/s" and (line["count"], line["count_of"]) == (60, "steps")
    assert all(isinstance(line[k], float) for k in ("figure", "low", "high"))
    assert line["flags"] == [] and line["load_1m_start"] is None  # a record from before the bench kept the load


@pytest.mark.parametrize(("kind", "unit"), [("pp", "tokens/s"), ("offline", "output tokens/s")])
def test_a_test_line_is_tokens_per_s_with_the_boards_interval(kind: str, unit: str) -> None:
    """An inference or offline test's line: the median over repetitions with the order-statistic interval the boards
    give that run (`metrics.repetition_interval`), in tokens/s, never as steps/s."""
    path = COMMITTED[kind]
    line = bench.summarize_test(path) if kind == "pp" else bench.summarize_serving(path)
    metric = "tokens_per_s" if kind == "pp" else "output_tokens_per_s"
    rows = layout.read(path).to_pylist()
    found = metrics.repetition_interval([r["value"] for r in rows if r["metric"] == metric and r["phase"] == "steady"])
    assert found is not None
    assert (line["figure"], line["low"], line["high"]) == pytest.approx(found[:3])
    assert line["unit"] == unit and line["count_of"] == "repetitions" and "steps_per_s" not in line


def test_json_and_csv_hold_numbers_not_display_strings() -> None:
    rows = [
        bench_report.line(workload="w", variant="v", **bench.summarize(TRAIN, _window_steps(TRAIN)), wall_s=74.2,
                          file="f.parquet"),
        bench_report.line(workload="t", variant="m", **bench.summarize_test(COMMITTED["pp"]), wall_s=9.0,
                          file="g.parquet"),
    ]  # fmt: skip
    data = json.loads(bench_report.render("json", "s", rows, 0))
    for run in data["runs"]:
        assert set(run) == set(bench_report.COLUMNS)
        for key in ("figure", "low", "high", "wall_s"):
            assert isinstance(run[key], float), (key, run[key])
    assert [r["unit"] for r in data["runs"]] == ["steps/s", "tokens/s"]
    table = list(csv.DictReader(io.StringIO(bench_report.render("csv", "s", rows, 0))))
    for row in table:
        for key in ("figure", "low", "high", "wall_s"):
            float(row[key])  # a number, not "0.725 [0.507, 0.942]"
        assert "[" not in "".join(row.values())
    text = bench_report.render("text", "s", rows, 0)
    assert "steps/s" in text and "tokens/s" in text and "steps_per_s" not in text


def test_flags_are_compares() -> None:
    """A run whose own interval is wider than its figure, on a busy host, beside other GPU processes: each flagged."""
    host = {"load_1m_start": 3.0, "load_1m_end": 9.5, "cpu_cores": 4, "gpu_processes": 2}
    flags = bench_report.flags_of(0.72, -47.8, 69.1, host)
    assert flags == [
        "own interval wider than its figure: no steady state measured",
        "busy host: load average 9.5 above its 4 cores",
        "2 other process(es) on its GPUs",
    ]
    assert bench_report.flags_of(11.9, 11.5, 12.3, {"load_1m_start": 3.9, "cpu_cores": 4}) == []
    assert metrics.busy_host(4.01, 4) and not metrics.busy_host(4.0, 4) and not metrics.busy_host(None, 4)


def test_the_host_load_is_read_from_this_machine() -> None:
    now = provenance.host_load()
    assert isinstance(now["load_1m"], float) and now["load_1m"] >= 0
    around = provenance.host_load_around(now, {"load_1m": 2.5, "gpu_processes": 0, "cpu_mhz": 2400.0})
    assert around == {"load_1m_start": now["load_1m"], "load_1m_end": 2.5,
                      "gpu_processes_start": now["gpu_processes"], "gpu_processes_end": 0,
                      "cpu_mhz_start": now["cpu_mhz"], "cpu_mhz_end": 2400.0}  # fmt: skip
    # the CPUs' clock where Linux tells it (/proc/cpuinfo's `cpu MHz`, else cpufreq): a throttled host is recorded
    info = Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []
    freq = list(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_cur_freq"))
    readable = any(line.startswith("cpu MHz") for line in info) or bool(freq)
    assert (now["cpu_mhz"] is not None and 0 < now["cpu_mhz"] < 1e5) if readable else now["cpu_mhz"] is None
