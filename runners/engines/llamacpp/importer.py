"""Importing llama-bench's output written elsewhere (`python -m runners import llama-bench ...`, runners/imports.py):
its `-o jsonl` or `-o json` results become imported records of the suite entry's tests, checked against the model,
the variant's settings and the tests, or refused whole with each problem named."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from runners import imports, record, schema, spec, store
from runners.engines.llamacpp import runner as llamacpp
from runners.engines.llamacpp import tool as llama_bench

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
    counts = [key for key in ("n_prompt", "n_gen", "n_depth") if not imports.whole(obj.get(key))]
    for key in counts:
        found.append(f"{where}, field {key!r}: {obj.get(key)!r} is not a token count")
    if not counts:
        try:
            llama_bench.matching_test(obj, tests)
        except ValueError as e:
            found.append(f"{where}, fields 'n_prompt', 'n_gen', 'n_depth': {e}")
    samples = obj.get("samples_ns")
    if not (isinstance(samples, list) and samples and all(imports.whole(s) and s > 0 for s in samples)):
        found.append(f"{where}, field 'samples_ns': a list of positive nanosecond counts was expected")
    try:
        when = datetime.fromisoformat(str(obj.get("test_time")).replace("Z", "+00:00"))
    except ValueError:
        found.append(f"{where}, field 'test_time': {obj.get('test_time')!r} is not an ISO 8601 time")
    else:
        if when.tzinfo is None:
            found.append(f"{where}, field 'test_time': {obj.get('test_time')!r} has no time zone")
    return found


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
        test = llama_bench.matching_test(obj, tests)
        run_id = f"import-llama-bench-{sha[:12]}-{test.workload}-{variant.name}"
        if store.find(data_dir, suite.name, run_id) is not None:
            done.append(f"{test.workload}: already imported ({run_id})")
            continue
        settings = {**variant.settings, "n_threads": obj.get("n_threads")}
        files = {
            "file": Path(str(obj.get("model_filename", "?"))).name,
            "bytes": obj.get("model_size"),
            "weight_bytes_per_token": None,  # not Fair Fight's file: what a token reads is not known here
            "note": "the contributor's model file, not made by Fair Fight: same shape and weight type",
        }
        imported = {"tool": "llama-bench", "file": path.name, "sha256": sha, "result": obj}
        config = record.as_tools(
            llamacpp.config_of_test(suite, entry, test, variant, settings, files, None, None), "llama-bench", imported
        )
        config["workload"]["untimed_repetitions"] = 0  # llama-bench run elsewhere: every repetition it timed is kept
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
            config=config,
            engine_version=f"llama.cpp {obj['build_commit']} (build {obj.get('build_number', '?')})",
            started=started,
            hardware=hardware,
            packages=(),
        )
        ended = started + timedelta(microseconds=max(1, sum(obj["samples_ns"]) // 1000))
        software = {"llama-bench": obj["build_commit"], "backends": obj.get("backends")}
        run = imports.as_imported(run, "llama-bench", source, ended, software)
        written = store.write_run(data_dir, schema.make_table(run, llama_bench.sample_rows(obj, test.n_tokens)))
        done.append(f"{test.workload}: {obj.get('avg_ts', 0):,.1f} tokens/s (mean) → {written}")
    return done


def import_file(path: Path, suite: spec.Suite, entry: spec.Inference, variant: spec.Variant, args: Any) -> list[str]:
    """The registry's importer: `python -m runners import llama-bench FILE ...`."""
    return import_llama_bench(path, suite, entry, variant, args.source, args.data_dir)
