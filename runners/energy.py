"""The GPUs' own energy over a run's timed windows, from NVML (the library behind nvidia-smi), read through ctypes so
no Python binding has to be installed on an air-gapped bench host.

Two methods, chosen per run and written into its record (`hardware.energy.method`):
- `nvml-total-energy`: `nvmlDeviceGetTotalEnergyConsumption`, the GPU's own counter of millijoules since the
  driver loaded (Volta and newer); a window's energy is the difference of two readings. Its resolution is the
  counter's update interval, which is measured on the host and recorded too (`counter_update_s`).
- `nvml-power-sampled`: where the counter is absent, `nvmlDeviceGetPowerUsage` (milliwatts) sampled on a thread at
  a fixed interval and integrated with the trapezoid rule.
A window's joules are the sum over the GPUs the run used. The idle power is measured in the same process before the
run's work starts (`idle_power_w`), so a reader can tell the energy of the work from the energy of being on.

On a host without NVML (CPU, Apple) `meter()` returns None and nothing is recorded: no row is made up.
Tests on CPU drive the same code with a recorded counter trace (`TraceCounter`).
"""

from __future__ import annotations

import ctypes
import itertools
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

NVML_SUCCESS = 0
IDLE_WINDOW_S = 3.0
"""How long the idle power is read over: several updates of the counter, short beside a run."""
POWER_SAMPLE_S = 0.02
"""The power-sampling interval where the energy counter is absent (NVML refreshes power every 20-100 ms)."""


class Counter(Protocol):
    """Per GPU, readings of a cumulative energy counter in joules (`energy_j`) or of instantaneous power in watts
    (`power_w`), whichever the hardware offers."""

    method: str
    uuids: tuple[str, ...]

    def energy_j(self) -> list[float] | None: ...

    def power_w(self) -> list[float] | None: ...


class NvmlError(RuntimeError):
    pass


class Nvml:
    """The few NVML calls the meter needs. `Nvml.open()` is None where the library is missing or does not start."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib

    @classmethod
    def open(cls) -> Nvml | None:
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
        except OSError:
            return None
        nvml = cls(lib)
        init = getattr(lib, "nvmlInit_v2", None) or lib.nvmlInit
        if init() != NVML_SUCCESS:
            return None
        return nvml

    def _check(self, rc: int, what: str) -> None:
        if rc != NVML_SUCCESS:
            self.lib.nvmlErrorString.restype = ctypes.c_char_p
            raise NvmlError(f"{what}: {self.lib.nvmlErrorString(rc).decode(errors='replace')}")

    def handles(self) -> list[tuple[str, Any]]:
        """(UUID, handle) of every GPU NVML sees, in its (PCI bus) order."""
        count = ctypes.c_uint()
        self._check(self.lib.nvmlDeviceGetCount_v2(ctypes.byref(count)), "nvmlDeviceGetCount")
        out = []
        for i in range(count.value):
            handle = ctypes.c_void_p()
            self._check(self.lib.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(handle)), "nvmlDeviceGetHandleByIndex")
            buf = ctypes.create_string_buffer(96)
            self._check(self.lib.nvmlDeviceGetUUID(handle, buf, 96), "nvmlDeviceGetUUID")
            out.append((buf.value.decode(), handle))
        return out

    def total_energy_mj(self, handle: Any) -> int | None:
        value = ctypes.c_ulonglong()
        rc = self.lib.nvmlDeviceGetTotalEnergyConsumption(handle, ctypes.byref(value))
        return value.value if rc == NVML_SUCCESS else None

    def power_mw(self, handle: Any) -> int | None:
        value = ctypes.c_uint()
        rc = self.lib.nvmlDeviceGetPowerUsage(handle, ctypes.byref(value))
        return value.value if rc == NVML_SUCCESS else None


def visible(all_gpus: Sequence[tuple[str, Any]], env: str | None, count: int) -> list[tuple[str, Any]]:
    """The GPUs a process uses: those CUDA_VISIBLE_DEVICES names (by UUID, or by index in NVML's PCI order, which
    is CUDA's order for GPUs of one model), else the first `count`. An entry that names no GPU stops the list there,
    as CUDA does."""
    if not env or not env.strip():
        return list(all_gpus[:count])
    by_uuid = {u: (u, h) for u, h in all_gpus}
    out = []
    for entry in (e.strip() for e in env.split(",")):
        if entry.startswith(("GPU-", "MIG-")):
            hit = next((by_uuid[u] for u in by_uuid if u.startswith(entry)), None)
        elif entry.isdigit() and int(entry) < len(all_gpus):
            hit = all_gpus[int(entry)]
        else:
            hit = None
        if hit is None:
            break
        out.append(hit)
    return out[:count]


COUNTER = "nvml-total-energy"
SAMPLED = "nvml-power-sampled"
METHODS = (COUNTER, SAMPLED)
"""A record's `hardware.energy.method` (the module's docstring says what each reads): the run page names the one that
read its joules, and runners/bounds.py refuses a record naming another."""


@dataclass
class NvmlCounter:
    nvml: Nvml
    gpus: list[tuple[str, Any]]
    method: str = field(init=False)
    uuids: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.uuids = tuple(u for u, _ in self.gpus)
        has_counter = all(self.nvml.total_energy_mj(h) is not None for _, h in self.gpus)
        self.method = COUNTER if has_counter else SAMPLED

    def energy_j(self) -> list[float] | None:
        values = [self.nvml.total_energy_mj(h) for _, h in self.gpus]
        return None if any(v is None for v in values) else [v / 1e3 for v in values if v is not None]

    def power_w(self) -> list[float] | None:
        values = [self.nvml.power_mw(h) for _, h in self.gpus]
        return None if any(v is None for v in values) else [v / 1e3 for v in values if v is not None]


@dataclass
class TraceCounter:
    """A recorded trace of a counter, replayed against a clock: for tests on hosts without a GPU. `trace` holds
    (seconds, joules per GPU) readings as a GPU reported them; a reading at time t is the last one at or before t."""

    trace: list[tuple[float, list[float]]]
    clock: Callable[[], float]
    uuids: tuple[str, ...] = ("GPU-trace",)
    method: str = COUNTER

    def energy_j(self) -> list[float] | None:
        now = self.clock()
        last = self.trace[0][1]
        for t, values in self.trace:
            if t > now:
                break
            last = values
        return list(last)

    def power_w(self) -> list[float] | None:
        return None


IDLE_BEFORE_GPU_USE = "before-gpu-use"
IDLE_GPU_CONTEXTS_OPEN = "gpu-contexts-open"
"""A record's `hardware.energy.idle_read`: whether its idle power was read before the run opened its GPUs, or with its
processes' CUDA contexts open, which keeps a GPU out of its lowest power state: the two differ by tens of watts
(site_src/docs/methodology.md, "Energy"). Records from before it was kept have none."""
IDLE_READ_UNSAID = {
    "torch": IDLE_GPU_CONTEXTS_OPEN,
    "mlx": IDLE_GPU_CONTEXTS_OPEN,
    "llamacpp": IDLE_BEFORE_GPU_USE,
    "vllm": IDLE_BEFORE_GPU_USE,
}
"""How each engine's runner read the idle power before its records said (`idle_read` is kept from 2026-12-07, commit
069b371): torch's and MLX's after their process had opened its CUDA context, llama.cpp's and vLLM's before loading
anything. Their records agree: on an H100, torch's read 114.8-138.3 W and MLX's 118.7-125.5 W, llama.cpp's 70.9-77.0 W
and vLLM's 70.3-74.2 W. A run page of such a record says how it was read, and that the record does not say."""


class Meter:
    """Joules per window for one process's GPUs. `start()` then `stop()` around each timed window (after the device
    has synchronized, like the clock); `stop()` returns the window's joules summed over the GPUs. With the power
    method a sampling thread integrates power between `start` and `stop`."""

    def __init__(
        self,
        counter: Counter,
        clock: Callable[[], float] = time.perf_counter,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.counter, self.clock, self.sleep = counter, clock, sleep
        self._start: list[float] | None = None
        self._integral = 0.0
        self._sampling: threading.Event | None = None
        self._thread: threading.Thread | None = None
        self.counter_update_s: float | None = None
        self.idle_power_w: float | None = None
        self.idle_before_gpu_use: bool | None = None

    @property
    def method(self) -> str:
        return self.counter.method

    def _read(self) -> float:
        values = self.counter.energy_j()
        if values is None:
            raise NvmlError("the energy counter stopped answering")
        return sum(values)

    def _sample(self, stop: threading.Event) -> None:
        last_t, last_p = self.clock(), sum(self.counter.power_w() or [0.0])
        while not stop.wait(POWER_SAMPLE_S):
            t, p = self.clock(), sum(self.counter.power_w() or [0.0])
            self._integral += (t - last_t) * (p + last_p) / 2
            last_t, last_p = t, p
        t, p = self.clock(), sum(self.counter.power_w() or [0.0])
        self._integral += (t - last_t) * (p + last_p) / 2

    def start(self) -> None:
        if self.method == COUNTER:
            self._start = [self._read()]
            return
        self._integral = 0.0
        self._sampling = threading.Event()
        self._thread = threading.Thread(target=self._sample, args=(self._sampling,), daemon=True)
        self._thread.start()

    def stop(self) -> float:
        if self.method == COUNTER:
            if self._start is None:
                raise RuntimeError("Meter.stop() without start()")
            joules = self._read() - self._start[0]
            self._start = None
            return joules
        if self._sampling is None or self._thread is None:
            raise RuntimeError("Meter.stop() without start()")
        self._sampling.set()
        self._thread.join()
        self._sampling = self._thread = None
        return self._integral

    def lap(self) -> float:
        """The joules since the last `start()` or `lap()`, and a new window from now (counter method: one reading
        serves as the end of one window and the start of the next)."""
        joules = self.stop()
        self.start()
        return joules

    def measure_idle(self, seconds: float = IDLE_WINDOW_S, *, before_gpu_use: bool | None = None) -> float:
        """The GPUs' power while this process does nothing on them, in watts; also the counter's update interval
        seen meanwhile (the shortest gap between two changes of its reading), which bounds a window's resolution.
        `before_gpu_use`: whether the run had yet to open its GPUs (True) or its processes held their CUDA contexts
        already (False), which the record says (`provenance`, `idle_read`)."""
        self.idle_before_gpu_use = before_gpu_use
        if self.method == COUNTER:
            t0, first = self.clock(), self._read()
            last_value, changes = first, []
            while (now := self.clock()) - t0 < seconds:
                value = self._read()
                if value != last_value:
                    changes.append(now)
                    last_value = value
                self.sleep(0.002)
            span = self.clock() - t0
            self.idle_power_w = (self._read() - first) / span
            gaps = [b - a for a, b in itertools.pairwise(changes)]
            self.counter_update_s = min(gaps) if gaps else None
        else:
            self.start()
            self.sleep(seconds)
            self.idle_power_w = self.stop() / seconds
        return self.idle_power_w

    def provenance(self) -> dict[str, object]:
        """What a record's `hardware.energy` says of how its joules were measured (its joules and the idle power are
        rows: `energy_j`, `idle_power_w`)."""
        out: dict[str, object] = {"method": self.method, "gpus": list(self.counter.uuids)}
        if self.counter_update_s is not None:
            out["counter_update_s"] = round(self.counter_update_s, 6)
        if self.idle_before_gpu_use is not None:
            out["idle_read"] = IDLE_BEFORE_GPU_USE if self.idle_before_gpu_use else IDLE_GPU_CONTEXTS_OPEN
        if self.method == SAMPLED:
            out["sample_interval_s"] = POWER_SAMPLE_S
        return out


def meter(count: int, env: str | None = None) -> Meter | None:
    """A meter over the `count` GPUs this process uses (CUDA_VISIBLE_DEVICES unless `env` is given); None where
    NVML is missing, sees fewer GPUs, or offers neither energy nor power."""
    nvml = Nvml.open()
    if nvml is None:
        return None
    try:
        gpus = visible(nvml.handles(), os.environ.get("CUDA_VISIBLE_DEVICES") if env is None else env, count)
        if len(gpus) < count or count < 1:
            return None
        counter = NvmlCounter(nvml, gpus)
        if counter.method == SAMPLED and counter.power_w() is None:
            return None
    except NvmlError:
        return None
    return Meter(counter)


class Repetitions:
    """The joules of each timed repetition of an inference test: `start()` just before its clock starts, `stop()`
    just after it stops (the device synchronized, as for the clock). With no meter it records nothing."""

    def __init__(self, meter: Meter | None) -> None:
        self.meter = meter
        self.joules: list[float] = []

    def start(self) -> None:
        if self.meter is not None:
            self.meter.start()

    def stop(self) -> None:
        if self.meter is not None:
            self.joules.append(self.meter.stop())

    def rows(self) -> list[dict[str, Any]]:
        """One `energy_j` row per repetition (its trial), beside that repetition's time."""
        return [
            dict(trial=rep, step=None, phase="steady", metric="energy_j", value=j, unit="J")
            for rep, j in enumerate(self.joules)
        ]


def for_inference(device: str, count: int, log: Callable[[str], None] | None = None) -> Meter | None:
    """A meter for an inference runner on `count` GPUs with its idle power read now, before it opens them (call it
    before the engine is imported or told to use the GPU); None off a GPU or without NVML."""
    if device != "cuda":
        return None
    m = meter(count)
    if m is not None:
        idle = m.measure_idle(before_gpu_use=True)
        if log is not None:
            log(f"idle power {idle:.1f} W ({m.method}) before any work")
    return m


def record_parts(m: Meter | None) -> tuple[dict[str, object], list[dict[str, Any]]]:
    """What a metered run adds to its record: `hardware.energy` (how) and the run-level `idle_power_w` row."""
    if m is None:
        return {}, []
    rows = []
    if m.idle_power_w is not None:
        rows.append(dict(trial=0, step=None, phase="run", metric="idle_power_w", value=m.idle_power_w, unit="W"))
    return {"energy": m.provenance()}, rows
