"""The process guards the bench and the external runner use (runners/lifetime.py) and the bounded line reader
(runners/streams.py), each in a real child process."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from runners import streams

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="prctl and /proc are Linux's")


def _python(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True, timeout=120
    ).stdout


def test_a_subreaper_ends_a_double_forked_setsid_daemon() -> None:
    """A grandchild that called setsid and whose parent exited is re-parented to the subreaper, found and ended."""
    out = _python(
        """
        import os, subprocess, sys, time
        from runners import lifetime
        assert lifetime.become_subreaper()
        spawner = subprocess.run([sys.executable, "-c",
            "import os, subprocess, sys\\n"
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)'], start_new_session=True,\\n"
            "                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\\n"
            "print(p.pid)"], capture_output=True, text=True, check=True)
        daemon = int(spawner.stdout)
        deadline = time.monotonic() + 30
        while daemon not in lifetime.children() and time.monotonic() < deadline:
            time.sleep(0.05)
        print(daemon in lifetime.children(), daemon in lifetime.end_descendants(), os.path.exists(f"/proc/{daemon}"))
        """
    )
    assert out.split() == ["True", "True", "False"]


def test_not_inspectable_makes_the_process_non_dumpable() -> None:
    out = _python(
        """
        import ctypes
        from runners import lifetime
        prctl = ctypes.CDLL(None).prctl
        before = prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
        lifetime.not_inspectable()
        print(before, prctl(3, 0, 0, 0, 0))
        """
    )
    assert out.split() == ["1", "0"]


def test_lines_are_cut_at_their_limit_and_their_length_kept() -> None:
    splitter = streams.LineSplitter(4)
    got = splitter.feed(b"ab\ncdefgh") + splitter.feed(b"ij\n\xff\xfe") + splitter.flush()
    assert [(line.data, line.length, line.cut) for line in got] == [
        (b"ab", 2, False),
        (b"cdef", 8, True),
        (b"\xff\xfe", 2, False),
    ]
    assert got[2].text() == "\\xff\\xfe"
