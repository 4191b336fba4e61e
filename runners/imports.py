"""Importing results that engines' own benchmark tools wrote elsewhere (each engine's `importer.py`, named in the
registry) become records marked `imported`, checked
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
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from runners import arguments, engines, spec


def whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def said_when_and_where(date: str, hardware: str, found: list[str]) -> datetime | None:
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


def as_imported(run: dict[str, Any], engine: str, source: str, ended: datetime, software: dict[str, Any]) -> dict:
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


def add_cli_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("tool", choices=list(engines.IMPORTED_ENGINES), help="whose output the file is")
    p.add_argument("file", type=arguments.existing_file, help="the tool's output")
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
        raise spec.SpecError(f"{suite.name}: {arguments.unknown('variant', args.variant, suite.variants)}")
    variant = suite.variants[args.variant]
    serving = any(e.tool == args.tool and "serving" in e.kinds for e in engines.ENGINES.values())
    named = args.serving if serving else args.inference
    if not named:
        raise SystemExit(f"name the entry: --{'serving' if serving else 'inference'} NAME")
    engine = next(e for e in engines.ENGINES.values() if e.tool == args.tool)
    entry = suite.serving_entry(named) if "serving" in engine.kinds else suite.inference_entry(named)
    try:
        lines = engines.call(engine.importer or "", args.file, suite, entry, variant, args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0
