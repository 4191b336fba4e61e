"""What a bench session prints at its end, in each `--format` (`runners/formats.py`), and where its progress goes
meanwhile: to standard output for people (text), to standard error when standard output is for a program (json,
csv, md), so that what a program reads there is the summary alone."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from runners import formats, metrics

COLUMNS = (
    "workload",
    "variant",
    "status",
    "figure",
    "low",
    "high",
    "unit",
    "count",
    "count_of",
    "median_ttft_ms",
    "median_tpot_ms",
    "wall_s",
    "load_1m_start",
    "load_1m_end",
    "others_cpu_cores",
    "busy_host",
    "cpu_cores",
    "gpu_processes",
    "flags",
    "file",
)
"""One summary line of a run, every value a number, a name or a list of flags (never a display string): `figure`
and its own 95% interval `low`, `high` in `unit` (training: steps/s over timing windows, `metrics.window_interval`;
tests: tokens/s or output tokens/s over repetitions, `metrics.repetition_interval`; a served point: its output
tokens/s over its requests, no interval), `count` of `count_of` (steps, repetitions or requests), a served point's
median TTFT and TPOT, the session's seconds so far, the host's 1-minute load average before the run started and after
it ended, the cores' worth of CPU time other processes took while it ran (`metrics.others_cores`) and whether that
made the host busy (`metrics.busy_host`), its core count, compute processes on its GPUs then (the larger count; none
of them the run's own), and
`flags`: why the run is no evidence of its speed (`flags_of`)."""


def line(**values: Any) -> dict[str, Any]:
    """A summary line with every column, those not given None."""
    unknown = set(values) - set(COLUMNS)
    if unknown:
        raise ValueError(f"not a summary column: {sorted(unknown)}")
    return dict.fromkeys(COLUMNS) | values


def flags_of(figure: float | None, low: float | None, high: float | None, host: dict[str, Any]) -> list[str]:
    """Why a run's figure is no evidence of its speed, as `compare` flags it: its own interval wider than the figure
    (`metrics.wider_than_figure`), a busy host (`host["busy_host"]`, `metrics.busy_host`: others took CPU time the
    run waited for), other processes on its GPUs."""
    out = []
    if metrics.wider_than_figure(figure, low, high):
        out.append("own interval wider than its figure: no steady state measured")
    if host.get("busy_host"):
        out.append(f"busy host: other processes took {host.get('others_cpu_cores'):g} of its {host.get('cpu_cores')}"
                   " cores while it ran")  # fmt: skip
    if host.get("gpu_processes"):
        out.append(f"{host['gpu_processes']} other process(es) on its GPUs")
    return out


def display(row: dict[str, Any]) -> str:
    """A line's figure as people read it: `12.3 [11.9, 12.6] steps/s`, a served point's latencies beside it."""
    if row.get("figure") is None:
        return "–"
    text = f"{row['figure']:,.4g}"
    if row.get("low") is not None:
        text += f" [{row['low']:,.4g}, {row['high']:,.4g}]"
    text += f" {row['unit']}"
    if row.get("median_ttft_ms") is not None:
        text += f", TTFT {row['median_ttft_ms']:,.1f} ms"
    if row.get("median_tpot_ms") is not None:
        text += f", TPOT {row['median_tpot_ms']:,.2f} ms (medians)"
    return text


@contextlib.contextmanager
def progress_to_stderr(fmt: str) -> Iterator[None]:
    """For a format other than text: file descriptor 1 points at standard error while the session runs, so the
    runners it starts (which inherit it) and its own progress lines stay out of the summary; restored after."""
    if fmt == "text":
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def text(rows: Sequence[dict[str, Any]]) -> str:
    """The table people read, one run a line: its figure with its 95% interval (`display`), what it counted, and its
    flags."""
    shown = ("workload", "variant", "status", "result", "n", "wall_s", "flags", "file")
    cells = [
        {
            "workload": str(r.get("workload")),
            "variant": str(r.get("variant")),
            "status": str(r.get("status")),
            "result": display(r),
            "n": f"{r['count']} {r['count_of']}" if r.get("count") is not None else "–",
            "wall_s": "–" if r.get("wall_s") is None else f"{r['wall_s']:.0f}",
            "flags": "; ".join(r.get("flags") or []) or "–",
            "file": str(r.get("file")),
        }
        for r in rows
    ]
    widths = {c: max(len(c), *(len(x[c]) for x in cells)) for c in shown}
    lines = [
        "",
        "summary (figure: median [its own 95% interval]; training over timing windows, tests over repetitions)",
    ]
    if any(r.get("count_of") == "requests" for r in rows):
        lines.append("served points: output tokens/s over their requests, no interval; TTFT and TPOT are medians")
    lines.append("  ".join(c.ljust(widths[c]) for c in shown).rstrip())
    lines += ["  ".join(x[c].ljust(widths[c]) for c in shown).rstrip() for x in cells]
    return "\n".join(lines)


def table(rows: Sequence[dict[str, Any]]) -> formats.Table:
    ok = sum(r["status"] == "ok" for r in rows)
    return formats.Table(columns=COLUMNS, rows=[tuple(r.get(c) for c in COLUMNS) for r in rows],
                         notes=(f"{ok} of {len(rows)} run(s) ok",))  # fmt: skip


def render(fmt: str, suite: str, rows: Sequence[dict[str, Any]], exit_status: int) -> str:
    data = {"suite": suite, "runs": list(rows), "exit_status": exit_status}
    return formats.render(fmt, text=lambda: text(rows), data=data, table=lambda: table(rows))
