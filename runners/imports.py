"""Importers: results that engines' own benchmark tools wrote elsewhere become records marked `imported`, checked
like every other and shown beside Fair Fight's measurements (never ranked with them).

    python -m runners import llama-bench RESULTS.jsonl --suite h100 --inference llama-8b --variant llamacpp-q8_0 \
        --source "who ran it, on what, and where the raw output is"

llama-bench: its `-o jsonl` or `-o json` output. Every result must be one of the suite entry's tests (same kind,
token count and depth), on the suite's model shape (llama-bench's `model_n_params` equals the spec's parameter
count, its `model_type` names the variant's weight type) with the variant's settings (batch, micro-batch, layers
on the GPU, flash attention, KV-cache types); otherwise the file is refused whole, each problem named by result
and field, and nothing is written. Importing the same file again writes nothing new (run ids come from its
sha256). Its hardware is what llama-bench reported; the host's threads are kept as reported.

    python -m runners import mlx-lm-benchmark OUTPUT.txt --suite apple --inference llama-8b --variant mlx-f16 \
        --source "..." --hardware "Apple M3 Max GPU" --date 2026-12-01T10:00:00Z

mlx_lm.benchmark: its printed output (`Timing with prompt_tokens=…` and one `Trial N:` line per trial). The
header must name the entry's prompt and generation lengths at batch size 1, and there must be as many trials as
the entry's repetitions; the tool prints neither the machine nor the time, so `--hardware` and `--date` say them.
Its prompt_tps and generation_tps become the entry's depth-0 pp and tg tests. The model is the contributor's: the
record says it is the entry's shape only as far as the contributor says so in `--source`.

    python -m runners import vllm-bench RESULT.json --suite h100 --serving llama-8b --variant vllm-tp1 \
        --source "..." --hardware "NVIDIA H100 80GB HBM3" --date 2026-12-01T10:00:00Z

vllm bench: a `vllm bench serve --save-result --save-detailed` JSON (one served point: the entry's test at its
`max_concurrency`, or at its `request_rate` when there is no limit; every request's output length must be the
entry's, prompts within 5% of its input length, as many requests as the served test sends), or a `vllm bench
throughput --output-json` JSON (the offline test: `num_requests` must be `num_prompts`; the JSON does not repeat the
lengths, so the contributor vouches for them in `--source`). The per-request samples become rows and go through the
same serving formulas as the runner's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from runners import record, schema, spec, store
from runners.engines.llamacpp import runner as llamacpp
from runners.engines.llamacpp import tool as llama_bench
from runners.engines.mlx import tool as mlx_lm_bench
from runners.engines.vllm import tool as vllm_bench

WEIGHT_TYPES = {"f16": "F16", "q8_0": "Q8_0", "q4_k_m": "Q4_K - Medium"}
"""How llama.cpp's `model_type` names each variant weight type (llama_model_ftype_name)."""
SETTINGS = ("n_batch", "n_ubatch", "n_gpu_layers", "type_k", "type_v")
FLASH_ATTN = {1: "on", 0: "off", -1: "auto"}


def read_results(path: Path) -> list[dict[str, Any]]:
    """llama-bench's results from `-o json` (one array) or `-o jsonl` (an object per line)."""
    text = path.read_text()
    if text.lstrip().startswith("["):
        try:
            objs = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not JSON ({e})") from None
        return llama_bench.parse("\n".join(json.dumps(o) for o in objs))
    try:
        return llama_bench.parse(text)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


def problems_of(obj: dict[str, Any], i: int, model: spec.ModelSpec, variant: spec.Variant, tests: list) -> list[str]:
    """What keeps result `i` (from 1) from being the suite's test on the variant: each names its field."""
    found = []
    where = f"result {i}"
    if obj.get("model_n_params") != model.total_params:
        found.append(
            f"{where}, field 'model_n_params': {obj.get('model_n_params')}, but {model.name} has "
            f"{model.total_params} parameters: another model"
        )
    weights = WEIGHT_TYPES.get(variant.settings.get("weights", ""), "?")
    if weights not in str(obj.get("model_type", "")):
        found.append(f"{where}, field 'model_type': {obj.get('model_type')!r}, but {variant.name} runs {weights}")
    for key in SETTINGS:
        want = variant.settings.get(key)
        if obj.get(key) != want:
            found.append(f"{where}, field {key!r}: {obj.get(key)!r}, but {variant.name} sets {want!r}")
    flash = obj.get("flash_attn")
    said = FLASH_ATTN.get(int(flash)) if isinstance(flash, (bool, int)) else flash  # 1/true: on, 0/false: off
    if said != variant.settings.get("flash_attn"):
        found.append(
            f"{where}, field 'flash_attn': {flash!r}, but {variant.name} sets {variant.settings.get('flash_attn')!r}"
        )
    counts = [key for key in ("n_prompt", "n_gen", "n_depth") if not _whole(obj.get(key))]
    for key in counts:
        found.append(f"{where}, field {key!r}: {obj.get(key)!r} is not a token count")
    if not counts:
        try:
            llama_bench.test_of(obj, tests)
        except ValueError as e:
            found.append(f"{where}, fields 'n_prompt', 'n_gen', 'n_depth': {e}")
    samples = obj.get("samples_ns")
    if not (isinstance(samples, list) and samples and all(_whole(s) and s > 0 for s in samples)):
        found.append(f"{where}, field 'samples_ns': a list of positive nanosecond counts was expected")
    try:
        when = datetime.fromisoformat(str(obj.get("test_time")).replace("Z", "+00:00"))
    except ValueError:
        found.append(f"{where}, field 'test_time': {obj.get('test_time')!r} is not an ISO 8601 time")
    else:
        if when.tzinfo is None:
            found.append(f"{where}, field 'test_time': {obj.get('test_time')!r} has no time zone")
    return found


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _said_when_and_where(date: str, hardware: str, found: list[str]) -> datetime | None:
    """The `--date` and `--hardware` an importer of a tool that prints neither takes: the start time, or None with
    each problem appended to `found`."""
    started = None
    try:
        started = datetime.fromisoformat(date.replace("Z", "+00:00"))
        if started.tzinfo is None:
            found.append(f"--date {date!r} has no time zone (add Z for UTC)")
    except ValueError:
        found.append(f"--date {date!r} is not an ISO 8601 time")
    if not hardware.strip():
        found.append("--hardware is empty: say which machine ran it")
    return started


def _as_imported(run: dict[str, Any], engine: str, source: str, ended: datetime, software: dict[str, Any]) -> dict:
    """A measured run's columns made an imported one: the tool as engine, the contributor's source, the tool's own
    end time and software; the importing machine's variables say nothing about the run."""
    return run | {
        "engine": engine,
        "origin": "imported",
        "source": source,
        "ended_at": ended,
        "software": json.dumps(software),
        "environment": "{}",
    }


def import_llama_bench(
    path: Path, suite: spec.Suite, entry: spec.Inference, variant: spec.Variant, source: str, data_dir: Path
) -> list[str]:
    """Write one imported record per result; returns what happened to each, or raises ValueError (nothing
    written) listing every problem."""
    objs = read_results(path)
    model, tests = suite.models[entry.model], entry.tests()
    if variant.engine != "llamacpp" or variant.name not in entry.variants:
        raise ValueError(f"variant {variant.name!r} is not a llama.cpp variant of {suite.name}'s {entry.name}")
    found = [p for i, obj in enumerate(objs, 1) for p in problems_of(obj, i, model, variant, tests)]
    if not objs:
        found.append("no results in the file")
    if found:
        raise ValueError(f"{path}: refused, nothing imported:\n  " + "\n  ".join(found))
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    done = []
    for obj in objs:
        test = llama_bench.test_of(obj, tests)
        run_id = f"import-llama-bench-{sha[:12]}-{test.workload}-{variant.name}"
        if store.run_path(data_dir, suite.name, run_id).exists():
            done.append(f"{test.workload}: already imported ({run_id})")
            continue
        settings = {**variant.settings, "n_threads": obj.get("n_threads")}
        files = {
            "file": Path(str(obj.get("model_filename", "?"))).name,
            "bytes": obj.get("model_size"),
            "weight_bytes_per_token": None,  # not Fair Fight's file: what a token reads is not known here
            "note": "the contributor's model file, not made by Fair Fight: same shape and weight type",
        }
        config = llamacpp.test_config(suite, entry, test, variant, settings, files, None, None)
        config["variant"]["engine"] = "llama-bench"
        config["imported"] = {"tool": "llama-bench", "file": path.name, "sha256": sha, "result": obj}
        started = datetime.fromisoformat(obj["test_time"].replace("Z", "+00:00"))
        hardware = {
            "device": entry.device,
            "count": 1,
            "accelerator": obj.get("gpu_info") or obj.get("cpu_info") or "unknown",
            "cpu": obj.get("cpu_info"),
            "backends": obj.get("backends"),
            "reported_by": "llama-bench",
        }
        run = record.run_columns(
            run_id=run_id,
            suite=suite,
            config=config,
            engine_version=f"llama.cpp {obj['build_commit']} (build {obj.get('build_number', '?')})",
            status="ok",
            error=None,
            started=started,
            hardware=hardware,
            packages=(),
        )
        ended = started + timedelta(microseconds=max(1, sum(obj["samples_ns"]) // 1000))
        software = {"llama-bench": obj["build_commit"], "backends": obj.get("backends")}
        run = _as_imported(run, "llama-bench", source, ended, software)
        written = store.write_run(data_dir, schema.make_table(run, llama_bench.sample_rows(obj, test.n_tokens)))
        done.append(f"{test.workload}: {obj.get('avg_ts', 0):,.1f} tokens/s (mean) → {written}")
    return done


HEADER = re.compile(r"Timing with prompt_tokens=(\d+), generation_tokens=(\d+), batch_size=(\d+)")


def import_mlx_lm_benchmark(
    path: Path,
    suite: spec.Suite,
    entry: spec.Inference,
    variant: spec.Variant,
    source: str,
    hardware: str,
    date: str,
    data_dir: Path,
) -> list[str]:
    """Write the depth-0 pp and tg records of one mlx_lm.benchmark output; returns what happened to each, or raises
    ValueError (nothing written) listing every problem."""
    text = path.read_text(errors="replace")
    found = []
    if variant.engine != "mlx" or variant.name not in entry.variants:
        found.append(f"variant {variant.name!r} is not an MLX variant of {suite.name}'s {entry.name}")
    try:
        trials = mlx_lm_bench.parse(text, str(path))
    except ValueError as e:
        found.append(str(e))
        trials = []
    header = HEADER.search(text)
    if header is None:
        found.append(
            "no `Timing with prompt_tokens=…, generation_tokens=…, batch_size=…` line: the lengths are unknown"
        )
    else:
        for field, got, want in zip(
            ("prompt_tokens", "generation_tokens", "batch_size"),
            map(int, header.groups()),
            (entry.n_prompt, entry.n_gen, 1),
            strict=True,
        ):
            if got != want:
                found.append(f"field {field!r}: {got}, but {suite.name}'s {entry.name} runs {want}")
    if trials and len(trials) != entry.repetitions:
        found.append(f"{len(trials)} trials, but {entry.name} takes {entry.repetitions} repetitions")
    started = _said_when_and_where(date, hardware, found)
    if found or started is None:
        raise ValueError(f"{path}: refused, nothing imported:\n  " + "\n  ".join(found))
    from runners.engines.mlx import generate as mlx_generate

    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    tests = {t.kind: t for t in entry.tests() if t.depth == 0}
    done = []
    for kind, field in (("pp", "prompt_tps"), ("tg", "generation_tps")):
        test = tests[kind]
        run_id = f"import-mlx-lm-benchmark-{sha[:12]}-{test.workload}-{variant.name}"
        if store.run_path(data_dir, suite.name, run_id).exists():
            done.append(f"{test.workload}: already imported ({run_id})")
            continue
        files = {"weight_bytes_per_token": None, "note": "the contributor's model folder, not made by Fair Fight"}
        config = mlx_generate.test_config(suite, entry, test, variant, dict(variant.settings), files, None)
        config["variant"]["engine"] = "mlx-lm-benchmark"
        config["workload"]["depth_fills"] = None
        config["imported"] = {"tool": "mlx_lm.benchmark", "file": path.name, "sha256": sha, "field": field}
        config["imported"]["trials"] = trials
        run = record.run_columns(
            run_id=run_id,
            suite=suite,
            config=config,
            engine_version="mlx-lm (version not in the tool's output)",
            status="ok",
            error=None,
            started=started,
            hardware={"device": entry.device, "count": 1, "accelerator": hardware, "reported_by": "the importer"},
            packages=(),
        )
        ended = started + timedelta(seconds=max(1e-6, sum(t["total_time"] for t in trials)))
        software = {"mlx_lm.benchmark": "as reported by the contributor"}
        run = _as_imported(run, "mlx-lm-benchmark", source, ended, software)
        written = store.write_run(data_dir, schema.make_table(run, mlx_lm_bench.sample_rows(trials, field)))
        mean = sum(t[field] for t in trials) / len(trials)
        done.append(f"{test.workload}: {mean:,.1f} tokens/s (mean) → {written}")
    return done


def _serve_problems(result: dict[str, Any], entry: spec.Serving) -> tuple[Any, list[str]]:
    """The served test a `vllm bench serve` result is for, and what keeps it from being that test."""
    found = []
    limit, rate = result.get("max_concurrency"), result.get("request_rate")
    tests = [t for t in entry.tests() if t.kind == "serve"]
    if limit is not None:
        test = next((t for t in tests if t.concurrency == limit), None)
        where = f"field 'max_concurrency': {limit!r}"
    else:
        test = next((t for t in tests if t.request_rate is not None and t.request_rate == rate), None)
        where = f"field 'request_rate': {rate!r}"
    if test is None:
        found.append(f"{where} matches none of {entry.name}'s served tests ({', '.join(t.workload for t in tests)})")
    if test is not None and result.get("num_prompts") != test.requests:
        found.append(
            f"field 'num_prompts': {result.get('num_prompts')!r}, but {test.workload} sends {test.requests} requests"
        )
    outs, ins = result.get("output_lens") or [], result.get("input_lens") or []
    if any(o != entry.output_len for o in outs if isinstance(o, int) and o > 0):
        found.append(f"field 'output_lens': requests of {sorted(set(outs))} tokens, but {entry.name} generates "
                     f"{entry.output_len}")  # fmt: skip
    if ins and all(isinstance(i, int) for i in ins) and abs(sum(ins) / len(ins) / entry.input_len - 1) > 0.05:
        found.append(f"field 'input_lens': prompts of {sum(ins) / len(ins):.0f} tokens on average, but {entry.name} "
                     f"sends {entry.input_len}")  # fmt: skip
    return test, found


def import_vllm_bench(
    path: Path,
    suite: spec.Suite,
    entry: spec.Serving,
    variant: spec.Variant,
    source: str,
    hardware: str,
    date: str,
    data_dir: Path,
) -> list[str]:
    """Write one imported record for a `vllm bench serve` or `vllm bench throughput` result; returns what happened,
    or raises ValueError (nothing written) listing every problem."""
    from runners.engines.vllm import runner as vllm_engine

    found = []
    try:
        result = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not JSON ({e}), nothing imported") from None
    if not isinstance(result, dict):
        raise ValueError(f"{path}: a JSON object was expected, nothing imported")
    if variant.engine != "vllm" or variant.name not in entry.variants:
        found.append(f"variant {variant.name!r} is not a vLLM variant of {suite.name}'s {entry.name}")
    rows: list[dict[str, Any]] = []
    test = None
    try:
        if "ttfts" in result or "max_concurrency" in result:
            tool = "serve"
            test, found_here = _serve_problems(result, entry)
            found += found_here
            rows = vllm_engine.served_rows(*vllm_bench.serve_requests(result))
        elif "elapsed_time" in result:
            tool = "throughput"
            test = next(t for t in entry.tests() if t.kind == "offline")
            if result.get("num_requests") != entry.num_prompts:
                found.append(f"field 'num_requests': {result.get('num_requests')!r}, but {entry.name} sends "
                             f"{entry.num_prompts}")  # fmt: skip
            rows = vllm_bench.throughput_rows(result, entry.num_prompts * entry.output_len)
        else:
            raise ValueError("neither `vllm bench serve` (ttfts) nor `vllm bench throughput` (elapsed_time) output")
    except ValueError as e:
        found.append(str(e))
    started = _said_when_and_where(date, hardware, found)
    if found or test is None or started is None:
        raise ValueError(f"{path}: refused, nothing imported:\n  " + "\n  ".join(found))
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    run_id = f"import-vllm-bench-{sha[:12]}-{test.workload}-{variant.name}"
    if store.run_path(data_dir, suite.name, run_id).exists():
        return [f"{test.workload}: already imported ({run_id})"]
    settings = vllm_engine.resolve_settings(variant.settings)
    files = {"note": "the contributor's model, not made by Fair Fight: same shape, as the source says"}
    config = vllm_engine.test_config(suite, entry, test, variant, settings, files, None)
    config["variant"]["engine"] = "vllm-bench"
    kept = {k: v for k, v in result.items() if k not in vllm_engine.PER_REQUEST_FIELDS}
    config["imported"] = {"tool": tool, "file": path.name, "sha256": sha, "result": kept}
    count = settings["tensor_parallel_size"]
    run = record.run_columns(
        run_id=run_id,
        suite=suite,
        config=config,
        engine_version=f"vLLM (version not in the tool's output; backend {result.get('backend', '?')})",
        status="ok",
        error=None,
        started=started,
        hardware={"device": entry.device, "count": count, "accelerator": hardware, "reported_by": "the importer"},
        packages=(),
    )
    seconds = float(result.get("duration") or result.get("elapsed_time") or 0)
    run = _as_imported(run, "vllm-bench", source, started + timedelta(seconds=max(1e-6, seconds)), {"vllm bench": tool})
    written = store.write_run(data_dir, schema.make_table(run, rows))
    return [f"{test.workload}: vllm bench {tool} → {written}"]


def add_cli_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("tool", choices=["llama-bench", "mlx-lm-benchmark", "vllm-bench"], help="whose output the file is")
    p.add_argument("file", type=Path)
    p.add_argument("--suite", required=True)
    p.add_argument("--inference", help="the suite's [[inference]] entry the results are for (llama-bench, MLX)")
    p.add_argument("--serving", help="the suite's [[serving]] entry the result is for (vllm-bench)")
    p.add_argument("--variant", required=True, help="the variant (llama.cpp or MLX) whose settings the results used")
    p.add_argument("--source", required=True, help="who ran it, on what hardware, where the raw output lives")
    p.add_argument("--hardware", default="", help="mlx-lm-benchmark, vllm-bench: the machine (the tools do not say)")
    p.add_argument("--date", default="", help="mlx-lm-benchmark, vllm-bench: when it ran, ISO 8601 with a zone")
    p.add_argument("--data-dir", type=Path, default=Path("data"))


def main(args: argparse.Namespace) -> int:
    suite = spec.load_suite(args.suite)
    if args.variant not in suite.variants:
        raise spec.SpecError(f"{suite.name}: no variant {args.variant!r}")
    variant = suite.variants[args.variant]
    named = args.serving if args.tool == "vllm-bench" else args.inference
    if not named:
        raise SystemExit(f"name the entry: --{'serving' if args.tool == 'vllm-bench' else 'inference'} NAME")
    try:
        if args.tool == "vllm-bench":
            entry = suite.serving_entry(named)
            lines = import_vllm_bench(args.file, suite, entry, variant, args.source, args.hardware, args.date,
                                      args.data_dir)  # fmt: skip
        elif args.tool == "mlx-lm-benchmark":
            entry = suite.inference_entry(named)
            lines = import_mlx_lm_benchmark(
                args.file, suite, entry, variant, args.source, args.hardware, args.date, args.data_dir
            )
        else:
            lines = import_llama_bench(args.file, suite, suite.inference_entry(named), variant, args.source,
                                       args.data_dir)  # fmt: skip
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0
