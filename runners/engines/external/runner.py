"""Engines Fair Fight does not ship, benchmarked through a contract: any command that reads a run's spec as JSON
on its standard input and writes its measurements as JSON Lines on its standard output.

    python -m runners bench --suite cpu-smoke --variants my-engines.toml --variant my-engine

`my-engines.toml` holds `[variants.NAME]` tables with `engine = "external"` and `settings.command` (the command
line, a list of strings); the other settings are the engine's own and are passed on in the spec. The bench session
starts this module as the variant's runner; it starts the command, gives it the spec, reads its lines as they
come, checks them, and writes one ordinary result file (provenance, hardware and configuration added here).

The spec (one JSON object): `contract` (1), `run_id`, `suite`, `workload` (the workload as run: steps,
warmup_steps, window_steps, micro_batch, seq_len, world_size, device, seed, time_budget_s, ...), `model` (its
shapes and parameter counts) and `variant` (`name`, `settings`).

Each output line is one JSON object, either a measurement row
    {"trial": 0, "step": 12, "phase": "steady", "metric": "step_time_s", "value": 0.0213, "unit": "s"}
(phase `warmup` or `steady` for steps, `run` with `step` null for run-level values; metrics with fixed meanings
are listed in runners/schema.py, METRIC_RULES) or the engine's version, once:
    {"engine_version": "sparse-first 0.3.1"}
Anything on standard error is passed through to the bench log. The command's exit status 0 means it finished.

Nothing is lost: a line that is not valid JSON, not one of these objects, or a row that the result-file checks
refuse is kept verbatim in the record (`config.external.rejected_lines`) and named in its error (`line N, field
F: ...`), and the record's status becomes `failed`; rows that passed are kept. A command that exits non-zero or
is killed also gives a `failed` record with the rows it wrote so far.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runners import lifetime, provenance, record, schema, spec

CONTRACT = 1
ROW_KEYS = ("trial", "step", "phase", "metric", "value", "unit")
STOP_GRACE_S = 60.0
"""Beyond its trials' time budgets (or one budget, if shorter), before the command is stopped (the bench session
allows more)."""
KEPT_LINES = 200
"""Rejected lines kept verbatim in a record (and their count beyond)."""


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


def parse_line(n: int, text: str) -> dict[str, Any]:
    """One output line as a row or a version object; ValueError names the line and the field at fault."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"line {n}: not JSON ({e.msg})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"line {n}: a JSON object was expected, not {type(obj).__name__}")
    if set(obj) == {"engine_version"}:
        if not isinstance(obj["engine_version"], str) or not obj["engine_version"]:
            raise ValueError(f"line {n}, field 'engine_version': a non-empty string was expected")
        return obj
    missing, unknown = sorted(set(ROW_KEYS) - set(obj)), sorted(set(obj) - set(ROW_KEYS))
    if missing or unknown:
        field = (missing or unknown)[0]
        raise ValueError(f"line {n}, field {field!r}: {'missing' if missing else 'unknown'}; a row has {ROW_KEYS}")
    for key, types in (("trial", int), ("step", (int, type(None))), ("value", (int, float))):
        if isinstance(obj[key], bool) or not isinstance(obj[key], types):
            raise ValueError(f"line {n}, field {key!r}: {obj[key]!r} is not a number of the right kind")
        if key != "value" and obj[key] is not None and not -(2**31) <= obj[key] < 2**31:
            raise ValueError(f"line {n}, field {key!r}: {obj[key]} does not fit the record's 32-bit integer")
    for key in ("phase", "metric", "unit"):
        if not isinstance(obj[key], str):
            raise ValueError(f"line {n}, field {key!r}: {obj[key]!r} is not a string")
    return obj | {"value": float(obj["value"])}


def checked_rows(rows: list[tuple[int, dict]], run: dict) -> tuple[list[dict], list[tuple[int, str]]]:
    """The rows the result-file checks accept, and (line, problem) for each they refuse."""
    refused: list[tuple[int, str]] = []
    while rows:
        problems = schema.check_table(schema.make_table(run, [r for _, r in rows]))
        bad = {p.row: p for p in problems if p.row is not None}
        if not bad:
            break
        refused += [(rows[i][0], f"line {rows[i][0]}, field {p.field!r}: {p.message}") for i, p in bad.items()]
        rows = [r for i, r in enumerate(rows) if i not in bad]
    return [r for _, r in rows], refused


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m runners.engines.external.runner", description=(__doc__ or "").partition("\n")[0]
    )
    p.add_argument("--suite", required=True)
    p.add_argument("--variants", required=True, type=Path, help="the file of outside engines' variants")
    p.add_argument("--workload", required=True)
    p.add_argument("--variant", required=True)
    p.add_argument("--out", required=True, type=Path, help="the JSON Lines file the bench reads the record from")
    p.add_argument("--run-id", required=True)
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--micro-batch", type=int, default=None)
    p.add_argument("--time-budget", type=float, default=None)
    p.add_argument("--note", default=None)
    args = p.parse_args(argv)
    suite = spec.load_suite(args.suite, external=args.variants)
    work, variant = suite.workload(args.workload), suite.variants[args.variant]
    config = record.config(
        suite, work, variant, steps=args.steps, micro_batch=args.micro_batch, time_budget_s=args.time_budget
    )
    config["command"] += f" --variants {args.variants}"
    if args.note:
        config["note"] = args.note
    command = list(variant.settings["command"])
    if command and command[0] == "python":  # the interpreter running the bench, whatever PATH holds
        command[0] = sys.executable
    started = datetime.now(UTC)
    print(f"    starting {' '.join(command)}", file=sys.stderr, flush=True)
    rows: list[tuple[int, dict]] = []
    texts: dict[int, str] = {}
    rejected: list[tuple[int, str, str]] = []  # line number, text, problem
    version, status = "unknown", "ok"
    error: str | None
    budget = config["workload"]["time_budget_s"]
    limit = work.trials * budget + min(STOP_GRACE_S, budget)  # from its first step row: set-up is not counted
    try:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=lifetime.die_with_parent(),  # the engine ends with the bench
        )
    except OSError as e:
        status, error = "failed", f"could not start {command[0]!r}: {e}"
    else:
        overran = threading.Event()
        assert proc.stdin is not None and proc.stdout is not None  # both PIPE

        def stop() -> None:
            # stopping it here keeps its rows; the bench session, which allows more, would kill this process too
            overran.set()
            proc.kill()

        # until its first step row, set-up's allowance; from then on the budget, as the built-in runners count it
        stopper = threading.Timer(limit + spec.SETUP_ALLOWANCE_S, stop)
        stopper.start()
        stepping = False
        try:
            proc.stdin.write(json.dumps(run_spec(suite, work, variant, args.run_id, config["workload"])))
            proc.stdin.close()
        except BrokenPipeError:  # it did not read its spec; what it wrote is judged all the same
            pass
        for n, text in enumerate(proc.stdout, 1):
            texts[n] = text.rstrip("\n")
            try:
                obj = parse_line(n, text)
            except ValueError as e:
                rejected.append((n, texts[n], str(e)))
                continue
            if "engine_version" in obj:
                version = obj["engine_version"]
            else:
                rows.append((n, obj))
                if not stepping and obj["step"] is not None:
                    stepping = True
                    stopper.cancel()
                    stopper = threading.Timer(limit, stop)
                    stopper.start()
                if obj["metric"] == "step_time_s" and obj["step"] is not None and obj["step"] % 50 == 0:
                    print(f"    step {obj['step']}: {obj['value']:.4g} s", file=sys.stderr, flush=True)
        code = proc.wait()
        stopper.cancel()
        if overran.is_set():
            overrun = (
                f"{limit:.0f} s from its first step" if stepping else f"{limit + spec.SETUP_ALLOWANCE_S:.0f} s, no step"
            )
            status, error = "timeout", f"{command[0]} overran its time budget ({overrun}) and was stopped"
        else:
            status, error = ("ok", None) if code == 0 else ("failed", f"{command[0]} exited with {code}")
    hardware = provenance.hardware(work.device, config["workload"]["world_size"])
    probe = record.run_columns(
        run_id=args.run_id,
        suite=suite,
        config=config,
        engine_version=version,
        status="ok",
        error=None,
        started=started,
        hardware=hardware,
        packages=(),
    )
    good, refused = checked_rows(rows, probe)
    rejected += [(n, texts[n], problem) for n, problem in refused]
    rejected.sort()
    if not any(r["metric"] == "steps_completed" for r in good):
        steps = {r["step"] for r in good if r["metric"] == "step_time_s" and r["step"] is not None}
        good.append(
            dict(trial=0, step=None, phase="run", metric="steps_completed", value=float(len(steps)), unit="steps")
        )
    if rejected:
        listed = "; ".join(problem for *_, problem in rejected[:5])
        more = f" (and {len(rejected) - 5} more)" if len(rejected) > 5 else ""
        error = "; ".join(filter(None, [error, f"{len(rejected)} output line(s) refused: {listed}{more}"]))
        config["external"] = {
            "rejected_lines": [{"line": n, "text": t, "problem": why} for n, t, why in rejected[:KEPT_LINES]],
            "rejected_count": len(rejected),
        }
    run = record.run_columns(
        run_id=args.run_id,
        suite=suite,
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


if __name__ == "__main__":
    sys.exit(main())
