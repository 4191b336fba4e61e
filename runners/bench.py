"""Run a suite: each (workload, variant) in its own process group, one result file each, a summary at the end.

A variant that crashes, runs out of memory or overruns its time is a result too: if its runner did not write
a record, this module writes a failure record for it, and the suite goes on.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import secrets
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import NamedTuple, TypeVar

from runners import (
    arguments,
    bench_report,
    cpu_isa,
    engines,
    footprint,
    formats,
    layout,
    lifetime,
    metrics,
    nodes,
    preflight,
    provenance,
    record,
    schema,
    slurm_job,
    spec,
    store,
    streams,
)

GRACE_S = 300.0  # start-up, compilation and writing, on top of the workload's per-trial time budget
# Kept in every process we start, whatever the caller's environment says (see ../shared/ENVIRONMENT.md).
FORCED_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
LOG_LINE_BYTES = 8 << 10
"""Longest line of a runner's standard error passed to the log and kept for its failure record (the rest is cut)."""
LOG_SHOWN_BYTES = 64 << 20
"""Most of one runner's standard error passed to the log; what follows is read and dropped (its tail is still kept)."""
MAX_HANDOVER_BYTES = 1 << 30
"""Largest hand-over file the bench reads records from (a 10⁵-step record is about 25 MB of JSON)."""
Entry = TypeVar("Entry", spec.Inference, spec.Serving)


def add_cli_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", default=None, help="suite name (runners/suites/NAME.toml) or a path")
    p.add_argument("--workload", action="append", help="only this workload (repeatable)")
    p.add_argument("--variant", action="append", help="only this variant (repeatable)")
    p.add_argument("--steps", type=int, default=None, help="run fewer steps than the workload says (short checks)")
    p.add_argument("--micro-batch", type=int, default=None, help="override every workload's micro-batch")
    p.add_argument("--world-size", type=int, default=None, help="override the device count (1 for scaling)")
    p.add_argument(
        "--time-budget", type=float, default=None, metavar="S", help="override the per-trial time budget (seconds)"
    )
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a variant setting (sweeps)")
    p.add_argument(
        "--note",
        default=None,
        help="what a reader should know about how this ran (e.g. another job shared the host); kept in the record",
    )
    p.add_argument(
        "--env", action="append", metavar="KEY=VALUE", help="set an allowlisted variable (NCCL_*, ...) for a sweep"
    )
    p.add_argument("--data-dir", default="data", type=Path, help="where result files go (default: data)")
    p.add_argument(
        "--dry-run", action="store_true", help="check everything and print the plan (runs, settings, budgets); run none"
    )
    nodes.add_cli_args(p)
    formats.add_format_arg(p, "the summary at the end (progress goes to standard error unless text)")
    p.add_argument(
        "--variants",
        type=arguments.existing_file,
        default=None,
        metavar="FILE",
        help="variants of engines Fair Fight does not ship (engine 'external', runners/engines/external/runner.py): "
        "they join every training workload",
    )
    p.add_argument(
        "--wanted",
        type=arguments.existing_file,
        default=None,
        metavar="FILE",
        help="instead of --suite: run the wanted runs in FILE (`fairfight wanted --format json`, or the site's "
        "downloads/wanted.json) that this host's hardware fits, each as many times as it says",
    )


def new_run_id(workload: str, variant: str) -> str:
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{workload}-{variant}-{secrets.token_hex(3)}"


def runner_command(
    work: spec.Workload, variant: spec.Variant, args: argparse.Namespace, run_id: str, out: Path
) -> list[str]:
    """The command that runs one training variant, from the engine registry (which rejects unknown names)."""
    engine = _engine(variant, "train")
    cmd = [sys.executable, "-m"]
    if engine.torchrun:  # on one host, or over --nnodes through torchrun's rendezvous (runners/nodes.py)
        world = args.world_size or work.world_size
        cmd += ["torch.distributed.run", *nodes.torchrun_args(args, world, getattr(args, "rdzv_id", run_id)), "-m"]
    cmd.append(engine.train_runner or "")
    if variant.engine == "external":  # the contract's variants come from the file the bench was given
        cmd += ["--variants", str(args.variants), "--data-dir", str(args.data_dir)]
    cmd += [
        "--suite",
        args.suite,
        "--workload",
        work.name,
        "--variant",
        variant.name,
        "--out",
        str(out),
        "--run-id",
        run_id,
    ]
    if args.steps:
        cmd += ["--steps", str(args.steps)]
    if args.micro_batch:
        cmd += ["--micro-batch", str(args.micro_batch)]
    if args.time_budget:
        cmd += ["--time-budget", str(args.time_budget)]
    if args.note:
        cmd += ["--note", args.note]
    for item in args.set or []:
        cmd += ["--set", item]
    return cmd


def runner_env(device: str, variant: spec.Variant) -> dict[str, str]:
    """Variables one variant's runner needs beyond the session's (MLX on a Linux CPU: OpenBLAS preloaded), and on a
    CPU that advertises a set it may not run (AMX not proven by a real kernel on this boot, or a set the probe found
    faulty), the settings that keep oneDNN, torch and OpenBLAS off it (`cpu_isa.runtime_env`)."""
    engine = engines.get(variant.engine)
    guard = cpu_isa.runtime_env(cpu_isa.probe(), amx_proven=bool(cpu_isa.proven("AMX"))) if device == "cpu" else {}
    return guard | (engines.call(engine.launch_env, device) if engine.launch_env else {})


def _engine(variant: spec.Variant, kind: str) -> engines.Engine:
    try:
        return engines.get(variant.engine, kind)
    except KeyError as e:
        raise spec.SpecError(f"variant {variant.name!r}: {e.args[0]}") from None


def sweep_env(items: list[str] | None) -> dict[str, str]:
    """`--env KEY=VALUE` pairs; only allowlisted names, so that the record shows every variable a sweep set."""
    env = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or provenance.environment({key: value}) != {key: value}:
            raise spec.SpecError(f"--env {item!r}: expected KEY=VALUE with KEY in {provenance.ENV_PREFIXES}")
        env[key] = value
    return env


def _selected(work: spec.Workload, args: argparse.Namespace) -> bool:
    return not args.workload or work.name in args.workload


def _run_teeing_stderr(cmd: list[str], env: dict[str, str], limit_s: float) -> tuple[int | None, str]:
    """Run a runner in its own process group, streaming its stderr live and keeping the tail for the record; when
    it ends, every process it left behind (re-parented to the bench, a subreaper) ends too.

    Returns (exit code, stderr tail); the code is None when the group was killed for overrunning `limit_s`. Its
    standard error is read in bounded memory: lines cut at `LOG_LINE_BYTES`, at most `LOG_SHOWN_BYTES` shown.
    """
    env = env | {lifetime.BENCH_PID_ENV: str(os.getpid())}
    stops = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    signal.pthread_sigmask(signal.SIG_BLOCK, stops)  # a stop signal waits until the runner is known to the handler
    try:
        proc = subprocess.Popen(
            cmd,
            env=env,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=lifetime.die_with_parent(),  # the bench starts runners from its main thread
        )
        _RUNNING.append(proc)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)
    tail: collections.deque[str] = collections.deque(maxlen=200)

    def pump() -> None:
        shown = 0
        for line in streams.lines(proc.stderr, LOG_LINE_BYTES):  # type: ignore[arg-type]
            text = line.text() + (f" … ({line.length - len(line.data):,} more bytes)" if line.cut else "") + "\n"
            tail.append(text)
            if shown < LOG_SHOWN_BYTES:
                shown += len(text)
                sys.stderr.write(text if shown < LOG_SHOWN_BYTES else "… (the rest of its output is not shown)\n")

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        code: int | None = proc.wait(timeout=limit_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        code = None
        tail.append(f"killed after {limit_s:g} s (time budget plus {GRACE_S:g} s grace)\n")
    left = lifetime.end_descendants()
    if left:
        tail.append(f"it left {len(left)} process(es) running after it ended; the bench ended them\n")
    reader.join(timeout=10)
    _RUNNING.remove(proc)
    return code, "".join(tail)


_RUNNING: list[subprocess.Popen] = []
"""The runner the bench waits for (its process group is the runner's and everything it started)."""


def _end_runs_and_exit(signum: int, _frame: object) -> None:
    """On SIGINT, SIGTERM or SIGHUP: end the running runner's whole group (SIGTERM, then SIGKILL after 10 s),
    then exit. The run is cancelled: neither the runner nor the bench writes its file."""
    # no Popen.wait here: the main thread may hold Popen's wait lock (it is inside proc.wait) when the signal lands
    for proc in list(_RUNNING):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _group_alive(proc.pid):
            time.sleep(0.2)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # whatever of the group is left
    lifetime.end_descendants()  # and whatever left the group (setsid), re-parented to the bench
    name = signal.Signals(signum).name
    written = _record_slurm_ending(signum)
    said = f"the failure record says why: {written}" if written else "no file written"
    print(f"\nbench: {name}: the running run was cancelled and its processes ended; {said}", file=sys.stderr)
    os._exit(128 + signum)


_ENDING: list[tuple[argparse.Namespace, spec.Suite, spec.Workload, spec.Variant, str, datetime]] = []
"""While a run runs on the node that writes its failure record: `write_failure`'s arguments for it, and the run id and
start of its `Unfinished`."""


def _record_slurm_ending(signum: int) -> Path | None:
    """Under Slurm, a job cancelled or stopped at its time limit (the bench gets SIGTERM) leaves the running run's
    failure record with Slurm's reason, not a silent gap; a file this process had begun under data/ is removed first
    (store.write_run's `.tmp-*`), and a record already written stays as it is. None outside Slurm or when none."""
    if not _ENDING:
        return None
    try:
        reason = slurm_job.ended_by_slurm(signum)
        if reason is None:
            return None
        args, suite, work, variant, run_id, started = _ENDING[0]
        for partial in Path(args.data_dir, suite.name).glob(f"*/.tmp-*-{os.getpid()}.parquet"):
            partial.unlink(missing_ok=True)
        if store.find(args.data_dir, suite.name, run_id) is not None:
            return None
        return write_failure(args, suite, work, variant, Unfinished(run_id, started, "failed", reason))
    except Exception as e:  # a record is owed, but the handler must still end the bench
        print(f"bench: could not write the failure record of the run Slurm ended: {e}", file=sys.stderr)
        return None


def _group_alive(pgid: int) -> bool:
    """Whether any process of the group still runs (its leader, our child, is reaped here once it has exited)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pgid, os.WNOHANG)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _handle_signals() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _end_runs_and_exit)


def _classify(returncode: int | None, tail: str) -> str:
    if returncode is None:
        return "timeout"
    return record.status_of_failure(tail)


def _failure_provenance(device: str, count: int, package: str | None) -> tuple[dict[str, object], str]:
    """Hardware and engine version for a failure record, whatever state the host is in."""
    try:
        hw = provenance.hardware(device, count)
    except Exception as e:  # the hardware probe itself may be what is broken
        hw = {"device": device, "count": count, "accelerator": "unknown", "probe_error": str(e)}
    try:
        version = metadata.version(package) if package else "unknown"
    except metadata.PackageNotFoundError:
        version = "not installed"
    return hw, version


class Unfinished(NamedTuple):
    """A run its runner did not record, as its failure record tells it."""

    run_id: str
    started: datetime
    status: str
    error: str


def write_failure(
    args: argparse.Namespace, suite: spec.Suite, work: spec.Workload, variant: spec.Variant, unfinished: Unfinished
) -> Path:
    """A record for a variant whose runner died before writing its own."""
    world = args.world_size or work.world_size
    config = record.config_as_asked(
        suite,
        work,
        variant,
        args,
        world_size=world,
        overrides=spec.parse_overrides(args.set),
        sweep_env=sweep_env(args.env),
    )
    return _write_unfinished(args, unfinished, (work.device, world), variant, config, "steps")


def _write_unfinished(
    args: argparse.Namespace,
    unfinished: Unfinished,
    devices: tuple[str, int],
    variant: spec.Variant,
    config: dict[str, object],
    completed: str,
) -> Path:
    """The failure record of a run its runner did not record (training, or a test of inference or serving), on the
    `devices` it ran on (kind, count): none of its `completed` (`steps`, `tests`) done."""
    engine = engines.get(variant.engine)
    hw, version = _failure_provenance(*devices, engine.version_from)
    run = record.run_columns(
        run_id=unfinished.run_id,
        engine_version=version,
        status=unfinished.status,
        error=unfinished.error,
        started=unfinished.started,
        hardware=hw,
        config=config,
        packages=engine.packages,
    )
    rows = [dict(trial=0, step=None, phase="run", metric=f"{completed}_completed", value=0.0, unit=completed)]
    return store.write_run(args.data_dir, schema.make_table(run, rows))


def _why(path: Path, lines: int = 6) -> str:
    """What a run that did not finish recorded as its error (its last lines, indented), for the console: the record
    keeps all of it."""
    error = layout.read(path).column("error")[0].as_py() or "(no error text recorded)"
    tail = [line for line in str(error).splitlines() if line.strip()][-lines:]
    return "\n".join(f"      | {line[:300]}" for line in tail) + f"\n      (the whole record: {path})"


def summarize(path: Path, window_steps: int) -> dict[str, object]:
    """One summary line of a training run's file (`bench_report.COLUMNS`): status, steps completed, and its median
    steps/s over timing windows with its own 95% interval (`metrics.window_interval`, as the boards and `compare`
    have it), the host's load around it and its flags."""
    table = layout.read(path)
    t = table.select(["status", "phase", "metric", "value", "trial"]).to_pylist()
    times = [r["value"] for r in t if r["metric"] == "step_time_s" and r["phase"] == "steady"]
    steps = sum(r["value"] for r in t if r["metric"] == "steps_completed")
    rates = metrics.window_rates(times, window_steps)
    figure = metrics.window_interval(rates)[:3] if rates else (None, None, None)
    return _summary(table, t[0]["status"], figure, "steps/s", int(steps), "steps")


def _summary(
    table: object, status: str, figure: Sequence[float | None], unit: str, count: int, count_of: str, **more: object
) -> dict[str, object]:
    """A run's summary fields from its figure (median, low, high) and its record's host facts (`hardware.host_load`,
    `cpu_cores`), with its flags (`bench_report.flags_of`)."""
    hardware = json.loads(table.column("hardware")[0].as_py() or "{}")  # type: ignore[attr-defined]
    load = hardware.get("host_load") or {}
    processes = [x for x in (load.get("gpu_processes_start"), load.get("gpu_processes_end")) if x is not None]
    others = metrics.others_cores(load.get("cpu_busy_s"), load.get("cpu_own_s"), load.get("wall_s"))
    host = {
        "load_1m_start": load.get("load_1m_start"),
        "load_1m_end": load.get("load_1m_end"),
        "others_cpu_cores": None if others is None else round(others, 2),
        "busy_host": metrics.busy_host(
            load.get("cpu_busy_s"), load.get("cpu_own_s"), load.get("wall_s"), hardware.get("cpu_cores")
        ),
        "cpu_cores": hardware.get("cpu_cores"),
        "gpu_processes": max(processes) if processes else None,
    }
    value, low, high = figure
    return {"status": status, "figure": value, "low": low, "high": high, "unit": unit if value is not None else None,
            "count": count, "count_of": count_of, **more, **host,
            "flags": bench_report.flags_of(value, low, high, host)}  # fmt: skip


def _tests_todo(
    entries: Sequence[Entry], args: argparse.Namespace, suite: spec.Suite
) -> list[tuple[Entry, spec.Variant, list]]:
    """(entry, variant, tests) for every inference or serving entry and variant the filters keep (`--workload` takes
    an entry's name or a test's workload name)."""
    todo = []
    for entry in entries:
        tests = [t for t in entry.tests() if not args.workload or {entry.name, t.workload} & set(args.workload)]
        for v in entry.variants:
            if tests and (not args.variant or v in args.variant):
                todo.append((entry, suite.variants[v], tests))
    return todo


def run_suite(args: argparse.Namespace) -> int:
    """Check, then run every selected run; print the summary at the end in `--format`."""
    fmt = getattr(args, "format", "text")
    if getattr(args, "wanted", None) is not None:
        return _run_wanted(args)
    if args.suite is None:
        raise SystemExit("bench: give --suite NAME (runners/suites/NAME.toml or a path), or --wanted FILE")
    with bench_report.progress_to_stderr(fmt):
        done = _session(args)
    if isinstance(done, str):  # --dry-run: the plan
        sys.stdout.write(done)
        return 0
    suite, summary = done
    status = 0 if all(s["status"] == "ok" for s in summary) else 1
    sys.stdout.write(bench_report.render(fmt, suite, summary, status))
    return status


def _run_wanted(args: argparse.Namespace) -> int:
    """`--wanted FILE`: each wanted run this host fits (`wanted_runs.fitting`), as many times as it says, one session
    per run, the summaries printed together at the end (a dry run: each plan)."""
    from runners import wanted_runs

    given = [name for name in wanted_runs.SESSION_ONLY if getattr(args, name, None) is not None]
    if given:
        flags = ", ".join(f"--{n.replace('_', '-')}" for n in given)
        raise SystemExit(f"bench --wanted: each wanted run gives its own suite and settings; leave out {flags}")
    entries = wanted_runs.read(args.wanted)
    host = wanted_runs.this_host()
    todo = wanted_runs.fitting(entries, host)
    fmt = getattr(args, "format", "text")
    print(f"bench --wanted {args.wanted}: {len(todo)} of {len(entries)} wanted entries fit this host ({host})",
          file=sys.stderr)  # fmt: skip
    parser = argparse.ArgumentParser(prog="fairfight bench")
    add_cli_args(parser)
    summary: list[dict[str, object]] = []
    suites: list[str] = []
    for command, runs in todo.items():
        sub = wanted_runs.bench_args(command, parser, args)
        for _ in range(1 if args.dry_run else runs):
            with bench_report.progress_to_stderr(fmt):
                done = _session(sub)
            if isinstance(done, str):  # --dry-run: the plan of one run, as many times as it is wanted
                sys.stdout.write(f"{runs} × {command}\n" if fmt == "text" else "")
                sys.stdout.write(done)
                continue
            suites.append(done[0])
            summary += done[1]
    if args.dry_run:
        return 0
    status = 0 if all(s["status"] == "ok" for s in summary) else 1
    sys.stdout.write(bench_report.render(fmt, ", ".join(dict.fromkeys(suites)) or "wanted", summary, status))
    return status


def _session(args: argparse.Namespace) -> tuple[str, list[dict[str, object]]] | str:
    """The session itself: (suite, one summary line per run), or for a dry run its plan, as printed."""
    try:  # a harness commit every record would carry, checked before anything runs
        provenance.harness()
    except ValueError as e:
        raise SystemExit(str(e)) from None
    suite = spec.load_suite(args.suite, external=args.variants)
    todo = [
        (w, suite.variants[v])
        for w in suite.workloads
        if not args.workload or w.name in args.workload
        for v in w.variants
        if not args.variant or v in args.variant
    ]
    inference = _tests_todo(suite.inference, args, suite)
    serving = _tests_todo(suite.serving, args, suite)
    swept = sweep_env(args.env)
    # every mistake at once, before anything runs: names, settings (each value of a sweep), steps, the names records
    # would carry, packages
    preflight.check(suite, args, todo, inference, serving, swept)
    if args.dry_run:  # the plan is the output, in any format
        rows = preflight.plan_rows(args, todo, inference, serving)
        return preflight.render_plan(getattr(args, "format", "text"), suite.name, rows)
    # `--set key=a,b,c`: one run per value (per combination of values) of every selected training workload and variant
    sweep = [(w, v, point) for w, v in todo for point in spec.sweep_points(args.set)]
    env = os.environ | swept | FORCED_ENV | {"FAIRFIGHT_SWEEP_ENV": ",".join(sorted(swept))}
    _handle_signals()
    lifetime.become_subreaper()  # what a runner leaves behind, setsid or not, is re-parented here and ended
    if any(v.engine == "external" for _, v in todo):
        lifetime.not_inspectable()  # an outside engine runs as our user: /proc must not show it our files
    summary = []
    runs = len(sweep) + sum(len(tests) for *_, tests in inference + serving)
    print(f"suite {suite.name}: {runs} run(s) → {args.data_dir}/{suite.name}/", flush=True)
    for i, (work, variant, point) in enumerate(sweep, 1):
        # one value of each swept setting; a rendezvous id every node of a multi-node run derives alike
        run_args = argparse.Namespace(**(vars(args) | {"set": point, "rdzv_id": f"fairfight-{suite.name}-{i}"}))
        label = record.variant_label(variant.name, spec.parse_overrides(point), swept)
        run_id = new_run_id(work.name, variant.name)
        print(f"[{i}/{runs}] {work.name} · {label} ({variant.tier}) run {run_id}", flush=True)
        started, t0 = datetime.now(UTC), time.perf_counter()
        limit = work.trials * ((run_args.time_budget or work.time_budget_s) + spec.SETUP_ALLOWANCE_S) + GRACE_S
        identity = run_identity(suite.name, work.name, variant, label)
        watch = footprint.Watch(run_args.data_dir, provenance.REPO_ROOT) if variant.engine == "external" else None
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "records.jsonl"
            cmd = runner_command(work, variant, run_args, run_id, out)
            if watch is not None:
                watch.start()
            if nodes.writes_failures(
                run_args
            ):  # a job Slurm ends leaves this run's failure record (_end_runs_and_exit)
                _ENDING[:] = [(run_args, suite, work, variant, run_id, started)]
            before = provenance.host_load()
            code, err = _run_teeing_stderr(cmd, env | runner_env(work.device, variant), limit)
            host = provenance.host_load_around(before, provenance.host_load())
            _ENDING.clear()
            intruded = watch.finish() if watch is not None else []
            if intruded:
                refused = {run_id: _intrusion_text(intruded)}
                print("    " + refused[run_id], flush=True)
            else:
                refused = write_records(out, run_args.data_dir, {run_id: identity}, host)
            elsewhere = nodes.elsewhere(out) if nodes.multi(run_args) else None
        path = store.find(run_args.data_dir, suite.name, run_id)
        if path is None and (elsewhere or not nodes.writes_failures(run_args)):
            summary.append(_not_written_here(work.name, label, code, err, elsewhere, time.perf_counter() - t0))
            continue
        if path is None:
            status = "failed" if run_id in refused else _classify(code, err or "")
            error = _failure_text(refused.get(run_id), code, err)
            path = write_failure(run_args, suite, work, variant, Unfinished(run_id, started, status, error))
        line = summarize(path, work.window_steps)
        done = bench_report.line(
            workload=work.name, variant=label, **line, wall_s=round(time.perf_counter() - t0, 1), file=str(path)
        )
        summary.append(done)
        flags = "; ".join(done["flags"]) or "no flags"
        print(f"    {line['status']}: {line['count']} steps, {bench_report.display(done)} ({flags})", flush=True)
        if line["status"] != "ok":
            print(_why(path), flush=True)
    first = len(sweep) + 1  # a variant's tests run in one process: they are numbered together, after training's
    tests_todo: list[tuple[spec.Inference | spec.Serving, spec.Variant, list]] = [*inference, *serving]
    for entry, variant, tests in tests_todo:
        summary += run_tests(args, suite, entry, variant, tests, env, _numbered(first, tests, runs))
        first += len(tests)
    return suite.name, summary


def _numbered(first: int, tests: Sequence[object], runs: int) -> str:
    """`[5-8/12]`: where a variant's tests stand among every run of the session (`[5/12]` for one)."""
    last = first + len(tests) - 1
    return f"[{first}/{runs}]" if last == first else f"[{first}-{last}/{runs}]"


def _not_written_here(
    workload: str, label: str, code: int | None, err: str | None, elsewhere: dict | None, wall_s: float
) -> dict[str, object]:
    """The summary line of a multi-node run whose record this node does not write: another node's bench writes it
    (where global rank 0 ran), or, when no record was made, node 0's bench writes its failure record."""
    status = "ok" if code == 0 else _classify(code, err or "")
    if elsewhere:
        where = f"written by {elsewhere.get('written_by')}: run {elsewhere.get('run_id')}"
        print(f"    {status} here; the run's record is {where}", flush=True)
    else:
        where = "none here: node 0 writes a run's failure record"
        print(f"    {status}: no record from this node ({where})", flush=True)
        tail = [line for line in (err or "").splitlines() if line.strip()][-6:]
        print("\n".join(f"      | {line[:300]}" for line in tail), flush=True)
    return bench_report.line(workload=workload, variant=label, status=status, wall_s=round(wall_s, 1), file=where,
                             flags=[])  # fmt: skip


def run_tests(
    args: argparse.Namespace,
    suite: spec.Suite,
    entry: spec.Inference | spec.Serving,
    variant: spec.Variant,
    tests: list,
    env: dict[str, str],
    at: str = "",
) -> list[dict[str, object]]:
    """One variant's tests of an inference or serving entry in one runner process (the model loads once), with the
    engine's own benchmark tool on the same weights and settings: inside the runner (vLLM's runs its bench tools
    beside each test) or after it (`tool_runner`: llama-bench, mlx_lm.benchmark). A test the runner did not record
    gets a failure record."""
    kind = "serving" if isinstance(entry, spec.Serving) else "inference"
    engine = _engine(variant, kind)
    summarize = summarize_serving if kind == "serving" else summarize_test
    inside = engine.tool if engine.tool_runner is None else None  # the runner records its tool's runs too
    # vLLM's CPU backend takes the AMX guard too (its oneDNN kernels pick what the CPU advertises)
    env = env | runner_env(entry.device, variant)
    limit = entry.time_budget_s + GRACE_S
    stamp = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}~{secrets.token_hex(3)}"
    print(f"{at + ' ' if at else ''}[{entry.name}] {variant.name} ({variant.tier}): {len(tests)} test(s)", flush=True)
    # vLLM lives in an environment of its own on CPU machines (runners/engines/vllm/env.py); elsewhere, in this one
    python = (os.environ.get(engine.python_env) if engine.python_env else None) or sys.executable
    common = ["--suite", args.suite, f"--{kind}", entry.name, "--variant", variant.name, "--run-stamp", stamp]
    common += [a for t in tests for a in ("--workload", t.workload)]
    started, t0 = datetime.now(UTC), time.perf_counter()
    expected = _test_ids(stamp, suite, variant, tests)
    expected |= _test_ids(stamp, suite, variant, tests, inside) if inside else {}
    note = ["--note", args.note] if args.note else []
    runner = [python, "-m", engine.test_runner or "", *common, *note]
    code, err, refused = _runner_records(runner, env, limit, args.data_dir, expected, "tests.jsonl")
    ran, lines = TestsRan(stamp, started, code, err, refused), []
    for test in tests:
        path = _test_record(args, suite, entry, test, variant, ran)
        lines.append(bench_report.line(workload=test.workload, variant=variant.name, **summarize(path),
                                       wall_s=round(time.perf_counter() - t0, 1), file=str(path)))  # fmt: skip
        lines += _tool_line(args, suite, test, variant, stamp, inside, summarize, t0) if inside else []
    tool, checker = engine.tool, engine.tool_runner
    if checker is None or tool is None:
        return lines
    if engine.tool_needs_env and not os.environ.get(engine.tool_needs_env):
        print(f"    no {engine.tool_needs_env} set: the {tool} cross-check is skipped", flush=True)
        return lines
    # the cross-check (llama-bench when one built from the same source is there; mlx_lm.benchmark comes with mlx-lm)
    checked = _test_ids(stamp, suite, variant, tests, tool)
    code, _, _ = _runner_records([python, "-m", checker, *common], env, limit, args.data_dir, checked, "tool.jsonl")
    for test in tests:
        lines += _tool_line(args, suite, test, variant, stamp, tool, summarize, t0)
    if code != 0:
        print(f"    {tool} cross-check failed (exit {code}); the runner's records stand", flush=True)
    return lines


def _test_ids(
    stamp: str, suite: spec.Suite, variant: spec.Variant, tests: list, tool: str | None = None
) -> dict[str, dict[str, str]]:
    """The run id of each test's record, the runner's (or with `tool`, the engine's own tool's), and what the record
    must say it is (`run_identity`)."""
    label = f"{variant.name}-{tool}" if tool else variant.name
    return {
        record.run_id_of_test(stamp, t.workload, label): run_identity(suite.name, t.workload, variant, tool=tool)
        for t in tests
    }


def _runner_records(
    cmd: list[str], env: dict[str, str], limit_s: float, data_dir: Path, expected: dict[str, dict[str, str]], name: str
) -> tuple[int | None, str, dict[str, str]]:
    """Run a runner (`cmd`, given `--out` and a hand-over file called `name`) and write the records it handed over
    that the bench `expected` (`write_records`, with the host's load around it): its exit status, the tail of its
    standard error, and why records were refused (by run id)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / name
        before = provenance.host_load()
        code, err = _run_teeing_stderr([*cmd, "--out", str(out)], env, limit_s)
        refused = write_records(out, data_dir, expected, provenance.host_load_around(before, provenance.host_load()))
    return code, err, refused


def _tool_line(
    args: argparse.Namespace,
    suite: spec.Suite,
    test: spec.InferenceTest | spec.ServingTest,
    variant: spec.Variant,
    stamp: str,
    tool: str,
    summarize: Callable[[Path], dict[str, object]],
    t0: float,
) -> list[dict[str, object]]:
    """The summary line of the engine's own tool's record of `test`, where there is one."""
    found = store.find(args.data_dir, suite.name, record.run_id_of_test(stamp, test.workload, f"{variant.name}-{tool}"))
    if found is None:
        return []
    return [bench_report.line(workload=test.workload, variant=f"{variant.name} ({tool})", **summarize(found),
                              wall_s=round(time.perf_counter() - t0, 1), file=str(found))]  # fmt: skip


def summarize_serving(path: Path) -> dict[str, object]:
    """One summary line of a serving test's file: offline, the median output tokens/s over repetitions with its own
    95% interval (`metrics.repetition_interval`); a served point, its output tokens/s over its requests (no interval)
    with its median TTFT and TPOT."""
    table = layout.read(path)
    t = table.select(["status", "trial", "step", "metric", "value"]).to_pylist()
    status = t[0]["status"]
    rates = [r["value"] for r in t if r["metric"] == "output_tokens_per_s"]
    if rates:
        found = metrics.repetition_interval(rates)
        figure = found[:3] if found else (None, None, None)
        return _summary(table, status, figure, "output tokens/s", len(rates), "repetitions")
    if any(r["metric"] == "duration_s" for r in t):
        requests, duration = metrics.requests_from_rows(t)
        m = metrics.serving_metrics(requests, duration, float("inf"), float("inf"))
        if "median_ttft_ms" in m:
            latencies = {"median_ttft_ms": m["median_ttft_ms"], "median_tpot_ms": m.get("median_tpot_ms")}
            figure = (m["output_tokens_per_s"], None, None)
            return _summary(table, status, figure, "output tokens/s", int(m["completed_requests"]), "requests",
                            **latencies)  # fmt: skip
    return _summary(table, status, (None, None, None), "output tokens/s", 0, "requests")


def run_identity(suite: str, workload: str, variant: spec.Variant, label: str | None = None, tool: str | None = None
                 ) -> dict[str, str]:  # fmt: skip
    """What a record of a run the bench started must say it is: the bench, not the runner, decides a record's suite,
    workload, engine, variant, tier and origin (`tool`: the engine's own tool's record, imported beside it)."""
    return {
        "suite": suite,
        "workload": workload,
        "engine": tool or variant.engine,
        "variant": label or variant.name,
        "tier": variant.tier,
        "origin": "imported" if tool else "measured",
    }


def _intrusion_text(found: list[str]) -> str:
    listed = ", ".join(found[:20]) + (f" (and {len(found) - 20} more)" if len(found) > 20 else "")
    return (
        f"its record was refused: while it ran, files appeared or changed outside its own folder that the bench did "
        f"not write: {listed}. A new file under the data folder was set aside under a hidden .quarantined- name; "
        "check the rest (git status) and remove what you did not make"
    )


def write_records(
    out: Path, data_dir: Path, expected: dict[str, dict[str, str]], host: dict[str, object] | None = None
) -> dict[str, str]:
    """Write the result file of every record a runner handed over (`record.emit`: a JSON line each) whose run id is
    one the bench gave it (`expected`, with what the record must say it is: `run_identity`): the bench alone writes
    result files, and decides whose they are. A line the store refuses, for a run the bench did not start, or that
    claims another engine, variant, workload, tier or origin than the bench started, is reported and skipped; two
    records of one run (a runner hands over one: another process wrote to its file) are both refused. A run without
    a written record then gets a failure record, which says why its record was refused (returned: reason by run
    id). `host`: the host's load around the runner (`provenance.host_load_around`), kept in each record's hardware as
    `host_load` (the runner cannot see the host before it started)."""
    written: dict[str, Path] = {}
    refused: dict[str, str] = {}
    lines, problem = _handover_lines(out)
    if problem:
        print(f"    {out.name}: not read ({problem})", flush=True)
        return {run_id: f"its record was refused ({problem})" for run_id in expected}
    parsed: list[tuple[int, object, str | None]] = []
    for i, line in enumerate(lines, 1):
        try:
            line_obj: object = json.loads(line)
        except (ValueError, RecursionError) as e:
            line_obj = e
        head = line_obj.get("run") if isinstance(line_obj, dict) else None
        run_id = head.get("run_id") if isinstance(head, dict) else None
        parsed.append((i, line_obj, run_id if isinstance(run_id, str) else None))
    copies = collections.Counter(run_id for _, _, run_id in parsed)
    for i, line_obj, run_id in parsed:
        try:
            if isinstance(line_obj, Exception):
                raise line_obj
            if run_id not in expected:
                raise ValueError(f"run id {run_id!r} is not one this session started")
            if copies[run_id] > 1:
                raise ValueError(
                    f"{copies[run_id]} records of {run_id!r} in its runner's hand-over file, which holds one: another "
                    "process wrote to it, so none is written"
                )
            run, rows = _record_of(line_obj)  # type: ignore[arg-type]
            if host is not None and isinstance(run.get("hardware"), str):
                run["hardware"] = json.dumps(json.loads(run["hardware"]) | {"host_load": host}, sort_keys=True)
            for key, want in expected[run_id].items():
                if run.get(key) != want:
                    raise ValueError(
                        f"field {key!r}: {str(run.get(key))[:100]!r}, but the bench started this run as {want!r}: a "
                        "runner's rows never become another engine's, variant's or workload's record"
                    )
            written[run_id] = store.write_run(data_dir, schema.make_table(run, rows))
        except Exception as e:  # one bad line never costs the records after it, nor the rest of the suite
            print(f"    {out.name} line {i}: not written ({type(e).__name__}: {str(e)[:2000]})", flush=True)
            if run_id in expected and run_id not in written:
                refused.setdefault(run_id, f"its record was refused ({type(e).__name__}: {str(e)[:2000]})")
    return refused


def _handover_lines(out: Path) -> tuple[list[bytes], str | None]:
    """The lines of a runner's hand-over file, read only if it is a regular file of bounded size (a link or a FIFO
    put in its place is never followed or opened); ([], why) otherwise, ([], None) when there is none."""
    try:
        st = os.lstat(out)
    except FileNotFoundError:
        return [], None
    if not stat.S_ISREG(st.st_mode):
        return [], "its hand-over file is not a regular file: something else put it there"
    if st.st_size > MAX_HANDOVER_BYTES:
        return [], f"its hand-over file holds {st.st_size:,} bytes, more than the {MAX_HANDOVER_BYTES:,} read"
    fd = os.open(out, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as f:
        return f.read(MAX_HANDOVER_BYTES + 1).splitlines(), None


def _failure_text(refused: str | None, code: int | None, err: str | None) -> str:
    """A failure record's error: why the bench refused the runner's record, if it did, then the runner's last output
    and, on the last line (which the boards show), how it ended: its exit status, named where a signal ended it."""
    how = f"runner exited with {code}"
    if code is not None and code < 0:
        try:
            how += f" (killed by {signal.Signals(-code).name})"
        except ValueError:
            how += " (killed by a signal)"
    tail = (err or "").strip()[-3000:]
    ended = f"{tail}\n{how}" if tail else how
    return f"{refused}; {ended}" if refused else ended


def _record_of(line: dict) -> tuple[dict, list[dict]]:
    """A test's record as the llama.cpp runner wrote it (JSON: times as ISO 8601 text), ready for the schema."""
    run = dict(line["run"])
    for key in ("started_at", "ended_at"):
        run[key] = datetime.fromisoformat(run[key])
    return run, line["rows"]


class TestsRan(NamedTuple):
    """What the bench knows of the runner process of one variant's tests once it has ended."""

    stamp: str
    """The stamp of the tests' run ids (`record.run_id_of_test`)."""
    started: datetime
    code: int | None
    """Its exit status (None: stopped at its time limit)."""
    err: str
    """The tail of its standard error."""
    refused: dict[str, str]
    """Why the bench refused a record it handed over, by run id (`write_records`)."""


def _test_record(
    args: argparse.Namespace,
    suite: spec.Suite,
    entry: spec.Inference | spec.Serving,
    test: spec.InferenceTest | spec.ServingTest,
    variant: spec.Variant,
    ran: TestsRan,
) -> Path:
    """A test's record: the one its runner handed over, else the failure record written here, which says why, with
    the engine's own test configuration (the registry's `failure_config`) and no tests completed."""
    run_id = record.run_id_of_test(ran.stamp, test.workload, variant.name)
    path = store.find(args.data_dir, suite.name, run_id)
    if path is None:
        status = "failed" if run_id in ran.refused else _classify(ran.code, ran.err)
        error = _failure_text(ran.refused.get(run_id), ran.code, ran.err)
        engine = engines.get(variant.engine)
        devices = int(variant.settings.get(engine.devices_setting, 1)) if engine.devices_setting else 1
        config = engines.call(engine.failure_config or "", suite, entry, test, variant, args.note)
        unfinished = Unfinished(run_id, ran.started, status, error)
        path = _write_unfinished(args, unfinished, (entry.device, devices), variant, config, "tests")
        print(f"    {test.workload}: {status}\n{_why(path)}", flush=True)
    return path


def summarize_test(path: Path) -> dict[str, object]:
    """One summary line of an inference test's file: status, repetitions, and the median tokens/s over them with its
    own 95% interval (`metrics.repetition_interval`, as the boards and `compare` have it)."""
    table = layout.read(path)
    t = table.select(["status", "metric", "value"]).to_pylist()
    rates = [r["value"] for r in t if r["metric"] == "tokens_per_s"]
    found = metrics.repetition_interval(rates)
    figure = found[:3] if found else (None, None, None)
    return _summary(table, t[0]["status"], figure, "tokens/s", len(rates), "repetitions")
