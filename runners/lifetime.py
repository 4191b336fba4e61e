"""A run's processes live no longer than the bench that started them, and write nothing once it is gone.

The bench starts each runner in a process group of its own (so a time-out can kill the whole group) and puts its
own pid in the runner's environment. These tie them together:
- `die_with_parent`, a `preexec_fn` for every process a runner or the bench starts: on Linux the kernel sends it
  SIGTERM when its parent dies, however the parent died (PR_SET_PDEATHSIG, prctl(2));
- the bench's signal handlers, which end the running group before the bench exits (runners/bench.py);
- `orphaned`, which the store checks before it writes: a runner whose bench is gone writes no file;
- `become_subreaper` and `end_descendants`: a process that leaves its group (`setsid`, a double fork) is still a
  descendant, and an orphaned descendant is re-parented to the nearest subreaper above it (PR_SET_CHILD_SUBREAPER)
  instead of init. The bench and the external runner are subreapers, so whatever a run started is found and ended
  with the run, without cgroups.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

BENCH_PID_ENV = "FAIRFIGHT_BENCH_PID"
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36


def _prctl() -> Callable[..., int] | None:
    return ctypes.CDLL(None, use_errno=True).prctl if sys.platform == "linux" else None


def die_with_parent() -> Callable[[], None]:
    """A `preexec_fn` that has the child sent SIGTERM when the process starting it dies (Linux; elsewhere the bench's
    signal handlers and `orphaned` still apply)."""
    parent = os.getpid()
    # looked up here, in the parent: a forked child of a threaded process should not load libraries
    prctl = _prctl()

    def hook() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, [])  # a parent may block stop signals while it starts us
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before the hook ran: nobody will send the signal
            os._exit(1)

    return hook


def orphaned() -> bool:
    """True when this process was started by a bench (FAIRFIGHT_BENCH_PID) that no longer runs."""
    pid = os.environ.get(BENCH_PID_ENV)
    if not pid or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's (a reused pid would be too: the check is best effort)
        return False
    return False


def become_subreaper() -> bool:
    """Have this process's orphaned descendants re-parented to it rather than to init (Linux 3.4+), so that
    `end_descendants` reaches a daemon that left its process group; False where the kernel has no such thing."""
    prctl = _prctl()
    return prctl is not None and prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def not_inspectable() -> bool:
    """Make this process non-dumpable (PR_SET_DUMPABLE 0): another process of the same user can then no longer read
    its environment, working directory or open files under /proc, nor attach a debugger to it. An outside engine
    runs as the same user as the bench; this keeps the paths and the hand-over file of the process that starts it
    out of its reach (its command line stays readable, as every process's is)."""
    prctl = _prctl()
    return prctl is not None and prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0


def children(pid: int | None = None) -> list[int]:
    """The processes whose parent is `pid` (this process by default), from /proc (empty elsewhere)."""
    pid = os.getpid() if pid is None else pid
    out = []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                stat = Path(entry.path, "stat").read_bytes()
            except OSError:  # gone meanwhile
                continue
            fields = stat.rpartition(b")")[2].split()  # after "pid (comm)": a name may hold spaces and parens
            if len(fields) > 1 and fields[1].isdigit() and int(fields[1]) == pid:
                out.append(int(entry.name))
    return out


def end_descendants(keep: frozenset[int] = frozenset(), timeout_s: float = 10.0) -> list[int]:
    """SIGKILL every child of this process but `keep`, reap it, and repeat: as each dies its own children are
    re-parented here (a subreaper: `become_subreaper`), so a whole tree ends however it forked. Returns the pids
    ended. A process that does not die within `timeout_s` (stuck in the kernel) is left; its pid is still returned."""
    ended: list[int] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        strays = [p for p in children() if p not in keep]
        if not strays:
            break
        for pid in strays:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            if pid not in ended:
                ended.append(pid)
        for pid in strays:
            while time.monotonic() < deadline:
                try:
                    done, _ = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:  # reaped elsewhere, or not ours after all
                    break
                if done:
                    break
                time.sleep(0.01)
    return ended


def leave(code: int | None) -> None:
    """End a command-line process once its work is done and said: its output flushed, then `os._exit`, without the
    interpreter's teardown. That teardown destroys native thread pools (Arrow's among them) while a worker may still
    be alive, and `std::terminate` then aborts a process whose records were all written and whose summary was printed:
    the bench exited with SIGABRT ("terminate called without an active exception") after its summary, now and then,
    on a busy 2-core host (apache/arrow#34314 reports the same of a parquet thread). Every file the bench writes is
    complete and renamed into place before this, and nothing registers work for the interpreter's exit."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code if isinstance(code, int) else 0)
