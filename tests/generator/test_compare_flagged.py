"""`compare` of the same settings benched twice on a CPU, 11.9 steps/s and then 0.72 under load (issue 55): the slow
run's own interval reached below zero, it passed as "no figure" and exit 0, and as a repeat of its own configuration
it made the A/A spread that hid it. The audit's two files were not committed, so the pair is rebuilt here from the
committed cpu-smoke ddp-amp-stock record (`data/cpu-smoke`, c01ae0): its steady step times rescaled to 11.9 steps/s,
and a second copy at 0.72 steps/s in 7 of its 10 windows and 33 in the other 3 (a load that came and went)."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from generator.commands import compare
from generator.derive import evidence
from runners import metrics

ROOT = Path(__file__).resolve().parents[2]
CPU = ROOT / "data" / "cpu-smoke"
AMP = "20261129T182238Z-train-gpt-tiny-mb4-ddp-amp-stock-c01ae0"
FP32 = ("20261129T174009Z-train-gpt-tiny-mb4-ddp-fp32-stock-2f85f7",
        "20261129T182224Z-train-gpt-tiny-mb4-ddp-fp32-stock-a6fd5f")  # fmt: skip
"""Two committed runs of one configuration on the same CPU: torch's repeats there (a pooled spread of 1 df)."""
FAST, SLOW = (
    "20261205T100000Z-train-gpt-tiny-mb4-ddp-amp-stock-f00001",
    "20261205T101500Z-train-gpt-tiny-mb4-ddp-amp-stock-f00002",
)


def _copy(run_id: str, step_times: list[float], data: Path, host_load: dict | None = None) -> None:
    """The committed ddp-amp-stock record under another run id, its steady step times replaced (and `host_load` in
    its hardware, as the bench now records it)."""
    table = pq.read_table(CPU / f"{AMP}.parquet")
    if host_load is not None:
        hardware = json.loads(table["hardware"][0].as_py()) | {"host_load": host_load}
        column = pa.array([json.dumps(hardware, sort_keys=True)] * table.num_rows)
        table = table.set_column(table.schema.get_field_index("hardware"), "hardware", column)
    steady = pc.and_(pc.equal(table["metric"], "step_time_s"), pc.equal(table["phase"], "steady"))
    values = table["value"].to_pylist()
    times = iter(step_times)
    values = [next(times) if s else v for v, s in zip(values, steady.to_pylist(), strict=True)]
    assert next(times, None) is None
    table = table.set_column(table.schema.get_field_index("value"), "value", pa.array(values, pa.float64()))
    table = table.set_column(table.schema.get_field_index("run_id"), "run_id", pa.array([run_id] * table.num_rows))
    pq.write_table(table, data / "cpu-smoke" / f"{run_id}.parquet")


def _pair(data: Path, repeats: bool) -> None:
    (data / "cpu-smoke").mkdir(parents=True)
    _copy(FAST, [1 / 11.9] * 50, data)
    slow_windows = [0.72, 33.0, 0.72, 33.0, 0.72, 33.0, 0.72, 0.72, 0.72, 0.72]  # 10 windows of 5 steps
    _copy(SLOW, [1 / rate for rate in slow_windows for _ in range(5)], data)
    if repeats:
        for stem in FP32:
            shutil.copy(CPU / f"{stem}.parquet", data / "cpu-smoke")


def _loaded_pair(tmp_path: Path, repeats: bool) -> tuple[Path, compare.Dataset]:
    """The pair (`_pair`) written under tmp_path/data, and the data set compare loads from it."""
    data = tmp_path / "data"
    _pair(data, repeats)
    return data, compare.load_dataset(data)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    parser = argparse.ArgumentParser(prog="compare")
    compare.add_cli_args(parser)
    status = compare.main(parser.parse_args(list(argv)))
    return status, capsys.readouterr().out


def test_a_16x_slowdown_under_load_exits_1_decided_from_the_pooled_spread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, ds = _loaded_pair(tmp_path, repeats=True)
    slow = ds.runs.filter(ds.runs["run_id"] == SLOW).row(0, named=True)
    assert slow["value"] == pytest.approx(0.72) and slow["lo"] < 0  # its own interval reaches below zero
    assert metrics.wider_than_figure(slow["value"], slow["lo"], slow["hi"])
    assert SLOW not in ds.run_floors and FAST not in ds.run_floors  # nobody's repeat: no A/A spread of 1.77
    spread = ds.spreads[("torch", "train", slow["accelerator"], 2)]
    assert spread.df == 1  # the committed fp32 pair only
    report = compare.compare(FAST, SLOW, ds)
    (row,) = report.rows
    assert row["verdict"] == "slower" and row["ratio"] == pytest.approx(0.72 / 11.9)
    assert row["ratio_hi"] < 1 and row["b"]["lo"] > 0 and report.exit_status == 1
    assert row["flags"] == [f"B {SLOW}: {evidence.FLAGGED}"]
    status, out = _cli(capsys, FAST, SLOW, "--data", str(data), "--format", "json")
    assert status == 1 and json.loads(out)["rows"][0]["fails"]
    assert compare.compare(SLOW, FAST, ds).exit_status == 0  # a speed-up does not fail by default


def test_without_any_repeats_the_flagged_slowdown_is_undecided_and_still_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, ds = _loaded_pair(tmp_path, repeats=False)
    assert not ds.spreads and not ds.run_floors
    (row,) = compare.compare(FAST, SLOW, ds).rows
    assert row["verdict"] == "undecided" and row["ratio_lo"] is None and row["b"]["lo"] is None
    assert row["a"]["basis"].startswith("unreplicated") and row["flags"]
    assert compare.fails(row) and not compare.fails(row, "faster")
    status, out = _cli(capsys, FAST, SLOW, "--data", str(data))
    assert status == 1 and "flagged and beyond 5%: fails" in out and evidence.FLAGGED in out


BUSY = {
    "load_1m_start": 1.2,
    "load_1m_end": 3.5,
    "gpu_processes_start": None,
    "gpu_processes_end": None,
    "cpu_busy_s": 118.8,
    "cpu_own_s": 60.0,
    "wall_s": 60.0,
}
"""The host around a run as the bench records it, on the record's 2-core CPU: for 60 s, the run used 60 CPU seconds
and the host's CPUs were busy 118.8 s, so others took 0.98 cores of a saturated host."""
QUIET = BUSY | {"load_1m_start": 0.3, "load_1m_end": 2.1, "cpu_busy_s": 60.3}
"""The same run alone: others took 0.005 cores. Its load average after it, 2.1, still holds its own processes: above
the core count, and no sign of a busy host."""


@pytest.mark.parametrize("busy", [False, True], ids=["quiet host", "busy host"])
def test_a_steady_slowdown_recorded_on_a_busy_host_is_flagged_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], busy: bool
) -> None:
    """A steady 11.9 -> 8.0 steps/s of one configuration: both alone on their host, the two runs are each other's
    repeat and their 39% spread reads the change as "same" (exit 0); recorded on a busy host (others took CPU time
    from a saturated host, as the bench keeps it), B is nobody's repeat and flagged, and a flagged row beyond the
    threshold fails: the load cannot hide a regression."""
    data = tmp_path / "data"
    (data / "cpu-smoke").mkdir(parents=True)
    _copy(FAST, [1 / 11.9] * 50, data, QUIET)
    _copy(SLOW, [1 / 8.0] * 50, data, BUSY if busy else QUIET)
    ds = compare.load_dataset(data)
    slow = ds.runs.filter(ds.runs["run_id"] == SLOW).row(0, named=True)
    assert slow["busy_host"] is busy and not metrics.wider_than_figure(slow["value"], slow["lo"], slow["hi"])
    (row,) = compare.compare(FAST, SLOW, ds).rows
    if busy:  # nobody's repeat: no spread, undecided, flagged, and beyond the threshold it fails
        assert not ds.spreads and not ds.run_floors
        assert row["verdict"] == "undecided"
        took = "other processes took 0.98 of its 2 cores while it ran"
        assert row["flags"] == [f"B {SLOW}: recorded on a busy host ({took})"]
        assert compare.fails(row)
        status, out = _cli(capsys, FAST, SLOW, "--data", str(data))
        assert status == 1 and "busy host" in out
    else:  # both alone on their host: each other's repeat, and their spread hides the slowdown
        assert row["verdict"] == "same" and row["flags"] == [] and not compare.fails(row)
        assert _cli(capsys, FAST, SLOW, "--data", str(data))[0] == 0
