"""The GPUs' energy over timed windows (runners/energy.py). No GPU here: NVML is replaced by a counter trace recorded
on an H200 bench host (tests/runners/data/h200-nvml-energy-trace.json: `nvmlDeviceGetTotalEnergyConsumption` read
every few milliseconds, idle then under a bf16 matmul load, then idle), replayed against a simulated clock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runners import energy, record, training

TRACE = Path(__file__).parent / "data" / "h200-nvml-energy-trace.json"


class Clock:
    """A clock that moves only when the code under test sleeps or is told to."""

    def __init__(self, t: float = 0.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


def recorded() -> tuple[list[tuple[float, list[float]]], dict]:
    doc = json.loads(TRACE.read_text())
    return [(t, [mj / 1e3]) for t, mj, _mw in doc["readings"]], doc


def test_a_window_is_the_counters_difference_and_the_idle_power_is_read_from_the_trace() -> None:
    trace, doc = recorded()
    clock = Clock(trace[0][0])
    meter = energy.Meter(energy.TraceCounter(trace, clock), clock, clock.sleep)
    idle = meter.measure_idle(doc["idle_s"] * 0.8)
    # the host's idle draw, as its own power readings say, within the counter's resolution
    powers = [mw / 1e3 for t, _mj, mw in doc["readings"] if t < trace[0][0] + doc["idle_s"] * 0.8]
    assert idle == pytest.approx(sum(powers) / len(powers), rel=0.15)
    assert meter.counter_update_s == pytest.approx(doc["counter_update_s"], rel=0.3)
    clock.t = doc["load_from_s"] + 0.5
    meter.start()
    clock.t += 2.0
    joules = meter.stop()
    at = lambda t: next(v for u, v in reversed(trace) if u <= t)[0]  # noqa: E731
    assert joules == pytest.approx(at(clock.t) - at(clock.t - 2.0))
    assert 2.0 * 300 < joules < 2.0 * 800  # an H200 under load draws hundreds of watts, below its 700 W cap
    assert meter.provenance() == {
        "method": "nvml-total-energy",
        "gpus": ["GPU-trace"],
        "counter_update_s": round(meter.counter_update_s, 6),
    }
    # a runner says whether it read the idle power before opening its GPUs or with their contexts open
    for before, said in ((True, "before-gpu-use"), (False, "gpu-contexts-open")):
        clock.t = trace[0][0]
        meter.measure_idle(doc["idle_s"] * 0.8, before_gpu_use=before)
        assert meter.provenance()["idle_read"] == said


def test_segments_never_span_the_warm_up_and_become_rows_of_their_phase() -> None:
    trace, doc = recorded()
    clock = Clock(doc["load_from_s"])
    segments = training.EnergySegments(energy.Meter(energy.TraceCounter(trace, clock), clock), lambda: None)
    segments.begin()
    warmup, window, steps = 3, 4, 10  # boundaries as the training loops cut them: 3, 4, 8, 10
    for done in range(1, steps + 1):
        clock.t += 0.25
        if training.ends_segment(done, steps, warmup, window):
            segments.boundary(done)
    cut = segments.end()
    assert [s for s, _ in cut] == [2, 3, 7, 9]
    # the steady ones, as generator/derive/checks.py holds a training record's steady energy rows to
    assert training.steady_segment_ends(steps, warmup, window) == [3, 7, 9]
    total = (
        next(v for u, v in reversed(trace) if u <= clock.t)[0]
        - next(v for u, v in reversed(trace) if u <= doc["load_from_s"])[0]
    )
    assert sum(j for _, j in cut) == pytest.approx(total)  # nothing lost or counted twice between segments
    rows = record.train_rows(0, [0.25] * steps, [1.0] * steps, warmup, {}, cut)
    rows = [r for r in rows if r["metric"] == "energy_j"]
    assert [(r["step"], r["phase"], r["unit"]) for r in rows] == [
        (2, "warmup", "J"),
        (3, "steady", "J"),
        (7, "steady", "J"),
        (9, "steady", "J"),
    ]


def test_the_gpus_a_process_uses_are_those_cuda_visible_devices_names() -> None:
    gpus = [("GPU-aaa", 0), ("GPU-bbb", 1), ("GPU-ccc", 2)]
    assert energy.visible(gpus, None, 2) == gpus[:2]
    assert energy.visible(gpus, "2,0", 2) == [gpus[2], gpus[0]]
    assert energy.visible(gpus, "GPU-bb", 1) == [gpus[1]]
    assert energy.visible(gpus, "1,7,2", 3) == [gpus[1]]  # CUDA stops at the first entry that names no GPU


def test_no_nvml_no_meter(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a host without NVML (this one), nothing is metered and no row is made up."""
    monkeypatch.setattr(energy.Nvml, "open", classmethod(lambda cls: None))
    assert energy.meter(1) is None
    assert record.idle_power_rows(None) == []
