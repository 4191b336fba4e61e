"""The training trial skeleton every training runner shares (PyTorch's, MLX's): calibrate, run the workload's trials,
turn each into record rows, stop on the time budget, and hand the record over (rank 0) whatever happens. An engine
brings only what differs: its calibration, one trial of training, and its record's configuration."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from runners import record, spec


class Plan(NamedTuple):
    """What one training runner was asked to run, checked before any engine is imported (a tuple, so that a runner
    unpacks it in one line)."""

    suite: spec.Suite
    work: spec.Workload
    variant: spec.Variant
    overrides: dict[str, Any]
    steps: int
    micro_batch: int


def plan(args: Any, engine: str) -> Plan:
    """The suite, workload and variant (of `engine`) a runner's arguments name, the `--set` overrides, and the steps
    and micro-batch it runs; an unknown variant, another engine's, or `--steps` that leave no steady step are
    refused here."""
    suite = spec.load_suite(args.suite)
    work = suite.workload(args.workload)
    variant = suite.variants.get(args.variant) or spec.load_variants().get(args.variant)
    if variant is None or variant.engine != engine:
        raise spec.SpecError(f"{args.variant!r} is not a variant of engine {engine!r}")
    steps = args.steps or work.steps
    if steps <= work.warmup_steps:
        raise SystemExit(f"--steps {steps} leaves no steady steps after {work.warmup_steps} warm-up steps")
    return Plan(suite=suite, work=work, variant=variant, overrides=spec.parse_overrides(args.set), steps=steps,
                micro_batch=args.micro_batch or work.micro_batch)  # fmt: skip


class TrialOut(NamedTuple):
    """What one trial returns: step times, losses, run-level values, why it stopped early (None: it ran to the end),
    and the GPUs' joules per segment of its steps (`EnergySegments.segments`; empty where nothing was metered)."""

    times: list[float]
    losses: list[float]
    run_values: dict[str, float]
    stop: str | None
    energy: Sequence[tuple[int, float]] = ()


Trial = Callable[[int], TrialOut]
"""One trial (its index)."""


class EnergySegments:
    """The GPUs' joules over a trial's steps, cut where the training loop already waits for the device (each window
    boundary) and at the end of the warm-up, so a segment is all warm-up or all steady. Rank 0 only, on a GPU with a
    meter (`runners.energy.meter`); `sync` waits for the device before each reading, as the clock does."""

    def __init__(self, meter: Any, sync: Callable[[], None]) -> None:
        self.meter, self.sync = meter, sync
        self.segments: list[tuple[int, float]] = []
        """(the segment's last step, 0-based; its joules)."""

    def begin(self) -> None:
        self.sync()
        self.meter.start()

    def boundary(self, done: int) -> None:
        """`done` steps have been issued: the segment since the last boundary ends at step `done - 1`."""
        self.sync()
        self.segments.append((done - 1, self.meter.lap()))

    def end(self) -> list[tuple[int, float]]:
        self.meter.stop()
        return self.segments


Write = Callable[[str, str | None, list[dict[str, Any]], dict[str, Any] | None], str]
"""Hand the record over: (status, error, rows, calibration) → its run id."""


def run_trials(
    *,
    work: spec.Workload,
    calibrate: Callable[[], dict[str, Any]],
    trial: Trial,
    write: Write,
    log: Callable[[str], None],
    rank: int,
    process_start: float,
    is_oom: Callable[[BaseException], bool] = lambda e: False,
) -> None:
    """Every trial of one variant on `work`; the record is handed over by rank 0, with status `timeout` when a trial
    stopped on its budget and, when an exception ends the run, `oom` or `failed` with its traceback (the exception
    is raised again, so the process fails too). A run that got no step in has one row: 0 steps completed."""
    rows: list[dict[str, Any]] = []
    status, error, calibration = "ok", None, None
    try:
        calibration = calibrate()
        log(record.calibration_line(calibration))
        for index in range(work.trials):
            times, losses, run_values, stop, energy = trial(index)
            run_values["steps_completed"] = float(len(times))
            if index == 0:  # the process's start-up: imports, model build, compilation outside the timed steps
                run_values["startup_s"] = time.perf_counter() - process_start - sum(times)
            rows += record.train_rows(index, times, losses, work.warmup_steps, run_values, energy)
            if stop:
                status, error = "timeout", stop
                log(f"  stopped: {stop}")
                break
    except Exception as e:  # a failure is a result: record it (rank 0), then fail the process
        status = "oom" if is_oom(e) else record.status_of_failure(f"{type(e).__name__}: {e}")
        error = "".join(traceback.format_exception(e))[-4000:]
        if not rows:
            rows.append(dict(trial=0, step=None, phase="run", metric="steps_completed", value=0.0, unit="steps"))
        if rank == 0:
            write(status, error, rows, calibration)
        raise
    if rank == 0:
        log(f"  recorded {write(status, error, rows, calibration)}")
