"""llama.cpp through llama-cpp-python: llama-bench's prompt-processing (pp) and generation (tg) tests at several
KV-cache depths, one result file per test.

    python -m runners.engines.llamacpp.runner --suite cpu-smoke --inference llama-tiny --variant llamacpp-f16
    --run-stamp STAMP \
        --out tests.jsonl
    python -m runners.engines.llamacpp.runner files --suite h100 --model llama-8b     (make a model's files ahead of a
    session)

Each test mirrors llama-bench (tools/llama-bench/llama-bench.cpp in the vendored llama.cpp): a context of
n_tokens + depth, one untimed warm-up (the whole prompt for pp, one token for tg), then `UNTIMED_REPETITIONS` whole
repetitions untimed and then the timed ones, each as follows: clear the cache, fill it with `depth` random tokens
(untimed), then time the test — pp decodes n_prompt random tokens in
batches of n_batch, tg decodes n_gen tokens one at a time, synchronising after each — with a monotonic clock
around it. llama.cpp's own counters (`llama_perf_context`) are kept beside the wall time. Normally started by
`python -m runners bench`, which turns each line this process writes into a result file and writes a failure
record for any test it did not finish.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import random
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ENGINE_DEFAULTS = {
    "n_gpu_layers": 0,
    "flash_attn": "off",
    "n_batch": 512,
    "n_ubatch": 512,
    "type_k": "f16",
    "type_v": "f16",
    "n_threads": "cpu_count // 2",
}
"""What `llama_cpp.Llama()` uses when a setting is left out (llama-cpp-python 0.3.36): the run page's diff."""
SETTINGS = ("weights", "n_gpu_layers", "flash_attn", "n_batch", "n_ubatch", "type_k", "type_v", "n_threads")
KV_TYPES = {"f16": 1, "q8_0": 8, "q4_0": 2}
"""ggml type ids of the KV cache types a variant may name."""
KV_BYTES = {"f16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32}
"""Bytes per KV-cache element of each type (ggml block sizes: 32 values in 34 or 18 bytes)."""
FLASH_ATTN = {"auto": -1, "off": 0, "on": 1}


UNTIMED_REPETITIONS = 1
"""Whole repetitions run before the timed ones and not recorded: llama-bench's warm-up (the prompt in a fresh context)
leaves the first repetition after a cache clear cold, on an H200 17-43% below the rest for every pp test (8B F16 pp512:
13,535 tokens/s against 23,578-23,895 for the other four), llama-bench's own first as much as the runner's; the tool
is run with as many more and drops as many (runners/engines/llamacpp/tool.py), so the two stay like for like."""


def physical_cores() -> int:
    """Cores without their hyper-threads, as llama-bench counts them for its default thread count."""
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
        pairs = set()
        phys = core = None
        for line in [*cpuinfo.splitlines(), ""]:
            if line.startswith("physical id"):
                phys = line.split(":")[1].strip()
            elif line.startswith("core id"):
                core = line.split(":")[1].strip()
            elif not line.strip() and core is not None:
                pairs.add((phys, core))
                phys = core = None
        if pairs:
            return len(pairs)
    except OSError:
        pass
    return max(1, (os.cpu_count() or 2) // 2)


def resolve_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """The variant's settings with every value pinned: `n_threads = 0` becomes this host's physical cores."""
    unknown = sorted(set(settings) - set(SETTINGS))
    missing = sorted(set(SETTINGS) - set(settings))
    if unknown or missing:
        raise ValueError(f"llama.cpp settings: unknown {unknown}, missing {missing}; expected {list(SETTINGS)}")
    kv_ok = settings["type_k"] in KV_TYPES and settings["type_v"] in KV_TYPES
    if settings["flash_attn"] not in FLASH_ATTN or not kv_ok:
        raise ValueError(f"llama.cpp settings: flash_attn in {list(FLASH_ATTN)}, type_k/type_v in {list(KV_TYPES)}")
    out = dict(settings)
    if out["n_threads"] == 0:
        out["n_threads"] = physical_cores()
    return out


def weight_bytes_read_per_token(gguf_path: Path) -> int:
    """Bytes of every weight a decoded token reads: all tensors but the token embedding (one row is looked up).

    Read by gguf's reader in a child process: in a process that has llama.cpp loaded, the reader's numpy work
    crashed on the bench hosts' image ("free(): invalid pointer")."""
    code = (
        "import gguf, sys; r = gguf.GGUFReader(sys.argv[1]); "
        "print(sum(int(t.n_bytes) for t in r.tensors if t.name != 'token_embd.weight'))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(gguf_path)], capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


_LOG_ERROR = 3  # GGML_LOG_LEVEL_ERROR
_kept_callbacks: list[Any] = []


def quiet_logs(llama_cpp: Any) -> None:
    """Keep llama.cpp's errors on stderr and drop its (very long) informational log."""

    @llama_cpp.llama_log_callback
    def callback(level: int, text: bytes, _user: Any) -> None:
        if level >= _LOG_ERROR:
            sys.stderr.write(text.decode(errors="replace"))

    _kept_callbacks.append(callback)  # ctypes callbacks must outlive their registration
    llama_cpp.llama_log_set(callback, ctypes.c_void_p())


class _Bench:
    """One model loaded in llama.cpp; runs llama-bench's tests on fresh contexts."""

    def __init__(self, llama_cpp: Any, path: Path, settings: dict[str, Any], device: str) -> None:
        self.ll = llama_cpp
        self.settings = settings
        self.device = device
        self.memory_gib: float | None = None
        quiet_logs(llama_cpp)
        llama_cpp.llama_backend_init()
        params = llama_cpp.llama_model_default_params()
        params.n_gpu_layers = settings["n_gpu_layers"]
        t0 = time.perf_counter()
        self.model = llama_cpp.llama_model_load_from_file(str(path).encode(), params)
        if not self.model:
            raise RuntimeError(f"llama.cpp could not load {path}")
        self.load_s = time.perf_counter() - t0
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(self.model))
        self.rng = random.Random(0)
        self.depth_state: tuple[int, Any] | None = None
        """(depth, sequence state) of the last depth filled, kept across tests as llama-bench keeps it (`cstate`)."""
        self.fills = 0
        """Depth fills computed by the last test's repetitions (the others restored the kept state)."""

    def _context(self, n_ctx: int) -> Any:
        ll, s = self.ll, self.settings
        params = ll.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = s["n_batch"]
        params.n_ubatch = s["n_ubatch"]
        params.n_threads = params.n_threads_batch = s["n_threads"]
        params.flash_attn_type = FLASH_ATTN[s["flash_attn"]]
        params.type_k, params.type_v = KV_TYPES[s["type_k"]], KV_TYPES[s["type_v"]]
        params.no_perf = False
        ctx = ll.llama_init_from_model(self.model, params)
        if not ctx:
            raise RuntimeError(f"llama.cpp could not create a context of {n_ctx} tokens")
        return ctx

    def _decode(self, ctx: Any, tokens: list[int]) -> None:
        array = (self.ll.llama_token * len(tokens))(*tokens)
        code = self.ll.llama_decode(ctx, self.ll.llama_batch_get_one(array, len(tokens)))
        if code != 0:
            raise RuntimeError(f"llama_decode returned {code}")

    def _prompt(self, ctx: Any, n: int) -> None:
        done = 0
        while done < n:
            size = min(n - done, self.settings["n_batch"])
            self._decode(ctx, [self.rng.randrange(self.n_vocab) for _ in range(size)])
            done += size
        self.ll.llama_synchronize(ctx)

    def _generate(self, ctx: Any, n: int) -> None:
        token = self.rng.randrange(self.n_vocab)
        for _ in range(n):
            self._decode(ctx, [token])
            self.ll.llama_synchronize(ctx)
            token = self.rng.randrange(self.n_vocab)

    def _fill(self, ctx: Any, depth: int) -> None:
        """Put `depth` tokens in the cleared cache as llama-bench does (its `cstate`, llama.cpp PR 16944): restore the
        sequence state kept from the last fill at this depth, else decode `depth` random tokens and keep the state.
        It matters: on an H200 (F16, 8B and 14B), pp512 timed right after a fresh fill at depth 4096 or 16384 ran
        7-12% below llama-bench's repetitions that restored the state (data/h100, 2026-11-30)."""
        ll = self.ll
        kept = self.depth_state
        if not (kept and kept[0] == depth and ll.llama_state_seq_set_data(ctx, kept[1], len(kept[1]), 0)):
            self._prompt(ctx, depth)
            self.fills += 1
            size = ll.llama_state_seq_get_size(ctx, 0)
            buf = (ctypes.c_uint8 * size)()
            if ll.llama_state_seq_get_data(ctx, buf, size, 0) != size:
                raise RuntimeError(f"llama_state_seq_get_data did not copy the {size}-byte state")
            self.depth_state = (depth, buf)
        last = ll.llama_memory_seq_pos_max(ll.llama_get_memory(ctx), 0)
        if last != depth - 1:
            raise RuntimeError(f"the cache should hold positions 0..{depth - 1} before the test; it ends at {last}")

    def run(self, kind: str, n: int, depth: int, repetitions: int, joules: Any = None) -> list[dict[str, float]]:
        """Per repetition: wall seconds, and llama.cpp's own milliseconds and token count for the test; `joules`
        (`runners.energy.Repetitions`), when given, meters each timed repetition's GPU energy."""
        ll = self.ll
        ctx = self._context(n + depth)
        try:
            ll.llama_set_n_threads(ctx, self.settings["n_threads"], self.settings["n_threads"])
            memory = ll.llama_get_memory(ctx)
            if kind == "pp":  # warm-up, as llama-bench: the whole prompt, or one generated token
                self._prompt(ctx, n)
            else:
                self._generate(ctx, 1)
            samples: list[dict[str, float]] = []
            for rep in range(UNTIMED_REPETITIONS + repetitions):
                if rep == UNTIMED_REPETITIONS:
                    samples, self.fills = [], 0  # the untimed repetitions' are not recorded
                ll.llama_memory_clear(memory, False)
                if depth:
                    self._fill(ctx, depth)
                ll.llama_perf_context_reset(ctx)
                timed = joules is not None and rep >= UNTIMED_REPETITIONS
                if timed:
                    joules.start()
                t0 = time.perf_counter_ns()
                if kind == "pp":
                    self._prompt(ctx, n)
                else:
                    self._generate(ctx, n)
                wall = (time.perf_counter_ns() - t0) / 1e9
                if timed:
                    joules.stop()
                perf = ll.llama_perf_context(ctx)
                own_ms, own_n = (perf.t_p_eval_ms, perf.n_p_eval) if kind == "pp" else (perf.t_eval_ms, perf.n_eval)
                samples.append({"wall_s": wall, "llama_ms": float(own_ms), "llama_tokens": float(own_n)})
            self.memory_gib = device_memory_gib(self.device)  # with this test's context still allocated
            return samples
        finally:
            ll.llama_free(ctx)

    def close(self) -> None:
        self.ll.llama_model_free(self.model)


def device_memory_gib(device: str) -> float | None:
    """Memory in use now: on a GPU, nvidia-smi's figure for this process, else (in a container that hides process
    ids) for the whole device this process sees first, which the bench session gives to this process alone; on a
    CPU, this process's peak RSS."""
    if device != "cuda":
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    from runners.provenance import nvidia_smi_query  # no torch at import: that is only in provenance.hardware

    try:
        for pid, mib in nvidia_smi_query("compute-apps=pid,used_memory"):
            if pid == str(os.getpid()):
                return float(mib) / 1024
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip() or "0"
        for index, uuid, mib in nvidia_smi_query("gpu=index,uuid,memory.used"):
            if visible in (index, uuid):
                return float(mib) / 1024
    except ValueError:  # a field that is not a number ("[N/A]")
        return None
    return None


def config_of_test(
    suite: Any,
    entry: Any,
    test: Any,
    variant: Any,
    settings: dict[str, Any],
    files: dict[str, Any],
    note: str | None,
    depth_fills: int | None,
) -> dict[str, Any]:
    """The full configuration of one test's record; `depth_fills` is None where not known: llama-bench, which fills on
    its first repetition at most, or a runner that died. Both run `UNTIMED_REPETITIONS` before the timed ones."""
    from runners import metrics, record

    model = suite.models[entry.model]
    kv_bytes = metrics.kv_cache_bytes_per_token(model, KV_BYTES[settings["type_k"]], KV_BYTES[settings["type_v"]])
    config = record.inference_config(
        suite, entry, test, variant, settings, files=files, note=note, depth_fills=depth_fills,
        kv_bytes_per_token=kv_bytes, engine_defaults=ENGINE_DEFAULTS,
    )  # fmt: skip
    config["workload"]["untimed_repetitions"] = UNTIMED_REPETITIONS
    return config


def failure_config(suite: Any, entry: Any, test: Any, variant: Any, note: str | None) -> dict[str, Any]:
    """The configuration of a test whose runner died before writing it (the registry's `failure_config`)."""
    from runners import record

    files = {"weight_bytes_per_token": None, "note": "the runner stopped before the model file was described"}
    settings = record.resolved_or_written(variant.settings, resolve_settings)
    return config_of_test(suite, entry, test, variant, settings, files, note, None)


def make_files(argv: list[str]) -> int:
    """`python -m runners.engines.llamacpp.runner files --suite h100 --model llama-8b [--weights f16 q8_0 q4_k_m]
    [--hf]`: make (or
    find) a suite model's files ahead of a bench session."""
    from runners import llama_files, llama_quant, spec

    p = argparse.ArgumentParser(
        prog="python -m runners.engines.llamacpp.runner files", description=(make_files.__doc__ or "").split(":")[0]
    )
    p.add_argument("--suite", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--weights", nargs="+", default=list(llama_files.WEIGHT_TYPES), choices=llama_files.WEIGHT_TYPES)
    p.add_argument("--hf", action="store_true", help="also the Hugging Face folder (what vLLM and mlx-lm load)")
    p.add_argument("--cache-dir", type=Path, default=Path(os.environ.get("FAIRFIGHT_CACHE", "build/cache")) / "models")
    args = p.parse_args(argv)
    model = spec.load_suite(args.suite).models[args.model]
    for weights in args.weights:
        t0 = time.perf_counter()
        path, how = llama_quant.gguf_file(model, args.seed, weights, args.cache_dir)
        took = time.perf_counter() - t0
        print(f"{path}: {how['bytes'] / 2**30:.2f} GiB, sha256 {how['sha256'][:16]}, {took:.0f} s", file=sys.stderr)
    if args.hf:
        print(llama_files.hf_folder(model, args.seed, args.cache_dir), file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["files"]:  # written without llama_cpp: quantized files need only ggml's quantizer (llama_quant.py)
        return make_files(argv[1:])
    # Neither pyarrow nor torch in this process: on the bench hosts' image, either one imported beside llama_cpp
    # aborts the process ("free(): invalid pointer"), and numpy imported before it crashes model loads (all seen
    # there). So this process measures and writes JSON Lines; the bench session (runners/bench.py) writes the
    # result files, and the hardware is probed by a child process.
    import llama_cpp

    from runners import energy, llama_quant, provenance, record, spec
    from runners.engines.llamacpp import build as llamacpp_build

    built = llamacpp_build.build_provenance(os.environ.get("LLAMA_CPP_LIB_PATH"))
    p = spec.inference_cli("python -m runners.engines.llamacpp.runner", (__doc__ or "").partition("\n")[0])
    args, suite, entry, variant, model = spec.inference_run(p, argv)
    settings = resolve_settings(variant.settings)
    t0 = time.perf_counter()
    path, made = llama_quant.gguf_file(model, entry.seed, settings["weights"], args.cache_dir)
    files = made | {"file": path.name, "weight_bytes_per_token": weight_bytes_read_per_token(path)}
    files["make_s"] = round(time.perf_counter() - t0, 3)
    print(f"model file {path} ({files['bytes'] / 2**30:.2f} GiB) ready", file=sys.stderr, flush=True)
    hardware = provenance.hardware_in_child(entry.device, 1)
    meter = energy.for_inference(entry.device, 1, lambda line: print(line, file=sys.stderr, flush=True))
    how, idle_rows = energy.record_parts(meter)
    bench = _Bench(llama_cpp, path, settings, entry.device)
    version = llama_cpp.__version__
    peak: float | None = None
    try:
        for test in entry.tests():
            if args.workload and test.workload not in args.workload:
                continue
            started = datetime.now(UTC)
            joules = energy.Repetitions(meter)
            samples = bench.run(test.kind, test.n_tokens, test.depth, entry.repetitions, joules)
            now = bench.memory_gib
            peak = now if peak is None else max(peak, now or 0.0)
            rows: list[dict[str, Any]] = [
                dict(trial=0, step=None, phase="run", metric="startup_s", value=bench.load_s, unit="s"),
            ]
            if peak is not None:  # the most memory held after any test so far (contexts grow with depth)
                rows.append(dict(trial=0, step=None, phase="run", metric="peak_mem_gib", value=peak, unit="GiB"))
            for rep, s in enumerate(samples):
                rows += [
                    dict(trial=rep, step=None, phase="steady", metric="test_time_s", value=s["wall_s"], unit="s"),
                    dict(trial=rep, step=None, phase="steady", metric="tokens_per_s", value=test.n_tokens / s["wall_s"])
                    | {"unit": "tokens/s"},
                    dict(trial=rep, step=None, phase="steady", metric="llama_time_s", value=s["llama_ms"] / 1e3)
                    | {"unit": "s"},
                    dict(trial=rep, step=None, phase="steady", metric="llama_tokens", value=s["llama_tokens"])
                    | {"unit": "tokens"},
                ]
            rows += joules.rows() + idle_rows
            config = config_of_test(suite, entry, test, variant, settings, files, args.note, bench.fills)
            record.hand_over_test(
                args,
                test,
                variant,
                config,
                rows,
                started=started,
                engine_version=version,
                hardware=hardware | how,
                packages=("llama_cpp_python", "gguf", "numpy"),
                build=built,
            )
            rates = sorted(test.n_tokens / s["wall_s"] for s in samples)
            print(
                f"    {test.workload}: {rates[len(rates) // 2]:,.1f} tokens/s (median of {len(rates)})",
                file=sys.stderr,
                flush=True,
            )
    finally:
        bench.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
