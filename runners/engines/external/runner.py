"""Engines Fair Fight does not ship, benchmarked through a contract: any command that reads a run's spec as JSON
on its standard input and writes its measurements as JSON Lines on its standard output.

    python -m runners bench --suite cpu-smoke --variants my-engines.toml --variant my-engine

`my-engines.toml` holds `[variants.NAME]` tables with `engine = "external"` and `settings.command` (the command
line, a list of strings); the other settings are the engine's own and are passed on in the spec. The bench session
starts this module as the variant's runner; it starts the command as an untrusted program (`untrusted`: its own
folder, environment and session, bounded output), gives it the spec, reads its lines as they come, checks them, and
hands over one ordinary record (provenance, hardware and configuration added here, never taken from the engine).

The spec (one JSON object): `contract` (1), `run_id`, `suite`, `workload` (the workload as run: steps,
warmup_steps, window_steps, micro_batch, seq_len, world_size, device, seed, time_budget_s, ...), `model` (its
shapes and parameter counts) and `variant` (`name`, `settings`).

Each output line is one JSON object, either a measurement row
    {"trial": 0, "step": 12, "phase": "steady", "metric": "step_time_s", "value": 0.0213, "unit": "s"}
(phase `warmup` for steps before the workload's `warmup_steps`, `steady` after, `run` with `step` null for
run-level values; metrics with fixed meanings are listed in runners/schema.py, METRIC_RULES, and a training run
reports only `STEP_METRICS` and `RUN_METRICS` of them) or the engine's version, once:
    {"engine_version": "sparse-first 0.3.1"}
Anything on standard error is passed through to the bench log. The command's exit status 0 means it finished;
`steps_completed` is counted here from its step times (one it writes must agree).

Nothing is lost: a line that is not valid JSON, not one of these objects, a row that breaks the contract
(`contract_problem`) or that the result-file checks refuse is kept verbatim (cut to `KEPT_CHARS`) in the record
(`config.external.rejected_lines`) and named in its error (`line N, field F: ...`), and the record's status becomes
`failed`; rows that passed are kept. A command that exits non-zero, is killed, writes too much, or exits 0 without
every step of the workload also gives a `failed` record with the rows it wrote so far.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runners import arguments, bounds, lifetime, provenance, record, schema, spec, streams
from runners.engines.external import untrusted

CONTRACT = 1
ROW_KEYS = ("trial", "step", "phase", "metric", "value", "unit")
STOP_GRACE_S = 60.0
"""Beyond its trials' time budgets (or one budget, if shorter), before the command is stopped (the bench session
allows more)."""
KEPT_LINES = 200
"""Rejected lines kept verbatim in a record (and their count beyond)."""
KEPT_CHARS = 300
"""Characters kept of each rejected line (the record's config has a size limit: runners/bounds.py)."""
STEP_METRICS = ("step_time_s", "loss")
RUN_METRICS = ("steps_completed", "startup_s", "setup_s", "warmup_s", "peak_mem_gib", "peak_rss_gib")
"""The metrics of fixed meaning (runners/schema.py METRIC_RULES) a training run reports, per step and per run; an
outside engine's others of fixed meaning (`steps_per_s`, `tokens_per_s`, ...) are refused: its speed comes from its
step times, which the site times into windows itself. Metrics without a fixed meaning are kept as written."""


def run_spec(suite: spec.Suite, work: spec.Workload, variant: spec.Variant, run_id: str, workload: dict) -> dict:
    """What the command reads on its standard input."""
    model = suite.models[work.model]
    return {
        "contract": CONTRACT,
        "run_id": run_id,
        "suite": suite.name,
        "workload": workload,
        "model": dataclasses.asdict(model)
        | {"total_params": model.total_params, "non_embedding_params": model.non_embedding_params},
        "variant": {"name": variant.name, "settings": variant.settings},
    }


def parse_line(n: int, line: streams.Line | str | bytes) -> dict[str, Any]:
    """One output line as a row or a version object; ValueError names the line and the field at fault. Any line at
    all gets one of the two answers: cut, not UTF-8, nested past any depth, numbers of any size."""
    if not isinstance(line, streams.Line):
        data = line.encode() if isinstance(line, str) else line
        line = streams.Line(data.rstrip(b"\n"), len(data.rstrip(b"\n")))
    if line.cut:
        raise ValueError(f"line {n}: {line.length:,} bytes, longer than the {untrusted.MAX_LINE_BYTES:,} a line may be")
    try:
        text = line.data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"line {n}: not UTF-8 text (byte {e.start})") from None
    try:
        obj = bounds.parse(text)  # strict JSON: no repeated keys, no NaN or Infinity
    except RecursionError:
        raise ValueError(f"line {n}: not JSON (nested too deeply)") from None
    except ValueError as e:  # JSONDecodeError, a repeated key, an integer of thousands of digits
        raise ValueError(f"line {n}: not JSON ({getattr(e, 'msg', e)})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"line {n}: a JSON object was expected, not {type(obj).__name__}")
    if set(obj) == {"engine_version"}:
        version = obj["engine_version"]
        limit = bounds.TEXT_LIMITS["engine_version"]
        if not isinstance(version, str) or not version or len(version) > limit:
            raise ValueError(f"line {n}, field 'engine_version': a non-empty string of at most {limit} characters")
        return obj
    missing, unknown = sorted(set(ROW_KEYS) - set(obj)), sorted(set(obj) - set(ROW_KEYS))
    if missing or unknown:
        field = (missing or unknown)[0]
        raise ValueError(f"line {n}, field {field[:80]!r}: {'missing' if missing else 'unknown'}; a row has {ROW_KEYS}")
    for key, types in (("trial", int), ("step", (int, type(None))), ("value", (int, float))):
        if isinstance(obj[key], bool) or not isinstance(obj[key], types):
            raise ValueError(f"line {n}, field {key!r}: {_show(obj[key])} is not a number of the right kind")
        if key != "value" and obj[key] is not None and not -(2**31) <= obj[key] < 2**31:
            raise ValueError(f"line {n}, field {key!r}: {obj[key]} does not fit the record's 32-bit integer")
    try:
        value = float(obj["value"])
    except OverflowError:
        raise ValueError(f"line {n}, field 'value': {_show(obj['value'])} is beyond any float") from None
    for key in ("phase", "metric", "unit"):
        if not isinstance(obj[key], str):
            raise ValueError(f"line {n}, field {key!r}: {_show(obj[key])} is not a string")
    return obj | {"value": value}


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "…"


def contract_problem(row: dict[str, Any], workload: dict[str, Any]) -> str | None:
    """Why a well-formed row breaks the contract for this workload (None when it keeps it): only a training run's
    metrics of fixed meaning, steps and trials within the workload's, each step in the phase the workload puts it
    in (warm-up before `warmup_steps`, steady after), run-level values with no step."""
    metric, step, trial, phase = row["metric"], row["step"], row["trial"], row["phase"]
    if metric in schema.METRIC_RULES and metric not in STEP_METRICS + RUN_METRICS:
        return (
            f"field 'metric': {metric!r} is not a training run's (an outside engine reports {STEP_METRICS} per step "
            f"and {RUN_METRICS} per run; its steps/s come from its step times)"
        )
    trials, steps, warmup = workload["trials"], workload["steps"], workload["warmup_steps"]
    if not 0 <= trial < trials:
        return f"field 'trial': {trial}, but the workload runs trials 0 to {trials - 1}"
    if step is None:
        if phase != "run":
            return f"field 'phase': {phase!r} for a value with no step (run-level values have phase 'run')"
        if metric in STEP_METRICS:
            return f"field 'step': null, but {metric!r} is a value per step"
        return None
    if metric in RUN_METRICS:
        return f"field 'step': {step}, but {metric!r} is a value per run (step null, phase 'run')"
    if not 0 <= step < steps:
        return f"field 'step': {step}, but the workload runs steps 0 to {steps - 1}"
    expected = "warmup" if step < warmup else "steady"
    if phase != expected:
        return f"field 'phase': {phase!r}, but step {step} is a {expected} step ({warmup} warm-up steps)"
    return None


def judged_rows(
    rows: list[tuple[int, dict[str, Any]]], workload: dict[str, Any]
) -> tuple[list[tuple[int, dict[str, Any]]], list[tuple[int, str]]]:
    """The rows that keep the contract (`contract_problem`, and one value per trial, step and metric), and (line,
    problem) for each that does not."""
    kept, refused, seen = [], [], set()
    for n, row in rows:
        problem = contract_problem(row, workload)
        key = (row["trial"], row["step"], row["metric"])
        if problem is None and key in seen:
            problem = f"a second {row['metric']!r} of trial {row['trial']}, step {row['step']}"
        if problem is not None:
            refused.append((n, f"line {n}, {problem}" if problem.startswith("field") else f"line {n}: {problem}"))
            continue
        seen.add(key)
        kept.append((n, row))
    return kept, refused


def counted_steps(
    rows: list[tuple[int, dict[str, Any]]], trials: int
) -> tuple[list[dict[str, Any]], list[tuple[int, str]]]:
    """`steps_completed` as the bench counts it, per trial, from the trial's step times: an engine's own
    `steps_completed` row must say the same, or it is refused. Returns the other rows with the counted ones
    appended (one per trial with a step time, or trial 0's zero), and the refusals."""
    counts = Counter(r["trial"] for _, r in rows if r["metric"] == "step_time_s")
    out, refused = [], []
    for n, row in rows:
        if row["metric"] != "steps_completed":
            out.append(row)
        elif row["value"] != counts.get(row["trial"], 0):
            refused.append(
                (n, f"line {n}, field 'value': steps_completed {row['value']:g}, but trial {row['trial']} has "
                    f"{counts.get(row['trial'], 0)} step time(s): the bench counts the steps from them")
            )  # fmt: skip
    for trial in sorted(counts) or [0]:
        if trial < trials:
            out.append(
                dict(trial=trial, step=None, phase="run", metric="steps_completed", value=float(counts.get(trial, 0)),
                     unit="steps")
            )  # fmt: skip
    return out, refused


def checked_rows(rows: list[tuple[int, dict]], run: dict) -> tuple[list[tuple[int, dict]], list[tuple[int, str]]]:
    """The rows the result-file checks accept (with their line numbers), and (line, problem) for each they refuse."""
    refused: list[tuple[int, str]] = []
    while rows:
        problems = schema.check_table(schema.make_table(run, [r for _, r in rows]))
        bad = {p.row: p for p in problems if p.row is not None}
        if not bad:
            break
        refused += [(rows[i][0], f"line {rows[i][0]}, field {p.field!r}: {p.message}") for i, p in bad.items()]
        rows = [r for i, r in enumerate(rows) if i not in bad]
    return rows, refused


def check_settings(variant: spec.Variant, overrides: dict[str, Any]) -> dict[str, Any]:
    """`--set` changes one of the variant's own settings (its engine reads them in its spec), never its command (the
    program that runs comes from the variants file alone). Raises `spec.SpecError`; the bench's pre-flight calls it
    too (`Engine.check_settings`)."""
    if "command" in overrides:
        raise spec.SpecError(f"variant {variant.name!r}: --set cannot change its command (edit its variants file)")
    unknown = sorted(set(overrides) - set(variant.settings))
    if unknown:
        raise spec.SpecError(f"variant {variant.name!r}: no setting {unknown[0]!r} (its own: "
                             f"{', '.join(sorted(set(variant.settings) - {'command'}))})")  # fmt: skip
    return overrides


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m runners.engines.external.runner", description=(__doc__ or "").partition("\n")[0]
    )
    p.add_argument("--suite", required=True)
    p.add_argument(
        "--variants", required=True, type=arguments.existing_file, help="the file of outside engines' variants"
    )
    p.add_argument("--workload", required=True)
    p.add_argument("--variant", required=True)
    p.add_argument("--out", required=True, type=Path, help="the JSON Lines file the bench reads the record from")
    p.add_argument("--run-id", required=True)
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--micro-batch", type=int, default=None)
    p.add_argument("--time-budget", type=float, default=None)
    p.add_argument("--note", default=None)
    p.add_argument("--data-dir", type=Path, default=None, help="the bench's data folder (the engine sees it read-only)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="one of the variant's own settings, changed")
    args = p.parse_args(argv)
    lifetime.not_inspectable()  # the engine runs as our user: /proc must not show it our paths and files
    suite = spec.load_suite(args.suite, external=args.variants)
    work, variant = suite.workload(args.workload), suite.variants[args.variant]
    overrides = check_settings(variant, spec.parse_overrides(args.set))
    variant = dataclasses.replace(variant, settings=variant.settings | overrides)  # the engine reads them in its spec
    config = record.config_as_asked(suite, work, variant, args, overrides=overrides)
    config["command"] += f" --variants {args.variants}"
    config["external_variants"] = str(args.variants)  # what a run page's reproduce command names (and quotes)
    workload = config["workload"]
    command = untrusted.resolved_command(variant.settings["command"], args.variants.resolve().parent)
    if command and command[0] == "python":  # the interpreter running the bench, whatever PATH holds
        command[0] = sys.executable
    started = datetime.now(UTC)
    print(f"    starting {' '.join(variant.settings['command'])}", file=sys.stderr, flush=True)
    rows: list[tuple[int, dict]] = []
    texts: dict[int, str] = {}
    rejected: list[tuple[int, str, str]] = []  # line number, text, problem
    versions: list[str] = []

    def on_line(n: int, line: streams.Line) -> bool:
        """Judge one output line as it comes; True when it is a step row (the budget clock starts)."""
        try:
            obj = parse_line(n, line)
        except ValueError as e:
            rejected.append((n, line.text(KEPT_CHARS), str(e)))
            return False
        if "engine_version" in obj:
            if versions and obj["engine_version"] != versions[0]:
                rejected.append((n, line.text(KEPT_CHARS), f"line {n}, field 'engine_version': a second version"))
            versions.append(obj["engine_version"])
            return False
        texts[n] = line.text(KEPT_CHARS)
        rows.append((n, obj))
        if obj["metric"] == "step_time_s" and obj["step"] is not None and obj["step"] % 50 == 0:
            print(f"    step {obj['step']}: {obj['value']:.4g} s", file=sys.stderr, flush=True)
        return obj["step"] is not None

    budget = workload["time_budget_s"]
    limit = work.trials * budget + min(STOP_GRACE_S, budget)  # from its first step row: set-up is not counted
    error: str | None
    status = "failed"
    with tempfile.TemporaryDirectory(prefix="fairfight-engine-") as home:
        try:
            ended = untrusted.run(
                command,
                json.dumps(run_spec(suite, work, variant, args.run_id, workload)),
                cwd=Path(home),
                env=untrusted.engine_env(Path(home)),
                setup_s=spec.SETUP_ALLOWANCE_S,
                budget_s=limit,
                on_line=on_line,
                # what the engine may read but never write, where the kernel allows it (confine.py)
                read_only=[provenance.REPO_ROOT, args.out.resolve().parent]
                + ([args.data_dir.resolve()] if args.data_dir else []),
            )
        except OSError as e:
            ended, status, error = None, "failed", f"could not start {command[0]!r}: {e}"
    if ended is not None:
        status, error = _outcome(command[0], ended, limit)
    hardware = provenance.hardware(work.device, workload["world_size"])
    version = versions[0] if versions else "unknown"
    probe = record.run_columns(
        run_id=args.run_id,
        config=config,
        engine_version=version,
        started=started,
        hardware=hardware,
        packages=(),
    )
    kept, refused = judged_rows(rows, workload)
    kept, more = checked_rows(kept, probe)
    good, counted = counted_steps(kept, workload["trials"])
    rejected += [(n, texts[n], problem) for n, problem in refused + more + counted]
    rejected.sort()
    if rejected:
        listed = "; ".join(problem for *_, problem in rejected[:5])
        more_text = f" (and {len(rejected) - 5} more)" if len(rejected) > 5 else ""
        error = "; ".join(filter(None, [error, f"{len(rejected)} output line(s) refused: {listed}{more_text}"]))
        config["external"] = {
            "rejected_lines": [{"line": n, "text": t, "problem": why} for n, t, why in rejected[:KEPT_LINES]],
            "rejected_count": len(rejected),
        }
    if status == "ok" and error is None:
        error = _incomplete(good, workload)
    config.setdefault("external", {})["isolation"] = ended.isolation if ended is not None else "none: it did not start"
    if ended is not None and ended.left_behind:
        note = f"it left {ended.left_behind} process(es) running, ended with it"
        print(f"    {note}", file=sys.stderr, flush=True)
    run = record.run_columns(
        run_id=args.run_id,
        config=config,
        engine_version=version,
        status="failed" if status == "ok" and error else status,
        error=error,
        started=started,
        hardware=hardware,
        packages=(),
    )
    record.emit(args.out, run, good)
    print(f"    {run['status']}: {len(good)} row(s)", file=sys.stderr, flush=True)
    return 0 if error is None else 1


def _outcome(name: str, ended: untrusted.Ended, limit: float) -> tuple[str, str | None]:
    """The record's status and error from how the engine ended."""
    if ended.stopped == "budget":
        overrun = (
            f"{limit:.0f} s from its first step"
            if ended.stepping
            else f"{limit + spec.SETUP_ALLOWANCE_S:.0f} s, no step"
        )
        return "timeout", f"{name} overran its time budget ({overrun}) and was stopped"
    if ended.stopped == "output":
        return (
            "failed",
            f"{name} wrote more than {untrusted.MAX_OUTPUT_BYTES >> 20} MiB to its standard output and was stopped",
        )
    if ended.stopped == "held":
        return "failed", f"{name}'s standard output stayed open after it and every process it started had ended"
    if ended.code != 0:
        return "failed", f"{name} exited with {ended.code}"
    return "ok", None


def _incomplete(rows: list[dict[str, Any]], workload: dict[str, Any]) -> str | None:
    """Why a run that exited 0 with every line accepted is not `ok`: it delivered no steady step, or fewer steps
    than the workload asks of each trial (None when it delivered them all)."""
    steps, trials = workload["steps"], workload["trials"]
    times = [r for r in rows if r["metric"] == "step_time_s"]
    if not any(r["phase"] == "steady" for r in times):
        return (
            f"exited 0 but delivered no steady steps ({len(times)} warm-up step time(s)): a run that measured "
            "nothing is not a result"
        )
    if len(times) < steps * trials:
        return f"exited 0 after {len(times)} of the workload's {steps * trials} steps ({trials} trial(s) of {steps})"
    return None


if __name__ == "__main__":
    sys.exit(main())
