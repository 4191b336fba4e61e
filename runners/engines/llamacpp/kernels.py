"""The judge of a llama.cpp build's instruction sets: the build's own kernels, run on this host.

`runners/cpu_isa.py` runs one instruction of each set in a tiny program, and that is a proxy: on an Intel Xeon VM
that advertised AMX, the probe's `tilezero` ran and answered right, yet llama.cpp's `tinygemm_kernel_amx` died with
SIGILL at `tilezero` on the first decode of every Q8_0 and Q4_K_M file (issue 54). ggml loads the tile configuration
once per thread and keeps it across calls (amx/mmq.cpp `ggml_tile_config_init`); the probe loads it just before its
one instruction. Why the kernel faults there is not known; that the proxy does not predict it is. So a build is
judged by what it will run: `check` runs the build's own llama-bench (the cross-check's tool) and, for a CPU build,
a decode through llama-cpp-python's bindings (the runner's way in), each in a child process, on tiny F16, Q8_0 and
Q4_K_M files (the quantized ones are what ggml's AMX kernels serve), at prompt sizes that take each matmul path
(one row while generating, a few rows, more than one tile of rows), with one thread and several, several
repetitions each. The build passes only where every run ends cleanly with its results.

A fault (SIGILL, SIGSEGV, SIGBUS, SIGFPE) or a hang is a verdict on the instruction sets; anything else that fails
(a file that does not load, an abort, a missing result) is an error of ours, raised with llama-bench's output, never
taken for a verdict on the CPU.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from runners import cache, cpu_isa

CHECK_VERSION = 1
"""Names what `check` runs: part of the key of a host's recorded checks, so a changed check judges builds afresh."""
WEIGHTS = ("f16", "q8_0", "q4_k_m")
PROMPTS = (8, 64)
"""Prompt sizes: a few rows, and more rows than one AMX tile block (32); generation adds the one-row path."""
GENERATED = 8
REPETITIONS = 3
TIMEOUT_S = 300
"""A tiny model's every test ends in seconds; past this the build hung (a verdict, like a fault)."""
FAULTS = (signal.SIGILL, signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE)
"""The signals an instruction the CPU cannot run (or runs wrong) ends a process with."""
STDERR_KEPT = 1500
"""Characters of a faulted run's standard error kept in its evidence (the fault handler's stack ends it)."""


class CheckError(RuntimeError):
    """The check itself could not judge (ours to fix, not the CPU's): never taken for a fault."""


def threads() -> tuple[int, int]:
    """One thread and several (at least two, as the faults reported were on one and on two)."""
    return 1, max(2, min(os.cpu_count() or 2, 4))


def models(folder: Path, lib_dir: Path) -> dict[str, Path]:
    """The tiny files (cpu-smoke's `llama-tiny`, seed 0), written once into `folder` by `runners.llama_quant` with
    this build's own quantizer, in a child process (a library that faults must not take the build's process with it)."""
    script = (
        "import json, sys\n"
        "from runners import llama_quant, spec\n"
        "tiny = spec.load_suite('cpu-smoke').models['llama-tiny']\n"
        "print(json.dumps({w: str(llama_quant.gguf_file(tiny, 0, w, sys.argv[1])[0]) for w in sys.argv[2:]}))\n"
    )
    here = str(Path(__file__).resolve().parents[3])  # the folder holding `runners`, for a checkout not installed
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
    env = os.environ | {"LLAMA_CPP_LIB_PATH": str(lib_dir), "PYTHONPATH": path}
    made = subprocess.run([sys.executable, "-c", script, str(folder), *WEIGHTS], capture_output=True, text=True,
                          env=env, timeout=TIMEOUT_S)  # fmt: skip
    if made.returncode != 0:
        raise CheckError(
            f"writing the tiny GGUF files for the instruction-set check failed (exit {made.returncode}); it needs "
            f"numpy and gguf (pip install '.[llama]'):\n{made.stderr[-3000:]}"
        )
    return {w: Path(p) for w, p in json.loads(made.stdout.strip().splitlines()[-1]).items()}


def _command(bench: Path, model: Path, cuda: bool) -> list[str]:
    cmd = [str(bench), "-m", str(model), "-p", ",".join(map(str, PROMPTS)), "-n", str(GENERATED)]
    cmd += ["-t", ",".join(map(str, threads())), "-r", str(REPETITIONS), "-ngl", "0", "-o", "json", "-v"]
    # a CUDA build's CPU kernels: no device, no matmul handed to one
    return cmd + (["-dev", "none", "-nopo", "1"] if cuda else [])


DECODE = """
import sys
import llama_cpp  # first: on the H200 image, numpy imported before llama_cpp segfaults at the model's load
path, threads, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
llama_cpp.llama_backend_init()
model_params = llama_cpp.llama_model_default_params()
model_params.n_gpu_layers = 0
model = llama_cpp.llama_model_load_from_file(path.encode(), model_params)
assert model, "the model did not load"
params = llama_cpp.llama_context_default_params()
params.n_ctx, params.n_batch, params.n_ubatch = 256, 64, 64
params.n_threads, params.n_threads_batch = threads, threads
for _ in range(rounds):
    ctx = llama_cpp.llama_init_from_model(model, params)
    for n in (8, 64, 1, 1, 1):  # a few rows, more than one tile of rows, then one token at a time
        array = (llama_cpp.llama_token * n)(*[(7 * i) % 500 + 1 for i in range(n)])
        assert llama_cpp.llama_decode(ctx, llama_cpp.llama_batch_get_one(array, n)) == 0, "decode failed"
    logits = llama_cpp.llama_get_logits_ith(ctx, -1)
    assert all(logits[i] == logits[i] for i in range(16)), "NaN logits"
    llama_cpp.llama_free(ctx)
print("decoded")
"""
"""The runner's way into the library: llama-cpp-python's ctypes bindings, taken from the sdist's source."""


def run_bindings(bindings: Path, bin_dir: Path, weights: str, model: Path) -> dict[str, Any]:
    """One file decoded through the bindings, with one thread and with several, `REPETITIONS` contexts each."""
    path = os.pathsep.join(p for p in (str(bindings), os.environ.get("PYTHONPATH", "")) if p)
    # Python's fault handler prints the stack a fault ended, kept in the evidence: where the decode died
    env = os.environ | {"LLAMA_CPP_LIB_PATH": str(bin_dir), "PYTHONPATH": path, "PYTHONFAULTHANDLER": "1"}
    evidence: dict[str, Any] = {"weights": weights, "command": f"llama_cpp decode of {model.name}", "tests": 0}
    began = time.monotonic()
    for n in threads():
        cmd = [sys.executable, "-c", DECODE, str(model), str(n), str(REPETITIONS)]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, env=env)
        except subprocess.TimeoutExpired:
            return evidence | {"verdict": f"hung ({TIMEOUT_S} s)"}
        evidence["amx"] = evidence.get("amx", False) or "AMX model buffer" in done.stderr
        if done.returncode < 0 and signal.Signals(-done.returncode) in FAULTS:
            verdict = f"faulted ({signal.Signals(-done.returncode).name})"
            return evidence | {"verdict": verdict, "threads": n, "stderr": done.stderr[-STDERR_KEPT:]}
        if done.returncode != 0 or "decoded" not in done.stdout:
            raise CheckError(
                f"decoding the tiny {weights} file through llama-cpp-python ({n} threads) ended with exit "
                f"{done.returncode}, which says nothing of the CPU's instruction sets:\n{done.stderr[-3000:]}"
            )
        evidence["tests"] += REPETITIONS
    return evidence | {"verdict": "ran", "seconds": round(time.monotonic() - began, 2)}


def _expected_tests() -> int:
    return len(threads()) * (len(PROMPTS) + 1)


def run_one(bench: Path, weights: str, model: Path, cuda: bool = False) -> dict[str, Any]:
    """One file through llama-bench: its verdict ("ran", "faulted (SIGILL)", "hung (300 s)") and the evidence: the
    command, the seconds, the tests that returned results, and whether ggml's AMX kernels held the weights."""
    cmd = _command(bench, model, cuda)
    shown = " ".join([Path(cmd[0]).name, *cmd[1:2], model.name, *cmd[3:]])
    began = time.monotonic()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"weights": weights, "command": shown, "verdict": f"hung ({TIMEOUT_S} s)", "tests": 0}
    seconds = round(time.monotonic() - began, 2)
    evidence: dict[str, Any] = {"weights": weights, "command": shown, "seconds": seconds}
    # ggml logs the weights' buffer by type when it loads a model ("AMX model buffer size = ..."): the AMX kernels ran
    evidence["amx"] = any("AMX model buffer" in line for line in done.stderr.splitlines())
    if done.returncode < 0 and signal.Signals(-done.returncode) in FAULTS:
        verdict = f"faulted ({signal.Signals(-done.returncode).name})"
        return evidence | {"verdict": verdict, "tests": 0, "stderr": done.stderr[-STDERR_KEPT:]}
    how = f"signal {signal.Signals(-done.returncode).name}" if done.returncode < 0 else f"exit {done.returncode}"
    try:
        results = json.loads(done.stdout) if done.returncode == 0 else None
    except ValueError:
        results = None
    if not isinstance(results, list) or len(results) != _expected_tests():
        raise CheckError(
            f"llama-bench on the tiny {weights} file ended with {how} without its {_expected_tests()} results, which "
            f"says nothing of the CPU's instruction sets: {shown}\n{done.stderr[-3000:]}"
        )
    return evidence | {"verdict": "ran", "tests": len(results)}


def check(bin_dir: Path, model_folder: Path, cuda: bool = False, bindings: Path | None = None) -> dict[str, Any]:
    """Run every file through the build under `bin_dir` (its `build/bin`): llama-bench, and for a CPU build with
    `bindings` (the sdist's source, holding `llama_cpp/`) the runner's decode too. The record a host keeps of one
    build's kernels, "ok" only where every file ran both ways."""
    files = models(model_folder, bin_dir)
    runs = [run_one(bin_dir / "llama-bench", w, files[w], cuda) for w in WEIGHTS]
    if bindings is not None and not cuda:  # a CUDA build's bindings would reach for the GPU: llama-bench's -dev none
        runs += [run_bindings(bindings, bin_dir, w, files[w]) for w in WEIGHTS]
    faulted = [r for r in runs if r["verdict"] != "ran"]
    return {
        "check_version": CHECK_VERSION,
        "boot": boot(),
        "checked_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "result": "faulted" if faulted else "ok",
        "summary": summary(runs),
        "threads": list(threads()),
        "runs": runs,
    }


def only_bindings_faulted(result: dict[str, Any]) -> bool:
    """Whether a check's faults were all in the bindings' decode, llama-bench having run every file cleanly: the same
    compiled kernels on the same files, so the instruction sets are suspect only once a build without any optional
    set decodes cleanly there (`build.make`'s control). On the H200 image, the bindings' decode died with SIGSEGV
    in every build, the baseline's included, while llama-bench ran the AMX kernels cleanly."""
    bench = [r for r in result["runs"] if not r["command"].startswith("llama_cpp")]
    faulted = [r for r in result["runs"] if r["verdict"] != "ran"]
    return bool(faulted) and all(r["verdict"] == "ran" for r in bench) and all(r not in bench for r in faulted)


def summary(runs: list[dict[str, Any]]) -> str:
    """One line of what the runs showed: "ran f16, q8_0, q4_k_m with 1 and 2 threads (AMX kernels ran)" or the
    faults by file."""
    faulted = [r for r in runs if r["verdict"] != "ran"]
    if faulted:
        return "; ".join(f"{r['verdict']} on {r['weights']}" for r in faulted)
    one, several = threads()
    amx = " (AMX kernels ran)" if any(r.get("amx") for r in runs) else ""
    files = ", ".join(dict.fromkeys(r["weights"] for r in runs))
    ways = "llama-bench and the bindings" if any(r["command"].startswith("llama_cpp") for r in runs) else "llama-bench"
    return f"ran {files} with {one} and {several} threads through {ways}{amx}"


def boot() -> str:
    """This boot of this host (Linux's boot id; elsewhere the host's name): a check holds for the boot it ran on."""
    path = Path("/proc/sys/kernel/random/boot_id")
    return path.read_text().strip() if path.exists() else os.uname().nodename


def records_file(base: Path) -> Path:
    """Where a host keeps its checks under a build folder's parent: one file per boot, CPU flags, probe and check."""
    key = {"boot": boot(), "flags": sorted(cpu_isa.cpuinfo_flags()), "probe": cpu_isa.PROBE_VERSION,
           "check": CHECK_VERSION}  # fmt: skip
    return base / "isa-checks" / f"{cache.short_hash(key)}.json"


def records(base: Path) -> dict[str, dict[str, Any]]:
    """This boot's checks, by build key; a damaged or foreign file counts as none (the builds are checked again)."""
    try:
        found = json.loads(records_file(base).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(found, dict):
        return {}
    return {
        k: v
        for k, v in found.items()
        if isinstance(v, dict) and v.get("result") in ("ok", "faulted") and isinstance(v.get("summary"), str)
    }


def record(base: Path, key: str, result: dict[str, Any]) -> None:
    """Keep one build's check among this boot's (the caller holds the base's build lock)."""
    path = records_file(base)
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = records(base) | {key: result}
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(kept, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)
