"""Where a number came from: hardware, software, harness commit and an allowlisted environment.

The environment is captured through an allowlist of prefixes, and even inside it any name that looks like a
credential is dropped: a benchmark host's tokens never enter a record.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

ENV_PREFIXES = (
    "NCCL_",
    "CUDA_",
    "TORCH_",
    "TORCHINDUCTOR_",
    "PYTORCH_",
    "NVSHMEM_",
    "OMP_",
    "VLLM_",
    "MLX_",
    "GGML_",
)
# Inside the allowlist, names like these still never leave the machine (VLLM_API_KEY, say).
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION", re.IGNORECASE)
# ...nor values that look like one, whatever the name.
_SECRET_VALUE = re.compile(r"(hf_|sk-|ghp_|gho_|github_pat_|xox[abp]-|AKIA)[A-Za-z0-9_\-]{8,}")

REPO_ROOT = Path(__file__).resolve().parent.parent


def environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """The allowlisted environment variables, minus anything that looks like a credential."""
    env = dict(os.environ if env is None else env)
    return {
        k: v
        for k, v in sorted(env.items())
        if k.startswith(ENV_PREFIXES) and not _SECRET_NAME.search(k) and not _SECRET_VALUE.search(v)
    }


def _git(*args: str) -> str | None:
    if not (REPO_ROOT / ".git").exists():  # installed, not a checkout: never ask a repository that merely encloses it
        return None
    try:
        out = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=20, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def harness() -> tuple[str | None, bool | None]:
    """The harness commit and whether the checkout has changes outside `data/` (results don't dirty it).

    A bench host may get a copy of the tree without .git, or with a stale one (seen on the lent GPU hosts: the
    copy's HEAD was the commit before the one sent). The caller can name the commit it sent in
    FAIRFIGHT_HARNESS_COMMIT; that name wins, and whether the copy had changes is then known only if the copy's
    own HEAD agrees with it (None otherwise, never guessed)."""
    named = os.environ.get("FAIRFIGHT_HARNESS_COMMIT") or None
    commit = _git("rev-parse", "HEAD")
    if named and named != commit:
        return named, None
    if commit is None:
        return (named, None) if named else installed_build()
    status = _git("status", "--porcelain", "--", ".", ":(exclude)data")
    return commit, bool(status)


def installed_build() -> tuple[str | None, bool | None]:
    """The commit and dirty flag baked into an installed package at build time (fairfight/_build_hook.py writes
    runners/_build.json); (None, None) when there is none or it does not hold a commit."""
    try:
        baked = json.loads((Path(__file__).parent / "_build.json").read_text())
    except (OSError, ValueError):
        return None, None
    commit = baked.get("commit") if isinstance(baked, dict) else None
    if not (isinstance(commit, str) and re.fullmatch(r"[0-9a-f]{7,64}", commit)):
        return None, None
    dirty = baked.get("dirty")
    return commit, dirty if isinstance(dirty, bool) else None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def nvidia_smi_query(what: str) -> list[list[str]]:
    """`nvidia-smi --query-WHAT --format=csv,noheader,nounits` as rows of fields (`gpu=name,uuid`,
    `compute-apps=pid,used_memory`); no rows when nvidia-smi is missing or fails."""
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-{what}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return [[f.strip() for f in line.split(",")] for line in out.stdout.splitlines() if line.strip()]


def _nvidia_smi(query: str) -> list[str]:
    return [", ".join(fields) for fields in nvidia_smi_query(f"gpu={query}")]


def topo_link(topo: str, a: int, b: int) -> str | None:
    """The link between GPUs a and b in `nvidia-smi topo -m` output (NV18, SYS, PIX, ...), None if absent."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", topo)  # nvidia-smi underlines the header with terminal escapes
    lines = [line.split() for line in plain.splitlines() if line.strip()]
    if not lines:
        return None
    header = lines[0]  # column labels: GPU0 GPU1 ... (no label for the row-name column)
    row = next((cells for cells in lines[1:] if cells[0] == f"GPU{a}"), None)
    if row is None or f"GPU{b}" not in header:
        return None
    col = header.index(f"GPU{b}") + 1  # data rows start with their own label
    return row[col] if col < len(row) else None


def _interconnect(count: int) -> str | None:
    """The link between the first two GPUs used (CUDA_VISIBLE_DEVICES, else 0 and 1), from `nvidia-smi topo -m`
    (None on one GPU or without nvidia-smi)."""
    if count < 2:
        return None
    try:
        out = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    a, b = (
        (int(visible[0]), int(visible[1]))
        if len(visible) >= 2 and visible[0].isdigit() and visible[1].isdigit()
        else (0, 1)
    )
    return topo_link(out.stdout, a, b)


def hardware(device: str, count: int) -> dict[str, object]:
    """Accelerators (model, count, memory, driver, CUDA, interconnect) and host CPU, cores and RAM."""
    info: dict[str, object] = {
        "cpu_model": _cpu_model(),
        "cpu_cores": os.cpu_count(),
        "ram_gib": _ram_gib(),
        "machine": platform.machine(),
        "device": device,
        "count": count,
    }
    if device == "cuda":
        import torch  # only on the CUDA path; the harness itself does not need torch

        props = torch.cuda.get_device_properties(0)
        info.update(
            accelerator=props.name,
            accelerator_memory_gib=round(props.total_memory / 2**30, 1),
            cuda=torch.version.cuda,
            driver=(_nvidia_smi("driver_version") or [None])[0],
            host_accelerator_count=len(_nvidia_smi("name") or []) or None,
            visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
            interconnect=_interconnect(count),
        )
    else:
        info.update(accelerator=info["cpu_model"], accelerator_memory_gib=info["ram_gib"])
    return info


def hardware_in_child(device: str, count: int) -> dict[str, object]:
    """`hardware` probed by a child process, for runners whose process must not import torch (its CUDA path does):
    torch beside llama.cpp aborts the process on the bench hosts' image ("free(): invalid pointer"), a CUDA context
    beside vLLM takes memory the engine counts on (`gpu_memory_utilization`), and MLX's CUDA backend is kept apart
    from torch's CUDA libraries likewise."""
    import json
    import subprocess

    code = (
        "import json, sys; from runners import provenance; "
        "print(json.dumps(provenance.hardware(sys.argv[1], int(sys.argv[2]))))"
    )
    out = subprocess.run([sys.executable, "-c", code, device, str(count)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def versions(*packages: str) -> dict[str, str | None]:
    """Python, platform and the installed version of each named package (None if absent)."""
    found: dict[str, str | None] = {"python": sys.version.split()[0], "platform": platform.platform()}
    for name in packages:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found
