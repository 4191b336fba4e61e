"""Importing `mlx_lm.benchmark`'s printed output written elsewhere (`python -m runners import mlx-lm-benchmark ...`,
runners/imports.py): its trials become the entry's depth-0 pp and tg records, marked imported."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

from runners import imports, record, schema, spec, store
from runners.engines.mlx import tool as mlx_lm_bench

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
    started = imports.said_when_and_where(date, hardware, found)
    if found or started is None:
        raise ValueError(f"{path}: refused, nothing imported:\n  " + "\n  ".join(found))
    from runners.engines.mlx import generate as mlx_generate

    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    tests = {t.kind: t for t in entry.tests() if t.depth == 0}
    done = []
    for kind, field in mlx_lm_bench.KIND_FIELDS:
        test = tests[kind]
        run_id = f"import-mlx-lm-benchmark-{sha[:12]}-{test.workload}-{variant.name}"
        if store.find(data_dir, suite.name, run_id) is not None:
            done.append(f"{test.workload}: already imported ({run_id})")
            continue
        files = {"weight_bytes_per_token": None, "note": "the contributor's model folder, not made by Fair Fight"}
        imported = {"tool": "mlx_lm.benchmark", "file": path.name, "sha256": sha, "field": field, "trials": trials}
        config = mlx_generate.config_of_test(suite, entry, test, variant, dict(variant.settings), files, None)
        config = record.as_tools(config, "mlx-lm-benchmark", imported)
        config["workload"]["depth_fills"] = None
        run = record.run_columns(
            run_id=run_id,
            config=config,
            engine_version="mlx-lm (version not in the tool's output)",
            started=started,
            hardware={"device": entry.device, "count": 1, "accelerator": hardware, "reported_by": "the importer"},
            packages=(),
        )
        ended = started + timedelta(seconds=max(1e-6, sum(t["total_time"] for t in trials)))
        software = {"mlx_lm.benchmark": "as reported by the contributor"}
        run = imports.as_imported(run, "mlx-lm-benchmark", source, ended, software)
        written = store.write_run(data_dir, schema.make_table(run, mlx_lm_bench.sample_rows(trials, field)))
        mean = sum(t[field] for t in trials) / len(trials)
        done.append(f"{test.workload}: {mean:,.1f} tokens/s (mean) → {written}")
    return done


def import_file(path: Path, suite: spec.Suite, entry: spec.Inference, variant: spec.Variant, args: Any) -> list[str]:
    """The registry's importer: `python -m runners import mlx-lm-benchmark FILE ...`."""
    when_where = (args.source, args.hardware, args.date)
    return import_mlx_lm_benchmark(path, suite, entry, variant, *when_where, args.data_dir)
