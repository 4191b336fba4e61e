"""Progress of long work (generator/progress.py), as the run pages' writer uses it: shown on a terminal with the time
left, silent otherwise."""

from __future__ import annotations

import io
import re

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


def test_the_long_commands_show_progress_on_a_terminal_and_nothing_in_a_pipe(tmp_path, monkeypatch) -> None:
    """`fairfight validate` and `fairfight site` on a small real data folder: with progress on (FAIRFIGHT_PROGRESS=1,
    as a terminal would have it) each stage says how far it is; in a pipe (the variable unset, stderr captured) the
    same commands print none of it, and their summary lines are the same."""
    from tests.conftest import run_module

    monkeypatch.delenv("FAIRFIGHT_PROGRESS", raising=False)  # in a pipe, progress is off by default
    data = tmp_path / "data"
    run_module("runners", "claim", "runners/claims/seed.toml", "--data-dir", str(data))
    site = ("fairfight", "site", "--data", str(data), "--out", str(tmp_path / "site"), "--work", str(tmp_path / "w"))
    shown = {
        ("fairfight", "validate", str(data)): ["reading result files: ", "checking the figures of 2 run(s) …"],
        site: [
            "reading result files: ",
            "checking and deriving the figures of 2 run(s) …",
            "leaderboard pages: 1 of 1 pages written in ",
            "site pages (MkDocs): ",
            " pages converted in ",
            " pages written in ",
        ],
    }
    for argv, lines in shown.items():
        on = run_module(*argv, FAIRFIGHT_PROGRESS="1")
        for line in lines:
            assert line in on.stderr, (argv, line, on.stderr)
        off = run_module(*argv)
        for line in lines:
            assert line not in off.stderr, (argv, line)
        assert re.sub(r"[\d.]+ s", "", off.stdout) == re.sub(r"[\d.]+ s", "", on.stdout)  # the summary is the same
