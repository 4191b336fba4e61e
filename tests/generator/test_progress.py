"""Progress of page writing (generator/render/progress.py): shown on a terminal, silent otherwise."""

from __future__ import annotations

import io

from generator.render.progress import Progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_written_of_total_and_the_time_left_on_a_terminal() -> None:
    out = _Terminal()
    progress = Progress("run pages", 1_000, out, every_s=0)
    progress.started -= 10  # 10 s ago: 250 pages in 10 s leaves 750 for 30 s
    progress.advance(250)
    assert "run pages: 250 of 1,000 written, about 30 s left" in out.getvalue()
    progress.advance(750)
    progress.close()
    assert out.getvalue().rstrip("\n").endswith("run pages: 1,000 of 1,000 written") and out.getvalue().endswith("\n")


def test_progress_is_silent_when_not_a_terminal() -> None:
    out = io.StringIO()
    progress = Progress("run pages", 10, out, every_s=0)
    progress.advance(10)
    progress.close()
    assert out.getvalue() == ""
