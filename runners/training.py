"""The training trial skeleton every training runner shares (PyTorch's, MLX's): calibrate, run the workload's trials,
turn each into record rows, stop on the time budget, and hand the record over (rank 0) whatever happens. An engine
brings only what differs: its calibration, one trial of training, and its record's configuration."""

from __future__ import annotations

import argparse
import os
import time
import traceback
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from runners import record, spec

INIT_DIR = Path(os.environ.get("FAIRFIGHT_CACHE", Path.home() / ".cache" / "fairfight")) / "init"
"""Where every training runner keeps the shared initial-weights files (`artifacts.initial_weights_file`)."""


def _parse_args(prog: str, doc: str | None, argv: list[str] | None) -> argparse.Namespace:
    """What the bench session passes every training runner alike (`prog` is the runner's module, the first line of
    `doc` its description)."""
    p = argparse.ArgumentParser(prog=prog, description=(doc or "").partition("\n")[0])
    p.add_argument("--suite", required=True, help="suite name or path to its TOML file")
    p.add_argument("--workload", required=True)
    p.add_argument("--variant", required=True)
    p.add_argument("--out", required=True, help="the JSON Lines file the bench reads the record from")
    p.add_argument("--run-id", required=True, help="id chosen by the bench session")
    p.add_argument("--steps", type=int, default=None, help="override the workload's step count (short checks)")
    p.add_argument("--micro-batch", type=int, default=None, help="override the workload's micro-batch")
    p.add_argument("--time-budget", type=float, default=None, help="override the per-trial time budget (seconds)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a variant setting (sweeps)")
    p.add_argument("--note", default=None, help="the operator's note on how this ran, kept in the record")
    return p.parse_args(argv)


class Plan(NamedTuple):
    """What one training runner was asked to run, checked before any engine is imported, and when it began."""

    args: argparse.Namespace
    started: datetime
    """The record's `started_at`: once the arguments are read, before the suite is."""
    suite: spec.Suite
    work: spec.Workload
    variant: spec.Variant
    overrides: dict[str, Any]
    steps: int
    micro_batch: int
    budget_s: float
    """Each trial's time budget: `--time-budget`, else the workload's."""


def plan(prog: str, doc: str | None, engine: str, argv: list[str] | None = None) -> Plan:
    """A training runner's arguments (`_parse_args`), and the suite, workload and variant (of `engine`) they name,
    the `--set` overrides, and the steps, micro-batch and time budget it runs; an unknown variant, another engine's,
    or `--steps` that leave no steady step are refused here."""
    args = _parse_args(prog, doc, argv)
    started = datetime.now(UTC)
    suite = spec.load_suite(args.suite)
    work = suite.workload(args.workload)
    variant = suite.variants.get(args.variant) or spec.load_variants().get(args.variant)
    if variant is None or variant.engine != engine:
        raise spec.SpecError(f"{args.variant!r} is not a variant of engine {engine!r}")
    steps = args.steps or work.steps
    if steps <= work.warmup_steps:
        raise SystemExit(f"--steps {steps} leaves no steady steps after {work.warmup_steps} warm-up steps")
    return Plan(args=args, started=started, suite=suite, work=work, variant=variant,
                overrides=spec.parse_overrides(args.set), steps=steps,
                micro_batch=args.micro_batch or work.micro_batch,
                budget_s=args.time_budget or work.time_budget_s)  # fmt: skip


class TrialOut(NamedTuple):
    """What one trial returns: step times, losses, run-level values, why it stopped early (None: it ran to the end),
    and the GPUs' joules per segment of its steps (`EnergySegments.segments`; empty where nothing was metered)."""

    times: list[float]
    losses: list[float]
    run_values: dict[str, float]
    stop: str | None
    energy: Sequence[tuple[int, float]] = ()


def printer(rank: int) -> Callable[[str], None]:
    """A runner's progress lines: printed by rank 0 only, and flushed at once (the bench session shows them as they
    come)."""

    def log(msg: str) -> None:
        if rank == 0:
            print(msg, flush=True)

    return log


Trial = Callable[[int], TrialOut]
"""One trial (its index)."""


def ends_segment(done: int, steps: int, warmup_steps: int, window_steps: int) -> bool:
    """Whether a trial's energy segment ends once `done` of its `steps` steps are issued: at each timing window's end
    (every `window_steps` steps, and the last step) and at the warm-up's end, so a segment is all warm-up or all
    steady (`EnergySegments`; torch's and MLX's training loops cut there)."""
    return done % window_steps == 0 or done in (steps, warmup_steps)


def steady_segment_ends(steps: int, warmup_steps: int, window_steps: int) -> list[int]:
    """The last steps (0-based) of a trial's steady energy segments as `ends_segment` cuts them: the steps a training
    record's steady `energy_j` rows name, every one of them (generator/derive/checks.py holds records to it)."""
    return [d - 1 for d in range(warmup_steps + 1, steps + 1) if ends_segment(d, steps, warmup_steps, window_steps)]


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


class EngineRecord(NamedTuple):
    """What an engine's training runner adds to its record (`writer`), asked for when the record is made."""

    version: str
    hardware: dict[str, Any]
    """What the engine probed (`provenance.hardware`, or its own); the GPUs' clocks mid-run and the energy meter's
    provenance are added to it."""
    packages: tuple[str, ...]
    """The packages whose versions the record names (`provenance.versions`)."""
    config: dict[str, Any]
    """The engine's own configuration keys (`record.config`'s `**extra`): its defaults, precision, launcher."""


def writer(ctx: dict[str, Any], engine: Callable[[dict[str, Any]], EngineRecord]) -> Write:
    """How a training runner hands its record over (`record.emit`), the same for every engine: `ctx` is the run as
    planned (`Plan`'s fields, and the `settings`, `world`, `fed`, `sampler` and `meter` of the run), `engine(ctx)`
    what the engine adds, and the configuration says where the run started (`record.initial_state`)."""

    def write(status: str, error: str | None, rows: list[dict[str, Any]], calibration: dict[str, Any] | None) -> str:
        work, meter, own = ctx["work"], ctx["meter"], engine(ctx)
        in_run = ctx["sampler"].result()  # provenance.GpuSampler: None where it got no answer
        hardware = own.hardware | ({"gpus_in_run": in_run} if in_run is not None else {})
        hardware |= {"energy": meter.provenance()} if meter is not None else {}
        run = record.run_columns(
            run_id=ctx["args"].run_id,
            engine_version=own.version,
            status=status,
            error=error,
            started=ctx["started"],
            hardware=hardware,
            config=record.config(
                ctx["suite"],
                work,
                ctx["variant"],
                steps=ctx["steps"],
                micro_batch=ctx["micro_batch"],
                world_size=ctx["world"],
                time_budget_s=ctx["args"].time_budget,
                overrides=ctx["overrides"],
                settings=ctx["settings"],
                note=ctx["args"].note,
                **record.initial_state(ctx, work, INIT_DIR),
                **own.config,
            ),
            packages=own.packages,
            calibration=calibration,
        )
        return record.emit(ctx["args"].out, run, rows + record.idle_power_rows(meter))

    return write
