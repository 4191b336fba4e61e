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

from generator.commands import compare
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
    host = {"load_1m_start": 3.0, "load_1m_end": 9.5, "others_cpu_cores": 2.5, "busy_host": True, "cpu_cores": 4,
            "gpu_processes": 2}  # fmt: skip
    flags = bench_report.flags_of(0.72, -47.8, 69.1, host)
    assert flags == [
        "own interval wider than its figure: no steady state measured",
        "busy host: other processes took 2.5 of its 4 cores while it ran",
        "2 other process(es) on its GPUs",
    ]
    # a high load average alone is no busy host: read after a run, it holds the run's own processes
    quiet = {"load_1m_start": 3.9, "load_1m_end": 5.2, "others_cpu_cores": 0.01, "busy_host": False, "cpu_cores": 4}
    assert bench_report.flags_of(11.9, 11.5, 12.3, quiet) == []


@pytest.mark.parametrize(
    ("busy_s", "own_s", "busy"),
    [
        (40.0, 39.9, False),  # the run alone, using all 4 cores for 10 s
        (40.0, 36.0, True),  # others took 0.4 cores (10%) of a saturated host
        (40.0, 36.1, False),  # 0.39 cores: under a tenth
        (14.0, 10.0, False),  # others took 0.4 cores of a host 35% busy: nothing waited
        (36.0, 32.0, True),  # 90% busy in all
        (35.9, 31.9, False),
    ],
)
def test_a_busy_host_is_others_cpu_time_on_a_saturated_host(busy_s: float, own_s: float, busy: bool) -> None:
    """`metrics.busy_host` over 10 s on 4 cores, at its two thresholds, as floats and as the polars expression the
    site uses (one rule in both)."""
    assert metrics.busy_host(busy_s, own_s, 10.0, 4) is busy
    frame = pl.DataFrame({"b": [busy_s], "o": [own_s], "w": [10.0], "c": [4]})
    assert frame.select(metrics.busy_host(pl.col("b"), pl.col("o"), pl.col("w"), pl.col("c"))).item() is busy
    assert not metrics.busy_host(None, own_s, 10.0, 4) and not metrics.busy_host(busy_s, own_s, 0.0, 4)
    assert metrics.others_cores(9.0, 10.0, 10.0) == 0.0  # the busy counter's 10 ms ticks read a hair low


def test_the_host_load_is_read_from_this_machine() -> None:
    now = provenance.host_load()
    assert isinstance(now["load_1m"], float) and now["load_1m"] >= 0
    later = {"load_1m": 2.5, "gpu_processes": 0, "cpu_mhz": 2400.0, "cpu_busy_s": now["cpu_busy_s"] + 3.0,
             "cpu_own_s": now["cpu_own_s"] + 1.0, "clock_s": now["clock_s"] + 2.0}  # fmt: skip
    around = provenance.host_load_around(now, later)
    assert around == {"load_1m_start": now["load_1m"], "load_1m_end": 2.5,
                      "gpu_processes_start": now["gpu_processes"], "gpu_processes_end": 0,
                      "cpu_mhz_start": now["cpu_mhz"], "cpu_mhz_end": 2400.0,
                      "cpu_busy_s": 3.0, "cpu_own_s": 1.0, "wall_s": 2.0}  # fmt: skip
    # a counter that went back (or is missing) is no reading
    assert provenance.host_load_around(now, later | {"cpu_busy_s": 0.0})["cpu_busy_s"] is None
    # the CPUs' clock where Linux tells it (/proc/cpuinfo's `cpu MHz`, else cpufreq): a throttled host is recorded
    info = Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []
    freq = list(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_cur_freq"))
    readable = any(line.startswith("cpu MHz") for line in info) or bool(freq)
    assert (now["cpu_mhz"] is not None and 0 < now["cpu_mhz"] < 1e5) if readable else now["cpu_mhz"] is None


def test_a_run_that_uses_every_core_is_not_a_busy_host() -> None:
    """The run's own processes are its own, however many cores they fill: children that spin on every core for a
    CPU second, reaped as a runner's are, leave the host not busy, their CPU time counted as the run's (a load average
    read after them flagged the end-to-end test's two-process DDP run on a 2-core CI host)."""
    import os
    import subprocess
    import sys

    cores = os.cpu_count() or 1
    # a CPU second each, however long that takes: on a host other jobs share, a wall second gave each child less
    spin = "import time\nend = time.process_time() + 1.0\nwhile time.process_time() < end: pass"
    before = provenance.host_load()
    children = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(cores)]
    assert all(child.wait() == 0 for child in children)
    around = provenance.host_load_around(before, provenance.host_load())
    if around["cpu_busy_s"] is None:
        pytest.skip("no /proc/stat on this OS: the host's busy time is not read")
    assert around["cpu_own_s"] >= 0.8 * cores  # the children's seconds, counted as the run's
    others = metrics.others_cores(around["cpu_busy_s"], around["cpu_own_s"], around["wall_s"])
    if others >= metrics.OTHERS_SHARE * cores:  # a shared machine (other tests, another job) was busy meanwhile
        pytest.skip(f"other processes took {others:.2f} of {cores} cores meanwhile: this host is not quiet")
    assert not metrics.busy_host(around["cpu_busy_s"], around["cpu_own_s"], around["wall_s"], cores), around
