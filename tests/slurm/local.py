"""A real Slurm on this one host for the tests: Debian's munge, slurmctld and two slurmd (node names n1 and n2, each
on a port of its own), all private to a folder (their config, keys, sockets, state and logs), started and ended by
the caller. `ensure_installed()` installs the Debian packages (as root, with apt-get) or says why it cannot."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "scontrol", "squeue", "scancel")
NODES = ("n1", "n2")


def missing() -> list[str]:
    return [b for b in BINARIES if shutil.which(b) is None and not Path("/usr/sbin", b).exists()]


def ensure_installed() -> str | None:
    """None when Slurm and munge are here (installing Debian's packages if need be), else why not."""
    if not missing():
        return None
    if not shutil.which("apt-get") or os.geteuid() != 0:
        return f"Slurm is not installed ({', '.join(missing())} missing) and apt-get as root is not available"
    env = os.environ | {"DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES],
    ):
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
        if proc.returncode:
            return f"`{' '.join(cmd)}` failed: {(proc.stderr or proc.stdout)[-500:]}"
    return None if not missing() else f"installed, yet {', '.join(missing())} still missing"


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _sbin(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def _config(root: Path, ports: list[int], munge_socket: Path) -> str:
    ctld, *slurmd = ports
    host = socket.gethostname()
    lines = [
        "ClusterName=fairfight-test",
        f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={ctld}",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"AuthInfo=socket={munge_socket}",
        f"StateSaveLocation={root}/ctld",
        f"SlurmdSpoolDir={root}/spool-%n",
        f"SlurmctldPidFile={root}/slurmctld.pid",
        f"SlurmdPidFile={root}/slurmd-%n.pid",
        f"SlurmctldLogFile={root}/slurmctld.log",
        f"SlurmdLogFile={root}/slurmd-%n.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        "MpiDefault=none",
        "ReturnToService=2",
        "SlurmdParameters=config_overrides",
        "SchedulerType=sched/builtin",
        "JobCompType=jobcomp/none",
        "AccountingStorageType=accounting_storage/none",
        "KillWait=20",
        "InactiveLimit=0",
        "MinJobAge=300",
        "SlurmctldTimeout=30",
        "SlurmdTimeout=30",
    ]
    for name, port in zip(NODES, slurmd, strict=True):
        lines.append(f"NodeName={name} NodeHostname={host} NodeAddr=127.0.0.1 Port={port} CPUs=1 State=UNKNOWN")
    lines.append(f"PartitionName=debug Nodes={','.join(NODES)} Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def cluster(root: Path) -> Iterator[dict[str, str]]:
    """Start munged, slurmctld and two slurmd under `root`; yield the environment the Slurm commands need
    (SLURM_CONF); end every daemon it started when the block ends, whatever happened."""
    root.mkdir(parents=True, exist_ok=True)
    key = root / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    munge_socket = root / "munge.socket"
    conf = root / "slurm.conf"
    conf.write_text(_config(root, _free_ports(1 + len(NODES)), munge_socket))
    for folder in ("ctld", *(f"spool-{n}" for n in NODES)):
        (root / folder).mkdir(exist_ok=True)
    env = os.environ | {"SLURM_CONF": str(conf)}
    started: list[subprocess.Popen] = []
    try:
        started.append(subprocess.Popen(
            [_sbin("munged"), "--foreground", "--force", f"--socket={munge_socket}", f"--key-file={key}",
             f"--pid-file={root}/munged.pid", f"--log-file={root}/munged.log", f"--seed-file={root}/munge.seed"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))  # fmt: skip
        _wait(lambda: munge_socket.exists(), 20, "munged did not start", root)
        started.append(subprocess.Popen([_sbin("slurmctld"), "-D", "-i"], env=env, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.STDOUT, start_new_session=True))  # fmt: skip
        for name in NODES:
            started.append(subprocess.Popen([_sbin("slurmd"), "-D", "-N", name], env=env, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.STDOUT, start_new_session=True))  # fmt: skip
        _wait(lambda: _idle(env), 60, "the two nodes did not come up idle", root)
        yield env
    finally:
        for proc in reversed(started):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(started):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _idle(env: dict[str, str]) -> bool:
    out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], capture_output=True, text=True, env=env, timeout=20)
    states = dict(line.split() for line in out.stdout.splitlines() if line.strip())
    return all(states.get(n) == "idle" for n in NODES)


def _wait(ready, timeout_s: float, what: str, root: Path) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.5)
    logs = "\n".join(f"--- {p.name}\n{p.read_text()[-1500:]}" for p in sorted(root.glob("*.log")))
    raise RuntimeError(f"{what} within {timeout_s:g} s\n{logs}")
