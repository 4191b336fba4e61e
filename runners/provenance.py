"""Where a number came from: hardware, software, harness commit and an allowlisted environment.

Software is named twice: the engine's own packages by name (`versions`, what pages lead with), and every installed
distribution (`installed_packages`, bounded), so a record says which triton, NCCL wheel or CUDA library ran beside
them. On NVIDIA GPUs the hardware also holds each GPU's clocks, power limits, ECC and persistence mode as nvidia-smi
reports them when the record is made (`gpu_state`); a value nvidia-smi does not report is absent, never guessed.

The environment is captured through an allowlist of prefixes, and even inside it any name that looks like a
credential is dropped: a benchmark host's tokens never enter a record.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
import tomllib
from importlib import metadata
from pathlib import Path

from runners import bounds, spec

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
    "ONEDNN_",  # runners/cpu_isa.py runtime_env: kernels kept off an instruction set the CPU cannot run
    "ATEN_",  # ATEN_CPU_CAPABILITY, the same for torch's own kernels
    "OPENBLAS_",
)
# Inside the allowlist, names like these still never leave the machine (VLLM_API_KEY, say).
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION", re.IGNORECASE)
# ...nor values that look like one, whatever the name.
_SECRET_VALUE = re.compile(r"(hf_|sk-|ghp_|gho_|github_pat_|xox[abp]-|AKIA)[A-Za-z0-9_\-]{8,}")

REPO_ROOT = Path(__file__).resolve().parent.parent


def secret_like(name: str, value: str) -> bool:
    """Whether a variable's name or value looks like a credential (it then never leaves the machine)."""
    return bool(_SECRET_NAME.search(name) or _SECRET_VALUE.search(value))


def environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """The allowlisted environment variables, minus anything that looks like a credential."""
    env = dict(os.environ if env is None else env)
    return {k: v for k, v in sorted(env.items()) if k.startswith(ENV_PREFIXES) and not secret_like(k, v)}


def project_version() -> str:
    """Fair Fight's version: from git when this runs from a checkout (`runners/version.py`, as the build names it;
    an older install in the same environment must not answer for it), else from the installed package's metadata
    ("unknown" if neither). The one reading of it: `fairfight --version` and the site's footer both ask here."""
    from runners import version

    pyproject = REPO_ROOT / "pyproject.toml"
    if pyproject.exists():
        try:
            project = tomllib.loads(pyproject.read_text())["project"]
            # not some other project's file beside an installed package
            found = version.from_git(REPO_ROOT) if project["name"] == "fairfight" else None
            if found:
                return found
        except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError):
            pass
    try:
        return metadata.version("fairfight")
    except metadata.PackageNotFoundError:
        return "unknown"


def _git(*args: str) -> str | None:
    if not (REPO_ROOT / ".git").exists():  # installed, not a checkout: never ask a repository that merely encloses it
        return None
    try:
        out = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=20, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


FULL_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
"""A commit id as `git rev-parse HEAD` prints it (SHA-1, or SHA-256 repositories)."""


def harness() -> tuple[str | None, bool | None]:
    """The harness commit and whether the checkout has changes outside `data/` (results don't dirty it).

        A bench host may get a copy of the tree without .git, or with a stale one (seen on the lent GPU hosts: the
        copy's HEAD was the commit before the one sent). The caller can name the commit it sent in
        FAIRFIGHT_HARNESS_COMMIT; that name wins, and whether the copy had changes is then known only if the copy's
        own HEAD agrees with it (None otherwise, never guessed). A name that is not a full commit id, or that the copy's
        git holds as something other than a commit, raises `spec.SpecError` (the bench checks it before anything runs;
    every command's entry point reports it as an error, not a traceback)."""
    named = os.environ.get("FAIRFIGHT_HARNESS_COMMIT") or None
    if named is not None and not FULL_COMMIT.fullmatch(named):
        raise spec.SpecError(  # a ValueError every command's entry point reports as a plain error
            f"FAIRFIGHT_HARNESS_COMMIT={named[:80]!r} is not a full commit id (40 or 64 lowercase hex digits): set it"
            " to `git rev-parse HEAD` of the tree you sent, or unset it in a checkout"
        )
    commit = _git("rev-parse", "HEAD")
    if named and named != commit:
        if commit is not None and _git("cat-file", "-t", named) not in (None, "commit"):
            raise spec.SpecError(f"FAIRFIGHT_HARNESS_COMMIT={named}: this checkout's git holds it, but not as a commit")
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


def cpu_model() -> str:
    """The host's CPU model as a CPU run's record names its accelerator (`hardware`)."""
    return _cpu_model()


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


def _nvidia_smi_csv(what: str) -> str:
    """`nvidia-smi --query-WHAT --format=csv,noheader,nounits` as it printed it; empty when nvidia-smi is missing or
    fails (a field this driver does not know fails the whole query)."""
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-{what}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout


def nvidia_smi_query(what: str) -> list[list[str]]:
    """`nvidia-smi --query-WHAT --format=csv,noheader,nounits` as rows of fields (`gpu=name,uuid`,
    `compute-apps=pid,used_memory`); no rows when nvidia-smi is missing or fails."""
    return [[f.strip() for f in line.split(",")] for line in _nvidia_smi_csv(what).splitlines() if line.strip()]


GPU_QUERY: tuple[tuple[str, str, type], ...] = (
    ("index", "index", int),
    ("clocks.current.sm", "sm_clock_mhz", int),
    ("clocks.max.sm", "max_sm_clock_mhz", int),
    ("clocks.current.memory", "memory_clock_mhz", int),
    ("clocks.max.memory", "max_memory_clock_mhz", int),
    ("clocks.applications.graphics", "applications_graphics_clock_mhz", int),
    ("clocks.applications.memory", "applications_memory_clock_mhz", int),
    ("power.limit", "power_limit_w", float),
    ("enforced.power.limit", "enforced_power_limit_w", float),
    ("power.default_limit", "default_power_limit_w", float),
    ("ecc.mode.current", "ecc_mode", str),
    ("persistence_mode", "persistence_mode", str),
    ("uuid", "uuid", str),
    ("name", "name", str),
)
"""What `gpu_state` asks nvidia-smi for (`--query-gpu`, with `--format=csv,noheader,nounits`: MHz and W), the key each
answer has in a record's `hardware.gpus`, and its type. `uuid` names the physical GPU, so runs can be counted by host
(a new lease of a GPU machine is a new host). `name` is last: a name with a comma in it stays whole."""
RUN_GPU_QUERY: tuple[tuple[str, str, type], ...] = (
    ("index", "index", int),
    ("clocks.current.sm", "sm_clock_mhz", int),
    ("clocks.current.memory", "memory_clock_mhz", int),
    ("power.draw", "power_draw_w", float),
    ("temperature.gpu", "temperature_c", int),
    ("clocks_event_reasons.active", "clocks_event_reasons", str),
)
"""What `GpuSampler` asks nvidia-smi for while a run trains (`hardware.gpus_in_run`): the clocks, power and
temperature under load, and the bitmask of why the clocks are below their maximum (nvidia-smi's "clocks event
reasons", formerly "throttle reasons": 0x0 none, 0x1 idle, 0x4 the power cap, 0x20/0x40 thermal slowdown...)."""


def _smi_value(text: str, kind: type) -> object | None:
    """One nvidia-smi answer as its type; None where it reports none (`[N/A]`, `[Not Supported]`, `[Unknown
    Error]`, `N/A`, empty) or says something that is not of the type."""
    text = text.strip()
    if not text or text.upper() == "N/A" or (text.startswith("[") and text.endswith("]")):
        return None
    if kind is str:
        return text
    try:
        number = float(text)
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    if kind is int:
        return int(number) if number.is_integer() else None
    return number


def parse_gpu_csv(
    fields: list[str], text: str, query: tuple[tuple[str, str, type], ...] = GPU_QUERY
) -> list[dict[str, object]]:
    """`nvidia-smi --query-gpu=FIELDS --format=csv,noheader,nounits` output as one dict per GPU, keyed as
    `GPU_QUERY` names them, each value absent where nvidia-smi reported none. A line with too few fields is dropped
    (nothing is guessed from a line that does not parse), and so is a value out of its declared range
    (`bounds.GPU_FIELDS`); the last field keeps any commas (a name may hold one)."""
    keys = {field: (key, kind) for field, key, kind in query}
    out = []
    for line in text.splitlines():
        row = line.split(",", len(fields) - 1)
        if not line.strip() or len(row) < len(fields):
            continue
        gpu = {}
        for field, value_text in zip(fields, row, strict=True):
            key, kind = keys[field]
            value = _smi_value(value_text, kind)
            if value is not None and bounds.gpu_field_problem(key, value) is None:  # else the store would refuse it
                gpu[key] = value
        out.append(gpu)
    return out


def gpu_state(query: tuple[tuple[str, str, type], ...] = GPU_QUERY) -> list[dict[str, object]] | None:
    """Each GPU's clocks, power limits, ECC and persistence mode now (`GPU_QUERY`), from one nvidia-smi call; None
    without nvidia-smi or when it fails. A driver that does not know one of the fields refuses the whole query, so
    the fields are then asked for one at a time (with the index) and the ones it knows are kept."""
    if shutil.which("nvidia-smi") is None:
        return None
    fields = [field for field, _, _ in query]
    text = _nvidia_smi_csv("gpu=" + ",".join(fields))
    if text.strip():
        return parse_gpu_csv(fields, text, query) or None
    if not _nvidia_smi_csv("gpu=index").strip():  # nvidia-smi itself fails (no driver loaded): ask no more
        return None
    by_index: dict[int, dict[str, object]] = {}
    for field in fields[1:]:
        for gpu in parse_gpu_csv(["index", field], _nvidia_smi_csv(f"gpu=index,{field}"), query):
            index = gpu.get("index")
            if isinstance(index, int):
                by_index.setdefault(index, {}).update(gpu)
    return [by_index[i] for i in sorted(by_index)] or None


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


class GpuSampler:
    """nvidia-smi asked once while a run trains, on a thread of its own (the training loop does not wait for it):
    the clocks a record's `hardware.gpus` reads when the record is written are those of GPUs that have just gone
    idle. `start(step)` at a step of the steady phase; `result()` at the end: `{"at_step": N, "gpus": [...]}` with
    `RUN_GPU_QUERY`'s fields, or None (not started, no nvidia-smi, or no answer within the timeout)."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._gpus: list[dict[str, object]] | None = None
        self._step = 0

    def start(self, step: int) -> None:
        if self._thread is not None or shutil.which("nvidia-smi") is None:
            return
        self._step = step
        self._thread = threading.Thread(target=self._ask, name="gpu-sampler", daemon=True)
        self._thread.start()

    def _ask(self) -> None:
        try:
            self._gpus = gpu_state(RUN_GPU_QUERY)
        except Exception:  # a sample is a nicety: it must never take the run down
            self._gpus = None

    def result(self, timeout_s: float = 60.0) -> dict[str, object] | None:
        if self._thread is None:
            return None
        self._thread.join(timeout_s)
        if self._thread.is_alive() or not self._gpus:
            return None
        return {"at_step": self._step, "gpus": self._gpus}


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
            driver=next(iter(_nvidia_smi("driver_version")), None),
            host_accelerator_count=len(_nvidia_smi("name") or []) or None,
            visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
            interconnect=_interconnect(count),
        )
        gpus = gpu_state()
        if gpus:
            info["gpus"] = gpus
    else:
        info.update(accelerator=info["cpu_model"], accelerator_memory_gib=info["ram_gib"])
    from runners import slurm_job  # the job this runs in, under Slurm (job id, nodes, partition, GPUs per node)

    job = slurm_job.facts()
    if job is not None:
        info["slurm"] = job
    return info


def host_load() -> dict[str, object]:
    """The host's load now: its 1-minute load average (`os.getloadavg`; None where the OS keeps none), how many
    compute processes run on its GPUs (`nvidia-smi --query-compute-apps`; None without nvidia-smi or where it fails),
    the CPUs' clock (`cpu_mhz`) and the CPU-time counters `host_load_around` turns into what others took (`cpu_time`).
    The bench asks before it starts a runner and after the runner ends, so neither GPU count includes the run itself;
    the load average after it does (it decays over a minute), which is why a busy host is judged by CPU time instead
    (`metrics.busy_host`)."""
    try:
        load: float | None = round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        load = None
    processes = None
    if shutil.which("nvidia-smi") is not None and _nvidia_smi_csv("gpu=index").strip():
        processes = len(nvidia_smi_query("compute-apps=pid"))
    return {"load_1m": load, "gpu_processes": processes, "cpu_mhz": cpu_mhz(), **cpu_time()}


def cpu_time() -> dict[str, float | None]:
    """CPU-time counters now, in seconds: every CPU's busy time since boot (/proc/stat's first line: user, nice,
    system, irq, softirq and steal, the time a hypervisor gave this VM's CPUs to other guests; None where there is no
    /proc/stat), the CPU time of this process and of the children it has reaped (`getrusage`: a runner and every
    process the runner itself waited for), and a monotonic clock. Busy time less our own, over the wall time between
    two readings, is what other processes took while a run ran."""
    import resource
    import time

    busy = None
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()
        if fields[0] == "cpu":
            user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[1:9])
            busy = (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        busy = None
    own = sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
              for f in ("ru_utime", "ru_stime"))  # fmt: skip
    return {"cpu_busy_s": busy, "cpu_own_s": own, "clock_s": time.monotonic()}


def cpu_mhz() -> float | None:
    """The CPUs' mean clock now, MHz, as Linux reports it (`cpu MHz` in /proc/cpuinfo, else cpufreq's current
    frequency); None where neither is readable (another OS, a VM that hides it). A throttled or power-saving host is
    slow for a reason no engine owns: the record keeps it beside the load."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
        found = [float(line.split(":", 1)[1]) for line in text.splitlines() if line.startswith("cpu MHz")]
    except (OSError, ValueError, IndexError):
        found = []
    if not found:
        try:
            files = sorted(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_cur_freq"))
            found = [int(f.read_text()) / 1000 for f in files]
        except (OSError, ValueError):
            found = []
    mean = sum(found) / len(found) if found else None
    return round(mean, 1) if mean is not None and 0 < mean < 1e5 else None


def host_load_around(before: dict[str, object], after: dict[str, object]) -> dict[str, object]:
    """A record's `hardware.host_load` from `host_load` asked before its runner started and after it ended."""
    return {
        "load_1m_start": before.get("load_1m"),
        "load_1m_end": after.get("load_1m"),
        "gpu_processes_start": before.get("gpu_processes"),
        "gpu_processes_end": after.get("gpu_processes"),
        "cpu_mhz_start": before.get("cpu_mhz"),
        "cpu_mhz_end": after.get("cpu_mhz"),
        # CPU seconds between the two readings: the whole host's busy time, and the run's own (this process and the
        # children it reaped); with the wall seconds, what others took (`metrics.busy_host`)
        "cpu_busy_s": _between(before, after, "cpu_busy_s"),
        "cpu_own_s": _between(before, after, "cpu_own_s"),
        "wall_s": _between(before, after, "clock_s"),
    }


def _between(before: dict[str, object], after: dict[str, object], key: str) -> float | None:
    """after[key] - before[key], rounded to 10 ms; None where either is missing or the counter went back."""
    a, b = before.get(key), after.get(key)
    if not isinstance(a, int | float) or not isinstance(b, int | float) or b < a:
        return None
    return round(b - a, 2)


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


def normalised(name: str) -> str:
    """A distribution's name as PEP 503 normalises it (`Jinja2` and `jinja2`, `typing_extensions` and
    `typing-extensions` are one)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_packages() -> tuple[list[str], int]:
    """Every installed distribution as `name==version` (names normalised), sorted, one per name, and how many were
    left out: a distribution without a name or version, one whose name or version is not plain
    (`bounds.PACKAGE`), and any past `bounds.MAX_PACKAGES` entries or `bounds.PACKAGES_MAX_CHARS` characters. Where
    a name is installed twice (a `--target` folder on PYTHONPATH over the image's own), the one first on sys.path is
    listed: the one `import` and `metadata.version` find."""
    found: dict[str, str] = {}
    omitted = 0
    for dist in metadata.distributions():  # in sys.path order
        name, version = dist.metadata["Name"], dist.version
        if not name or not version:
            omitted += 1
            continue
        key = normalised(name)
        if key in found:
            continue
        entry = f"{key}=={version}"
        if bounds.PACKAGE.fullmatch(entry):
            found[key] = entry
        else:
            omitted += 1
    listed: list[str] = []
    size = 0
    for key in sorted(found):
        entry = found[key]
        if len(listed) == bounds.MAX_PACKAGES or size + len(entry) > bounds.PACKAGES_MAX_CHARS:
            omitted += len(found) - len(listed)
            break
        listed.append(entry)
        size += len(entry)
    return listed, omitted


def versions(*packages: str) -> dict[str, object]:
    """Python, platform, the installed version of each named package (None if absent), and every installed
    distribution (`packages`, with `packages_omitted` when `installed_packages` left some out)."""
    found: dict[str, object] = {"python": sys.version.split()[0], "platform": platform.platform()}
    for name in packages:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    listed, omitted = installed_packages()
    found["packages"] = listed
    if omitted:
        found["packages_omitted"] = omitted
    return found
