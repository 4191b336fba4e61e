"""The user's cache: what is made once per machine and kept outside any checkout, so a fresh clone (or a CI run)
reuses it — initial weights, llama.cpp builds, vLLM's CPU environment, the compiler cache, the site's script
bundle. `FAIRFIGHT_CACHE` moves it (default `~/.cache/fairfight`).

An entry's folder name carries a short hash of what it was made from (`short_hash`), so changed inputs make a new
entry rather than reuse a stale one; `locked` keeps two processes from making one entry at once, and each maker
writes its stamp file last, so a half-made entry is never taken for a finished one.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path


def root() -> Path:
    """The cache's folder: `$FAIRFIGHT_CACHE`, else `~/.cache/fairfight`."""
    return Path(os.environ.get("FAIRFIGHT_CACHE") or Path.home() / ".cache" / "fairfight")


def file_sha256(path: Path) -> str:
    """A file's sha256, read in blocks (model files and wheels run to gigabytes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            digest.update(block)
    return digest.hexdigest()


def short_hash(inputs: Mapping[str, object]) -> str:
    """Ten hex digits of the SHA-256 of `inputs` as canonical JSON: the part of an entry's name that changes when
    anything it was made from does."""
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:10]


@functools.cache
def tool_version(*cmd: str) -> str:
    """The first line `cmd --version` prints (a compiler, CMake), or `absent`: an input of the builds' keys (asked
    once per process)."""
    try:
        done = subprocess.run([*cmd, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "absent"
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0] if done.returncode == 0 and lines else "absent"


@contextlib.contextmanager
def locked(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive lock on `lock_file` (beside the entry it guards) for the block: a second process making the
    same entry waits here, then finds it made. The lock goes with the process, however that ends."""
    import fcntl  # POSIX: the machines that build engines (Linux, macOS)

    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
