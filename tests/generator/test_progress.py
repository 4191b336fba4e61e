"""Progress of long work (generator/progress.py), as the run pages' writer uses it: shown on a terminal with the time
left, silent otherwise."""

from __future__ import annotations

import io

import pytest

from generator.progress import Progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_written_of_total_and_the_time_left_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAIRFIGHT_PROGRESS", raising=False)
    out = _Terminal()
    progress = Progress("run pages", 1_000, out, unit="pages written")
    progress.started -= 10  # 10 s ago: 250 pages in 10 s leaves 750 for 30 s
    progress.advance(250)
    assert "run pages: 250 of 1,000 pages written, about 30 s left" in out.getvalue()
    progress.advance(750)
    progress.close()
    assert "run pages: 1,000 of 1,000 pages written in " in out.getvalue() and out.getvalue().endswith("\n")


def test_progress_is_silent_when_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAIRFIGHT_PROGRESS", raising=False)
    out = io.StringIO()
    progress = Progress("run pages", 10, out, unit="pages written")
    progress.advance(10)
    progress.close()
    assert out.getvalue() == ""
