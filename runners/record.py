"""The run-level half of a result record, shared by every runner and by the bench session's failure records."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from runners import provenance, spec


def config(
    suite: spec.Suite, work: spec.Workload, variant: spec.Variant, *, steps: int | None = None, **extra: Any
) -> dict[str, Any]:
    """The full configuration of a run: suite, workload, model, variant and everything derived from them."""
    model = suite.models[work.model]
    steps = steps or work.steps
    command = f"python -m runners bench --suite {suite.name} --workload {work.name} --variant {variant.name}"
    return {
        "suite": suite.name,
        "suite_description": suite.description,
        "suite_hardware": suite.hardware,
        "workload": json.loads(spec.to_json(work)) | {"steps_requested": steps},
        "model": json.loads(spec.to_json(model)),
        "variant": {
            "name": variant.name,
            "engine": variant.engine,
            "tier": variant.tier,
            "description": variant.description,
            "settings": variant.settings,
        },
        "derived": {
            "total_params": model.total_params,
            "non_embedding_params": model.non_embedding_params,
            "flops_per_token": model.flops_per_token(work.seq_len),
            "tokens_per_step": work.tokens_per_step,
        },
        "command": command + (f" --steps {steps}" if steps != work.steps else ""),
        **extra,
    }


def run_columns(
    *,
    run_id: str,
    suite: spec.Suite,
    work: spec.Workload,
    variant: spec.Variant,
    engine_version: str,
    status: str,
    error: str | None,
    started: datetime,
    hardware: dict[str, Any],
    config: dict[str, Any],
    packages: tuple[str, ...],
) -> dict[str, Any]:
    """Run-level columns of a measured run, with provenance captured now."""
    commit, dirty = provenance.harness()
    return {
        "run_id": run_id,
        "suite": suite.name,
        "workload": work.name,
        "engine": variant.engine,
        "engine_version": engine_version,
        "variant": variant.name,
        "tier": variant.tier,
        "status": status,
        "error": error,
        "origin": "measured",
        "source": None,
        "started_at": started,
        "ended_at": datetime.now(UTC),
        "harness_commit": commit,
        "harness_dirty": dirty,
        "accelerator": str(hardware.get("accelerator")),
        "accelerator_count": work.world_size,
        "config": json.dumps(config, sort_keys=True),
        "hardware": json.dumps(hardware, sort_keys=True),
        "software": json.dumps(provenance.versions(*packages), sort_keys=True),
        "environment": json.dumps(provenance.environment(), sort_keys=True),
        "calibration": None,
    }
