"""The run-level half of a result record, shared by every runner and by the bench session's failure records."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runners import metrics, provenance, spec


def variant_label(name: str, overrides: dict[str, Any] | None, sweep_env: dict[str, str] | None = None) -> str:
    """A variant's name as recorded, with sweep changes appended: `ddp-tuned[bucket_cap_mb=100]`,
    `ddp-tuned[env:NCCL_MIN_NCHANNELS=32]`."""
    parts = [f"{k}={json.dumps(v)}" for k, v in sorted((overrides or {}).items())]
    parts += [f"env:{k}={v}" for k, v in sorted((sweep_env or {}).items())]
    return f"{name}[{','.join(parts)}]" if parts else name


def effective_workload(
    work: spec.Workload,
    *,
    steps: int | None,
    micro_batch: int | None,
    world_size: int | None,
    time_budget_s: float | None = None,
) -> dict[str, Any]:
    """The workload as run: the suite's values with the bench session's overrides applied and named."""
    values = json.loads(spec.to_json(work))
    asked = {"steps": steps, "micro_batch": micro_batch, "world_size": world_size, "time_budget_s": time_budget_s}
    changed = {k: v for k, v in asked.items() if v is not None and v != values[k]}
    return values | changed | {"steps_requested": changed.get("steps", work.steps), "overridden": sorted(changed)}


def config_head(
    suite: spec.Suite,
    model: spec.ModelSpec,
    variant: spec.Variant,
    settings: dict[str, Any],
    *,
    overrides: dict[str, Any] | None = None,
    sweep_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """What every run's configuration starts with, whatever the runner: the suite, the model and the variant with
    the settings it ran with."""
    return {
        "suite": suite.name,
        "suite_description": suite.description,
        "suite_hardware": suite.hardware,
        "model": json.loads(spec.to_json(model)),
        "variant": {
            "name": variant.name,
            "engine": variant.engine,
            "tier": variant.tier,
            "description": variant.description,
            "settings": settings,
            "overrides": overrides or {},
            "sweep_env": sweep_env or {},
        },
    }


def config(
    suite: spec.Suite,
    work: spec.Workload,
    variant: spec.Variant,
    *,
    steps: int | None = None,
    micro_batch: int | None = None,
    world_size: int | None = None,
    time_budget_s: float | None = None,
    overrides: dict[str, Any] | None = None,
    sweep_env: dict[str, str] | None = None,
    settings: dict[str, Any] | None = None,
    note: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The full configuration of a run: suite, workload as run, model, variant and everything derived.

    `note` is what the operator said about the circumstances of the run (another job sharing the host, say):
    it is kept in the record and shown on the run's page."""
    model = suite.models[work.model]
    workload = effective_workload(
        work, steps=steps, micro_batch=micro_batch, world_size=world_size, time_budget_s=time_budget_s
    )
    command = f"python -m runners bench --suite {suite.name} --workload {work.name} --variant {variant.name}"
    for key in workload["overridden"]:
        flag = {"time_budget_s": "time-budget"}.get(key, key.replace("_", "-"))
        command += f" --{flag} {workload[key]:g}" if isinstance(workload[key], float) else f" --{flag} {workload[key]}"
    for key, value in sorted((overrides or {}).items()):
        command += f" --set {key}={json.dumps(value)}"
    for key, value in sorted((sweep_env or {}).items()):
        command += f" --env {key}={value}"
    return {
        **config_head(
            suite,
            model,
            variant,
            settings if settings is not None else variant.settings,
            overrides=overrides,
            sweep_env=sweep_env,
        ),
        "workload": workload,
        "derived": {
            "total_params": model.total_params,
            "non_embedding_params": model.non_embedding_params,
            "flops_per_token": model.flops_per_token(work.seq_len),
            "tokens_per_step": work.seq_len * workload["micro_batch"] * workload["world_size"],
        },
        "command": command,
        **({"note": note} if note else {}),
        **extra,
    }


def config_as_asked(
    suite: spec.Suite, work: spec.Workload, variant: spec.Variant, args: Any, **more: Any
) -> dict[str, Any]:
    """`config` of a training run as a command line asked for it: the bench's, or an outside engine's runner's
    (`--steps`, `--micro-batch`, `--time-budget` and `--note`; `more`: the rest of `config`'s keywords)."""
    asked = dict(steps=args.steps, micro_batch=args.micro_batch, time_budget_s=args.time_budget, note=args.note)
    return config(suite, work, variant, **asked, **more)


def run_columns(
    *,
    run_id: str,
    config: dict[str, Any],
    engine_version: str,
    started: datetime,
    hardware: dict[str, Any],
    packages: tuple[str, ...],
    status: str = "ok",
    error: str | None = None,
    calibration: dict[str, Any] | None = None,
    build: dict[str, str | None] | None = None,
) -> dict[str, Any]:
    """Run-level columns of a measured run (`ok` unless `status` and `error` say otherwise; its suite is its
    `config`'s), with provenance captured now; `build` adds what an engine's own build says of itself to the software
    (llama.cpp's instruction sets)."""
    commit, dirty = provenance.harness()
    variant = config["variant"]
    return {
        "run_id": run_id,
        "suite": config["suite"],
        "workload": config["workload"]["name"],
        "engine": variant["engine"],
        "engine_version": engine_version,
        "variant": variant_label(variant["name"], variant["overrides"], variant.get("sweep_env")),
        "tier": variant["tier"],
        "status": status,
        "error": error,
        "origin": "measured",
        "source": None,
        "started_at": started,
        "ended_at": datetime.now(UTC),
        "harness_commit": commit,
        "harness_dirty": dirty,
        "accelerator": str(hardware.get("accelerator")),
        "accelerator_count": config["workload"]["world_size"],
        "config": json.dumps(config, sort_keys=True),
        "hardware": json.dumps(hardware, sort_keys=True),
        "software": json.dumps(provenance.versions(*packages) | (build or {}), sort_keys=True),
        "environment": json.dumps(provenance.environment(), sort_keys=True),
        "calibration": None if calibration is None else json.dumps(calibration, sort_keys=True),
    }


def train_rows(
    trial: int,
    times: list[float],
    losses: list[float],
    warmup_steps: int,
    run_values: dict[str, float],
    energy: Sequence[tuple[int, float]] = (),
) -> list[dict[str, Any]]:
    """One training trial's rows, whatever the engine: each step's time and loss (warm-up or steady), the GPUs'
    joules per segment of steps (`energy_j` at the segment's last step; it starts after the previous one's), and
    the trial's run-level values, each with its unit from the schema."""
    from runners import schema

    rows = []
    for step, (t, loss) in enumerate(zip(times, losses, strict=True)):
        phase = "warmup" if step < warmup_steps else "steady"
        rows.append(dict(trial=trial, step=step, phase=phase, metric="step_time_s", value=t, unit="s"))
        rows.append(dict(trial=trial, step=step, phase=phase, metric="loss", value=loss, unit="nats"))
    for step, joules in energy:
        phase = "warmup" if step < warmup_steps else "steady"
        rows.append(dict(trial=trial, step=step, phase=phase, metric="energy_j", value=joules, unit="J"))
    rows += [
        dict(trial=trial, step=None, phase="run", metric=metric, value=value, unit=schema.METRICS[metric])
        for metric, value in run_values.items()
    ]
    return rows


def idle_power_rows(meter: Any) -> list[dict[str, Any]]:
    """The run-level `idle_power_w` row of a run whose GPUs were metered (`runners.energy.Meter.measure_idle`), or
    none."""
    from runners import energy

    return energy.record_parts(meter)[1]


def initial_state(ctx: dict[str, Any], work: spec.Workload, cache_dir: Path) -> dict[str, Any]:
    """What a training record says about where it started and what it trained on (torch and MLX alike): the
    initial-weights file's name and sha256, the recipes of its weights and tokens, and the proof of the same work
    computed from what the process fed its model (`ctx["fed"]`, filled by the trial: `artifacts.state_sha256` of its
    weights as loaded, `artifacts.tokens_sha256` of the token batches it took its rows from), marked
    `hashes_from: fed`. Text values, typed Any: they are `config`'s `**extra`, and mypy would check a
    `dict[str, str]` against its every keyword."""
    from runners import artifacts

    model = ctx["suite"].models[work.model]
    out: dict[str, Any] = {
        "initial_weights": artifacts.spec_key(model, work.seed) + ".safetensors",
        "recipes": {"data": artifacts.DATA_RECIPE, "initial_weights": artifacts.INIT_RECIPE},
    }
    # a run that has just run out of memory still gets its record, without the hashes
    with contextlib.suppress(MemoryError, OSError):
        out["initial_weights_sha256"] = artifacts.weights_file_sha256(model, work.seed, cache_dir)
    fed = ctx.get("fed") or {}
    if "initial_state_sha256" in fed and "data_sha256" in fed:
        out |= {k: fed[k] for k in ("initial_state_sha256", "data_sha256")} | {"hashes_from": "fed"}
    return out


def _flops(per_s: float) -> str:
    """A matmul rate readable at a CPU's size as at a GPU's (a CPU's 50 GFLOP/s is not "0.0 TFLOP/s")."""
    return f"{per_s / 1e12:.1f} TFLOP/s" if per_s >= 1e12 else f"{per_s / 1e9:.1f} GFLOP/s"


def calibration_line(calibration: dict[str, Any]) -> str:
    """The calibration as a progress line."""
    busbw = calibration["allreduce_busbw_bytes_per_s"]  # None on one device: nothing to reduce across
    matmul = f"matmul {_flops(calibration['matmul_flops'])}"
    reference = calibration.get("reference_matmul_flops")  # float8 runs: the bf16 matmul beside the fp8 one
    if reference is not None:
        ref_precision = calibration["reference_matmul_precision"]
        matmul = f"{calibration['matmul_precision']} {matmul}, {ref_precision} matmul {_flops(reference)}"
    allreduce = f"{busbw / 1e9:.1f} GB/s" if busbw is not None else "n/a (one device)"
    return f"  calibration: {matmul}, copy {calibration['copy_bytes_per_s'] / 1e9:.0f} GB/s, all-reduce bus {allreduce}"


OUT_OF_MEMORY_SIGNS = ("out of memory", "outofmemoryerror", "can't allocate memory")
"""How running out of memory reads: CUDA's and torch's `OutOfMemoryError`, vLLM's messages, and torch's CPU allocator
(`DefaultCPUAllocator: can't allocate memory`, seen under a memory limit in tests/runners/test_bench_faults.py)."""


def status_of_failure(text: str) -> str:
    """`oom` when an error (message, type name or output tail) says memory ran out, otherwise `failed`."""
    low = text.lower()
    return "oom" if any(sign in low for sign in OUT_OF_MEMORY_SIGNS) else "failed"


def inference_config(
    suite: Any,
    entry: Any,
    test: Any,
    variant: Any,
    settings: dict[str, Any],
    *,
    files: dict[str, Any],
    note: str | None,
    depth_fills: int | None,
    kv_bytes_per_token: float,
    engine_defaults: dict[str, Any],
) -> dict[str, Any]:
    """The full configuration of one pp/tg test's record (llama.cpp's and MLX's runners; the inference pages read
    both). `depth_fills`: how many repetitions decoded their depth, the others restored the state the last fill kept
    (None: not known)."""
    model = suite.models[entry.model]
    weight_bytes = files.get("weight_bytes_per_token")
    return {
        **config_head(suite, model, variant, settings),
        "workload": {
            "name": test.workload,
            "kind": test.kind,
            "n_tokens": test.n_tokens,
            "depth": test.depth,
            "inference": json.loads(spec.to_json(entry)),
            "world_size": 1,
            "device": entry.device,
            "repetitions": entry.repetitions,
            "depth_fills": depth_fills,
        },
        "engine_defaults": engine_defaults,
        "model_file": files,
        "derived": {
            "total_params": model.total_params,
            "non_embedding_params": model.non_embedding_params,
            "weight_bytes_per_token": weight_bytes,
            "kv_bytes_per_token_of_depth": kv_bytes_per_token,
            # a tg token reads every weight (but the embedding table, of which one row) and the cache so far: the
            # depth plus half the test, on average
            "decode_bytes_per_token": metrics.decode_bytes_per_token(
                weight_bytes, kv_bytes_per_token, test.depth, test.n_tokens
            )
            if test.kind == "tg" and weight_bytes is not None
            else None,
        },
        "command": f"python -m runners bench --suite {suite.name} --workload {test.workload} --variant {variant.name}",
        **({"note": note} if note else {}),
    }


def as_tools(
    config: dict[str, Any], tool: str, imported: dict[str, Any], pairs_with: str | None = None
) -> dict[str, Any]:
    """A test's configuration made that of its engine's own tool's record (changed in place, and returned): the tool
    as the variant's engine, what was taken from the tool (`imported`: its result, and the file or command it came
    from) and, for a tool run beside the runner, the run id of the runner's record of the same test (`pairs_with`)."""
    config["variant"]["engine"] = tool
    config["imported"] = imported
    if pairs_with is not None:
        config["pairs_with"] = pairs_with
    return config


def run_id_of_test(stamp: str, workload: str, variant: str) -> str:
    """An inference or serving test's run id: the bench session's stamp (UTC start and a random suffix) around the
    test's names (an engine's own tool's record adds `-<tool>` to the variant)."""
    when, _, suffix = stamp.partition("~")
    return f"{when}-{workload}-{variant}-{suffix}"


def hand_over_test(
    args: Any,
    test: Any,
    variant: spec.Variant,
    config: dict[str, Any],
    rows: list[dict[str, Any]],
    *,
    started: datetime,
    engine_version: str,
    hardware: dict[str, Any],
    packages: tuple[str, ...],
    build: dict[str, str | None] | None = None,
) -> None:
    """A test an inference runner finished: its record (status ok, its run id from the bench's stamp, `args.run_stamp`)
    appended to the runner's hand-over file (`args.out`) as a JSON line, unchecked: an engine's process may hold no
    pyarrow (llama.cpp's), and the bench checks every line as it writes the result files."""
    run = run_columns(
        run_id=run_id_of_test(args.run_stamp, test.workload, variant.name),
        config=config,
        engine_version=engine_version,
        started=started,
        hardware=hardware,
        packages=packages,
        build=build,
    )
    with open(args.out, "a") as out:  # a line per finished test: a later crash loses none of them
        out.write(json.dumps({"run": run, "rows": rows}, default=datetime.isoformat) + "\n")


def emit(out: Path | str, run: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """Hand one finished record to the bench, which alone writes result files (runners/bench.py `write_records`):
    a JSON line appended to the file the bench named (`--out`), checked first as the store will check it, so that a
    bad record fails here, naming its field. Returns the run id."""
    import os
    import stat

    from runners import schema

    schema.make_table(run, rows)
    line = json.dumps({"run": run, "rows": rows}, default=lambda v: v.isoformat())
    # never through a link or into a FIFO put in the file's place (an outside engine runs as the same user)
    fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK, 0o600)
    with os.fdopen(fd, "a") as f:  # one line per record: a later crash loses none of those before it
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{out}: not a regular file, so no record is handed over through it")
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())
    return run["run_id"]


def resolved_or_written(settings: dict[str, Any], resolve: Any) -> dict[str, Any]:
    """A variant's settings as its runner would have resolved them (so a failure record joins its configuration), or
    as written where they do not resolve (the failure may be that)."""
    try:
        return resolve(settings)
    except Exception:
        return dict(settings)
