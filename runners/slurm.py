"""`fairfight slurm`: a suite slice as one Slurm batch job over several nodes, and what Slurm adds to its record.

The command writes a batch script (nodes, GPUs per node, time limit, partition and account passed through to
`#SBATCH`), then submits it with `sbatch`, or prints it with `--dry-run` (nothing submitted, nothing written). In the
job, `srun` starts one task per node; each runs `fairfight bench` with `--nnodes`, `--node-rank $SLURM_NODEID` and the
head node (the first of `scontrol show hostnames "$SLURM_JOB_NODELIST"`, reached at the address Slurm itself uses for
it) as torchrun's c10d rendezvous endpoint: the multi-node path of runners/nodes.py, unchanged. Names, node count and
device split are checked here, before anything is submitted; the bench checks the rest on the nodes.

Plain `sbatch`, not submitit: the job is a shell script a user can read, keep, edit and resubmit by hand (`--dry-run`
prints exactly what would be submitted), it needs nothing of ours on the login node beyond this command and nothing
but the checkout on the nodes, and it adds no dependency. submitit pickles a Python callable into a shared folder and
runs it with its own Python entry point: the bench already is a command, so the pickle would only hide it.

In the record (`provenance.hardware`, under `hardware.slurm`): the job id, its node list (as Slurm writes it and
expanded), partition, the allocation's GPUs per node, and on each node's entry the Slurm name of that node. A job
Slurm cancels or stops at its time limit sends the bench SIGTERM: node 0's bench then ends the runner and writes the
run's failure record with Slurm's reason (`ended_by_slurm`); a partial file never stays under data/.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from runners import engines, nodes, provenance, spec

TIME = re.compile(r"\d+|\d+:\d{2}(:\d{2})?|\d+-\d+(:\d{2}){0,2}")
"""A Slurm time limit: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS."""
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def add_cli_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", required=True, help="suite name (runners/suites/NAME.toml)")
    p.add_argument("--workload", action="append", help="only this workload (repeatable); torch training workloads")
    p.add_argument("--variant", action="append", help="only this variant (repeatable)")
    p.add_argument("--nodes", type=int, default=2, metavar="N", help="nodes of the job (default 2): one task each")
    p.add_argument("--gpus-per-node", type=int, default=None, metavar="G",
                   help="GPUs of each node (#SBATCH --gpus-per-node); the run's world size is N×G. Leave it out on "
                   "CPU nodes: the workload's own world size is split over the nodes")  # fmt: skip
    p.add_argument("--time", default="01:00:00", metavar="LIMIT",
                   help="the job's time limit (#SBATCH --time, default 01:00:00)")  # fmt: skip
    p.add_argument("--partition", default=None, help="#SBATCH --partition")
    p.add_argument("--account", default=None, help="#SBATCH --account")
    p.add_argument("--job-name", default=None, help="#SBATCH --job-name (default fairfight-SUITE)")
    p.add_argument("--steps", type=int, default=None, help="passed to `fairfight bench --steps` (short checks)")
    p.add_argument("--port", type=int, default=nodes.DEFAULT_PORT, help="the rendezvous port on the head node")
    p.add_argument(
        "--data-dir",
        default="data",
        type=Path,
        help="where the nodes write result files (default: data, in this checkout; share it or collect it)",
    )
    p.add_argument("--script", type=Path, default=None, metavar="FILE",
                   help="where the batch script is written (default build/slurm/JOB-NAME-TIME.sbatch)")  # fmt: skip
    p.add_argument("--dry-run", action="store_true", help="print the batch script; write and submit nothing")


def problems(args: argparse.Namespace) -> list[str]:
    """Every mistake the job would only meet on the nodes, found here (raises SpecError for an unknown suite)."""
    from runners import preflight

    suite = spec.load_suite(args.suite)
    found = []
    if args.nodes < 1:
        found.append(f"--nodes {args.nodes}: at least 1")
    if args.gpus_per_node is not None and args.gpus_per_node < 1:
        found.append(f"--gpus-per-node {args.gpus_per_node}: at least 1 (leave it out on CPU nodes)")
    if not TIME.fullmatch(args.time):
        found.append(f"--time {args.time!r}: not a Slurm time limit (minutes, HH:MM:SS or D-HH:MM:SS)")
    for flag in ("partition", "account", "job_name"):
        value = getattr(args, flag)
        if value is not None and not NAME.fullmatch(value):
            found.append(f"--{flag.replace('_', '-')} {value!r}: letters, digits, '.', '_' and '-' only")
    if not 1 <= args.port < 65536:
        found.append(f"--port {args.port}: 1 to 65535")
    if args.steps is not None and args.steps < 1:
        found.append(f"--steps {args.steps}: at least 1")
    found += preflight._unknown_names(suite, args)
    todo = [(w, suite.variants[v]) for w in suite.workloads if not args.workload or w.name in args.workload
            for v in w.variants if (not args.variant or v in args.variant) and v in suite.variants]  # fmt: skip
    if not found and not todo:
        found.append(f"nothing to run: no training workload/variant of suite {suite.name} matches the filters")
    if args.nodes >= 1 and (args.gpus_per_node or 1) >= 1:
        for work, variant in todo:
            name, world = f"{work.name} · {variant.name}", world_size(args) or work.world_size
            if not engines.get(variant.engine).torchrun:
                found.append(f"{name}: its engine does not run under torchrun; only torch workloads run over nodes")
            elif world % args.nodes:
                found.append(f"{name}: {world} device(s) do not split over {args.nodes} nodes")
    return found


def world_size(args: argparse.Namespace) -> int | None:
    return args.nodes * args.gpus_per_node if args.gpus_per_node else None


def script(args: argparse.Namespace, logs: Path) -> str:
    """The batch script: #SBATCH lines, then one `srun` task per node running this checkout's bench; the job's own
    output goes to `logs`/slurm-JOBID.out."""
    name = args.job_name or f"fairfight-{Path(args.suite).stem}"
    sbatch = [f"--job-name={name}", f"--nodes={args.nodes}", "--ntasks-per-node=1", f"--time={args.time}"]
    if args.gpus_per_node:
        sbatch += [f"--gpus-per-node={args.gpus_per_node}", "--exclusive"]
    sbatch += [f"--{flag}={getattr(args, flag)}" for flag in ("partition", "account") if getattr(args, flag)]
    sbatch += [f"--chdir={provenance.REPO_ROOT}", f"--output={logs.resolve()}/slurm-%j.out"]
    bench = [sys.executable, "-m", "fairfight", "bench", "--suite", args.suite]
    bench += [a for w in args.workload or [] for a in ("--workload", w)]
    bench += [a for v in args.variant or [] for a in ("--variant", v)]
    if world_size(args):
        bench += ["--world-size", str(world_size(args))]
    if args.steps:
        bench += ["--steps", str(args.steps)]
    bench += ["--data-dir", str(Path(args.data_dir).resolve())]
    command = " ".join(shlex.quote(a) for a in bench)
    lines = ["#!/bin/bash", *(f"#SBATCH {s}" for s in sbatch), "",
             "# written by `fairfight slurm`: one task per node runs the bench", "set -euo pipefail"]  # fmt: skip
    if args.nodes == 1:
        return "\n".join([*lines, f"srun {command}"]) + "\n"
    lines += [
        'HEAD_NODE=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        "# the address Slurm itself reaches the head node at (its NodeAddr; the node name where that is unset)",
        "HEAD_ADDR=$(scontrol show node \"$HEAD_NODE\" | grep -o 'NodeAddr=[^ ]*' | cut -d= -f2 || true)",
        "HEAD_ADDR=${HEAD_ADDR:-$HEAD_NODE}",
        'srun --kill-on-bad-exit=0 bash -c \'exec "$@" --node-rank "$SLURM_NODEID"\' fairfight-task \\',
        f"    {command} \\",
        f'    --nnodes "$SLURM_NNODES" --rdzv-endpoint "$HEAD_ADDR:{args.port}"',
    ]
    return "\n".join(lines) + "\n"


def main(args: argparse.Namespace) -> int:
    found = problems(args)
    if found:
        listed = "\n".join(f"  - {p}" for p in found)
        raise spec.SpecError(f"slurm --suite {args.suite}: nothing was submitted:\n{listed}")
    name = args.job_name or f"fairfight-{Path(args.suite).stem}"
    path = args.script or Path("build", "slurm", f"{name}-{datetime.now(UTC):%Y%m%dT%H%M%S}.sbatch")
    text = script(args, path.parent)
    if args.dry_run:
        sys.stdout.write(text)
        return 0
    if shutil.which("sbatch") is None:
        raise spec.SpecError("sbatch is not on PATH: run `fairfight slurm` on a Slurm login node (or --dry-run)")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    proc = subprocess.run(["sbatch", "--parsable", str(path)], capture_output=True, text=True)
    if proc.returncode:
        raise spec.SpecError(f"sbatch refused {path}: {(proc.stderr or proc.stdout).strip()[-2000:]}")
    job = proc.stdout.strip().split(";")[0]
    print(f"submitted job {job}: {path}")
    return 0
