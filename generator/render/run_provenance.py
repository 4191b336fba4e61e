"""A run page's provenance as its tables show it: hardware and software as (key, value) pairs, each GPU as nvidia-smi
reported it (a column each), its installed packages, its calibration's figures in units that fit their size, and an
engine's own tool's output cut to what a page can hold (generator/render/runs.py renders them)."""

from __future__ import annotations

import json
import math
from typing import Any

import generator.load.columns as columns
import generator.render.pages as pages


def flat(obj: Any, prefix: str = "") -> list[tuple[str, str]]:
    """A nested JSON object as (dotted key, value) pairs for a two-column table."""
    if isinstance(obj, dict):
        out: list[tuple[str, str]] = []
        for key, value in sorted(obj.items()):
            out += flat(value, f"{prefix}{key}.")
        return out
    return [(prefix.rstrip("."), json.dumps(obj) if not isinstance(obj, str) else obj)]


def calibration(text: str | None) -> list[tuple[str, str]]:
    """A run's calibration (its record's JSON text) as its page's table shows it: every figure, in units that fit its
    size (`in_units`); none where the run recorded none."""
    return in_units(flat(columns.parsed(text))) if text else []


def in_units(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Calibration figures as a reader takes them in, by their key's unit and their size (780.1 TFLOP/s, 1.232
    GFLOP/s on a CPU, 4,231 GB/s, 1 GiB); the record and the run's CSV keep the exact values."""
    out = []
    for key, text in pairs:
        try:
            value = float(text)
        except ValueError:
            out.append((key, text))
            continue
        if not math.isfinite(value):
            text = "–"
        elif key.endswith("_flops"):
            text = _scaled(value, ((1e12, "TFLOP/s"), (1e9, "GFLOP/s"), (1.0, "FLOP/s")))
        elif key.endswith("_bytes_per_s"):
            text = _scaled(value, ((1e9, "GB/s"), (1e6, "MB/s"), (1.0, "B/s")))
        elif key.endswith("_bytes"):
            text = _scaled(value, ((2**30, "GiB"), (2**20, "MiB"), (1.0, "B")))
        elif key.endswith("_s"):
            text = f"{pages.fmt(value, 4)} s"
        else:
            text = pages.fmt(value, 4)
        out.append((key, text))
    return out


def _scaled(value: float, units: tuple[tuple[float, str], ...]) -> str:
    """`value` in the largest of `units` it reaches (the last one otherwise), to four significant digits."""
    factor, unit = next(((f, u) for f, u in units if abs(value) >= f), units[-1])
    return f"{pages.fmt(value / factor, 4)} {unit}"


GPU_ROWS = (
    ("name", "Model"),
    ("sm_clock_mhz", "SM clock (MHz)"),
    ("max_sm_clock_mhz", "SM max (MHz)"),
    ("memory_clock_mhz", "Memory clock (MHz)"),
    ("max_memory_clock_mhz", "Memory max (MHz)"),
    ("applications_graphics_clock_mhz", "Application graphics clock (MHz)"),
    ("applications_memory_clock_mhz", "Application memory clock (MHz)"),
    ("power_limit_w", "Power limit set (W)"),
    ("enforced_power_limit_w", "Power limit enforced (W)"),
    ("default_power_limit_w", "Default power limit (W)"),
    ("ecc_mode", "ECC"),
    ("persistence_mode", "Persistence mode"),
    ("uuid", "UUID (which physical GPU)"),
)
"""The provenance section's GPU table (`hardware.gpus`, runners/bounds.py `GPU_FIELDS`), one column per GPU headed by
its index: each row's key and its label."""
IN_RUN_ROWS = (
    ("sm_clock_mhz", "SM clock during the run (MHz)"),
    ("memory_clock_mhz", "Memory clock during the run (MHz)"),
    ("power_draw_w", "Power draw during the run (W)"),
    ("temperature_c", "Temperature during the run (°C)"),
    ("clocks_event_reasons", "Clock event reasons during the run"),
)
"""The rows the GPU table adds from `hardware.gpus_in_run` (nvidia-smi asked during the steady steps)."""
LISTED_APART = {"hardware": ("gpus", "gpus_in_run"), "software": ("packages", "packages_omitted")}
"""Keys the provenance section shows in tables of their own, not in its two-column ones."""


def provenance_tables(hardware: dict[str, Any], software: dict[str, Any]) -> dict[str, Any]:
    """The provenance section's tables: hardware and software as (key, value) pairs, each GPU as nvidia-smi reported
    it (a column each, a dash where it reported nothing), and the installed packages with how many were left out."""
    gpus, packages = columns.array_at(hardware, "gpus"), columns.array_at(software, "packages")
    in_run = columns.object_at(hardware, "gpus_in_run")
    sampled = {g.get("index"): g for g in columns.array_at(in_run, "gpus") if isinstance(g, dict)}
    rows = [(title, [_reported(gpu.get(key)) for gpu in gpus]) for key, title in GPU_ROWS] if gpus else []
    if gpus and sampled:
        rows += [
            (title, [_reported(sampled.get(gpu.get("index"), {}).get(key)) for gpu in gpus])
            for key, title in IN_RUN_ROWS
        ]
    return {
        "hardware": flat({k: v for k, v in hardware.items() if k not in LISTED_APART["hardware"]}),
        "software": flat({k: v for k, v in software.items() if k not in LISTED_APART["software"]}),
        "gpu_heads": [f"GPU {_reported(gpu.get('index'))}" for gpu in gpus],
        "gpus": rows,
        "gpus_sampled_at": in_run.get("at_step") if sampled else None,
        "packages": packages,
        "packages_omitted": software.get("packages_omitted") or 0,
    }


TOOL_LIST_SHOWN = 8
"""How many values of a list in a tool's own output the run page shows: vllm bench serve prints every request's
input length, output length, TTFT and inter-token latencies (hundreds of KB a run)."""


def shown_output(value: Any) -> tuple[Any, bool]:
    """A tool's output as the run page shows it, and whether anything was cut: lists longer than `TOOL_LIST_SHOWN`
    cut to their first values and a `...` naming how many more there are, long text cut by `pages.short`."""
    if isinstance(value, dict):
        out, cut = {}, False
        for key, item in value.items():
            out[key], more = shown_output(item)
            cut |= more
        return out, cut
    if isinstance(value, list):
        items = [shown_output(v) for v in value[:TOOL_LIST_SHOWN]]
        shown = [v for v, _ in items]
        if len(value) > TOOL_LIST_SHOWN:
            shown.append(f"... {len(value) - TOOL_LIST_SHOWN:,} more")  # ASCII: the page's JSON escapes the rest
        return shown, len(value) > TOOL_LIST_SHOWN or any(c for _, c in items)
    if isinstance(value, str):
        text = pages.short(value)
        return text, text != value
    return value, False


def _reported(value: Any) -> str:
    """A value nvidia-smi reported, as it reported it (700.0 W as 700), or a dash where it reported none."""
    if value is None:
        return "–"
    return f"{value:g}" if isinstance(value, float) else str(value)
