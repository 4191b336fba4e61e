"""PyTorch training runner: one process per device under torchrun, DDP over gloo (CPU) or NCCL (CUDA).

Launched by the bench session as
    python -m torch.distributed.run --standalone --nproc-per-node W -m runners.torch_train \
        --suite S --workload NAME --variant V --data-dir data --run-id ID
Rank 0 writes one result file. Every variant starts from the same numpy initial weights and reads the same
token stream, so their losses are comparable step by step.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import traceback
from datetime import UTC, datetime
from typing import Any

from runners import artifacts, provenance, record, schema, spec, store

PROCESS_START = time.perf_counter()

# The engine's defaults: every variant writes each of these out, and the site shows the differences.
DEFAULTS: dict[str, Any] = {
    "parallel": "ddp",  # torch.nn.parallel.DistributedDataParallel
    "precision": "fp32",  # fp32 | bf16-autocast
    "matmul_precision": "highest",  # torch.set_float32_matmul_precision: highest (no TF32) | high | medium
    "optimizer": "adamw",
    "lr": 1e-3,
    "betas": [0.9, 0.999],
    "eps": 1e-8,
    "weight_decay": 1e-2,
    "optimizer_impl": "default",  # default (torch's choice) | foreach | fused
    "bucket_cap_mb": 25.0,
    "gradient_as_bucket_view": False,
    "static_graph": False,
    "find_unused_parameters": False,
    "compile": False,
    "compile_mode": "default",
}
_CHOICES = {
    "parallel": ("ddp",),
    "precision": ("fp32", "bf16-autocast"),
    "matmul_precision": ("highest", "high", "medium"),
    "optimizer": ("adamw",),
    "optimizer_impl": ("default", "foreach", "fused"),
    "compile_mode": ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"),
}


def check_settings(variant: spec.Variant) -> dict[str, Any]:
    """Every setting written out, none unknown, each of the default's type and within its choices."""
    s = variant.settings
    where = f"variant {variant.name!r}: settings"
    unknown = sorted(set(s) - set(DEFAULTS))
    if unknown:
        raise spec.SpecError(f"{where}: unknown key {unknown[0]!r}; the torch runner knows {sorted(DEFAULTS)}")
    missing = sorted(set(DEFAULTS) - set(s))
    if missing:
        raise spec.SpecError(f"{where}: missing key {missing[0]!r}: write every setting out, defaults included")
    for key, default in DEFAULTS.items():
        value = s[key]
        ok = (
            isinstance(value, int | float) and not isinstance(value, bool)
            if isinstance(default, float)
            else (isinstance(value, type(default)))
        )
        if not ok:
            raise spec.SpecError(f"{where}: key {key!r}: expected {type(default).__name__}, got {value!r}")
        if key in _CHOICES and value not in _CHOICES[key]:
            raise spec.SpecError(f"{where}: key {key!r}: {value!r} is not one of {list(_CHOICES[key])}")
    return dict(s)


def compute_precision(settings: dict[str, Any]) -> str:
    """The precision the matmuls run in, which picks the datasheet peak that MFU is measured against."""
    if settings["precision"] == "bf16-autocast":
        return "bf16"
    return "fp32" if settings["matmul_precision"] == "highest" else "tf32"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="runners.torch_train", description=__doc__.splitlines()[0])
    p.add_argument("--suite", required=True, help="suite name or path to its TOML file")
    p.add_argument("--workload", required=True)
    p.add_argument("--variant", required=True)
    p.add_argument("--data-dir", default="data", help="where the result file goes")
    p.add_argument("--run-id", required=True, help="id chosen by the bench session")
    p.add_argument("--steps", type=int, default=None, help="override the workload's step count (short checks)")
    return p.parse_args(argv)


class StepClock:
    """Boundary timestamps around steps: CUDA events on GPU (read after a sync), perf_counter on CPU."""

    def __init__(self, torch: Any, device: Any) -> None:
        self.torch, self.cuda = torch, device.type == "cuda"
        self.marks: list[Any] = []

    def mark(self) -> None:
        if self.cuda:
            ev = self.torch.cuda.Event(enable_timing=True)
            ev.record()
            self.marks.append(ev)
        else:
            self.marks.append(time.perf_counter())

    def step_times_s(self) -> list[float]:
        if self.cuda:
            self.torch.cuda.synchronize()
            return [a.elapsed_time(b) / 1e3 for a, b in zip(self.marks, self.marks[1:], strict=False)]
        return [b - a for a, b in zip(self.marks, self.marks[1:], strict=False)]


def train_trial(
    *,
    torch: Any,
    suite: spec.Suite,
    work: spec.Workload,
    variant: spec.Variant,
    settings: dict[str, Any],
    steps: int,
    rank: int,
    world: int,
    device: Any,
    log: Any,
) -> tuple[list[float], list[float], dict[str, float], str | None]:
    """One trial from the shared initial weights; returns step times, losses, run-level values, stop reason."""
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    from runners.torch_model import GPT

    trial_start = time.perf_counter()
    model_spec = suite.models[work.model]
    torch.set_float32_matmul_precision(settings["matmul_precision"])
    model = GPT(model_spec)
    model.load_numpy(artifacts.init_weights(model_spec, work.seed))
    model.to(device)
    ddp = DDP(
        model,
        device_ids=[device.index] if device.type == "cuda" else None,
        bucket_cap_mb=settings["bucket_cap_mb"],
        gradient_as_bucket_view=settings["gradient_as_bucket_view"],
        static_graph=settings["static_graph"],
        find_unused_parameters=settings["find_unused_parameters"],
    )
    impl = settings["optimizer_impl"]
    opt = torch.optim.AdamW(
        ddp.parameters(),
        lr=settings["lr"],
        betas=tuple(settings["betas"]),
        eps=settings["eps"],
        weight_decay=settings["weight_decay"],
        **({"fused": True} if impl == "fused" else {"foreach": True} if impl == "foreach" else {}),
    )
    forward = torch.compile(ddp, mode=settings["compile_mode"]) if settings["compile"] else ddp
    b = work.micro_batch
    tokens = artifacts.token_batches(
        vocab=model_spec.vocab,
        seed=work.seed,
        steps=range(steps),
        global_batch=b * world,
        seq_len=work.seq_len,
    )[:, rank * b : (rank + 1) * b]
    data = torch.from_numpy(tokens).to(device)  # resident on the device: the input pipeline is not measured
    autocast = (
        torch.autocast(device.type, dtype=torch.bfloat16)
        if settings["precision"] == "bf16-autocast"
        else contextlib.nullcontext()
    )
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    clock, losses, stop = StepClock(torch, device), [], None
    setup_s = time.perf_counter() - trial_start
    clock.mark()
    for step in range(steps):
        x, y = data[step, :, :-1], data[step, :, 1:]
        with autocast:
            logits = forward(x)
            loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        clock.mark()
        losses.append(loss.detach())
        done = step + 1
        if done % work.window_steps == 0 or done == steps:
            # Every rank must agree on stopping, or DDP would hang: rank 0 decides, all follow.
            over = torch.tensor([time.perf_counter() - trial_start > work.time_budget_s], device=device)
            torch.distributed.broadcast(over, src=0)
            if rank == 0:
                mean = torch.stack(losses[-work.window_steps :]).float().mean().item()
                log(f"  step {done}/{steps}  loss {mean:.3f}  {time.perf_counter() - trial_start:.1f} s")
            if bool(over.item()) and done < steps:
                stop = f"time budget of {work.time_budget_s:g} s reached after {done} of {steps} steps"
                break
    times = clock.step_times_s()
    loss_t = torch.stack(losses).float()
    torch.distributed.all_reduce(loss_t)  # the global mean loss, as every rank sees a different shard
    loss_values = (loss_t / world).tolist()
    run_values = {"setup_s": setup_s, "warmup_s": sum(times[: work.warmup_steps])}
    if device.type == "cuda":
        run_values["peak_mem_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
    else:
        import resource

        run_values["peak_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return times, loss_values, run_values, stop


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = datetime.now(UTC)
    suite = spec.load_suite(args.suite)
    work = suite.workload(args.workload)
    variant = suite.variants[args.variant] if args.variant in suite.variants else spec.load_variants()[args.variant]
    settings = check_settings(variant)
    steps = args.steps or work.steps
    if steps <= work.warmup_steps:
        raise SystemExit(f"--steps {steps} leaves no steady steps after {work.warmup_steps} warm-up steps")

    import torch
    import torch.distributed as dist

    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    if world != work.world_size:
        raise SystemExit(f"workload {work.name} wants {work.world_size} processes, torchrun started {world}")
    local = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local) if work.device == "cuda" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(work.dist_backend, device_id=device if device.type == "cuda" else None)

    def log(msg: str) -> None:
        if rank == 0:
            print(msg, flush=True)

    rows: list[dict[str, Any]] = []
    status, error = "ok", None
    log(f"{variant.name} on {work.name}: {world} × {device.type}, {steps} steps × {work.trials} trial(s)")
    try:
        for trial in range(work.trials):
            times, losses, run_values, stop = train_trial(
                torch=torch,
                suite=suite,
                work=work,
                variant=variant,
                settings=settings,
                steps=steps,
                rank=rank,
                world=world,
                device=device,
                log=log,
            )
            for step, (t, loss) in enumerate(zip(times, losses, strict=True)):
                phase = "warmup" if step < work.warmup_steps else "steady"
                rows.append(dict(trial=trial, step=step, phase=phase, metric="step_time_s", value=t, unit="s"))
                rows.append(dict(trial=trial, step=step, phase=phase, metric="loss", value=loss, unit="nats"))
            run_values["steps_completed"] = float(len(times))
            if trial == 0:
                run_values["startup_s"] = time.perf_counter() - PROCESS_START - sum(times)
            for metric, value in run_values.items():
                unit = schema.METRICS[metric]
                rows.append(dict(trial=trial, step=None, phase="run", metric=metric, value=value, unit=unit))
            if stop:
                status, error = "timeout", stop
                log(f"  stopped: {stop}")
                break
    except Exception as e:  # a failure is a result: record it (rank 0), then fail the process
        oom = isinstance(e, torch.OutOfMemoryError) or "out of memory" in str(e).lower()
        status, error = ("oom" if oom else "failed"), "".join(traceback.format_exception(e))[-4000:]
        if not rows:
            rows.append(dict(trial=0, step=None, phase="run", metric="steps_completed", value=0.0, unit="steps"))
        if rank == 0:
            _write(args, suite, work, variant, settings, steps, started, status, error, rows, device)
        raise
    if rank == 0:
        path = _write(args, suite, work, variant, settings, steps, started, status, error, rows, device)
        log(f"  wrote {path}")
    dist.destroy_process_group()
    return 0


def _write(args, suite, work, variant, settings, steps, started, status, error, rows, device):
    import torch

    run = record.run_columns(
        run_id=args.run_id,
        suite=suite,
        work=work,
        variant=variant,
        engine_version=torch.__version__,
        status=status,
        error=error,
        started=started,
        hardware=provenance.hardware(device.type, work.world_size),
        config=record.config(
            suite,
            work,
            variant,
            steps=steps,
            engine_defaults=DEFAULTS,
            compute_precision=compute_precision(settings),
            launcher=f"torchrun --standalone --nproc-per-node {work.world_size}",
        ),
        packages=("torch", "numpy", "pyarrow"),
    )
    return store.write_run(args.data_dir, schema.make_table(run, rows))


if __name__ == "__main__":
    sys.exit(main())
