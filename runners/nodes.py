"""Past one host: a torch run over several nodes through torchrun's own rendezvous.

Every node runs the same `fairfight bench` with `--nnodes N --node-rank R --rdzv-endpoint HOST:PORT` (under Slurm:
`srun` starts one per node, R from `SLURM_NODEID`; site_src/docs/running.md has an sbatch example). Each bench starts
`torchrun --nnodes N --nproc-per-node P --rdzv-backend c10d --rdzv-endpoint HOST:PORT --rdzv-id ID`, and the
processes of all nodes form one job. One result file per run, written by one node: the node where global rank 0
runs (c10d chooses it) hands its record to its bench; every node's hardware and software go into that record
(`hardware.nodes`, gathered from each node's local rank 0); the processes of the other nodes leave a note beside
their hand-over file saying which run their work went into, so their bench writes nothing. A run that never started
anywhere is a failure record written by node rank 0's bench alone.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
from pathlib import Path
from typing import Any

from runners import provenance

ELSEWHERE = "elsewhere.json"
"""Beside a runner's hand-over file: this node's processes took part in a run whose record another node writes."""
DEFAULT_PORT = 29400  # torchrun's own default for a c10d endpoint


def add_cli_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--nnodes", type=int, default=1, metavar="N",
        help="run each torch workload over N nodes (hosts); every node runs this same command with its --node-rank",
    )  # fmt: skip
    p.add_argument("--node-rank", type=int, default=None, metavar="R",
                   help="this node's rank, 0 to N-1 (under Slurm: $SLURM_NODEID)")  # fmt: skip
    p.add_argument(
        "--rdzv-endpoint", default=None, metavar="HOST[:PORT]",
        help="where the nodes meet: torchrun's c10d rendezvous, on a host every node reaches (node 0's, say; "
        f"port {DEFAULT_PORT} unless given)",
    )  # fmt: skip


def multi(args: argparse.Namespace) -> bool:
    return (getattr(args, "nnodes", 1) or 1) > 1


def problems(args: argparse.Namespace, worlds: list[tuple[str, int, bool]]) -> list[str]:
    """What is wrong with the multi-node flags, given each selected training run's (name, device count, whether its
    engine runs under torchrun)."""
    nnodes, rank, endpoint = getattr(args, "nnodes", 1) or 1, getattr(args, "node_rank", None), args.rdzv_endpoint
    if nnodes < 1:
        return [f"--nnodes {nnodes}: at least 1"]
    if nnodes == 1:
        stray = [flag for flag, value in (("--node-rank", rank), ("--rdzv-endpoint", endpoint)) if value is not None]
        return [f"{', '.join(stray)} without --nnodes: a run on one host needs neither"] if stray else []
    found = []
    if rank is None or not 0 <= rank < nnodes:
        found.append(f"--nnodes {nnodes} needs --node-rank, 0 to {nnodes - 1}, different on each node (Slurm: "
                     "--node-rank $SLURM_NODEID)")  # fmt: skip
    if not endpoint:
        found.append(f"--nnodes {nnodes} needs --rdzv-endpoint HOST[:PORT], a host every node reaches")
    for name, world, torchrun in worlds:
        if not torchrun:
            found.append(f"{name}: its engine does not run under torchrun; only torch workloads run over nodes")
        elif world % nnodes:
            found.append(f"{name}: {world} device(s) do not split over {nnodes} nodes (give --world-size, a multiple)")
    return found


def torchrun_args(args: argparse.Namespace, world: int, rdzv_id: str) -> list[str]:
    """torchrun's arguments for one run: standalone on one host, else the c10d rendezvous of `args.nnodes` nodes."""
    if not multi(args):
        return ["--standalone", f"--nproc-per-node={world}"]
    endpoint = args.rdzv_endpoint if ":" in args.rdzv_endpoint else f"{args.rdzv_endpoint}:{DEFAULT_PORT}"
    return [
        f"--nnodes={args.nnodes}",
        f"--nproc-per-node={world // args.nnodes}",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint={endpoint}",
        f"--rdzv-id={rdzv_id}",
    ]


def writes_failures(args: argparse.Namespace) -> bool:
    """Whether this bench writes the failure record of a run that left no record (one node does: rank 0)."""
    return not multi(args) or args.node_rank == 0


def elsewhere(out: Path) -> dict[str, Any] | None:
    """The note this node's processes left (their run's record is another node's to write), or None."""
    try:
        note = json.loads((out.parent / ELSEWHERE).read_text())
    except (OSError, ValueError):
        return None
    return note if isinstance(note, dict) else None


# --- inside the torch runner (every rank) -------------------------------------------------------------------------


def gather(dist: Any, device: str, packages: tuple[str, ...], run_id: str, out: str) -> tuple[list[dict], str]:
    """Every node's hardware and software (from its local rank 0), in node order, and the run id of global rank 0
    (the one record's); a node that does not hold global rank 0 notes beside its hand-over file where its work went.
    A collective: every rank calls it."""
    local = int(os.environ.get("LOCAL_RANK", 0))
    mine = None
    if local == 0:
        processes = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
        mine = {
            "node": int(os.environ.get("GROUP_RANK", 0)),
            "hostname": socket.gethostname()[:253],
            "processes": processes,
            "hardware": provenance.hardware(device, processes),
            "software": provenance.versions(*packages),
        }
    everyone: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, (mine, run_id))
    nodes = sorted((n for n, _ in everyone if n is not None), key=lambda n: n["node"])
    writer_run_id = everyone[0][1]
    if local == 0 and dist.get_rank() != 0:  # global rank 0 is on another node: its bench writes the record
        note = {"run_id": writer_run_id, "written_by": everyone[0][0] and everyone[0][0]["hostname"]}
        (Path(out).parent / ELSEWHERE).write_text(json.dumps(note) + "\n")
    return nodes, writer_run_id
