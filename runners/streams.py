"""Another program's output read in bounded memory: lines cut at a length, whatever it writes.

`for line in pipe` holds a whole line in memory however long it is (an engine that writes one 500 MB line takes
gigabytes), and a text-mode pipe raises on the first byte that is not UTF-8. `LineSplitter` takes bytes as they
come and hands back whole lines, each at most `max_line_bytes` long (the rest of a longer line is counted and
dropped, never kept), so memory stays bounded by the limit, not by what the program sends.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO


@dataclass(frozen=True, slots=True)
class Line:
    """One line of output, without its newline: its first `max_line_bytes` bytes, and how long it really was."""

    data: bytes
    length: int
    """Bytes in the whole line (more than len(data) when it was cut)."""

    @property
    def cut(self) -> bool:
        return self.length > len(self.data)

    def text(self, limit: int | None = None) -> str:
        """The line as text: UTF-8, with bytes that are not shown as `\\xNN`, cut to `limit` characters."""
        text = self.data.decode("utf-8", "backslashreplace")
        return text if limit is None or len(text) <= limit else text[:limit] + "…"


class LineSplitter:
    """Bytes in, whole lines out, each cut to `max_line_bytes`."""

    def __init__(self, max_line_bytes: int) -> None:
        self.max_line_bytes = max_line_bytes
        self._head = bytearray()  # the current line's first bytes
        self._length = 0  # the current line's length so far

    def feed(self, chunk: bytes) -> list[Line]:
        out: list[Line] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            room = self.max_line_bytes - len(self._head)
            if room > 0:
                self._head += piece[:room]
            self._length += len(piece)
            if end < 0:
                return out
            out.append(Line(bytes(self._head), self._length))
            self._head.clear()
            self._length = 0
            start = end + 1

    def flush(self) -> list[Line]:
        """The last line, if the output did not end with a newline."""
        if not self._length:
            return []
        line = Line(bytes(self._head), self._length)
        self._head.clear()
        self._length = 0
        return [line]


def lines(stream: IO[bytes], max_line_bytes: int, chunk_bytes: int = 1 << 16) -> Iterator[Line]:
    """Every line of a binary stream until its end, each cut to `max_line_bytes` (a blocking read)."""
    splitter = LineSplitter(max_line_bytes)
    fd = stream.fileno()
    while chunk := os.read(fd, chunk_bytes):
        yield from splitter.feed(chunk)
    yield from splitter.flush()
