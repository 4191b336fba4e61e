"""A run's processes live no longer than the bench that started them, and write nothing once it is gone.

The bench starts each runner in a process group of its own (so a time-out can kill the whole group) and puts its
own pid in the runner's environment. Three things tie them together:
- `die_with_parent`, a `preexec_fn` for every process a runner or the bench starts: on Linux the kernel sends it
  SIGTERM when its parent dies, however the parent died (PR_SET_PDEATHSIG, prctl(2));
- the bench's signal handlers, which end the running group before the bench exits (runners/bench.py);
- `orphaned`, which the store checks before it writes: a runner whose bench is gone writes no file.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

BENCH_PID_ENV = "FAIRFIGHT_BENCH_PID"
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent() -> Callable[[], None]:
    """A `preexec_fn` that has the child sent SIGTERM when the process starting it dies (Linux; elsewhere the bench's
    signal handlers and `orphaned` still apply)."""
    parent = os.getpid()
    # looked up here, in the parent: a forked child of a threaded process should not load libraries
    prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform == "linux" else None

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
