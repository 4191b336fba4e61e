"""Peaks measured in the same job as the run: matmul FLOP/s, device copy bandwidth, all-reduce bus bandwidth.

A float8 run's matmul peak is `torch._scaled_mm` on float8 (e4m3) operands; the bf16 matmul peak is measured
beside it as its reference, so its MFU can be read against both.

MFU against these says how close a variant came to what these devices did on this day, beside the datasheet.
Each figure is the median of several timed repetitions after a warm-up, with the device synchronised.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from runners import metrics

# Sizes: large enough to saturate an H100/H200, small enough to take seconds on a 2-core CPU.
SIZES = {
    "cuda": {"matmul_n": 8192, "copy_bytes": 1 << 30, "allreduce_bytes": 1 << 30},
    "cpu": {"matmul_n": 512, "copy_bytes": 16 << 20, "allreduce_bytes": 4 << 20},
}


def _timed(fn: Any, inner: int, sync: Any = lambda: None, reps: int = 5) -> float:
    """Median seconds of one call of fn over `reps` repetitions of `inner` calls, after a warm-up; `sync` waits for
    the device before the clock is read."""
    for _ in range(2):
        fn()
    sync()
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        samples.append((time.perf_counter() - t0) / inner)
    return statistics.median(samples)


def _sync(torch: Any, device: Any) -> Any:
    return (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)


def _time_matmul(torch: Any, device: Any, n: int, dtype: Any) -> float:
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    return _timed(lambda: torch.mm(a, b), inner=10, sync=_sync(torch, device))


def _time_scaled_mm(torch: Any, device: Any, n: int) -> float:
    """One float8 matmul as torchao's forward runs it: e4m3 operands (the second column-major, as _scaled_mm
    needs), per-tensor scales, bf16 output, fast accumulation."""
    a = torch.randn(n, n, device=device).to(torch.float8_e4m3fn)
    b = torch.randn(n, n, device=device).to(torch.float8_e4m3fn).t()
    one = torch.ones((), device=device)

    def mm() -> Any:
        return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=True)

    return _timed(mm, inner=10, sync=_sync(torch, device))


def _time_copy(torch: Any, device: Any, nbytes: int) -> float:
    x = torch.empty(nbytes, dtype=torch.uint8, device=device)
    y = torch.empty_like(x)
    return _timed(lambda: y.copy_(x), inner=10, sync=_sync(torch, device))


def _time_allreduce(torch: Any, dist: Any, device: Any, nbytes: int) -> float:
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32  # gloo reduces fp32 most reliably
    buf = torch.ones(nbytes // dtype.itemsize, dtype=dtype, device=device)
    return _timed(lambda: dist.all_reduce(buf), inner=5, sync=_sync(torch, device))


def calibrate(*, device: Any, world: int, precision: str) -> dict[str, Any]:
    """Measure the three peaks on this rank's device (the all-reduce across all ranks); returns JSON-able values."""
    import torch
    import torch.distributed as dist

    sizes = SIZES[device.type]
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high" if precision == "tf32" else "highest")
    n = sizes["matmul_n"]
    reference = None
    if precision == "fp8":
        t_mm = _time_scaled_mm(torch, device, n)
        reference = ("bf16", _time_matmul(torch, device, n, torch.bfloat16))
    else:
        t_mm = _time_matmul(torch, device, n, dtype)
    torch.set_float32_matmul_precision(previous)
    t_copy = _time_copy(torch, device, sizes["copy_bytes"])
    t_ar = _time_allreduce(torch, dist, device, sizes["allreduce_bytes"]) if world > 1 else None
    if device.type == "cuda":
        torch.cuda.empty_cache()
    method = "median of 5 repetitions after 2 warm-up calls, device synchronised (runners/calibrate.py)"
    if precision == "fp8":
        method += "; fp8: torch._scaled_mm, e4m3 operands, bf16 output, fast accumulation"
    return _peaks(precision, sizes, t_mm, t_copy, t_ar, world, method, reference)


def calibrate_mlx(*, device: str, precision: str, group: Any = None) -> dict[str, Any]:
    """The same peaks measured with MLX on its default device, and the all-reduce (`mx.distributed.all_sum`) over
    the group when there is one; mx.eval waits for the work, so each timed call is complete when the clock is
    read."""
    import mlx.core as mx

    sizes = SIZES["cpu" if device == "cpu" else "cuda"]
    n = sizes["matmul_n"]
    dtype = mx.bfloat16 if precision == "bf16" else mx.float32  # tf32: float32 under MLX_ENABLE_TF32=1
    a, b = mx.random.normal((n, n)).astype(dtype), mx.random.normal((n, n)).astype(dtype)
    x = mx.zeros((sizes["copy_bytes"],), dtype=mx.uint8)
    mx.eval(a, b, x)
    t_mm = _timed(lambda: mx.eval(a @ b), inner=10)
    t_copy = _timed(lambda: mx.eval(x + 1), inner=10)  # reads and writes every byte once, as a copy does
    ranks = group.size() if group is not None else 1
    t_ar = None
    if ranks > 1:
        buf = mx.ones((sizes["allreduce_bytes"] // 2,), dtype=mx.bfloat16 if device != "cpu" else mx.float16)
        t_ar = _timed(lambda: mx.eval(mx.distributed.all_sum(buf, group=group)), inner=5)
    method = "MLX: median of 5 repetitions after 2 warm-up calls, each call evaluated (runners/calibrate.py)"
    return _peaks(precision, sizes, t_mm, t_copy, t_ar, ranks, method)


def _peaks(
    precision: str,
    sizes: dict[str, int],
    t_mm: float,
    t_copy: float,
    t_ar: float | None,
    ranks: int,
    method: str,
    reference: tuple[str, float] | None = None,
) -> dict[str, Any]:
    """The calibration record from the timed seconds of one matmul, copy and all-reduce (None: one device), and of
    the reference precision's matmul where a run has one (float8: bf16)."""
    n = sizes["matmul_n"]
    extra = {}
    if reference is not None:
        extra = {
            "reference_matmul_precision": reference[0],
            "reference_matmul_flops": metrics.matmul_flops(n, n, n) / reference[1],
        }
    return extra | {
        "matmul_precision": precision,
        "matmul_n": n,
        "matmul_flops": metrics.matmul_flops(n, n, n) / t_mm,
        "copy_bytes": sizes["copy_bytes"],
        "copy_bytes_per_s": metrics.copy_bandwidth(sizes["copy_bytes"], t_copy),
        "allreduce_bytes": sizes["allreduce_bytes"],
        "allreduce_ranks": ranks,
        "allreduce_busbw_bytes_per_s": (
            None if t_ar is None else metrics.allreduce_bus_bandwidth(sizes["allreduce_bytes"], t_ar, ranks)
        ),
        "method": method,
    }
