"""Shared fixtures: one real cpu-smoke bench run (torch, gloo, 2 processes) and a site built from it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCALING_NOTE = "one-process point for the scaling section (test fixture)"
REPEAT_NOTE = "A/A repeat of the stock baseline (test fixture)"
TRAIN = "train-gpt-tiny-mb4"
TORCH_VARIANTS = ("ddp-fp32-stock", "ddp-amp-stock", "ddp-tuned", "fsdp2-compile")
"""cpu-smoke's training workload (its llama.cpp tests have fixtures of their own, in test_llamacpp.py)."""


def run_module(*args: str, cwd: Path = ROOT, check: bool = True, **env: str) -> subprocess.CompletedProcess[str]:
    """Run `python -m ...` from the repository root in a child process, as a user would."""
    proc = subprocess.run(
        [sys.executable, "-m", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=os.environ | {"NO_MKDOCS_2_WARNING": "1"} | env,
        timeout=900,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-5000:]}")
    return proc


@pytest.fixture(scope="session")
def llama_build() -> dict[str, str]:
    """llama.cpp built once from llama-cpp-python's vendored source (libraries and llama-bench, under
    build/llama.cpp, reused between sessions) with the Python package installed on top: the variables that point
    the runner and the cross-check at it. `nox -s tests` builds it before pytest starts."""
    from runners.engines.llamacpp import build as llamacpp_build

    env = llamacpp_build.env_for()
    if not (Path(env["LLAMA_BENCH"]).exists() and _has_llama_cpp()):
        env = llamacpp_build.build()
    return env


def _has_llama_cpp() -> bool:
    from importlib import util

    return util.find_spec("llama_cpp") is not None


@pytest.fixture(scope="session")
def bench_data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """data/ holding the result of a real `python -m runners bench --suite cpu-smoke` run."""
    data = tmp_path_factory.mktemp("bench") / "data"
    torch_variants = [a for v in TORCH_VARIANTS for a in ("--variant", v)]  # the workload also has MLX (test_mlx.py)
    proc = run_module(
        "runners", "bench", "--suite", "cpu-smoke", "--workload", TRAIN, *torch_variants, "--data-dir", str(data)
    )
    return data, proc


@pytest.fixture(scope="session")
def built_site(
    bench_data: tuple[Path, subprocess.CompletedProcess[str]], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A site built from bench_data plus one corrupt file, which must be reported and kept out, and two more
    stock runs (one process; a repeat) that feed the scaling and A/A sections."""
    data, _ = bench_data
    work = tmp_path_factory.mktemp("site")
    corrupt_data = work / "data"
    corrupt_data.mkdir()
    for path in data.rglob("*.parquet"):
        target = corrupt_data / path.relative_to(data)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    (corrupt_data / "cpu-smoke" / "corrupt-run.parquet").write_bytes(b"PAR1 this is not a parquet file")
    # Two more real runs of the stock baseline: one on a single process (the scaling section's one-device point)
    # and a repeat on two (an A/A pair with bench_data's own), each with an operator's note.
    stock = ("runners", "bench", "--suite", "cpu-smoke", "--workload", TRAIN, "--variant", "ddp-fp32-stock")
    stock += ("--data-dir", str(corrupt_data))
    run_module(*stock, "--world-size", "1", "--note", SCALING_NOTE)
    run_module(*stock, "--note", REPEAT_NOTE)
    # built as a user builds it (`fairfight site`, which also supplies the command reference page)
    run_module(
        "fairfight", "site", "--data", str(corrupt_data), "--out", str(work / "site"), "--work", str(work / "build")
    )
    return work / "site"
