"""Read-only views for an outside engine, where the kernel allows it: the whole file system but its own home.

An engine runs as the bench's user, so permissions alone cannot keep it out of `data/`, the code, or anything else
the user may write (its home, /tmp, a cache another program trusts). Where unprivileged user namespaces are allowed
(most Linux desktops and servers; often not inside a container), the engine starts in a user and mount namespace of
its own in which every mount is read-only except the engine's own home folder (its HOME and TMPDIR, made by the
runner and deleted after it), a fresh /dev/shm of its own, and the kernel's pseudo file systems (/proc, /sys, /dev,
where a write is no file): a write anywhere else fails with EROFS. The engine keeps the user id it has (mapped to
itself), and its exec gains no capability (SECBIT_NOROOT, no_new_privs), so it cannot remount them writable. Where
the kernel refuses that, the checkout, the data folder and the bench's hand-over folder alone are made read-only;
where it refuses even that, the engine runs without either. The record says which (`config.external.isolation`),
and the bench's check of what changed (runners/footprint.py) applies in every case.
"""

from __future__ import annotations

import ctypes
import os
import re
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


PSEUDO = ("/proc", "/sys", "/dev")
"""Where the kernel's own file systems are mounted: left as they are (a device node is written through a read-only
mount anyway, and /dev/shm gets a tmpfs of the engine's own)."""


def mount_points(mountinfo: str) -> list[str]:
    """The mount points of a `/proc/self/mountinfo` text, in its order (parents before what is mounted on them),
    with the kernel's octal escapes (`\\040` for a space) decoded."""
    points = []
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if len(fields) > 4:
            points.append(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4]))
    return points


def whole_root_hook(writable: list[Path], read_only: list[Path], then: Callable[[], None]) -> Callable[[], None] | None:
    """A `preexec_fn` that puts the child in its own user and mount namespace in which every mount is read-only but
    `writable` (bound onto themselves first, so they are mounts of their own), a fresh /dev/shm and the pseudo file
    systems; `read_only` are made read-only by name too (a folder on a mount left writable). Then runs `then` (the
    usual hook). None where that cannot be tried (not Linux, or switched off)."""
    if sys.platform != "linux" or os.environ.get(DISABLE_ENV) == "1":
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    kept = [str(Path(p).resolve()) for p in writable if Path(p).is_dir()]
    named = [str(Path(p).resolve()) for p in read_only if Path(p).is_dir()]

    def check(result: int, what: str) -> None:
        if result != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"{what}: {os.strerror(errno)}")

    def read_only_mount(target: str) -> None:
        locked = sum(m for s, m in _KEPT_FLAGS.items() if os.statvfs(target).f_flag & s)
        remount = _MS_REMOUNT | _MS_BIND | _MS_RDONLY | locked
        check(libc.mount(None, target.encode(), None, remount, None), f"read-only {target}")

    def hook() -> None:
        _enter(libc, uid, gid, check)
        for target in kept + named:  # mounts of their own: the first stay writable, the others go read-only below
            check(libc.mount(target.encode(), target.encode(), None, _MS_BIND | _MS_REC, None), f"bind {target}")
        if os.path.isdir("/dev/shm"):
            flags = _MS_NOSUID | _MS_NODEV
            check(libc.mount(b"tmpfs", b"/dev/shm", b"tmpfs", flags, b"mode=1777"), "tmpfs /dev/shm")
        with open("/proc/self/mountinfo") as f:
            points = mount_points(f.read())
        for target in dict.fromkeys(points):
            pseudo = any(target == p or target.startswith(p + "/") for p in PSEUDO)
            if pseudo or target in kept or any(target.startswith(k + "/") for k in kept):
                continue
            read_only_mount(target)
        _no_privileges(libc, check)
        then()

    return hook


def _enter(libc: ctypes.CDLL, uid: int, gid: int, check: Callable[[int, str], None]) -> None:
    """Into a user and mount namespace of the child's own, as itself, its mounts private to it."""
    check(libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS), "unshare")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
    check(libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "mount --make-rprivate /")


def _no_privileges(libc: ctypes.CDLL, check: Callable[[int, str], None]) -> None:
    """Its exec gains no capability in the namespace, so it cannot make a mount writable again."""
    check(libc.prctl(_PR_SET_SECUREBITS, _SECBIT_NOROOT | _SECBIT_NOROOT_LOCKED, 0, 0, 0), "securebits")
    check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def read_only_hook(paths: list[Path], then: Callable[[], None]) -> Callable[[], None] | None:
    """A `preexec_fn` that puts the child in its own user and mount namespace with `paths` read-only, then runs
    `then` (the usual hook); None where that cannot be tried (not Linux, or switched off). Where `whole_root_hook`
    is refused."""
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
        _enter(libc, uid, gid, check)
        for target in targets:
            path = target.encode()
            check(libc.mount(path, path, None, _MS_BIND | _MS_REC, None), f"bind {target}")
            remount = _MS_REMOUNT | _MS_BIND | _MS_RDONLY | flags[target]
            check(libc.mount(None, path, None, remount, None), f"read-only {target}")
        _no_privileges(libc, check)
        then()

    return hook
