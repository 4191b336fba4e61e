"""MLX generation through mlx-lm: llama-bench's prompt-processing (pp) and generation (tg) tests at several KV-cache
depths on the Hugging Face folder of random weights that vLLM loads too, one result per test.

    python -m runners.engines.mlx.generate --suite cpu-smoke --inference llama-tiny --variant mlx-f16 --run-stamp
    STAMP \
        --out tests.jsonl

Each test mirrors the llama.cpp runner (runners/engines/llamacpp/runner.py) on mlx-lm's model and cache: one untimed
warm-up (the
whole prompt for pp, two tokens for tg, so mlx-lm's decode loop has run); the cache is filled with `depth` random
tokens once per test (untimed) and, after each repetition, trimmed back to that depth (`trim_prompt_cache`), as
llama-bench restores its saved state;
pp prefills n_prompt random tokens as mlx-lm's `generate_step` does (chunks of `prefill_step_size` evaluating
only the cache, then the last token to its logits), tg makes n_gen single-token forward passes through mlx-lm's own
decode loop (`generate_step`, greedy, with its `mx.async_eval` pipelining), the device synchronised at the end,
with a monotonic clock around the whole. Normally started by `python -m runners bench`, which writes the result files
(from the JSON Lines this process writes) and runs `mlx_lm.benchmark` beside it (runners/engines/mlx/tool.py).
"""

from __future__ import annotations

import collections
import json
import random
import resource
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SETTINGS = {"weights": "hf", "prefill_step_size": 2048}
"""Every setting an MLX generation variant writes out, with mlx-lm's defaults (0.32): the Hugging Face folder's
fp16 weights as stored, prefill in chunks of 2048 tokens. The KV cache is mlx-lm's default (the weights' dtype)."""
KV_BYTES = 2.0
"""Bytes per KV-cache element: mlx-lm's cache holds keys and values in the model's dtype (float16 here)."""


def resolve_settings(settings: dict[str, Any]) -> dict[str, Any]:
    from runners import mlx_files, spec

    allowed = {"weights": ("hf", *mlx_files.WEIGHTS)}
    return spec.check_written_out("MLX generation settings", settings, SETTINGS, allowed)


class _Bench:
    """One model loaded by mlx-lm; runs llama-bench's tests on one prompt cache."""

    def __init__(self, folder: Path, settings: dict[str, Any], vocab: int) -> None:
        import mlx.core as mx
        from mlx_lm import load

        self.mx, self.settings, self.vocab = mx, settings, vocab
        t0 = time.perf_counter()
        self.model, self.tokenizer = load(str(folder))
        mx.eval(self.model.parameters())
        self.load_s = time.perf_counter() - t0
        self.rng = random.Random(0)

    def _tokens(self, n: int) -> Any:
        return self.mx.array([[self.rng.randrange(self.vocab) for _ in range(n)]])

    def _prompt(self, cache: list[Any], n: int) -> None:
        """Prefill as mlx-lm's `generate_step` does: all but the last token in chunks of `prefill_step_size`,
        evaluating only the cache, then the last token through to its logits and greedy next token."""
        mx, step = self.mx, self.settings["prefill_step_size"]
        done = 0
        while n - done > 1:
            size = min(step, n - done - 1)
            self.model(self._tokens(size), cache=cache)
            mx.eval([c.state for c in cache])
            done += size
        logits = self.model(self._tokens(1), cache=cache)
        mx.eval(mx.argmax(logits[:, -1, :], axis=-1))

    def _generate(self, cache: list[Any], n: int) -> None:
        """n single-token forward passes through mlx-lm's own decode loop (`generate_step`, which queues each next
        token with `mx.async_eval` while the last is read): a one-token prompt and n - 1 generated tokens, the
        loop's look-ahead being the n-th pass; the device is synchronised before the clock is read."""
        from mlx_lm.generate import generate_step

        if n == 1:
            return self._prompt(cache, 1)
        prompt = self._tokens(1)[0]
        for _ in generate_step(prompt, self.model, max_tokens=n - 1, prompt_cache=cache):
            pass
        self.mx.synchronize()

    def tool_path(self, n_prompt: int, n_gen: int, repetitions: int) -> list[tuple[float, float]]:
        """(prompt_tps, generation_tps) of each repetition along mlx-lm's `stream_generate`, called as
        `mlx_lm.benchmark` calls it (a fresh cache, EOS ignored, one untimed warm-up), in this process on these weights.

        The tool's prompt time is not prompt processing alone: it runs from before `generate_step` makes its cache to
        the first generated token, after `generate_step` has built and launched the next token's step (its look-ahead)
        and cleared MLX's buffer cache after the prefill; its generation rate counts n tokens over n − 1 decode steps
        after a prompt of n_prompt tokens. Timing this path here and comparing it with the tool checks the runner's
        clock and weights against the tool's on the same definition; the ranked pp and tg are llama-bench's."""
        from mlx_lm import stream_generate

        self.tokenizer._eos_token_ids = set()  # as mlx_lm.benchmark does: no early stop
        prompt = [self.rng.randrange(self.vocab) for _ in range(n_prompt)]
        out = []
        for rep in range(repetitions + 1):
            responses = stream_generate(
                self.model,
                self.tokenizer,
                prompt,
                max_tokens=n_gen,
                prefill_step_size=self.settings["prefill_step_size"],
            )
            last = collections.deque(responses, maxlen=1)  # run it to the end; its last response has both rates
            if rep and last:  # the first call is the warm-up
                out.append((last[0].prompt_tps, last[0].generation_tps))
        return out

    def run(self, kind: str, n: int, depth: int, repetitions: int, joules: Any = None) -> list[float]:
        """Wall seconds of each repetition; `joules` (`runners.energy.Repetitions`), when given, meters each one's GPU
        energy."""
        from mlx_lm.models.cache import make_prompt_cache, trim_prompt_cache

        cache = make_prompt_cache(self.model)
        if depth:
            self._prompt(cache, depth)
        test = self._prompt if kind == "pp" else self._generate
        # warm-up, as llama-bench: the whole prompt, or (tg) two tokens, so that mlx-lm's decode loop itself has run
        # (a one-token warm-up never enters it: on an H200 the first timed tg128 then ran at 19 tokens/s, the rest ~160)
        test(cache, n if kind == "pp" else 2)
        trim_prompt_cache(cache, cache[0].offset - depth)
        samples = []
        for _ in range(repetitions):
            if cache[0].offset != depth:
                raise RuntimeError(f"the cache should hold {depth} tokens before the test; it holds {cache[0].offset}")
            if joules is not None:
                joules.start()
            t0 = time.perf_counter_ns()
            test(cache, n)
            samples.append((time.perf_counter_ns() - t0) / 1e9)
            if joules is not None:
                joules.stop()
            trim_prompt_cache(cache, n)
        return samples


def memory_gib(mx: Any, device: str) -> float | None:
    """The most memory MLX held so far (a GPU), or this process's peak RSS (a CPU)."""
    if device == "cpu":
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return mx.get_peak_memory() / 2**30


def config_of_test(
    suite: Any, entry: Any, test: Any, variant: Any, settings: dict[str, Any], files: dict[str, Any], note: str | None
) -> dict[str, Any]:
    """The full configuration of one test's record (the llama.cpp runner's layout, so the inference pages read both):
    the depth is filled once per test and trimmed back after each repetition."""
    from runners import metrics, record

    kv_bytes = metrics.kv_cache_bytes_per_token(suite.models[entry.model], KV_BYTES, KV_BYTES)
    return record.inference_config(
        suite, entry, test, variant, settings, files=files, note=note, depth_fills=1 if test.depth else 0,
        kv_bytes_per_token=kv_bytes, engine_defaults=SETTINGS,
    )  # fmt: skip


def failure_config(suite: Any, entry: Any, test: Any, variant: Any, note: str | None) -> dict[str, Any]:
    """The configuration of a test whose runner died before writing it (the registry's `failure_config`)."""
    from runners import record

    files = {"weight_bytes_per_token": None, "note": "the runner stopped before the model folder was described"}
    settings = record.resolved_or_written(variant.settings, resolve_settings)
    return config_of_test(suite, entry, test, variant, settings, files, note)


def model_files(folder: Path, model: Any, make_s: float) -> dict[str, Any]:
    """What the record says of the weights: the folder's key and recipe, its size, its quantization (none for the
    fp16 folder), and the bytes a decoded token reads (every weight but the embedding table, of which it reads one
    row; from the folder's own safetensors header, whatever the format)."""

    from runners import llama_files, mlx_files

    size = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    quantization = json.loads((folder / "config.json").read_text()).get("quantization")
    made = {"quantization": quantization, "tool": "runners.mlx_files.write_folder (mx.quantize on the seeded pool)"}
    return {
        "folder": folder.name,
        "key": folder.parent.name,
        "recipe": llama_files.RECIPE,
        "bytes": size,
        "weight_bytes_per_token": mlx_files.weight_bytes_per_token(folder),
        "make_s": round(make_s, 3),
        **(made if quantization else {}),
    }


def engine_version(mx: Any) -> str:
    from importlib import metadata

    return f"mlx {mx.__version__}, mlx-lm {metadata.version('mlx-lm')}"


def main(argv: list[str] | None = None) -> int:
    from runners import energy, mlx_files, record, spec
    from runners.engines.mlx import train as mlx_train

    p = spec.inference_cli("python -m runners.engines.mlx.generate", (__doc__ or "").partition("\n")[0])
    args, suite, entry, variant, model = spec.inference_run(p, argv)
    settings = resolve_settings(variant.settings)
    # the GPU's idle power before MLX is imported, as the other engines' runners read it (`energy.for_inference`)
    meter = energy.for_inference(entry.device, 1, lambda line: print(line, file=sys.stderr, flush=True))
    import mlx.core as mx

    mx.set_default_device(mx.cpu if entry.device == "cpu" else mx.gpu)
    how, idle_rows = energy.record_parts(meter)
    hardware = mlx_train.hardware(entry.device, mx) | how
    t0 = time.perf_counter()
    folder = mlx_files.folder(model, entry.seed, settings["weights"], args.cache_dir)
    files = model_files(folder, model, time.perf_counter() - t0)
    print(f"model folder {folder} ({files['bytes'] / 2**30:.2f} GiB) ready", file=sys.stderr, flush=True)
    bench = _Bench(folder, settings, model.vocab)
    peak: float | None = None
    chosen = [t for t in entry.tests() if not args.workload or t.workload in args.workload]
    tool_path: list[tuple[float, float]] = []
    if any(t.depth == 0 for t in chosen):  # the tool runs at depth 0 only, so its path is timed for those tests
        tool_path = bench.tool_path(entry.n_prompt, entry.n_gen, entry.repetitions)
        print(f"    mlx-lm's generate path: {len(tool_path)} repetitions timed", file=sys.stderr, flush=True)
    for test in chosen:
        started = datetime.now(UTC)
        joules = energy.Repetitions(meter)
        samples = bench.run(test.kind, test.n_tokens, test.depth, entry.repetitions, joules)
        peak = memory_gib(mx, entry.device)
        rows: list[dict[str, Any]] = [
            dict(trial=0, step=None, phase="run", metric="startup_s", value=bench.load_s, unit="s"),
        ]
        if peak is not None:
            rows.append(dict(trial=0, step=None, phase="run", metric="peak_mem_gib", value=peak, unit="GiB"))
        for rep, wall in enumerate(samples):
            rows += [
                dict(trial=rep, step=None, phase="steady", metric="test_time_s", value=wall, unit="s"),
                dict(trial=rep, step=None, phase="steady", metric="tokens_per_s", value=test.n_tokens / wall)
                | {"unit": "tokens/s"},
            ]
        if test.depth == 0:
            column = 0 if test.kind == "pp" else 1
            rows += [
                dict(trial=rep, step=None, phase="steady", metric="tool_path_tokens_per_s", value=figures[column])
                | {"unit": "tokens/s"}
                for rep, figures in enumerate(tool_path)
            ]
        rows += joules.rows() + idle_rows
        record.hand_over_test(
            args,
            test,
            variant,
            config_of_test(suite, entry, test, variant, settings, files, args.note),
            rows,
            started=started,
            engine_version=engine_version(mx),
            hardware=hardware,
            packages=("mlx", "mlx-lm", "mlx-cuda-13", "mlx-cpu", "mlx-metal", "numpy"),
        )
        rates = sorted(test.n_tokens / s for s in samples)
        print(f"    {test.workload}: {rates[len(rates) // 2]:,.1f} tokens/s (median of {len(rates)})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
