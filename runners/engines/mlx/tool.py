"""The cross-check: mlx-lm's own `mlx_lm.benchmark`, run on the same folder with the same prompt and generation
lengths and repetitions; each trial's `prompt_tps` and `generation_tps` become result records marked `imported`
(engine `mlx-lm-benchmark`) beside the runner's depth-0 pp and tg tests (the tool has no KV-cache depth).

    python -m runners.engines.mlx.tool --suite cpu-smoke --inference llama-tiny --variant mlx-f16 --run-stamp S

The tool prints one line per trial, `Trial 1:  prompt_tps=…, generation_tps=…, peak_memory=…, total_time=…`, and
an `Averages:` line; `parse` reads those (and is what the importer of a saved output uses, runners/imports.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

TRIAL = re.compile(r"^Trial (\d+):\s*(.*)$")
FIELDS = ("prompt_tps", "generation_tps", "peak_memory", "total_time")
KIND_FIELDS: tuple[tuple[Literal["pp", "tg"], str], ...] = (("pp", "prompt_tps"), ("tg", "generation_tps"))
"""Each test kind and the trial field that measures it."""


def command(python: str, folder: Path, settings: dict[str, Any], entry: Any) -> list[str]:
    """The tool's arguments for the runner's settings and lengths, every one passed explicitly."""
    return [
        python,
        "-m",
        "mlx_lm.benchmark",
        "--model",
        str(folder),
        "--prompt-tokens",
        str(entry.n_prompt),
        "--generation-tokens",
        str(entry.n_gen),
        "--batch-size",
        "1",
        "--num-trials",
        str(entry.repetitions),
        "--prefill-step-size",
        str(settings["prefill_step_size"]),
    ]


def parse(text: str, source: str = "mlx_lm.benchmark output") -> list[dict[str, float]]:
    """The trials of the tool's output, each {prompt_tps, generation_tps, peak_memory, total_time}; a trial line
    missing a field or with a value that is not a number is an error naming the line."""
    trials = []
    for i, line in enumerate(text.splitlines(), 1):
        match = TRIAL.match(line.strip())
        if not match:
            continue
        values: dict[str, float] = {}
        for item in match.group(2).split(","):
            key, sep, value = item.strip().partition("=")
            if sep and key in FIELDS:
                try:
                    values[key] = float(value)
                except ValueError:
                    raise ValueError(f"{source} line {i}: field {key!r}: {value!r} is not a number") from None
        missing = [k for k in FIELDS if k not in values]
        if missing:
            raise ValueError(f"{source} line {i}: no field {missing[0]!r} in {line.strip()[:200]!r}")
        trials.append(values)
    if not trials:
        raise ValueError(f"{source}: no `Trial N:` lines (is this mlx_lm.benchmark's output?)")
    return trials


def sample_rows(trials: list[dict[str, float]], field: str) -> list[dict[str, Any]]:
    """One field's trials as record rows (tokens/s per repetition)."""
    return [
        dict(trial=i, step=None, phase="steady", metric="tokens_per_s", value=t[field], unit="tokens/s")
        for i, t in enumerate(trials)
    ]


def main(argv: list[str] | None = None) -> int:
    from runners import mlx_files, record, spec
    from runners.engines.mlx import generate as mlx_generate
    from runners.engines.mlx import train as mlx_train

    p = spec.inference_cli("python -m runners.engines.mlx.tool", (__doc__ or "").partition("\n")[0], tool=True)
    args, suite, entry, variant, model = spec.inference_run(p, argv)
    settings = mlx_generate.resolve_settings(variant.settings)
    tests = {t.kind: t for t in entry.tests() if t.depth == 0 and (not args.workload or t.workload in args.workload)}
    if not tests:
        print("no depth-0 test selected: mlx_lm.benchmark has nothing to cross-check", file=sys.stderr)
        return 0
    folder = mlx_files.folder(model, entry.seed, settings["weights"], args.cache_dir)
    files = mlx_generate.model_files(folder, model, 0.0)
    cmd = command(sys.executable, folder, settings, entry)
    # the tool runs on MLX's default device: the GPU where there is one, else the CPU (as the suite entry says)
    env = os.environ | mlx_train.launch_env(entry.device)
    started = datetime.now(UTC)
    print("running " + " ".join(cmd), file=sys.stderr, flush=True)
    out = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if out.returncode != 0:
        print(out.stderr[-4000:], file=sys.stderr)
        raise SystemExit(f"mlx_lm.benchmark exited with {out.returncode}")
    trials = parse(out.stdout)
    import mlx.core as mx

    hardware = mlx_train.hardware(entry.device, mx)
    for kind, field in KIND_FIELDS:
        test = tests.get(kind)
        if test is None:
            continue
        imported = {"tool": "mlx_lm.benchmark", "command": " ".join(cmd), "field": field, "trials": trials}
        runners = record.run_id_of_test(args.run_stamp, test.workload, variant.name)
        config = mlx_generate.config_of_test(suite, entry, test, variant, settings, files, None)
        config = record.as_tools(config, "mlx-lm-benchmark", imported, runners)
        config["workload"]["depth_fills"] = None
        run = record.run_columns(
            run_id=record.run_id_of_test(args.run_stamp, test.workload, variant.name + "-mlx-lm-benchmark"),
            config=config,
            engine_version=mlx_generate.engine_version(mx),
            started=started,
            hardware=hardware,
            packages=("mlx", "mlx-lm", "mlx-cuda-13", "mlx-cpu", "mlx-metal"),
        )
        run |= {
            "engine": "mlx-lm-benchmark",
            "origin": "imported",
            "source": "mlx_lm.benchmark of the installed mlx-lm, run by runners/engines/mlx/tool.py on the same host "
            "and folder",
            "ended_at": max(run["ended_at"], started + timedelta(microseconds=1)),
        }
        record.emit(args.out, run, sample_rows(trials, field))
        mean = sum(t[field] for t in trials) / len(trials)
        print(f"    {test.workload}: {mean:,.1f} tokens/s (mlx_lm.benchmark mean)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
