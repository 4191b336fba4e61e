"""Read-only views of the checkout and the data folder for an outside engine, where the kernel allows it.

An engine runs as the bench's user, so permissions alone cannot keep it out of `data/` or the code. Where
unprivileged user namespaces are allowed (most Linux desktops and servers; often not inside a container), the
engine starts in a user and mount namespace of its own in which the checkout, the data folder and the bench's
hand-over folder are bind-mounted read-only: a write there fails with EROFS. The engine keeps the user id it has
(mapped to itself), and its exec gains no capability (SECBIT_NOROOT, no_new_privs), so it cannot remount them
writable. Where the kernel refuses, the engine runs without this, the record says so (`config.external.isolation`),
and the bench's check of what changed (runners/footprint.py) still applies.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable
from pathlib import Path

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MS_NOATIME, _MS_NODIRATIME, _MS_RELATIME = 1024, 2048, 1 << 21
_KEPT_FLAGS = {  # statvfs flag -> mount flag: flags a remount inside a user namespace must keep (they are locked)
    os.ST_NOSUID: _MS_NOSUID,
    os.ST_NODEV: _MS_NODEV,
    os.ST_NOEXEC: _MS_NOEXEC,
    os.ST_NOATIME: _MS_NOATIME,
    os.ST_NODIRATIME: _MS_NODIRATIME,
    os.ST_RELATIME: _MS_RELATIME,
}
_PR_SET_SECUREBITS, _SECBIT_NOROOT, _SECBIT_NOROOT_LOCKED = 28, 1, 2
_PR_SET_NO_NEW_PRIVS = 38
DISABLE_ENV = "FAIRFIGHT_NO_CONFINE"
"""Set to 1 to run outside engines without the read-only views (a host where namespaces misbehave); the bench's
footprint check still applies."""


def read_only_hook(paths: list[Path], then: Callable[[], None]) -> Callable[[], None] | None:
    """A `preexec_fn` that puts the child in its own user and mount namespace with `paths` read-only, then runs
    `then` (the usual hook); None where that cannot be tried (not Linux, or switched off)."""
    if sys.platform != "linux" or os.environ.get(DISABLE_ENV) == "1":
        return None
    libc = ctypes.CDLL(None, use_errno=True)  # looked up here, in the parent, as lifetime.die_with_parent does
    uid, gid = os.getuid(), os.getgid()
    targets = [str(p) for p in paths if Path(p).is_dir()]
    flags = {t: sum(m for s, m in _KEPT_FLAGS.items() if os.statvfs(t).f_flag & s) for t in targets}

    def check(result: int, what: str) -> None:
        if result != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"{what}: {os.strerror(errno)}")

    def hook() -> None:
        check(libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS), "unshare")
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
        check(libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "mount --make-rprivate /")
        for target in targets:
            path = target.encode()
            check(libc.mount(path, path, None, _MS_BIND | _MS_REC, None), f"bind {target}")
            remount = _MS_REMOUNT | _MS_BIND | _MS_RDONLY | flags[target]
            check(libc.mount(None, path, None, remount, None), f"read-only {target}")
        # its exec gains no capability in the namespace, so it cannot make them writable again
        check(libc.prctl(_PR_SET_SECUREBITS, _SECBIT_NOROOT | _SECBIT_NOROOT_LOCKED, 0, 0, 0), "securebits")
        check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        then()

    return hook
