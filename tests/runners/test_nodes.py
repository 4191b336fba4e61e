"""Past one host (runners/nodes.py): a torch run over nodes through torchrun's c10d rendezvous is one job and one
record, written by the node where global rank 0 ran and naming every node's hardware and software; the flags are
checked before anything runs. The job is real: two bench processes on 127.0.0.1, each a torchrun agent of one
process (gloo), as two hosts would be."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from generator import load
from runners import bounds, layout
from tests.conftest import ROOT, TRAIN, run_module


def _bench(*args: str, data: Path) -> subprocess.CompletedProcess[str]:
    return run_module("fairfight", "bench", "--suite", "cpu-smoke", "--workload", TRAIN, *args, "--data-dir",
                      str(data), check=False)  # fmt: skip


def test_the_flags_are_checked_before_anything_runs(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for args, said in (
        (["--variant", "ddp-tuned", "--nnodes", "2"], "needs --node-rank"),
        (["--variant", "ddp-tuned", "--nnodes", "2", "--node-rank", "0"], "needs --rdzv-endpoint"),
        (["--variant", "ddp-tuned", "--nnodes", "2", "--node-rank", "2", "--rdzv-endpoint", "h"], "0 to 1"),
        (["--variant", "ddp-tuned", "--node-rank", "1"], "without --nnodes"),
        (["--variant", "ddp-tuned", "--nnodes", "3", "--node-rank", "0", "--rdzv-endpoint", "h"], "do not split"),
        (["--variant", "mlx-fp32", "--nnodes", "2", "--node-rank", "0", "--rdzv-endpoint", "h"], "under torchrun"),
    ):
        proc = _bench(*args, data=data)
        assert proc.returncode == 2 and said in proc.stderr and "Traceback" not in proc.stderr, (args, proc.stderr)
        assert not data.exists()
    proc = _bench("--variant", "ddp-tuned", "--nnodes", "2", "--node-rank", "1", "--rdzv-endpoint", "h0",
                  "--dry-run", data=data)  # fmt: skip
    assert proc.returncode == 0 and "on 2 cpu device(s) over 2 nodes" in proc.stdout and not data.exists()


def test_a_node_list_is_checked_like_the_rest_of_a_record() -> None:
    node = {"node": 0, "hostname": "gpu-a1", "processes": 8, "hardware": {}, "software": {}}
    assert bounds._node_problems([node, node | {"node": 1}]) == []
    found = dict(bounds._node_problems([node, node | {"hostname": "<b>x</b>"}, {"node": 2}, node]))
    assert "is not a host name" in found["hardware.nodes[1].hostname"]
    assert "an object with the keys" in found["hardware.nodes[2]"] and "listed twice" in found["hardware.nodes[3].node"]


@pytest.mark.bench
def test_two_agents_on_one_host_form_one_job_and_one_record(tmp_path: Path) -> None:
    with socket.socket() as s:  # a free port for the rendezvous (torchrun's c10d store)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    common = ["--variant", "ddp-fp32-stock", "--steps", "20", "--nnodes", "2", "--rdzv-endpoint", f"127.0.0.1:{port}"]
    procs = []
    for rank in (0, 1):
        cmd = [sys.executable, "-m", "fairfight", "bench", "--suite", "cpu-smoke", "--workload", TRAIN, *common,
               "--node-rank", str(rank), "--data-dir", str(tmp_path / f"node{rank}"), "--format", "json"]  # fmt: skip
        procs.append(subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      env=os.environ | {"NO_MKDOCS_2_WARNING": "1"}))  # fmt: skip
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-3000:] for _, err in outs]
    files = sorted(tmp_path.rglob("*.parquet"))
    assert len(files) == 1, files  # one job, one record, written by one node
    head = layout.read(files[0]).to_pylist()[0]
    hardware, config = json.loads(head["hardware"]), json.loads(head["config"])
    assert head["status"] == "ok" and head["accelerator_count"] == 2
    assert [n["node"] for n in hardware["nodes"]] == [0, 1]  # both nodes named, each with its hardware and software
    assert all(n["processes"] == 1 and n["hardware"]["cpu_cores"] and n["software"]["torch"] for n in hardware["nodes"])
    assert config["launcher"].startswith("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d")
    assert load.load(load.data_folder(files[0])).rejected == []
    summaries = [json.loads(out) for out, _ in outs]
    run_id = head["run_id"]
    lines = [s["runs"][0] for s in summaries]
    assert sum(line["file"] == str(files[0]) for line in lines) == 1  # the writer's summary names the file
    assert sum(f"run {run_id}" in str(line["file"]) for line in lines) == 1  # the other says whose record it is


def test_the_slurm_script_in_running_suites_is_what_fairfight_slurm_writes() -> None:
    """Running suites shows `fairfight slurm --dry-run`'s script for its command (tests/slurm submits the same
    command's scripts to a real Slurm); only this machine's Python and checkout differ."""
    text = (ROOT / "site_src" / "docs" / "running.md").read_text()
    shown = next(block for block in text.split("```bash\n")[1:] if "#SBATCH" in block).split("```", 1)[0]
    proc = run_module("fairfight", "slurm", "--suite", "h100", "--workload", "train-gpt-1.27b-mb4", "--variant",
                      "ddp-tuned", "--nodes", "2", "--gpus-per-node", "8", "--time", "02:00:00", "--partition", "gpu",
                      "--script", "build/slurm/fairfight-h100.sbatch", "--dry-run")  # fmt: skip
    made = proc.stdout.replace(sys.executable, "/path/to/venv/bin/python").replace(str(ROOT), "/path/to/fair-fight")
    assert shown == made
