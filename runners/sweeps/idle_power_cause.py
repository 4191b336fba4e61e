"""Why does a run's idle power differ by engine (~115-138 W on an H200 for torch and MLX runs, ~70-81 W for llama.cpp
and vLLM)? The runners read it at different moments: torch's training runner after `torch.cuda.set_device` and
NCCL's start, MLX's after `mx.set_default_device(mx.gpu)`, llama.cpp's and vLLM's before anything opens the GPU.
This reads the idle power as the runners do (`runners.energy.meter(1).measure_idle()`, 3 s of NVML's energy
counter) in one state per fresh process, so that each state's cost is its own and no context lingers from the last:

  fresh            nothing done on the GPU (what llama.cpp's and vLLM's runners read)
  torch-import     `import torch` only
  torch-context    `torch.cuda.set_device(0)`: this process holds a CUDA context (torch's runner, world 1, first half)
  torch-nccl       and a one-rank NCCL process group started eagerly (`device_id`), as torch's training runner does
  torch-after      and a second of bf16 matmuls, then the same 3 s (the GPU just after work)
  mlx-import       `import mlx.core` only (skipped where MLX is not installed)
  mlx-gpu          `mx.set_default_device(mx.gpu)` (what MLX's runners read)
  mlx-array        and one small array evaluated on the GPU
  fresh-again      nothing again, last: the drift over the probe

Run on a bench host (MLX from its wheelhouse: PYTHONPATH=/root/msite), one GPU visible:
    python3 -m runners.sweeps.idle_power_cause OUT.json
Prints a line per state and writes every state's watts, the counter's update interval and the GPU to OUT.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime

STATES = ("fresh", "torch-import", "torch-context", "torch-nccl", "torch-after", "mlx-import", "mlx-gpu", "mlx-array",
          "fresh-again")  # fmt: skip


def _enter(state: str) -> None:
    """Put this process in `state` (each state includes the ones before it in its family)."""
    if state.startswith("torch-"):
        import torch

        if state == "torch-import":
            return
        torch.cuda.set_device(0)
        torch.cuda.synchronize()
        if state in ("torch-nccl", "torch-after"):
            import torch.distributed as dist

            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            os.environ.setdefault("MASTER_PORT", "29533")
            dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
        if state == "torch-after":
            a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < 1.0:
                a @ a
                torch.cuda.synchronize()
    elif state.startswith("mlx-"):
        import mlx.core as mx

        if state == "mlx-import":
            return
        mx.set_default_device(mx.gpu)
        if state == "mlx-array":
            mx.eval(mx.ones((1024,)) + 1)


def child(state: str) -> int:
    from runners import energy

    if state.startswith("mlx-"):
        try:
            import mlx.core  # noqa: F401
        except ImportError:
            print(json.dumps({"state": state, "skipped": "MLX is not installed"}))
            return 0
    _enter(state)
    meter = energy.meter(1)
    if meter is None:
        raise SystemExit("no NVML meter for one GPU here")
    watts = meter.measure_idle()
    print(json.dumps({"state": state, "idle_power_w": round(watts, 2), "method": meter.method,
                      "counter_update_s": meter.counter_update_s, "gpu": meter.counter.uuids[0]}))  # fmt: skip
    return 0


def main(out: str) -> int:
    results = []
    for state in STATES:
        proc = subprocess.run([sys.executable, "-m", "runners.sweeps.idle_power_cause", "--child", state],
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode or not lines:
            results.append({"state": state, "error": (proc.stderr or proc.stdout)[-2000:]})
        else:
            results.append(json.loads(lines[-1]))
        r = results[-1]
        if state == "fresh" and "idle_power_w" not in r:  # no GPU or no NVML here: nothing else can be read either
            raise SystemExit(f"idle_power_cause: {r.get('error', '').strip()[-300:]}")
        print(f"{state:14} " + (f"{r['idle_power_w']:8.1f} W" if "idle_power_w" in r else r.get("skipped", "error")),
              flush=True)  # fmt: skip
    doc = {
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python3 -m runners.sweeps.idle_power_cause",
        "harness_commit": os.environ.get("FAIRFIGHT_HARNESS_COMMIT"),
        "states": results,
    }
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        raise SystemExit(child(sys.argv[2]))
    if len(sys.argv) != 2:
        raise SystemExit("usage: python3 -m runners.sweeps.idle_power_cause OUT.json")
    raise SystemExit(main(sys.argv[1]))
