"""What Slurm adds to a record, on the nodes of a job: the job's facts for `hardware.slurm` and, when Slurm ends the
job, why (for the failure record). Apart from `runners/slurm.py` (which writes and submits jobs and imports the bench's
modules), so that provenance and the bench can read a job without an import circle."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from datetime import datetime


def facts(env: dict[str, str] | None = None) -> dict[str, object] | None:
    """The Slurm job this process runs in (None outside one): job id, node list as Slurm writes it and expanded,
    partition, the allocation's GPUs per node (None where it holds none), and this node's Slurm name."""
    env = dict(os.environ if env is None else env)
    job = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
    if not job:
        return None
    nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST") or ""
    gpus = env.get("SLURM_GPUS_ON_NODE") or env.get("SLURM_GPUS_PER_NODE") or ""
    count = re.search(r"(\d+)$", gpus)
    return {
        "job_id": job[:40],
        "nodelist": nodelist[:4000],
        "nodes": _hostnames(nodelist, env),
        "partition": env.get("SLURM_JOB_PARTITION") or None,
        "gpus_per_node": int(count.group(1)) if count else None,
        "node_name": env.get("SLURMD_NODENAME") or None,
    }


def _hostnames(nodelist: str, env: dict[str, str]) -> list[str]:
    """`scontrol show hostnames` of a node list (it needs no controller); the list as written where it fails."""
    if not nodelist:
        return []
    try:
        out = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True, timeout=10,
                             check=True, env=env)  # fmt: skip
        names = out.stdout.split()
    except (OSError, subprocess.SubprocessError):
        names = []
    return names[:1024] or [nodelist[:253]]


def ended_by_slurm(signum: int, env: dict[str, str] | None = None) -> str | None:
    """Why Slurm ended this job, for a failure record (None outside a Slurm job): its state as `scontrol` reports it
    (CANCELLED, TIMEOUT...). While a job ends Slurm reports it COMPLETING; it then ended at its time limit when its
    end time is its start time plus the limit, else someone cancelled it."""
    env = dict(os.environ if env is None else env)
    job = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
    if not job:
        return None
    try:
        out = subprocess.run(["scontrol", "show", "job", "-o", job], capture_output=True, text=True, timeout=10,
                             env=env).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        out = ""
    fields = dict(f.split("=", 1) for f in out.split() if "=" in f)
    state = fields.get("JobState", "")
    if state in ("COMPLETING", "RUNNING", ""):
        state = _cancelled_or_timeout(fields)
    limit = fields.get("TimeLimit", "?")
    said = {"TIMEOUT": f"it reached its time limit ({limit})", "CANCELLED": "it was cancelled (scancel)",
            "PREEMPTED": "it was preempted", "NODE_FAIL": "one of its nodes failed"}.get(state, "")  # fmt: skip
    name = signal.Signals(signum).name
    return (f"Slurm ended job {job} ({state or 'state unknown'}: {said or 'reason not reported'}); the bench got "
            f"{name}, ended the run and wrote this record")  # fmt: skip


def _cancelled_or_timeout(fields: dict[str, str]) -> str:
    try:
        start = datetime.fromisoformat(fields["StartTime"])
        end = datetime.fromisoformat(fields["EndTime"])
        limit = _seconds(fields["TimeLimit"])
    except (KeyError, ValueError):
        return ""
    return "TIMEOUT" if (end - start).total_seconds() >= limit - 1 else "CANCELLED"


def _seconds(limit: str) -> float:
    days, _, rest = limit.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    while len(parts) < 3:
        parts.insert(0, 0)
    return int(days or 0) * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2]
