"""An outside engine run as an untrusted program: what it is given, where it runs, how much it may write, and how
it ends (the threat model is on the site's "Add an engine" page).

- Its environment is built, not inherited: the allowlisted variables a record keeps (`provenance.environment`,
  credentials dropped), a few it needs to start at all (`PASSED`), and HOME and TMPDIR in a folder of its own.
- It runs in that folder, created empty for the run outside the checkout, and is told neither the checkout's path
  nor the data folder's; the process that starts it is made non-dumpable, so /proc does not show them either. Where
  the kernel allows, it sees them read-only (`confine`: a user and mount namespace of its own).
- It runs in a session of its own. When it exits, overruns its budget or writes too much, its session is killed
  and then every process it left behind: the starting process is a subreaper (`lifetime.become_subreaper`), so a
  daemon that called setsid or forked twice is re-parented to it and ended too (`lifetime.end_descendants`).
- Its standard output is read in bounded memory (lines cut at `MAX_LINE_BYTES`, `MAX_OUTPUT_BYTES` in all), with a
  clock that a child holding the pipe open cannot stop: the deadline is checked between reads, not after them. Its
  standard error reaches the log bounded too, its control characters shown, not sent to the operator's terminal.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from runners import bounds, lifetime, provenance, streams
from runners.engines.external import confine

MAX_LINE_BYTES = 64 << 10
"""Longest output line read whole (a row is about 120 bytes); the rest of a longer one is dropped, and it is refused."""
MAX_OUTPUT_BYTES = 64 << 20
"""Most standard output one run may write (a 10⁵-step run with a loss per step writes about 25 MB)."""
DRAIN_S = 10.0
"""After the engine and everything it started have ended, how long the rest of its output may take to read."""
LOG_LINE_BYTES = 8 << 10
LOG_SHOWN_BYTES = 16 << 20
"""Its standard error reaches the bench log in lines of at most `LOG_LINE_BYTES`, `LOG_SHOWN_BYTES` in all, with
control characters shown as ⟨U+XXXX⟩, never sent to the terminal (an escape sequence can rewrite what the operator
sees, or set the clipboard)."""
PASSED = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "LD_LIBRARY_PATH", "PYTHONPATH")
"""Variables an engine gets beyond the allowlist, so that it can start (its interpreter, its libraries, its
locale); each is dropped if it looks like a credential, and PYTHONPATH loses any entry inside the checkout."""


def engine_env(home: Path, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment an outside engine gets: the allowlist, `PASSED`, and its own HOME and TMPDIR."""
    environ = dict(os.environ if environ is None else environ)
    env = provenance.environment(environ)
    for key in PASSED:
        value = environ.get(key)
        if value is None or provenance.secret_like(key, value):
            continue
        if key == "PYTHONPATH":
            value = os.pathsep.join(p for p in value.split(os.pathsep) if p and not _inside_checkout(p))
            if not value:
                continue
        env[key] = value
    (home / "tmp").mkdir(exist_ok=True)
    return env | {"HOME": str(home), "TMPDIR": str(home / "tmp"), "PYTHONDONTWRITEBYTECODE": "1"}


def _inside_checkout(path: str) -> bool:
    try:
        return Path(path).resolve().is_relative_to(provenance.REPO_ROOT)
    except (OSError, ValueError):
        return False


def resolved_command(command: list[str], base: Path) -> list[str]:
    """The command with each relative argument that names a file or folder beside the variants file (`base`)
    made absolute: the engine runs in a folder of its own, so `numpy_bigram.py` means the one beside the file."""
    out = []
    for arg in command:
        candidate = base / arg
        if arg and not arg.startswith("-") and not os.path.isabs(arg) and candidate.exists():
            out.append(str(candidate.resolve()))
        else:
            out.append(arg)
    return out


@dataclass(frozen=True, slots=True)
class Ended:
    """How an engine's run ended."""

    code: int | None
    """Its exit status (negative: the signal that ended it); None if it could not be started."""
    stopped: str | None
    """Why it was stopped, if it was: `budget` (its time ran out), `output` (it wrote more than allowed),
    `held` (its output stayed open after it and everything it started had ended)."""
    stepping: bool
    """Whether a step row came before the end (the budget then ran from the first one)."""
    left_behind: int
    """Processes it left running when it ended, which were ended with it."""
    output_bytes: int
    isolation: str
    """`WHOLE_ROOT` or `NAMED_ONLY` (confine.py), or `none` and why."""


WHOLE_ROOT = "read-only file system but its own home folder"
"""The isolation a record names where every mount but the engine's home was read-only to it (`confine`)."""
NAMED_ONLY = "read-only checkout and data folder"
"""Where the kernel refused that, but allowed the checkout and the data folder to be made read-only."""


def run(
    command: list[str],
    stdin_text: str,
    *,
    cwd: Path,
    env: dict[str, str],
    setup_s: float,
    budget_s: float,
    on_line: Callable[[int, streams.Line], bool],
    read_only: Sequence[Path] = (),
) -> Ended:
    """Run `command` in its own session, give it `stdin_text`, and hand each output line to `on_line` (its number
    and the line), which says whether it was a step row: until the first, the clock allows `setup_s + budget_s`,
    from then on `budget_s`; `read_only`: folders it may read but never write, where the kernel allows (`confine`).
    Raises OSError if the command cannot be started."""
    lifetime.become_subreaper()
    usual = lifetime.die_with_parent()  # the engine ends with the runner, the runner with the bench
    isolation = "none: not asked for" if not read_only else "none: not available here (not Linux, or switched off)"
    proc = None
    ways = [  # the strictest view the kernel allows: the whole file system read-only but its home, else the named
        (confine.whole_root_hook([cwd], list(read_only), usual), WHOLE_ROOT),
        (confine.read_only_hook(list(read_only), usual), NAMED_ONLY),
    ]
    for confined, how in ways if read_only else []:
        if confined is None:
            break
        try:
            proc = _start(command, cwd, env, confined)
            isolation = how
            break
        except subprocess.SubprocessError:  # the kernel (or a container's seccomp) refused the namespaces
            isolation = "none: this kernel refused an unprivileged user and mount namespace"
    if proc is None:
        proc = _start(command, cwd, env, usual)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None  # all PIPE
    threading.Thread(target=_feed, args=(proc.stdin, stdin_text), daemon=True).start()  # it may never read it
    relay = threading.Thread(target=_relay, args=(proc.stderr,), daemon=True)
    relay.start()
    fd = proc.stdout.fileno()
    splitter = streams.LineSplitter(MAX_LINE_BYTES)
    deadline = time.monotonic() + setup_s + budget_s
    exited_at: float | None = None
    stepping, stopped, total, n, left = False, None, 0, 0, 0
    try:
        while True:
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                # it has finished: whatever it started goes too, so nothing can hold its output open
                exited_at = now
                left += _end_session(proc)
            until = exited_at + DRAIN_S if exited_at is not None else deadline
            if now >= until:
                stopped = "held" if exited_at is not None else "budget"
                break
            ready, _, _ = select.select([fd], [], [], min(until - now, 0.5))
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            total += len(chunk)
            if total > MAX_OUTPUT_BYTES:
                stopped = "output"
                break
            for line in splitter.feed(chunk):
                n += 1
                if on_line(n, line) and not stepping:
                    stepping = True
                    deadline = time.monotonic() + budget_s
        for line in splitter.flush():
            n += 1
            on_line(n, line)
    finally:
        left += _end_session(proc)
        proc.stdout.close()
        relay.join(timeout=DRAIN_S)
    return Ended(proc.returncode, stopped, stepping, left, total, isolation)


def _start(command: list[str], cwd: Path, env: dict[str, str], hook: Callable[[], None]) -> subprocess.Popen:
    return subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
        start_new_session=True,
        preexec_fn=hook,
    )


def _relay(stream: IO[bytes]) -> None:
    """The engine's standard error to ours, line by line, bounded and with its control characters made visible."""
    shown = 0
    for line in streams.lines(stream, LOG_LINE_BYTES):
        if shown >= LOG_SHOWN_BYTES:
            continue  # read and dropped: the engine never blocks on a full pipe
        text = bounds.neutral(line.text()).replace("\r", "⟨U+000D⟩")
        text += f" … ({line.length - len(line.data):,} more bytes)" if line.cut else ""
        shown += len(text) + 1
        sys.stderr.write(
            text + "\n" if shown < LOG_SHOWN_BYTES else "… (the rest of its standard error is not shown)\n"
        )
        sys.stderr.flush()


def _feed(stdin: object, text: str) -> None:
    with contextlib.suppress(OSError):  # it did not read its spec: what it writes is judged all the same
        stdin.write(text.encode())  # type: ignore[attr-defined]
        stdin.close()  # type: ignore[attr-defined]


def _end_session(proc: subprocess.Popen) -> int:
    """Kill the engine's session (its process group: the engine and what it started there) and every descendant
    left (re-parented to this subreaper); returns how many processes other than the engine were ended."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if proc.returncode is None:
        proc.wait()
    return len(lifetime.end_descendants())
