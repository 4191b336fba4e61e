"""What a bench session prints at its end, in each `--format` (`runners/formats.py`), and where its progress goes
meanwhile: to standard output for people (text), to standard error when standard output is for a program (json,
csv, md), so that what a program reads there is the summary alone."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from runners import formats

COLUMNS = ("workload", "variant", "status", "steps", "steps_per_s", "wall_s", "file")


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
    """The table people read: steps/s median [95% interval] (tokens/s for tests), one run a line."""
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in COLUMNS}
    lines = ["", "summary (steps/s: median [95% interval] over windows)"]
    if any("tokens/s" in str(r["steps_per_s"]) for r in rows):
        lines.append("inference tests: tokens/s mean ± sd over repetitions (the steps column counts repetitions)")
    if any("output tokens/s" in str(r["steps_per_s"]) for r in rows):
        lines.append(
            "serving tests: offline mean ± sd over repetitions; served points: medians over requests (steps: requests)"
        )
    lines.append("  ".join(c.ljust(widths[c]) for c in COLUMNS).rstrip())
    lines += ["  ".join(str(r[c]).ljust(widths[c]) for c in COLUMNS).rstrip() for r in rows]
    return "\n".join(lines)


def table(rows: Sequence[dict[str, Any]]) -> formats.Table:
    ok = sum(r["status"] == "ok" for r in rows)
    return formats.Table(columns=COLUMNS, rows=[tuple(r[c] for c in COLUMNS) for r in rows],
                         notes=(f"{ok} of {len(rows)} run(s) ok",))  # fmt: skip


def render(fmt: str, suite: str, rows: Sequence[dict[str, Any]], exit_status: int) -> str:
    data = {"suite": suite, "runs": list(rows), "exit_status": exit_status}
    return formats.render(fmt, text=lambda: text(rows), data=data, table=lambda: table(rows))
