"""Retractions: a result that should no longer count is answered by a new record that points at it.

    python -m runners retract RUN_ID --reason "why" [--data-dir data]

Nothing is deleted or rewritten: the retracted run's file stays, byte for byte, and keeps its page; the new record
(`data/<suite>/<YYYY-MM>/retraction-<run_id>.parquet`, origin `retraction`, in the month it is made) names it, with
the reason and the sha256 of the file it retracts. The site then leaves the run out of rankings, repeats, scaling and
parity baselines, marks it on its page and lists it under Errata. A run is retracted at most once (the store never
overwrites).
"""

from __future__ import annotations

import argparse
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

from runners import arguments, layout, provenance, schema, spec, store

PREFIX = "retraction-"


def find_run(data_dir: Path, run_id: str) -> Path:
    """The result file of the run `run_id` names under data_dir (its id, a unique prefix of it, or its file's path:
    the rule `compare` reads runs by, `arguments.matching_runs`), or a SpecError saying what to do."""
    files: dict[str, list[Path]] = {}
    for p in sorted(Path(data_dir).rglob("*.parquet")):
        if not p.name.startswith("."):
            files.setdefault(p.stem, []).append(p)
    named = arguments.matching_runs(run_id, files)
    if not named:
        raise spec.SpecError(f"no result file for run {run_id!r} under {data_dir}/: check the id on the run's page")
    if len(named) > 1:
        shown = ", ".join(named[:3]) + (f", … ({len(named) - 3} more)" if len(named) > 3 else "")
        raise spec.SpecError(f"{run_id!r} is ambiguous: it begins {len(named)} runs ({shown}); give more of it")
    hits = files[named[0]]
    if len(hits) > 1:
        raise spec.SpecError(f"run {named[0]!r} has {len(hits)} files under {data_dir}/: {[str(h) for h in hits]}")
    return hits[0]


def retraction_table(target: dict, target_sha256: str, reason: str, now: datetime) -> pa.Table:
    """The record retracting `target` (its run-level columns as read from its file)."""
    commit, dirty = provenance.harness()
    config = {
        "retraction": {"retracts": target["run_id"], "reason": reason, "retracted_sha256": target_sha256},
        "suite": target["suite"],
        "workload": {"name": target["workload"]},
    }
    run = {key: target[key] for key in ("suite", "workload", "engine", "engine_version", "variant", "tier")} | {
        "run_id": PREFIX + target["run_id"],
        "status": "ok",
        "error": None,
        "origin": "retraction",
        "source": None,
        "started_at": now,
        "ended_at": now,
        "harness_commit": commit,
        "harness_dirty": dirty,
        "accelerator": target["accelerator"],
        "accelerator_count": target["accelerator_count"],
        "config": json.dumps(config, sort_keys=True),
        "hardware": json.dumps({}),
        "software": json.dumps(provenance.versions()),
        "environment": json.dumps({}),
        "calibration": None,
    }
    rows = [dict(trial=0, step=None, phase="run", metric="retracted_runs", value=1.0, unit="runs")]
    return schema.make_table(run, rows)


def retract(data_dir: Path, run_id: str, reason: str, now: datetime | None = None) -> Path:
    """Write the retraction of `run_id`; refuses an empty reason, an unknown run, a retraction, or a second one."""
    if not reason.strip():
        raise spec.SpecError("--reason is required: say why the run no longer counts")
    path = find_run(data_dir, run_id)
    if path.stem.startswith(PREFIX):
        raise spec.SpecError(f"{path.stem!r} is itself a retraction; retractions are not retracted")
    target = layout.read(path).slice(0, 1).to_pylist()[0]
    run_id = target["run_id"]
    existing = store.find(data_dir, target["suite"], PREFIX + run_id)
    if existing is not None:
        raise spec.SpecError(f"run {run_id!r} is already retracted by {existing}; records are never rewritten")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return store.write_run(data_dir, retraction_table(target, digest, reason.strip(), now or datetime.now(UTC)))


def add_cli_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_id", help="the run to retract: its id as on its page, a unique prefix of it, or its file")
    p.add_argument("--reason", required=True, help="why the run no longer counts; shown on the site")
    p.add_argument("--data-dir", type=Path, default=Path("data"))


def main(args: argparse.Namespace) -> int:
    print(f"wrote {retract(args.data_dir, args.run_id, args.reason)}")
    return 0
