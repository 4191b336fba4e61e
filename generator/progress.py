"""Progress of long work (files read, pages written) with the time left, on stderr, only when stderr is a terminal.

    with progress.Progress("reading result files", total=len(files)) as bar:
        for f in files:
            ...
            bar.advance()

A pipe, a log file or a test sees nothing (`FAIRFIGHT_PROGRESS=1` forces it on, `=0` off): the commands' output
stays what scripts parse. At most a few updates a second, each one line rewritten in place (a carriage return), and
a last line with the count and the time taken once the work is done.
"""

from __future__ import annotations

import os
import sys
import time
from types import TracebackType
from typing import TextIO

INTERVAL_S = 0.25
"""Least time between two updates: redrawing costs the terminal, and nobody reads faster."""


def enabled(stream: TextIO | None = None) -> bool:
    """Whether progress is shown: `FAIRFIGHT_PROGRESS` when set (1 on, 0 off), else whether the stream is a terminal."""
    forced = os.environ.get("FAIRFIGHT_PROGRESS")
    if forced is not None:
        return forced.strip() not in ("", "0", "no", "off", "false")
    stream = sys.stderr if stream is None else stream
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def left_text(seconds: float) -> str:
    """A time left as a reader wants it: `42 s`, `3 min 05 s`, `1 h 02 min`."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class Progress:
    """Counts work done of `total` and redraws one line: what, how many of how many, and the time left (from the
    rate so far, once there is one)."""

    def __init__(self, what: str, total: int, stream: TextIO | None = None, unit: str = "files") -> None:
        self.what, self.total, self.unit = what, total, unit
        self.stream = sys.stderr if stream is None else stream
        self.shown = enabled(self.stream) and total > 0
        self.done = 0
        self.started = time.monotonic()
        self._drawn = 0.0

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def line(self) -> str:
        """The line as it would be drawn now."""
        took = time.monotonic() - self.started
        text = f"{self.what}: {self.done:,} of {self.total:,} {self.unit}"
        if 0 < self.done < self.total and took > 1:
            text += f", about {left_text(took / self.done * (self.total - self.done))} left"
        return text

    def advance(self, n: int = 1) -> None:
        self.done += n
        if not self.shown:
            return
        now = time.monotonic()
        if now - self._drawn >= INTERVAL_S:
            self._drawn = now
            self.stream.write("\r" + self.line() + "\033[K")
            self.stream.flush()

    def close(self) -> None:
        if self.shown:
            took = time.monotonic() - self.started
            self.stream.write(f"\r{self.what}: {self.done:,} of {self.total:,} {self.unit} in {took:.1f} s\033[K\n")
            self.stream.flush()
            self.shown = False


def stage(what: str, stream: TextIO | None = None) -> None:
    """One line saying what a long command does next, where nothing is counted (deriving the figures): shown under
    the same rule as `Progress`, so a pipe or a log sees nothing."""
    stream = sys.stderr if stream is None else stream
    if enabled(stream):
        stream.write(f"{what} …\n")
        stream.flush()
