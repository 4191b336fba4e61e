"""The cross-check: llama.cpp's own `llama-bench`, built from the same vendored llama.cpp as the runner's library
(runners/engines/llamacpp/build.py), run on the same GGUF file with the same settings; its JSON Lines become result
records marked `imported` (engine `llama-bench`), one per test, beside the runner's `measured` ones.

    python -m runners.engines.llamacpp.tool --suite cpu-smoke --inference llama-tiny --variant llamacpp-f16
    --run-stamp S
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from importlib import metadata
from pathlib import Path
from typing import Any

FLASH_ATTN_FLAG = {"auto": "auto", "off": "off", "on": "on"}


def command(
    binary: str, gguf: Path, settings: dict[str, Any], entry: Any, workloads: list[Any], untimed: int = 0
) -> list[str]:
    """llama-bench's arguments for the same tests and settings as the runner's (every one passed explicitly), with
    `untimed` repetitions more than the entry asks (`sample_rows` drops as many)."""
    depths = sorted({t.depth for t in workloads})
    kinds = {t.kind for t in workloads}
    return [
        binary,
        "-m",
        str(gguf),
        "-p",
        str(entry.n_prompt if "pp" in kinds else 0),
        "-n",
        str(entry.n_gen if "tg" in kinds else 0),
        "-d",
        ",".join(map(str, depths)),
        "-r",
        str(entry.repetitions + untimed),
        "-b",
        str(settings["n_batch"]),
        "-ub",
        str(settings["n_ubatch"]),
        "-ngl",
        str(settings["n_gpu_layers"]),
        "-fa",
        FLASH_ATTN_FLAG[settings["flash_attn"]],
        "-ctk",
        settings["type_k"],
        "-ctv",
        settings["type_v"],
        "-t",
        str(settings["n_threads"]),
        "-o",
        "jsonl",
    ]


def parse(lines: str) -> list[dict[str, Any]]:
    """llama-bench's JSON Lines output: one object per test; anything else on stdout is an error."""
    out = []
    for i, line in enumerate(lines.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"llama-bench output line {i}: not JSON ({e}): {line[:200]!r}") from None
        for key in ("n_prompt", "n_gen", "n_depth", "samples_ns", "build_commit"):
            if key not in obj:
                raise ValueError(f"llama-bench output line {i}: no field {key!r}")
        out.append(obj)
    return out


def matching_test(obj: dict[str, Any], tests: list[Any]) -> Any:
    """The runner's test a llama-bench result is for (same kind, token count and depth)."""
    kind, n = ("pp", obj["n_prompt"]) if obj["n_prompt"] > 0 else ("tg", obj["n_gen"])
    for t in tests:
        if (t.kind, t.n_tokens, t.depth) == (kind, n, obj["n_depth"]):
            return t
    raise ValueError(f"llama-bench result {kind}{n} at depth {obj['n_depth']} matches no test of the suite")


def sample_rows(obj: dict[str, Any], n_tokens: int, untimed: int = 0) -> list[dict[str, Any]]:
    """A llama-bench result's repetitions as record rows: each one's time and tokens/s, but the first `untimed` (the
    runner's untimed repetitions: both are then timed alike; the record keeps llama-bench's whole result)."""
    return [
        dict(trial=rep, step=None, phase="steady", metric=metric, value=value, unit=unit)
        for rep, ns in enumerate(obj["samples_ns"][untimed:])
        for metric, value, unit in (("test_time_s", ns / 1e9, "s"), ("tokens_per_s", n_tokens / (ns / 1e9), "tokens/s"))
    ]


def main(argv: list[str] | None = None) -> int:
    # No llama_cpp here (this process checks its records with pyarrow, and on the bench hosts' image pyarrow and
    # llama_cpp in one process crash, see runners/engines/llamacpp/runner.py): the runner, which runs first, has
    # already made the model file.
    from runners import llama_quant, provenance, record, spec
    from runners.engines.llamacpp import build as llamacpp_build
    from runners.engines.llamacpp import runner as llamacpp

    p = spec.inference_cli("python -m runners.engines.llamacpp.tool", (__doc__ or "").partition("\n")[0], tool=True)
    p.add_argument("--binary", default=os.environ.get("LLAMA_BENCH", "llama-bench"))
    args, suite, entry, variant, model = spec.inference_run(p, argv)
    vendored = metadata.version("llama_cpp_python")
    commit_file = Path(args.binary).resolve().parent.parent.parent / llamacpp_build.COMMIT_FILE
    commit = commit_file.read_text().strip()[:12] if commit_file.exists() else "unknown"
    settings = llamacpp.resolve_settings(variant.settings)
    tests = [t for t in entry.tests() if not args.workload or t.workload in args.workload]
    path, made = llama_quant.gguf_file(model, entry.seed, settings["weights"], args.cache_dir)
    files = made | {"file": path.name, "weight_bytes_per_token": llamacpp.weight_bytes_read_per_token(path)}
    untimed = llamacpp.UNTIMED_REPETITIONS
    cmd = command(args.binary, path, settings, entry, tests, untimed)
    started = datetime.now(UTC)
    print("running " + " ".join(cmd), file=sys.stderr, flush=True)
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        print(out.stderr[-4000:], file=sys.stderr)
        raise SystemExit(f"llama-bench exited with {out.returncode}")
    hardware = provenance.hardware(entry.device, 1)
    for obj in parse(out.stdout):
        try:
            test = matching_test(obj, tests)
        except ValueError:  # llama-bench runs every combination of its -p, -n and -d: some were not asked for
            continue
        imported = {"tool": "llama-bench", "command": " ".join(cmd), "result": obj}
        runners = record.run_id_of_test(args.run_stamp, test.workload, variant.name)
        config = llamacpp.config_of_test(suite, entry, test, variant, settings, files, None, None)
        config = record.as_tools(config, "llama-bench", imported, runners)
        rows = sample_rows(obj, test.n_tokens, untimed)
        run = record.run_columns(
            run_id=record.run_id_of_test(args.run_stamp, test.workload, variant.name + "-llama-bench"),
            config=config,
            # the build's record of the vendored commit: llama-bench's own stamp may not know it
            engine_version=f"llama.cpp {commit} of llama-cpp-python {vendored}",
            started=started,
            hardware=hardware,
            packages=("llama_cpp_python", "gguf"),
            build=llamacpp_build.build_provenance(Path(args.binary).resolve().parent),
        )
        run |= {
            "engine": "llama-bench",
            "origin": "imported",
            "source": f"llama-bench built from the llama.cpp vendored in llama-cpp-python {vendored}, "
            "run by runners/engines/llamacpp/tool.py on the same host and file",
            # llama-bench runs every test in one process: each record spans the whole run
            "ended_at": max(run["ended_at"], started + timedelta(microseconds=1)),
        }
        record.emit(args.out, run, rows)
        mean = obj.get("avg_ts", 0)
        print(f"    {test.workload}: {mean:,.1f} tokens/s (llama-bench mean)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
