"""The command a run's page offers to reproduce it, built from the record's checked fields, never copied from it.

A record's `config.command` is the submitter's text: printed as it is, a record could hand a reader `… | sh`. The
command is rebuilt here from fields the load has checked (suite, workload and variant are plain names; the
workload's overrides are declared numbers), every value shell-quoted, and refused with a reason when the record's
variant name is not what its settings make (`record.variant_label`) or a value holds a character that is not
printable: what a reader copies is one `python -m runners bench` command, whatever the record says.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from runners import engines, record

BENCH = ("python", "-m", "runners", "bench")
OVERRIDE_FLAGS = {"steps": "--steps", "micro_batch": "--micro-batch", "world_size": "--world-size",
                  "time_budget_s": "--time-budget"}  # fmt: skip
"""Workload values a bench session may override (`config.workload.overridden`), and their flags."""
_SETTING = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,99}")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,99}")


def command(
    run: dict[str, Any], config: dict[str, Any], bench: tuple[str, ...] = BENCH, leave_out: frozenset[str] = frozenset()
) -> tuple[str | None, str | None]:
    """(the reproduce command, None), or (None, why there is none) for a record Fair Fight did not run or one whose
    fields do not make a command. `bench`: the words that start it; `leave_out`: workload overrides (`OVERRIDE_FLAGS`'
    keys) the command does not repeat (`steps`, for a full-length run of a shortened one's settings)."""
    # an engine's own tool, run by the bench beside its runner, says so with a command (one imported from elsewhere
    # has none); only that it has one is read from it
    by_bench = run.get("origin") == "imported" and isinstance(config.get("command"), str)
    if run.get("origin") != "measured" and not by_bench:
        return None, None
    variant = _object(config.get("variant"))
    workload = _object(config.get("workload"))
    name = variant.get("name")
    overrides, sweep_env = _object(variant.get("overrides")), _object(variant.get("sweep_env"))
    if not isinstance(name, str) or record.variant_label(name, overrides, sweep_env) != run.get("variant"):
        return None, "its variant name is not what its recorded settings make"
    tokens = [*bench, "--suite", run["suite"], "--workload", run["workload"], "--variant", name]
    if run.get("engine") == "external":
        variants = config.get("external_variants")
        if not isinstance(variants, str) or not variants:
            return None, "it does not record the variants file of its outside engine"
        tokens += ["--variants", variants]
    overridden = workload.get("overridden") or []
    for key in overridden if isinstance(overridden, list) else []:
        if key in leave_out:
            continue
        value = workload.get(key)
        if key not in OVERRIDE_FLAGS or isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            return None, f"its workload override {str(key)[:40]!r} is not one a bench session makes"
        tokens += [OVERRIDE_FLAGS[key], f"{value:g}" if isinstance(value, float) else str(value)]
    for key, value in sorted(overrides.items()):
        if not _SETTING.fullmatch(key):
            return None, f"its setting override {key[:40]!r} is not a plain name"
        tokens += ["--set", f"{key}={json.dumps(value)}"]
    for key, value in sorted(sweep_env.items()):
        if not (_ENV_NAME.fullmatch(key) and isinstance(value, str)):
            return None, f"its variable {key[:40]!r} is not a plain name with a text value"
        tokens += ["--env", f"{key}={value}"]
    if any(not token.isprintable() for token in tokens):
        return None, "a value holds a character that is not printable"
    return " ".join(shlex.quote(token) for token in tokens), None


def setup(run: dict[str, Any], config: dict[str, Any]) -> str | None:
    """The set-up line a fresh clone runs before the command (`Engine.setup`, or `Engine.setup_gpu` for a run on a
    GPU), for the engine that ran it or whose own tool did; None for an engine the registry gives none (an outside
    engine brings its own)."""
    by_tool = {e.tool: e for e in engines.ENGINES.values() if e.tool}
    engine = engines.ENGINES.get(str(run.get("engine"))) or by_tool.get(str(run.get("engine")))
    if engine is None:
        return None
    on_cpu = _object(config.get("workload")).get("device") == "cpu"
    return engine.setup if on_cpu else engine.setup_gpu or engine.setup


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
