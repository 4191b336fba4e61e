"""Progress of long page writing on stderr (`run pages: 1,250 of 5,293 written, about 40 s left`), one line redrawn
in place, and only when stderr is a terminal: a log, a pipe or CI gets nothing but the build's summary."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Counts `done` of `total` things; `advance(n)` after each batch, `close()` at the end."""

    def __init__(self, what: str, total: int, stream: TextIO | None = None, every_s: float = 0.5) -> None:
        self.what, self.total, self.done = what, total, 0
        self.stream = sys.stderr if stream is None else stream
        self.on = total > 0 and self.stream.isatty()
        self.every_s = every_s
        self.started = self.shown = time.monotonic()

    def line(self, now: float) -> str:
        """What is shown: how many of how many, and the time left at the rate so far (once there is a rate)."""
        text = f"{self.what}: {self.done:,} of {self.total:,} written"
        took = now - self.started
        if 0 < self.done < self.total and took > 0:
            text += f", about {_duration((self.total - self.done) * took / self.done)} left"
        return text

    def advance(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if self.on and (now - self.shown >= self.every_s or self.done >= self.total):
            self.shown = now
            self.stream.write("\r\x1b[K" + self.line(now))  # carriage return, then clear the old line's tail
            self.stream.flush()

    def close(self) -> None:
        if self.on and self.done:
            self.stream.write("\n")
            self.stream.flush()


def _duration(seconds: float) -> str:
    """`40 s`, `3 min 5 s`."""
    seconds = round(seconds)
    return f"{seconds} s" if seconds < 60 else f"{seconds // 60} min {seconds % 60} s"
