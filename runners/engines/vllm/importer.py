"""Importing `vllm bench` JSON written elsewhere (`python -m runners import vllm-bench ...`, runners/imports.py): a
served point's or the offline test's result becomes an imported record whose per-request samples go through the same
serving formulas as the runner's."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from runners import imports, record, schema, serving, spec, store
from runners.engines.vllm import tool as vllm_bench


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
    test, tool = None, ""  # the test and the tool that made the file, both set below when it is one we know
    try:
        if "ttfts" in result or "max_concurrency" in result:
            tool = "serve"
            test, found_here = _serve_problems(result, entry)
            found += found_here
            rows = serving.served_rows(*vllm_bench.serve_requests(result))
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
    started = imports.said_when_and_where(date, hardware, found)
    if found or test is None or started is None:
        raise ValueError(f"{path}: refused, nothing imported:\n  " + "\n  ".join(found))
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    run_id = f"import-vllm-bench-{sha[:12]}-{test.workload}-{variant.name}"
    if store.find(data_dir, suite.name, run_id) is not None:
        return [f"{test.workload}: already imported ({run_id})"]
    settings = vllm_engine.resolve_settings(variant.settings)
    files = {"note": "the contributor's model, not made by Fair Fight: same shape, as the source says"}
    # the tool's prompts are text, made by it (a served test's workload says `prompt_form: text`)
    made = {"made_by": "vllm bench serve, run elsewhere"} if tool == "serve" else None
    kept = {k: v for k, v in result.items() if k not in vllm_engine.PER_REQUEST_FIELDS}
    imported = {"tool": tool, "file": path.name, "sha256": sha, "result": kept}
    config = record.as_tools(
        vllm_engine.config_of_test(suite, entry, test, variant, settings, files, None, made), "vllm-bench", imported
    )
    count = settings["tensor_parallel_size"]
    run = record.run_columns(
        run_id=run_id,
        config=config,
        engine_version=f"vLLM (version not in the tool's output; backend {result.get('backend', '?')})",
        started=started,
        hardware={"device": entry.device, "count": count, "accelerator": hardware, "reported_by": "the importer"},
        packages=(),
    )
    seconds = float(result.get("duration") or result.get("elapsed_time") or 0)
    ended = started + timedelta(seconds=max(1e-6, seconds))
    run = imports.as_imported(run, "vllm-bench", source, ended, {"vllm bench": tool})
    written = store.write_run(data_dir, schema.make_table(run, rows))
    return [f"{test.workload}: vllm bench {tool} → {written}"]


def import_file(path: Path, suite: spec.Suite, entry: spec.Serving, variant: spec.Variant, args: Any) -> list[str]:
    """The registry's importer: `python -m runners import vllm-bench FILE ...`."""
    return import_vllm_bench(path, suite, entry, variant, args.source, args.hardware, args.date, args.data_dir)
