"""PyTorch training runner: one process per device under torchrun, DDP or FSDP2 over gloo (CPU) or NCCL (CUDA).

Launched by the bench session as
    python -m torch.distributed.run --standalone --nproc-per-node W -m runners.engines.torch.train \
        --suite S --workload NAME --variant V --out RECORDS.jsonl --run-id ID [--set key=value ...]
Rank 0 writes one result file. Every variant starts from the same initial-weights file and reads the same
token stream, so their losses are comparable step by step.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Any

from runners import artifacts, calibrate, energy, nodes, provenance, spec, training
from runners.engines.torch import setup as torch_setup

PROCESS_START = time.perf_counter()


def sweep_env() -> dict[str, str]:
    """Variables the bench session set for a sweep (`--env`), which it names in FAIRFIGHT_SWEEP_ENV."""
    names = [n for n in os.environ.get("FAIRFIGHT_SWEEP_ENV", "").split(",") if n]
    return {n: os.environ[n] for n in names if n in os.environ}


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


def load_initial_weights(model_spec: spec.ModelSpec, seed: int, rank: int) -> dict[str, Any]:
    """Rank 0 makes the shared initial-weights file if it is missing; every rank then memory-maps it."""
    import torch.distributed as dist

    if rank == 0:
        artifacts.initial_weights_file(model_spec, seed, training.INIT_DIR)
    dist.barrier()
    return artifacts.read_safetensors(artifacts.initial_weights_file(model_spec, seed, training.INIT_DIR))


def train_trial(
    *,
    torch: Any,
    plan: training.Plan,
    settings: dict[str, Any],
    rank: int,
    world: int,
    device: Any,
    mid_run: Any = None,
    fed: dict[str, str] | None = None,
    meter: Any = None,
) -> training.TrialOut:
    """One trial from the shared initial weights; returns step times, losses, run-level values, stop reason and,
    with an energy `meter` (rank 0 on a GPU: `runners.energy.meter`), the GPUs' joules per segment of steps.
    `mid_run(done)`, when given, is called on rank 0 at the first window boundary past half the steady steps (where
    the GPUs' clocks under load are sampled). `fed`, when given (rank 0), gets the proof of the same work from what
    this trial feeds its model: the sha256 of its weights as loaded, before anything casts or shards them, and of
    the token batches it takes its rows from (`artifacts.state_sha256`, `artifacts.tokens_sha256`)."""
    from runners.engines.torch.model import GPT

    model_spec, work, steps, micro_batch = plan.suite.models[plan.work.model], plan.work, plan.steps, plan.micro_batch
    log, budget_s = training.printer(rank), plan.budget_s
    trial_start = time.perf_counter()
    model = GPT(model_spec)
    model.load_numpy(load_initial_weights(model_spec, work.seed, rank))
    hashing = time.perf_counter()
    if fed is not None and "initial_state_sha256" not in fed:
        fed["initial_state_sha256"] = artifacts.state_sha256({n: p.detach() for n, p in model.named_parameters()})
    hashing_s = time.perf_counter() - hashing
    model.to(device)
    loss_of, opt, after_step = torch_setup.build(model, settings=settings, device=device, world=world)
    step_begin = torch_setup.step_begin_hook(settings=settings)
    b = micro_batch
    batches = artifacts.token_batches(
        vocab=model_spec.vocab, seed=work.seed, steps=range(steps), global_batch=b * world, seq_len=work.seq_len
    )
    hashing = time.perf_counter()
    if fed is not None and "data_sha256" not in fed:
        fed["data_sha256"] = artifacts.tokens_sha256(batches)
    hashing_s += time.perf_counter() - hashing
    tokens = batches[:, rank * b : (rank + 1) * b]
    data = torch.from_numpy(tokens).to(device)  # resident on the device: the input pipeline is not measured
    del batches
    autocast = (
        torch.autocast(device.type, dtype=torch.bfloat16)
        if settings["precision"] == "bf16-autocast"
        else contextlib.nullcontext()
    )
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    clock, losses, stop = StepClock(torch, device), [], None
    joules = training.EnergySegments(meter, lambda: torch.cuda.synchronize(device)) if meter is not None else None
    warmup_peak = 0  # the warm-up's peak device memory (with no warm-up steps, the steady peak is the whole run's)
    setup_s = time.perf_counter() - trial_start - hashing_s  # hashing the work is not the engine's set-up
    clock.mark()
    if joules is not None:
        joules.begin()
    steps_start = time.perf_counter()  # the budget is for training: set-up (cold caches: 10-38 s on H200) is not
    for step in range(steps):
        x, y = data[step, :, :-1], data[step, :, 1:]
        if step_begin is not None:  # CUDA graphs: this step may overwrite the last one's graph outputs
            step_begin()
        with autocast:
            loss = loss_of(x, y)
        loss.backward()
        opt.step()
        if after_step is not None:  # float8 all-gather: next step's weight scales, one all-reduce
            after_step()
        opt.zero_grad(set_to_none=True)
        clock.mark()
        losses.append(loss.detach().clone())  # a copy: a CUDA graph's output is overwritten by its next replay
        done = step + 1
        if done == work.warmup_steps and device.type == "cuda":  # the steady steps' own peak, from here on:
            warmup_peak = torch.cuda.max_memory_allocated(device)  # compilation's transient is in the warm-up's
            torch.cuda.reset_peak_memory_stats(device)
        window_end = done % work.window_steps == 0 or done == steps
        if joules is not None and training.ends_segment(done, steps, work.warmup_steps, work.window_steps):
            joules.boundary(done)
        if window_end:
            # Every rank must agree on stopping, or the collectives would hang: rank 0 decides, all follow.
            over = torch.tensor([time.perf_counter() - steps_start > budget_s], device=device)
            torch.distributed.broadcast(over, src=0)
            if rank == 0:
                mean = torch.stack(losses[-work.window_steps :]).float().mean().item()
                log(f"  step {done}/{steps}  loss {mean:.3f}  {time.perf_counter() - trial_start:.1f} s")
                if mid_run is not None and done >= (work.warmup_steps + steps) / 2:
                    mid_run(done)
            if bool(over.item()) and done < steps:
                stop = f"time budget of {budget_s:g} s reached after {done} of {steps} steps"
                break
    times = clock.step_times_s()
    loss_t = torch.stack(losses).float()
    torch.distributed.all_reduce(loss_t)  # the global mean loss, as every rank sees a different shard
    loss_values = (loss_t / world).tolist()
    run_values = {"setup_s": setup_s, "warmup_s": sum(times[: work.warmup_steps])}
    if device.type == "cuda":
        peak = torch.cuda.max_memory_allocated(device)
        if len(times) > work.warmup_steps:  # steady steps ran: the peak since the warm-up is theirs
            run_values["peak_mem_steady_gib"] = peak / 2**30
            peak = max(peak, warmup_peak)
        run_values["peak_mem_gib"] = peak / 2**30
    else:
        import resource

        run_values["peak_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    del loss_of, opt, model, data
    return training.TrialOut(times, loss_values, run_values, stop, joules.end() if joules is not None else ())


def main(argv: list[str] | None = None) -> int:
    plan = training.plan("runners.engines.torch.train", __doc__, "torch", argv)
    args, work, variant, overrides = plan.args, plan.work, plan.variant, plan.overrides
    settings = torch_setup.check_settings(variant, overrides)

    import torch
    import torch.distributed as dist

    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    local = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local) if work.device == "cuda" else torch.device("cpu")
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    # the GPUs' energy (rank 0 reads every GPU of its node; over several nodes it would miss the others': none). Alone,
    # it reads the idle power before CUDA starts, as the other engines' runners do; with other ranks, after the group
    # has formed, every rank's GPU already open (nothing here holds the others back until rank 0 has read)
    meter = energy.meter(local_world) if device.type == "cuda" and rank == 0 and local_world == world else None
    idle = meter.measure_idle(before_gpu_use=True) if meter is not None and world == 1 else None
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(work.dist_backend, device_id=device if device.type == "cuda" else None)
    packages = ("torch", "numpy", "pyarrow", *(("torchao",) if torch_setup.uses_float8(settings) else ()))
    # over several nodes (torchrun's rendezvous): every node's hardware and software, for the one record
    node_list = nodes.gather(dist, device.type, packages, args.run_id, args.out)[0] if local_world < world else []

    log = training.printer(rank)

    sampler = provenance.GpuSampler()  # the GPUs' clocks under load, asked once mid-run (rank 0, CUDA only)
    if meter is not None:
        idle = idle if idle is not None else meter.measure_idle(before_gpu_use=False)
        log(f"idle power {idle:.1f} W ({meter.method}) before any work")
    ctx = plan._asdict() | dict(
        sampler=sampler,
        settings=settings,
        world=world,
        device=device,
        fed={},  # the proof of the same work, filled by trial 0 on rank 0 (`train_trial`)
        packages=packages,
        nodes=node_list,
        meter=meter,
    )
    log(
        f"{variant.name} on {work.name}: {world} × {device.type}, micro-batch {plan.micro_batch}, {plan.steps} steps "
        f"× {work.trials} trial(s){' with ' + str(overrides) if overrides else ''}"
    )
    training.run_trials(
        work=work,
        calibrate=lambda: calibrate.calibrate(
            device=device, world=world, precision=torch_setup.compute_precision(settings)
        ),
        trial=lambda _: train_trial(
            torch=torch,
            plan=plan,
            settings=settings,
            rank=rank,
            world=world,
            device=device,
            mid_run=sampler.start if device.type == "cuda" else None,
            fed=ctx["fed"] if rank == 0 else None,
            meter=meter,
        ),
        write=training.writer(ctx, _engine_record),
        log=log,
        rank=rank,
        process_start=PROCESS_START,
        is_oom=lambda e: isinstance(e, torch.OutOfMemoryError),
    )
    dist.destroy_process_group()
    return 0


def _engine_record(ctx: dict[str, Any]) -> training.EngineRecord:
    """What PyTorch adds to the record: its version, the hardware of every node, and its defaults, precision and
    launcher."""
    import torch

    settings = ctx["settings"]
    hardware = provenance.hardware(ctx["device"].type, ctx["world"])
    launcher = f"torchrun --standalone --nproc-per-node {ctx['world']}"
    if ctx["nodes"]:
        hardware["nodes"] = ctx["nodes"]
        per_node = ctx["nodes"][0]["processes"]
        launcher = f"torchrun --nnodes {len(ctx['nodes'])} --nproc-per-node {per_node} --rdzv-backend c10d"
    return training.EngineRecord(
        version=torch.__version__,
        hardware=hardware,
        packages=ctx["packages"],
        config=dict(
            engine_defaults=torch_setup.defaults_for(settings["parallel"]),
            compute_precision=torch_setup.compute_precision(settings),
            **_reference_precision(settings),
            launcher=launcher,
        ),
    )


def _reference_precision(settings: dict[str, Any]) -> dict[str, Any]:
    """`reference_precision` for a run whose MFU is also read against a second peak (float8: bf16), as keyword
    arguments of `record.config` (typed Any, as `record.initial_state` says why)."""
    reference = torch_setup.REFERENCE_PRECISION.get(torch_setup.compute_precision(settings))
    return {"reference_precision": reference} if reference else {}


if __name__ == "__main__":
    sys.exit(main())
