"""Why does our MLX runner's pp512 beat `mlx_lm.benchmark`'s prompt_tps by ~1.30x (llama-8b and llama-14b on an
H200), and its tg128 the tool's generation_tps by 1.03-1.11x? One experiment, each path timed on the same loaded
model, so the gap can be split into its parts.

    python runners/sweeps/mlx_pp_cause.py --model llama-8b --cache-dir /root/ffc --json OUT.json [--tool]
    python runners/sweeps/mlx_pp_cause.py --suite cpu-smoke --model llama-tiny --device cpu --cache-dir /tmp/ffc

The tool's `prompt_time` (mlx_lm.generate.stream_generate, 0.32.2) runs from just before `generate_step` starts to
its first yielded token. Inside that window `generate_step`: (1) makes a fresh prompt cache, (2) prefills all but
the last token in chunks of `prefill_step_size`, evaluating only the cache, with `mx.clear_cache()` after each chunk,
(3) runs the last token's `_step` (logits, logsumexp, greedy sampler) and `mx.async_eval`s it, (4) BEFORE waiting for
that token builds and `mx.async_eval`s the next token's `_step(y)` (the look-ahead; skipped only when
`n == max_tokens`, so it happens for max_tokens >= 1), then `mx.eval(y)`, (5) `y.item()`; stream_generate then hands
the token to the detokenizer after the clock has been read. Our runner's `_Bench._prompt` times (2) without
clear_cache on a reused, trimmed cache and (3) with an argmax only.

Experiments (each: warm-ups, then `--reps` timed repetitions; median, min and max in ms and tokens/s):
  a        the runner's pp path exactly: `_Bench._prompt(cache, n)`, cache trimmed back to 0 after each repetition
  b        a, plus `mx.clear_cache()` after each prefill chunk (as generate_step does)
  c        `generate_step(prompt, model, max_tokens=2, prompt_cache=cache)` to its first yield (reused cache)
  c_fresh  c with prompt_cache=None: generate_step makes its own cache, as in the tool
  d        c with max_tokens=1 (the look-ahead still runs: `n != max_tokens` at n=0)
  d0       generate_step with max_tokens=0, run to exhaustion: prefill + last token + mx.eval(y), NO look-ahead
  e        stream_generate(model, tokenizer, prompt_list, max_tokens=n_gen, prefill_step_size=2048): the tool's path;
           its first response's prompt_tps and its last generation_tps (eos ids emptied, as benchmark.py does)
  f        one decode step at depth n: one-token forward + argmax, evaluated (f_build: the CPU time to build the graph
           and async_eval it, before waiting)
  g_runner_d0    tg: the runner's `_Bench._generate(cache, n_gen)` at depth 0 (llama-bench's tg128)
  g_runner_dn    the same at depth n (the depth the tool generates at)
  g_window       the tool's generation window without the detokenizer: generate_step(prompt n, max_tokens=n_gen,
                 fresh cache), from the first yield to the n_gen-th; rate n_gen/t (the tool's count) and (n_gen-1)/t
  g_window_detok g_window with detokenizer.add_token + last_segment + mx.get_peak_memory per token
  g_detok        CPU only: detokenizer.add_token + last_segment for n_gen random token ids, the folder's tokenizer
With --interleave the tests a..g_window_detok run round-robin, one repetition of each per round and the order
rotated each round (the host's CPU speed drifts over seconds, and decode is bound by the CPU building and launching
each step, so sequential blocks would compare different moments).
With --tool it also runs `python -m mlx_lm.benchmark` on the same folder (another process) and keeps its output.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def summary(samples_s: list[float], tokens: int) -> dict[str, Any]:
    ms = [s * 1e3 for s in samples_s]
    return {
        "ms_median": statistics.median(ms),
        "ms_min": min(ms),
        "ms_max": max(ms),
        "tps_median": tokens / statistics.median(samples_s) if tokens else None,
        "tps_min": tokens / max(samples_s) if tokens else None,
        "tps_max": tokens / min(samples_s) if tokens else None,
        "samples_ms": [round(x, 4) for x in ms],
    }


def repeat(fn: Callable[[], float], reps: int, warm: int) -> list[float]:
    """fn returns the seconds it measured itself; `warm` untimed calls first."""
    for _ in range(warm):
        fn()
    return [fn() for _ in range(reps)]


def experiments(folder: Path, vocab: int, n: int, n_gen: int, reps: int, warm: int, interleave: bool) -> dict[str, Any]:
    import mlx.core as mx
    from mlx_lm import load, stream_generate
    from mlx_lm.generate import generate_step
    from mlx_lm.models.cache import make_prompt_cache, trim_prompt_cache

    from runners.engines.mlx import generate as mlx_generate

    step = 2048  # prefill_step_size
    settings = {"weights": "hf", "prefill_step_size": step}
    bench = mlx_generate._Bench(folder, settings, vocab)  # loads with mlx_lm.load, parameters evaluated
    model = bench.model
    _, tokenizer = load(str(folder), lazy=True)  # the tokenizer, as the tool loads it (these lazy weights are dropped)
    tokenizer._eos_token_ids = {}  # as benchmark.py: no early stop
    rng = random.Random(1)
    prompt_list = [rng.randrange(vocab) for _ in range(n)]  # one fixed prompt, as benchmark.py
    out: dict[str, Any] = {"load_s": bench.load_s}
    cache = make_prompt_cache(model)

    def reset() -> None:
        mx.synchronize()
        trim_prompt_cache(cache, cache[0].offset)

    # a: the runner's pp path exactly
    def a() -> float:
        t0 = time.perf_counter_ns()
        bench._prompt(cache, n)
        dt = (time.perf_counter_ns() - t0) / 1e9
        trim_prompt_cache(cache, n)
        return dt

    # b: a plus clear_cache after each prefill chunk
    def prompt_clear(c: list[Any], m: int) -> None:
        done = 0
        while m - done > 1:
            size = min(step, m - done - 1)
            model(bench._tokens(size), cache=c)
            mx.eval([x.state for x in c])
            done += size
            mx.clear_cache()
        logits = model(bench._tokens(1), cache=c)
        mx.eval(mx.argmax(logits[:, -1, :], axis=-1))

    def b() -> float:
        t0 = time.perf_counter_ns()
        prompt_clear(cache, n)
        dt = (time.perf_counter_ns() - t0) / 1e9
        trim_prompt_cache(cache, n)
        return dt

    # c, c_fresh, d: generate_step to its first yield
    def first_yield(max_tokens: int, fresh: bool) -> Callable[[], float]:
        def run() -> float:
            prompt = mx.array(prompt_list)
            t0 = time.perf_counter_ns()
            gen = generate_step(prompt, model, max_tokens=max_tokens, prompt_cache=None if fresh else cache)
            next(gen)
            dt = (time.perf_counter_ns() - t0) / 1e9
            gen.close()
            reset()
            return dt

        return run

    # d0: max_tokens=0: no look-ahead, no yield
    def d0() -> float:
        prompt = mx.array(prompt_list)
        t0 = time.perf_counter_ns()
        for _ in generate_step(prompt, model, max_tokens=0, prompt_cache=cache):
            pass
        dt = (time.perf_counter_ns() - t0) / 1e9
        reset()
        return dt

    # e: stream_generate, the tool's path: returns the tool's prompt_time; its generation_tps and wall go to lists
    e_tg: list[float] = []
    e_total: list[float] = []

    def e() -> float:
        t0 = time.perf_counter()
        first = last = None
        for r in stream_generate(model, tokenizer, prompt_list, max_tokens=n_gen, prefill_step_size=2048):
            if first is None:
                first = r
            last = r
        if first is None or last is None:
            raise RuntimeError("stream_generate yielded nothing")
        e_total.append(time.perf_counter() - t0)
        e_tg.append(last.generation_tps)
        return n / first.prompt_tps

    # g: tg paths. The runner's tg at depth 0 (its own warm-up and fresh cache per call, as `_Bench.run`)
    def runner_tg(depth: int) -> Callable[[], float]:
        return lambda: bench.run("tg", n_gen, depth, 1)[0]

    def window(detok: bool) -> Callable[[], float]:
        def run() -> float:
            prompt = mx.array(prompt_list)
            dt = tokenizer.detokenizer
            t0 = t1 = 0
            for k, (token, _lp) in enumerate(generate_step(prompt, model, max_tokens=n_gen, prefill_step_size=2048)):
                if k == 0:
                    t0 = time.perf_counter_ns()
                if detok:
                    dt.add_token(token)
                if k + 1 == n_gen:
                    t1 = time.perf_counter_ns()
                    break
                if detok:
                    _ = dt.last_segment
                    _ = mx.get_peak_memory()
            mx.synchronize()
            return (t1 - t0) / 1e9

        return run

    # f: one decode step at depth n (the cache filled to n untimed first); f_build: the part before waiting
    builds: list[float] = []

    def f() -> float:
        bench._prompt(cache, n)
        mx.synchronize()
        tok = bench._tokens(1)
        t0 = time.perf_counter_ns()
        logits = model(tok, cache=cache)
        y = mx.argmax(logits[:, -1, :], axis=-1)
        mx.async_eval(y)
        tb = time.perf_counter_ns()
        mx.eval(y)
        t1 = time.perf_counter_ns()
        builds.append((tb - t0) / 1e9)
        reset()
        return (t1 - t0) / 1e9

    tests: dict[str, tuple[Callable[[], float], int]] = {
        "a": (a, n),
        "b": (b, n),
        "c": (first_yield(2, False), n),
        "c_fresh": (first_yield(2, True), n),
        "d": (first_yield(1, False), n),
        "d0": (d0, n),
        "e": (e, n),
        "f": (f, 1),
        "g_runner_d0": (runner_tg(0), n_gen),
        "g_runner_dn": (runner_tg(n), n_gen),
        "g_window": (window(False), n_gen),
        "g_window_detok": (window(True), n_gen),
    }
    samples: dict[str, list[float]] = {k: [] for k in tests}
    if interleave:
        # round-robin, the order rotated each round: the host's CPU speed drifts over seconds (decode is bound by
        # the CPU building and launching each step), so sequential blocks compare different moments
        names = list(tests)
        for r in range(warm + reps):
            if r == warm:  # the warm-up rounds' stream_generate figures are dropped
                e_tg.clear()
                e_total.clear()
            rot = names[r % len(names) :] + names[: r % len(names)]
            for name in rot:
                dt = tests[name][0]()
                if r >= warm:
                    samples[name].append(dt)
            print(f"  round {r}", file=sys.stderr, flush=True)
    else:
        for name, (fn, _tokens) in tests.items():
            samples[name] = repeat(fn, reps, warm)
            if name == "e":
                del e_tg[:warm], e_total[:warm]
            print(f"  {name}: {statistics.median(samples[name]) * 1e3:.3f} ms", file=sys.stderr, flush=True)
    for name, (_fn, tokens) in tests.items():
        out[name] = summary(samples[name], tokens)
        if name.startswith("g_window"):
            out[name]["tps_median_nminus1"] = (n_gen - 1) / statistics.median(samples[name])
    out["e"]["generation_tps"] = e_tg
    out["e"]["generation_tps_median"] = statistics.median(e_tg)
    out["e"]["prompt_tps_mean"] = statistics.fmean(n / s for s in samples["e"])  # what the tool averages
    out["e_total"] = summary(e_total, 0)
    out["f_build"] = summary(builds[-reps:], 0)
    reset()
    if cache[0].offset != 0:
        raise RuntimeError(f"cache holds {cache[0].offset} tokens")

    def detok_only() -> float:
        ids = [rng.randrange(vocab) for _ in range(n_gen)]
        dt = tokenizer.detokenizer
        t0 = time.perf_counter_ns()
        for t in ids:
            dt.add_token(t)
            _ = dt.last_segment
        dt.finalize()
        return (time.perf_counter_ns() - t0) / 1e9

    out["g_detok"] = summary(repeat(detok_only, reps, warm), 0)
    out["g_detok"]["detokenizer"] = type(tokenizer.detokenizer).__name__
    out["peak_mem_gib"] = mx.get_peak_memory() / 2**30
    return out


def table(res: dict[str, Any], n: int, n_gen: int) -> str:
    rows = [f"{'test':<16}{'median ms':>12}{'min ms':>10}{'max ms':>10}{'tok/s (median)':>16}"]
    for k, v in res.items():
        if isinstance(v, dict) and "ms_median" in v:
            tps = v["tps_median"]
            rows.append(
                f"{k:<16}{v['ms_median']:>12.3f}{v['ms_min']:>10.3f}{v['ms_max']:>10.3f}"
                + (f"{tps:>16,.1f}" if tps else f"{'':>16}")
            )
    e, a = res["e"], res["a"]
    rows.append("")
    rows.append(
        f"e prompt_tps mean (tool's average): {e['prompt_tps_mean']:,.1f}; a/e pp ratio "
        f"{a['tps_median'] / e['tps_median']:.3f}"
    )
    rows.append(
        f"e generation_tps median: {e['generation_tps_median']:.2f}; runner tg{n_gen} d0/e "
        f"{res['g_runner_d0']['tps_median'] / e['generation_tps_median']:.3f}"
    )
    parts = {
        "clear_cache (b-a)": res["b"]["ms_median"] - a["ms_median"],
        "generate_step, no look-ahead (d0-b)": res["d0"]["ms_median"] - res["b"]["ms_median"],
        "look-ahead + item (c-d0)": res["c"]["ms_median"] - res["d0"]["ms_median"],
        "fresh cache (c_fresh-c)": res["c_fresh"]["ms_median"] - res["c"]["ms_median"],
        "stream_generate rest (e-c_fresh)": e["ms_median"] - res["c_fresh"]["ms_median"],
    }
    rows.append(f"gap e-a = {e['ms_median'] - a['ms_median']:.3f} ms:")
    rows += [f"  {k:<40}{v:>9.3f} ms" for k, v in parts.items()]
    res["parts_ms"] = parts
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=(__doc__ or "").partition("\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--suite", default="h100")
    p.add_argument("--model", default="llama-8b")
    p.add_argument("--device", choices=("gpu", "cpu"), default="gpu")
    p.add_argument("--cache-dir", default="/root/ffc")
    p.add_argument("--n-prompt", type=int, default=512)
    p.add_argument("--n-gen", type=int, default=128)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--warm", type=int, default=2)
    p.add_argument("--interleave", action="store_true", help="run the tests round-robin (rotated each round)")
    p.add_argument("--folder-only", action="store_true", help="write the model folder and stop")
    p.add_argument("--tool", action="store_true", help="also run mlx_lm.benchmark on the folder")
    p.add_argument("--tool-trials", type=int, default=5)
    p.add_argument("--json", help="write the results here")
    args = p.parse_args(argv)

    from runners import llama_files, spec

    spec_model = spec.load_suite(args.suite).models[args.model]
    t0 = time.perf_counter()
    folder = llama_files.hf_folder(spec_model, 0, Path(args.cache_dir))
    print(f"folder {folder} ready in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    if args.folder_only:
        return 0

    import mlx.core as mx

    mx.set_default_device(mx.cpu if args.device == "cpu" else mx.gpu)
    from importlib import metadata

    res: dict[str, Any] = {
        "model": args.model,
        "suite": args.suite,
        "folder": str(folder),
        "device": args.device,
        "device_info": {k: v for k, v in mx.device_info().items() if isinstance(v, (str, int, float))},
        "versions": {"mlx": mx.__version__, "mlx-lm": metadata.version("mlx-lm")},
        "n_prompt": args.n_prompt,
        "n_gen": args.n_gen,
        "reps": args.reps,
        "interleave": args.interleave,
    }
    res |= experiments(folder, spec_model.vocab, args.n_prompt, args.n_gen, args.reps, args.warm, args.interleave)
    text = table(res, args.n_prompt, args.n_gen)
    print(text)
    if args.tool:
        cmd = [sys.executable, "-m", "mlx_lm.benchmark", "--model", str(folder), "--prompt-tokens", str(args.n_prompt),
               "--generation-tokens", str(args.n_gen), "--batch-size", "1", "--num-trials", str(args.tool_trials),
               "--prefill-step-size", "2048"]  # fmt: skip
        if args.device == "cpu":  # the tool has no device flag; MLX's own default device is set in its environment
            print("(tool run on the default device)", file=sys.stderr)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        res["tool"] = {"cmd": " ".join(cmd), "rc": proc.returncode, "stdout": proc.stdout,
                       "stderr_tail": proc.stderr[-3000:], "wall_s": time.perf_counter() - t0}  # fmt: skip
        print(proc.stdout)
        if proc.returncode:
            print(proc.stderr[-3000:], file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
