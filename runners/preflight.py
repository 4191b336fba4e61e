"""What a bench session checks before it starts anything: a user's mistake is caught here and writes nothing, where
a runner would die on it and leave an append-only failure record that measured nothing.

- Names: every `--workload` and `--variant` names something in the suite (with a did-you-mean and the valid names).
- Settings: every `--set` key is one the variant's engine knows and its value passes the engine's own checks
  (`Engine.check_settings`, the very function the runner calls); `--set` applies to training workloads only.
- Packages: the modules the engine's runner imports are importable in the Python that will run it (`Engine.modules`;
  vLLM's own environment where `FAIRFIGHT_VLLM_PYTHON` names one), checked without importing them.
- Commands: an outside engine's command is found (`python` is the interpreter running the bench).
Every problem is listed at once, then the session stops with exit status 2 (`spec.SpecError`). `plan_rows` is what
`--dry-run` prints (`render_plan`): each run, one per value of a `--set` sweep, its settings and its time budget.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runners import engines, nodes, spec


def _did_you_mean(word: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, known, n=3, cutoff=0.5)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def _unknown_names(suite: spec.Suite, args: argparse.Namespace) -> list[str]:
    workloads = [w.name for w in suite.workloads]
    for entry in suite.inference:
        workloads += [entry.name, *(t.workload for t in entry.tests())]
    for served in suite.serving:
        workloads += [served.name, *(t.workload for t in served.tests())]
    problems = []
    for name in args.workload or []:
        if name not in workloads:
            problems.append(
                f"--workload {name!r}: not a workload of suite {suite.name!r}{_did_you_mean(name, workloads)} "
                f"(`fairfight list` names them all)"
            )
    for name in args.variant or []:
        if name not in suite.variants:
            problems.append(
                f"--variant {name!r}: not a variant of suite {suite.name!r}{_did_you_mean(name, list(suite.variants))}"
                f" (known: {', '.join(sorted(suite.variants))})"
            )
    return problems


def _settings_problems(todo: Todo, args: argparse.Namespace) -> list[str]:
    """Each training variant's settings with the `--set` overrides, through its engine's own check: every value of a
    sweep (`--set key=a,b,c`), since each is a run."""
    try:
        points = [spec.parse_overrides(point) for point in spec.sweep_points(args.set)]
    except spec.SpecError as e:
        return [str(e)]
    problems = []
    for overrides in points:
        problems += _point_problems(todo, overrides)
    return problems


def _point_problems(todo: Todo, overrides: dict[str, Any]) -> list[str]:
    problems = []
    for variant in {v.name: v for _, v in todo}.values():
        engine = engines.get(variant.engine)
        unknown = sorted(set(overrides) - set(variant.settings))
        if unknown and engine.check_settings:  # the engine's check would say so too; say it with the names to use
            for key in unknown:
                known = list(variant.settings)
                problems.append(
                    f"--set {key}=…: variant {variant.name!r} has no setting {key!r}{_did_you_mean(key, known)} "
                    f"(its settings: {', '.join(sorted(known))})"
                )
            continue
        if engine.check_settings:
            try:
                engines.call(engine.check_settings, variant, overrides)
            except spec.SpecError as e:
                problems.append(f"--set: {e}" if overrides else str(e))
    return problems


def _steps_and_names(suite: spec.Suite, args: argparse.Namespace, todo: Todo, swept: dict[str, str]) -> list[str]:
    """`--steps` within a workload's warm-up (a runner would die on it, leaving a record that measured nothing), and a
    variant name `--set`/`--env` make that no result file may carry (the store would refuse it after the run)."""
    from runners import bounds, record

    problems = []
    if args.steps is not None:
        short = sorted({w.name: w.warmup_steps for w, _ in todo if args.steps <= w.warmup_steps}.items())
        for name, warmup in short[:1]:
            problems.append(
                f"--steps {args.steps} leaves no steady steps after the {warmup} warm-up steps of"
                f" {suite.name}/{name}: ask for more than {warmup}"
            )
    try:
        points = [spec.parse_overrides(point) for point in spec.sweep_points(args.set)]
    except spec.SpecError:
        return problems  # said by the settings check
    for overrides in points:
        for _, variant in todo:
            problem = bounds.name_problem("variant", record.variant_label(variant.name, overrides, swept))
            if problem:
                problems.append(f"--set/--env make the variant name {problem}: a result file could not be written")
    return problems


def _device_problems(
    suite: spec.Suite, args: argparse.Namespace, todo: Todo, inference: Entries, serving: Entries
) -> list[str]:
    """A CUDA workload needs as many GPUs as it names (or --world-size) and a served variant as many as its
    tensor-parallel size; a Metal one needs an Apple Silicon Mac."""
    import platform

    problems = []
    metal = sorted({w.name for w, _ in todo if w.device == "metal"} | {e.name for e, _, _ in inference
                                                                        if e.device == "metal"})  # fmt: skip
    if metal and not (sys.platform == "darwin" and platform.machine() == "arm64"):
        problems.append(
            f"suite {suite.name}: {', '.join(metal)} run(s) on an Apple GPU (Metal) and this is {sys.platform} "
            f"{platform.machine()}: run `nox -s bench-apple` on an Apple Silicon Mac (or `nox -s bench-cpu` here)"
        )
    per_node = max(1, getattr(args, "nnodes", 1) or 1)  # over nodes, each holds its share of the devices
    wanted = max(((args.world_size or w.world_size) // per_node for w, _ in todo if w.device == "cuda"), default=0)
    served = [int(v.settings.get("tensor_parallel_size", 1)) for e, v, _ in serving if e.device == "cuda"]
    wanted = max([wanted, *served, *(1 for e, _, _ in inference if e.device == "cuda")])
    if not wanted:
        return problems
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return [*problems, f"suite {suite.name} needs {wanted} NVIDIA GPU(s) and nvidia-smi found none"]
    found = sum(1 for line in out.splitlines() if line.startswith("GPU "))
    if found < wanted:
        problems.append(
            f"suite {suite.name} needs {wanted} GPU(s), found {found}: pass --world-size {found} for a {found}-GPU run"
            " of a training workload, or --variant to pick served variants that fit"
        )
    return problems


def _module_problems(plan: Sequence[tuple[str, spec.Variant]]) -> list[str]:
    """The modules each engine's runner imports, looked for (not imported) in the Python that will run it."""
    problems = []
    seen: set[tuple[str, str]] = set()
    for kind, variant in plan:
        engine = engines.get(variant.engine)
        python = (os.environ.get(engine.python_env) if engine.python_env else None) or sys.executable
        if (engine.name, python) in seen:
            continue
        seen.add((engine.name, python))
        missing = _missing_modules(python, engine.modules)
        if missing is None:
            problems.append(f"{engine.name}: {python} (from {engine.python_env}) does not run: point it at a Python")
        elif missing:
            how = engine.install_hint or f"install {' '.join(missing)}"
            problems.append(
                f"{engine.name} ({kind}, variant {variant.name!r}): {', '.join(missing)} not importable in "
                f"{python}: {how}"
            )
    return problems


def _missing_modules(python: str, modules: Sequence[str]) -> list[str] | None:
    """Which of `modules` `python` cannot find (None: that Python does not run)."""
    if not modules:
        return []
    if python == sys.executable:
        return [m for m in modules if importlib.util.find_spec(m) is None]
    code = "import importlib.util, sys; print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))"
    try:
        done = subprocess.run([python, "-c", code, *modules], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.split() if done.returncode == 0 else None


def _command_problems(plan: Sequence[tuple[str, spec.Variant]], variants_file: Path | None) -> list[str]:
    """An outside engine's command must be one this host can start: `python` is the running interpreter, and a
    relative path is taken beside the variants file, as the external runner takes it."""
    from runners.engines.external import untrusted

    problems = []
    base = (variants_file or Path(".")).resolve().parent
    for _, variant in plan:
        if variant.engine != "external":
            continue
        command = variant.settings.get("command")
        if not (isinstance(command, list) and command and all(isinstance(c, str) for c in command)):
            problems.append(f"variant {variant.name!r}: its setting 'command' must be a list of strings")
            continue
        first = untrusted.resolved_command(command, base)[0]
        if first != "python" and shutil.which(first) is None and not Path(first).is_file():
            problems.append(f"variant {variant.name!r}: command {command[0]!r} not found on PATH (nor as a file)")
    return problems


Todo = Sequence[tuple[spec.Workload, spec.Variant]]
"""The training runs a session would make: (workload, variant)."""
Entries = Sequence[tuple[Any, spec.Variant, list[Any]]]
"""Its inference or serving runs: (entry, variant, tests)."""


def check(
    suite: spec.Suite,
    args: argparse.Namespace,
    todo: Todo,
    inference: Entries,
    serving: Entries,
    swept: dict[str, str] | None = None,
) -> None:
    """Raise `spec.SpecError` listing every problem the session would only meet once started; `swept` are its
    `--env` variables, which go into a record's variant name."""
    problems = _unknown_names(suite, args)
    problems += _steps_and_names(suite, args, todo, swept or {})
    if not problems and not todo and not inference and not serving:
        entries = [e.name for e in suite.inference] + [e.name for e in suite.serving]
        problems.append(
            f"nothing to run: no workload/variant of suite {suite.name} matches the filters "
            f"(workloads: {', '.join(w.name for w in suite.workloads)}; "
            f"inference and serving entries: {', '.join(entries) or '–'})"
        )
    if args.set and not todo and (inference or serving):
        problems.append("--set changes a training variant's settings: no training workload is selected")
    problems += _settings_problems(todo, args)
    plan = [("train", v) for _, v in todo] + [("inference", v) for _, v, _ in inference]
    plan += [("serving", v) for _, v, _ in serving]
    worlds = [
        (f"{w.name} · {v.name}", args.world_size or w.world_size, engines.get(v.engine).torchrun) for w, v in todo
    ]
    problems += nodes.problems(args, worlds) if hasattr(args, "nnodes") else []
    if nodes.multi(args) and (inference or serving):
        entries = sorted({e.name for e, _, _ in (*inference, *serving)})
        problems.append(f"--nnodes: {', '.join(entries)} run(s) on one host; pick the torch workloads with --workload")
    problems += _module_problems(plan)
    problems += _device_problems(suite, args, todo, inference, serving)
    problems += _command_problems(plan, getattr(args, "variants", None))
    if problems:
        lines = "\n".join(f"  - {p}" for p in dict.fromkeys(problems))
        raise spec.SpecError(f"bench --suite {suite.name}: nothing was run, nothing written:\n{lines}")


def plan_rows(args: argparse.Namespace, todo: Todo, inference: Entries, serving: Entries) -> list[dict[str, Any]]:
    """Every run a session would make (one per value of a `--set` sweep), with its settings and time budget."""
    from runners import record

    rows: list[dict[str, Any]] = []
    points = [spec.parse_overrides(point) for point in spec.sweep_points(args.set)]
    for work, variant in todo:
        for overrides in points:
            rows.append({
                "kind": "train", "workload": work.name, "variant": record.variant_label(variant.name, overrides, {}),
                "engine": variant.engine, "tier": variant.tier, "steps": args.steps or work.steps,
                "trials": work.trials, "devices": args.world_size or work.world_size, "device": work.device,
                "nodes": getattr(args, "nnodes", 1) or 1,
                "budget_s": (args.time_budget or work.time_budget_s) * work.trials, "tests": None,
                "settings": dict(variant.settings) | overrides,
            })  # fmt: skip
    for kind, entries in (("inference", inference), ("serving", serving)):
        for entry, variant, tests in entries:
            rows.append({
                "kind": kind, "workload": entry.name, "variant": variant.name, "engine": variant.engine,
                "tier": variant.tier, "steps": None, "trials": None, "devices": None, "device": entry.device,
                "nodes": 1,
                "budget_s": entry.time_budget_s, "tests": [t.workload for t in tests],
                "settings": dict(variant.settings),
            })  # fmt: skip
    return rows


def render_plan(fmt: str, suite: str, rows: list[dict[str, Any]]) -> str:
    """What `--dry-run` prints, in `--format`: the plan (text for people; json, csv or md for a program)."""
    from runners import formats

    runs = sum(len(r["tests"]) if r["tests"] else 1 for r in rows)
    budget_s = sum(r["budget_s"] for r in rows)
    total = f"{runs} run(s); at most {budget_s / 60:.0f} min of time budgets, set-up and tools beside"
    columns = ("kind", "workload", "variant", "engine", "steps", "trials", "devices", "device", "nodes", "budget_s",
               "tests", "settings")  # fmt: skip
    table = formats.Table(columns=columns, rows=[tuple(r[c] for c in columns) for r in rows], notes=(total,))
    data = {"suite": suite, "dry_run": True, "runs": rows, "total_runs": runs, "budget_s": budget_s}
    return formats.render(fmt, text=lambda: _plan_text(suite, rows, total), data=data, table=table)


def _plan_text(suite: str, rows: list[dict[str, Any]], total: str) -> str:
    lines = [f"suite {suite}: the plan (--dry-run: nothing runs, nothing is written)"]
    for r in rows:
        if r["kind"] == "train":
            lines.append(
                f"  train  {r['workload']} · {r['variant']} ({r['tier']}, {r['engine']}): {r['steps']} steps × "
                f"{r['trials']} trial(s) on {r['devices']} {r['device']} device(s)"
                + (f" over {r['nodes']} nodes" if r["nodes"] > 1 else "")
                + ", "
                f"budget {r['budget_s'] / r['trials']:g} s a trial"
            )
            lines.append(f"         settings {r['settings']}")
        else:
            kind = "tests" if r["kind"] == "inference" else "serve"
            lines.append(
                f"  {kind:6} {r['workload']} · {r['variant']} ({r['engine']}): {len(r['tests'])} test(s) "
                f"({', '.join(r['tests'])}), budget {r['budget_s']:g} s"
            )
    return "\n".join([*lines, total])
