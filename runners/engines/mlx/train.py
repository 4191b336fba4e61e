"""MLX training runner: the seed's GPT-style model, one process per device (Apple GPU, CUDA GPU or CPU), data
parallel over `mx.distributed` when the workload has more than one (NCCL between CUDA GPUs, the ring backend over
TCP between CPU processes).

Launched by the bench session as
    python -m runners.engines.mlx.train --suite S --workload NAME --variant V --out RECORDS.jsonl --run-id ID [--set
    key=value]
With world_size > 1 that process is the launcher (as torchrun): it starts one process per device with MLX's
variables (MLX_RANK, and MLX_HOSTFILE for the ring or NCCL_HOST_IP/NCCL_PORT/MLX_WORLD_SIZE for NCCL), waits for
them, and stops them all if one fails. Rank r takes rows [r·B, (r+1)·B) of each step's global batch, as PyTorch's
ranks do; gradients are averaged (`nn.average_gradients`) and the loss recorded is the mean over ranks.
It starts from the same initial-weights file and reads the same token stream as the PyTorch runner
(runners/artifacts.py), so its loss curve is checked against PyTorch's by the site's loss-parity check. Each step
is evaluated (`mx.eval` of the loss, the parameters and the optimizer state) before the clock is read.

MLX has no autocast: `precision = "bf16-mixed"` keeps float32 parameters and runs each matmul in bfloat16, with
LayerNorm, the residual stream and the loss in float32 — what torch.autocast(bfloat16) does
(runners/engines/mlx/model.py).
"""

from __future__ import annotations

import itertools
import os
import platform
import resource
import sys
import time
from pathlib import Path
from typing import Any

from runners import artifacts, calibrate, energy, lifetime, provenance, spec, training

PROCESS_START = time.perf_counter()

DEFAULTS: dict[str, Any] = {
    "precision": "fp32",  # fp32 | bf16-mixed (float32 parameters, bfloat16 matmuls; see the module docstring)
    "optimizer": "adamw",  # mlx.optimizers.AdamW
    "lr": 1e-3,  # AdamW has no default rate in MLX; PyTorch's default, as every torch variant uses
    "betas": [0.9, 0.999],
    "eps": 1e-8,
    "weight_decay": 1e-2,
    "bias_correction": False,  # MLX's default; PyTorch's AdamW always corrects, so parity needs True
    "tf32": True,  # MLX_ENABLE_TF32 (default 1): float32 matmuls in TF32 where the GPU has it (CUDA, Apple M5)
    "compile": False,  # mx.compile of the whole step (forward, backward, optimizer update)
}
"""Every setting an MLX training variant writes out, with MLX's defaults (mlx 0.32): the run page's diff."""
CHOICES: dict[str, tuple[Any, ...]] = {"precision": ("fp32", "bf16-mixed"), "optimizer": ("adamw",)}
OPENBLAS = (
    "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0",
    "/usr/lib/aarch64-linux-gnu/openblas-pthread/libopenblas.so.0",
)
"""Debian's OpenBLAS (package libopenblas0-pthread). MLX's Linux CPU wheel links the reference BLAS, about 30×
slower at matmuls (../shared/ENVIRONMENT.md): on a CPU the bench session preloads this one, or says it could not."""


def defaults_of(settings: dict[str, Any]) -> dict[str, Any]:
    """MLX's defaults for every setting an MLX training variant writes out (the same for every variant)."""
    return dict(DEFAULTS)


def check_settings(variant: spec.Variant, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    return spec.check_written_out(
        f"variant {variant.name!r}: settings", dict(variant.settings) | (overrides or {}), DEFAULTS, CHOICES
    )


def compute_precision(settings: dict[str, Any], device: str = "cpu") -> str:
    """The precision the matmuls run in, which picks the peak MFU is measured against: float32 matmuls on a GPU
    run in TF32 unless the variant turns it off (MLX_ENABLE_TF32; a CPU has no TF32)."""
    if settings["precision"] == "bf16-mixed":
        return "bf16"
    return "tf32" if settings["tf32"] and device != "cpu" else "fp32"


def launch_env(device: str) -> dict[str, str]:
    """Variables the bench session sets for an MLX process: on a Linux CPU, OpenBLAS preloaded where it is
    installed (none found: nothing set, and the record says the reference BLAS ran)."""
    if device != "cpu" or platform.system() != "Linux":
        return {}
    found = next((p for p in OPENBLAS if Path(p).exists()), None)
    return {"LD_PRELOAD": found} if found else {}


def blas_used(device: str) -> str | None:
    """What did the CPU matmuls, for the record (None on a GPU)."""
    if device != "cpu":
        return None
    if platform.system() != "Linux":
        return "MLX's CPU backend (Accelerate on macOS)"
    preloaded = [p for p in os.environ.get("LD_PRELOAD", "").split(":") if "openblas" in p]
    if preloaded:
        return f"OpenBLAS preloaded ({preloaded[0]})"
    return "the reference BLAS of MLX's Linux wheel (no OpenBLAS found: install libopenblas0-pthread)"


def train_trial(
    *,
    mx: Any,
    plan: training.Plan,
    settings: dict[str, Any],
    group: Any = None,
    mid_run: Any = None,
    fed: dict[str, str] | None = None,
    meter: Any = None,
) -> training.TrialOut:
    """One trial from the shared initial weights; returns step times, losses (the mean over ranks), run-level
    values, stop reason and, with an energy `meter` (rank 0 on NVIDIA GPUs), the GPUs' joules per segment of
    steps. `mid_run(done)`, when given, is called at the first window boundary past half the steady
    steps (where the GPUs' clocks under load are sampled, as the PyTorch runner does). `fed`, when given (rank 0),
    gets the sha256 of the weights the model holds once loaded and of the token batches it takes its rows from, as
    the PyTorch runner's (`artifacts.state_sha256`, `artifacts.tokens_sha256`)."""
    from functools import partial

    import mlx.nn as nn
    import mlx.optimizers as optim

    from runners.engines.mlx.model import GPT, loss_fn

    model_spec, work, steps, micro_batch = plan.suite.models[plan.work.model], plan.work, plan.steps, plan.micro_batch
    trial_start = time.perf_counter()
    compute = mx.bfloat16 if settings["precision"] == "bf16-mixed" else mx.float32
    model = GPT(model_spec, compute)
    model.load_numpy(
        artifacts.read_safetensors(artifacts.initial_weights_file(model_spec, work.seed, training.INIT_DIR))
    )
    hashing = time.perf_counter()
    if fed is not None and "initial_state_sha256" not in fed:
        from mlx.utils import tree_flatten

        fed["initial_state_sha256"] = artifacts.state_sha256(dict(tree_flatten(model.parameters())))
    hashing_s = time.perf_counter() - hashing  # hashing the work is not the engine's set-up
    opt = optim.AdamW(
        learning_rate=settings["lr"],
        betas=list(settings["betas"]),
        eps=settings["eps"],
        weight_decay=settings["weight_decay"],
        bias_correction=settings["bias_correction"],
    )
    loss_and_grad = nn.value_and_grad(model, loss_fn)

    world = group.size() if group is not None else 1
    rank = group.rank() if group is not None else 0
    log, budget_s = training.printer(rank), plan.budget_s

    def step_fn(x: Any, y: Any) -> Any:
        loss, grads = loss_and_grad(model, x, y)
        if world > 1:
            grads = nn.average_gradients(grads, group=group)
            loss = mx.distributed.all_sum(loss, group=group) / world
        opt.update(model, grads)
        return loss

    state = [model.state, opt.state]
    if settings["compile"]:
        step_fn = partial(mx.compile, inputs=state, outputs=state)(step_fn)
    batches = artifacts.token_batches(
        vocab=model_spec.vocab, seed=work.seed, steps=range(steps), global_batch=micro_batch * world,
        seq_len=work.seq_len,
    )  # fmt: skip
    hashing = time.perf_counter()
    if fed is not None and "data_sha256" not in fed:
        fed["data_sha256"] = artifacts.tokens_sha256(batches)
    hashing_s += time.perf_counter() - hashing
    data = mx.array(batches[:, rank * micro_batch : (rank + 1) * micro_batch])  # resident on the device: the input
    del batches  # pipeline is not measured
    mx.eval(model.parameters(), data)
    mx.reset_peak_memory()
    setup_s = time.perf_counter() - trial_start - hashing_s
    warmup_peak = 0  # the warm-up's peak device memory (with no warm-up steps, the steady peak is the whole run's)
    # mx.eval has waited for the device at each step's end: a reading there needs no other wait
    joules = training.EnergySegments(meter, lambda: None) if meter is not None else None
    marks, losses, stop = [time.perf_counter()], [], None  # the budget is for training, from marks[0]: not set-up
    if joules is not None:
        joules.begin()
    for step in range(steps):
        loss = step_fn(data[step, :, :-1], data[step, :, 1:])
        mx.eval(loss, state)
        marks.append(time.perf_counter())
        losses.append(loss.item())
        done = step + 1
        if done == work.warmup_steps and work.device != "cpu":  # the steady steps' own peak, from here on
            warmup_peak = mx.get_peak_memory()
            mx.reset_peak_memory()
        window_end = done % work.window_steps == 0 or done == steps
        if joules is not None and training.ends_segment(done, steps, work.warmup_steps, work.window_steps):
            joules.boundary(done)
        if window_end:
            mean = sum(losses[-work.window_steps :]) / len(losses[-work.window_steps :])
            log(f"  step {done}/{steps}  loss {mean:.3f}  {time.perf_counter() - trial_start:.1f} s")
            if mid_run is not None and done >= (work.warmup_steps + steps) / 2:
                mid_run(done)
            over = time.perf_counter() - marks[0] > budget_s
            if world > 1:  # every rank must stop at the same step, or the collectives would hang
                over = mx.distributed.all_sum(mx.array(int(over)), group=group).item() > 0
            if over and done < steps:
                stop = f"time budget of {budget_s:g} s reached after {done} of {steps} steps"
                break
    times = [b - a for a, b in itertools.pairwise(marks)]
    run_values = {"setup_s": setup_s, "warmup_s": sum(times[: work.warmup_steps])}
    if work.device == "cpu":
        run_values["peak_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    else:
        peak = mx.get_peak_memory()
        if len(times) > work.warmup_steps:  # steady steps ran: the peak since the warm-up is theirs
            run_values["peak_mem_steady_gib"] = peak / 2**30
            peak = max(peak, warmup_peak)
        run_values["peak_mem_gib"] = peak / 2**30
    return training.TrialOut(times, losses, run_values, stop, joules.end() if joules is not None else ())


def main(argv: list[str] | None = None) -> int:
    plan = training.plan("runners.engines.mlx.train", __doc__, "mlx", argv)
    work, variant, overrides = plan.work, plan.variant, plan.overrides
    world = work.world_size
    if world > 1 and "MLX_RANK" not in os.environ:
        return launch(sys.argv[1:] if argv is None else argv, world, work.device)
    settings = check_settings(variant, overrides)

    os.environ["MLX_ENABLE_TF32"] = "1" if settings["tf32"] else "0"  # read by MLX; allowlisted into the record
    # the GPUs' energy: rank 0 reads every rank's GPU (`launch` names them all in FAIRFIGHT_ENERGY_GPUS). Alone, it
    # reads their idle power before MLX is imported, as the other engines' runners do; over several processes, after
    # the group has formed, every rank's GPU already open (nothing here holds the others back until rank 0 has read)
    gpus = os.environ.get("FAIRFIGHT_ENERGY_GPUS")
    meter = energy.meter(1, gpus) if work.device == "cuda" and world == 1 else None
    idle = meter.measure_idle(before_gpu_use=True) if meter is not None else None
    import mlx.core as mx

    mx.set_default_device(mx.cpu if work.device == "cpu" else mx.gpu)
    group = mx.distributed.init(backend=BACKENDS[work.device], strict=True) if world > 1 else None
    rank = group.rank() if group is not None else 0
    if group is not None and group.size() != world:
        raise RuntimeError(f"mx.distributed formed a group of {group.size()}, the workload asks for {world}")
    log = training.printer(rank)

    sampler = provenance.GpuSampler()  # the GPUs' clocks under load, asked once mid-run (rank 0, CUDA only)
    if work.device == "cuda" and world > 1 and rank == 0:
        meter = energy.meter(world, gpus)
        idle = meter.measure_idle(before_gpu_use=False) if meter is not None else None
    if meter is not None:
        log(f"idle power {idle:.1f} W ({meter.method}) before any work")
    fed: dict[str, str] = {}  # the proof of the same work, filled by trial 0 on rank 0 (`train_trial`)
    ctx = plan._asdict() | dict(settings=settings, mx=mx, world=world, sampler=sampler, fed=fed, meter=meter)
    log(
        f"{variant.name} on {work.name}: MLX {mx.__version__}, {world} × {mx.default_device()}, "
        f"micro-batch {plan.micro_batch}, {plan.steps} steps × {work.trials} trial(s)"
        + (f" with {overrides}" if overrides else "")
    )
    training.run_trials(
        work=work,
        calibrate=lambda: calibrate.calibrate_mlx(
            device=work.device, precision=compute_precision(settings, work.device), group=group
        ),
        trial=lambda _: train_trial(
            mx=mx,
            plan=plan,
            settings=settings,
            group=group,
            mid_run=sampler.start if work.device == "cuda" and rank == 0 else None,
            fed=fed if rank == 0 else None,
            meter=meter,
        ),
        write=training.writer(ctx, _engine_record),
        log=log,
        rank=rank,
        process_start=PROCESS_START,
    )
    return 0


BACKENDS = {"cpu": "ring", "cuda": "nccl", "metal": "ring"}
"""mx.distributed's backend per device: NCCL between CUDA GPUs, the ring (TCP) elsewhere."""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_env(device: str, world: int) -> list[dict[str, str]]:
    """Each rank's variables for mx.distributed on this host: MLX_RANK, and the ring's host file (one 127.0.0.1
    address per rank, written by `launch`) or NCCL's rendezvous and one GPU per rank."""
    if device == "cuda":
        port = str(_free_port())
        common = {"NCCL_HOST_IP": "127.0.0.1", "NCCL_PORT": port, "MLX_WORLD_SIZE": str(world)}
        visible = [d for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
        gpus = visible or [str(r) for r in range(world)]  # rank r takes the r-th GPU this process may see
        if len(gpus) < world:
            raise spec.SpecError(f"{world} ranks, but CUDA_VISIBLE_DEVICES names only {len(gpus)} GPU(s)")
        every = {"FAIRFIGHT_ENERGY_GPUS": ",".join(gpus[:world])}  # rank 0 meters them all (runners/energy.py)
        return [common | every | {"MLX_RANK": str(r), "CUDA_VISIBLE_DEVICES": gpus[r]} for r in range(world)]
    return [{"MLX_RANK": str(r)} for r in range(world)]


def launch(argv: list[str], world: int, device: str) -> int:
    """Start one runner process per device and wait for them; if one fails, stop the others (a rank waiting in a
    collective would otherwise wait for ever). Returns the first failing exit code, or 0."""
    import json
    import subprocess
    import tempfile

    envs = rank_env(device, world)
    with tempfile.TemporaryDirectory() as tmp:
        if BACKENDS[device] == "ring":
            hostfile = Path(tmp) / "hosts.json"
            hostfile.write_text(json.dumps([[f"127.0.0.1:{_free_port()}"] for _ in range(world)]))
            envs = [e | {"MLX_HOSTFILE": str(hostfile)} for e in envs]
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "runners.engines.mlx.train", *argv],
                env=os.environ | e,
                preexec_fn=lifetime.die_with_parent(),  # ranks end with their launcher
            )
            for e in envs
        ]
        code = 0
        while any(p.poll() is None for p in procs):
            failed = [p.returncode for p in procs if p.returncode not in (None, 0)]
            if failed and not code:
                code = failed[0]
                for p in procs:
                    if p.poll() is None:
                        p.kill()
            time.sleep(0.2)
        return code or next((p.returncode for p in procs if p.returncode), 0)


def hardware(device: str, mx: Any, count: int = 1) -> dict[str, Any]:
    """provenance.hardware, probed in a child process on a CUDA host (its CUDA path imports torch, kept out of the
    process that has MLX's CUDA backend loaded), with MLX's own name for an Apple GPU."""
    if device == "cuda":
        return provenance.hardware_in_child(device, count)
    hw = provenance.hardware(device, count)
    if device == "metal":
        info = mx.device_info()
        hw |= {
            "accelerator": f"{info.get('device_name', 'Apple GPU')} GPU",
            "accelerator_memory_gib": round(info.get("memory_size", 0) / 2**30, 1) or None,
        }
    return hw


def _engine_record(ctx: dict[str, Any]) -> training.EngineRecord:
    """What MLX adds to the record: its version and hardware, and its defaults, precision, launcher, device and BLAS."""
    mx, work, settings = ctx["mx"], ctx["work"], ctx["settings"]
    return training.EngineRecord(
        version=mx.__version__,
        hardware=hardware(work.device, mx, ctx["world"]),
        packages=("mlx", "mlx-cuda-13", "mlx-cpu", "mlx-metal", "numpy", "pyarrow"),
        config=dict(
            engine_defaults=DEFAULTS,
            compute_precision=compute_precision(settings, work.device),
            launcher=f"python -m runners.engines.mlx.train: {ctx['world']} process(es), one device each"
            + (f", mx.distributed over {BACKENDS[work.device]}" if ctx["world"] > 1 else ""),
            mlx_device=str(mx.default_device()),
            blas=blas_used(work.device),
        ),
    )


if __name__ == "__main__":
    sys.exit(main())
