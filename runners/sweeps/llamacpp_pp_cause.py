"""Why is the first timed pp512 at depth 0 slow after the runner's warm-up (issue 61, item 3)? One experiment on one
loaded model: each condition times pp512 repetitions exactly as the runner does (`_Bench`: clear the cache, decode
512 random tokens in batches of n_batch, synchronise) and reads the GPU's SM clock and power through NVML right
before and right after each repetition, so a slow repetition can be matched to the clock it ran at.

    python runners/sweeps/llamacpp_pp_cause.py --model llama-8b --variant llamacpp-f16 --cache-dir /root/ffc --json OUT

Conditions, in this order, on the same context:
  idle_then_runner   3 s at rest (as the energy meter's idle window before a test), then the runner's warm-up (one
                     whole prompt) and 12 repetitions: the first two are what the runner leaves untimed and times first
  runner_again       straight after, with no rest: the same warm-up and 12 repetitions
  idle_then_timed    3 s at rest, then a warm-up of whole prompts for at least 1 s of GPU work, then 12 repetitions
  idle_between       3 s at rest, the runner's warm-up, then 12 repetitions with 0.5 s at rest before each
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

NVML_CLOCK_SM = 1


def main() -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    p.add_argument("--suite", default="h100")
    p.add_argument("--model", default="llama-8b", help="an [[inference]] entry of the suite")
    p.add_argument("--variant", default="llamacpp-f16")
    p.add_argument("--cache-dir", type=Path, required=True)
    p.add_argument("--reps", type=int, default=12)
    p.add_argument("--json", type=Path, required=True)
    args = p.parse_args()
    import llama_cpp  # first: numpy before it crashes model loads on the bench image (runner.py)

    from runners import energy, llama_quant, spec
    from runners.engines.llamacpp.runner import _Bench, resolve_settings

    suite = spec.load_suite(args.suite)
    entry = suite.inference_entry(args.model)
    settings = resolve_settings(suite.variants[args.variant].settings)
    path, _ = llama_quant.gguf_file(suite.models[entry.model], entry.seed, settings["weights"], args.cache_dir)
    nvml = energy.Nvml.open()
    handle = nvml.handles()[0][1] if nvml else None

    def clock_power() -> tuple[int | None, float | None]:
        if nvml is None:
            return None, None
        mhz = ctypes.c_uint()
        ok = nvml.lib.nvmlDeviceGetClockInfo(handle, NVML_CLOCK_SM, ctypes.byref(mhz)) == 0
        mw = nvml.power_mw(handle)
        return (mhz.value if ok else None), (mw / 1e3 if mw is not None else None)

    bench = _Bench(llama_cpp, path, settings, entry.device)
    n = entry.n_prompt
    ctx = bench._context(n)
    memory = llama_cpp.llama_get_memory(ctx)

    def rep(rest_s: float = 0.0) -> dict[str, Any]:
        if rest_s:
            time.sleep(rest_s)
        llama_cpp.llama_memory_clear(memory, False)
        before = clock_power()
        t0 = time.perf_counter_ns()
        bench._prompt(ctx, n)
        wall = (time.perf_counter_ns() - t0) / 1e9
        after = clock_power()
        return {
            "wall_s": wall,
            "tokens_per_s": n / wall,
            "sm_mhz": [before[0], after[0]],
            "power_w": [before[1], after[1]],
        }

    def warm_once() -> None:
        llama_cpp.llama_memory_clear(memory, False)
        bench._prompt(ctx, n)

    def warm_for(seconds: float) -> int:
        t0, count = time.perf_counter(), 0
        while time.perf_counter() - t0 < seconds:
            warm_once()
            count += 1
        return count

    out: dict[str, Any] = {"model": args.model, "variant": args.variant, "n_prompt": n, "conditions": {}}
    conditions = out["conditions"]
    time.sleep(3)
    warm_once()
    conditions["idle_then_runner"] = [rep() for _ in range(args.reps)]
    warm_once()
    conditions["runner_again"] = [rep() for _ in range(args.reps)]
    time.sleep(3)
    out["timed_warmup_prompts"] = warm_for(1.0)
    conditions["idle_then_timed"] = [rep() for _ in range(args.reps)]
    time.sleep(3)
    warm_once()
    conditions["idle_between"] = [rep(0.5) for _ in range(args.reps)]
    llama_cpp.llama_free(ctx)
    bench.close()
    for name, reps in conditions.items():
        rates = [r["tokens_per_s"] for r in reps]
        rest = statistics.median(rates[1:])
        print(
            f"{name:18} first {rates[0]:9,.0f} second {rates[1]:9,.0f} median of the rest {rest:9,.0f} tokens/s;"
            f" first/rest {rates[0] / rest:.3f}; SM MHz first {reps[0]['sm_mhz']} last {reps[-1]['sm_mhz']}",
            flush=True,
        )
    args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
