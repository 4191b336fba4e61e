"""`fairfight slurm` (runners/slurm.py) against a real Slurm: Debian's munge, slurmctld and two slurmd (nodes n1 and
n2) started on this host by the test (tests/slurm/local.py), installed with apt-get where they are missing and we are
root (CI: a clean clone as root), skipped with the reason where they cannot be. A two-node cpu-smoke torch job (gloo,
one process per node) through the command gives one valid record naming the job and both nodes; a cancelled job
leaves a failure record with Slurm's reason and nothing partial."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from generator import load
from runners import layout
from tests.conftest import TRAIN, run_module
from tests.slurm import local

SLICE = ("--suite", "cpu-smoke", "--workload", TRAIN, "--variant", "ddp-fp32-stock")


def test_dry_run_prints_the_script_and_submits_nothing(tmp_path: Path) -> None:
    args = ("slurm", *SLICE, "--nodes", "2", "--time", "00:20:00", "--partition", "gpu", "--account", "proj-1")
    proc = run_module("fairfight", *args, "--script", str(tmp_path / "job.sbatch"), "--dry-run", "--data-dir",
                      str(tmp_path / "data"))  # fmt: skip
    text = proc.stdout
    for line in ("#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=1", "#SBATCH --time=00:20:00",
                 "#SBATCH --partition=gpu", "#SBATCH --account=proj-1"):  # fmt: skip
        assert line in text.splitlines(), text
    assert 'scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1' in text and '--node-rank "$SLURM_NODEID"' in text
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_mistake_is_caught_before_anything_is_submitted(tmp_path: Path) -> None:
    for args, said in (
        (["--nodes", "0"], "--nodes 0: at least 1"),
        (["--nodes", "3"], "do not split over 3 nodes"),
        (["--variant", "nope"], "--variant 'nope': not a variant"),
        (["--workload", "nope"], "--workload 'nope': not a workload"),
        (["--time", "soon"], "not a Slurm time limit"),
    ):
        proc = run_module("fairfight", "slurm", *SLICE, *args, "--script", str(tmp_path / "job.sbatch"), check=False)
        assert proc.returncode == 2 and said in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert "nothing was submitted" in proc.stderr
    proc = run_module("fairfight", "slurm", "--suite", "no-such-suite", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    why = local.ensure_installed()
    if why:
        pytest.skip(f"needs Slurm and munge (Debian's slurmctld, slurmd, munge): {why}")
    with local.cluster(tmp_path_factory.mktemp("slurm")) as env:
        yield env


def _submit(env: dict[str, str], tmp: Path, *args: str) -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = run_module("fairfight", "slurm", *SLICE, "--nodes", "2", "--time", "10", "--port", str(port),
                      "--script", str(tmp / "job.sbatch"), "--data-dir", str(tmp / "data"), *args,
                      SLURM_CONF=env["SLURM_CONF"])  # fmt: skip
    found = re.search(r"submitted job (\d+)", proc.stdout)
    assert found, proc.stdout + proc.stderr
    return found.group(1)


def _wait_gone(env: dict[str, str], job: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        out = subprocess.run(["squeue", "-h", "-j", job], capture_output=True, text=True, env=env).stdout
        if not out.strip():
            return
        time.sleep(1)
    raise AssertionError(f"job {job} still queued or running after {timeout_s:g} s")


def _log(tmp: Path, job: str) -> str:
    path = tmp / f"slurm-{job}.out"
    return path.read_text()[-4000:] if path.exists() else "(no job output)"


@pytest.mark.bench
@pytest.mark.timeout(600)
def test_a_two_node_job_writes_one_record_naming_the_job_and_both_nodes(slurm: dict[str, str], tmp_path: Path) -> None:
    job = _submit(slurm, tmp_path, "--steps", "20")
    _wait_gone(slurm, job, 480)
    files = sorted((tmp_path / "data").rglob("*.parquet"))
    assert len(files) == 1, (files, _log(tmp_path, job))
    head = layout.read(files[0]).to_pylist()[0]
    hardware = json.loads(head["hardware"])
    assert head["status"] == "ok", (head["error"], _log(tmp_path, job))
    assert hardware["slurm"]["job_id"] == job and hardware["slurm"]["nodes"] == list(local.NODES)
    assert hardware["slurm"]["nodelist"] == "n[1-2]" and hardware["slurm"]["partition"] == "debug"
    # each node's entry names its Slurm node (their order is torchrun's group ranks: c10d's, by arrival)
    assert sorted(n["hardware"]["slurm"]["node_name"] for n in hardware["nodes"]) == list(local.NODES)
    assert [n["node"] for n in hardware["nodes"]] == [0, 1]
    assert load.load(load.data_folder(files[0])).rejected == []


@pytest.mark.bench
@pytest.mark.timeout(600)
def test_a_cancelled_job_leaves_a_failure_record_with_its_reason(slurm: dict[str, str], tmp_path: Path) -> None:
    job = _submit(slurm, tmp_path, "--steps", "100000")
    deadline = time.monotonic() + 300
    while "] " + TRAIN not in _log(tmp_path, job) and time.monotonic() < deadline:  # the run has begun on node 0
        time.sleep(1)
    time.sleep(3)
    subprocess.run(["scancel", job], check=True, env=slurm)
    _wait_gone(slurm, job, 120)
    _ended_by_slurm(tmp_path, job, "CANCELLED")


@pytest.mark.bench
@pytest.mark.timeout(600)
def test_a_job_past_its_time_limit_leaves_a_failure_record_saying_so(slurm: dict[str, str], tmp_path: Path) -> None:
    """Slurm's own time limit, not a cancel: a one-minute job of a run that would take hours is ended by slurmctld
    (SIGTERM, then SIGKILL after KillWait), and the record says it reached its time limit, with nothing partial left."""
    job = _submit(slurm, tmp_path, "--steps", "1000000", "--time", "1")
    _wait_gone(slurm, job, 300)
    _ended_by_slurm(tmp_path, job, "TIMEOUT: it reached its time limit (00:01:00)")


def _ended_by_slurm(tmp: Path, job: str, state: str) -> None:
    """The job left one valid failure record naming it, with Slurm's reason (`state`), and nothing partial."""
    data = tmp / "data"
    files = sorted(data.rglob("*.parquet"))
    assert len(files) == 1, (files, _log(tmp, job))
    assert not [p for p in data.rglob("*") if p.is_file() and p.name.startswith(".tmp-")]
    head = layout.read(files[0]).to_pylist()[0]
    assert head["status"] == "failed"
    assert f"Slurm ended job {job} ({state}" in head["error"], head["error"]
    assert json.loads(head["hardware"])["slurm"]["job_id"] == job
    assert load.load(load.data_folder(files[0])).rejected == []
