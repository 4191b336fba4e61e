"""Build llama.cpp once for both sides of the cross-check: the shared libraries that llama-cpp-python loads and
the `llama-bench` tool, from the one llama.cpp source vendored in the llama-cpp-python sdist, with one CMake
configuration. The Python package is then installed without building anything of its own and pointed at those
libraries (`LLAMA_CPP_LIB_PATH`), so the runner and llama-bench execute the very same compiled code.

    python -m runners.engines.llamacpp.build [--sdist FILE] [--cuda] [--out build/llama.cpp] [--jobs N]

Without --sdist the pinned sdist is fetched with pip (bench hosts without a package index pass the file). Prints
the two environment variables to set (`env_for`) and leaves them in `<out>/<cpu|cuda>/env.json`. A finished
build is reused.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

VERSION = "0.3.36"
"""llama-cpp-python release whose vendored llama.cpp we build (ctypes bindings and library must match)."""
ROOT = Path(__file__).resolve().parents[3]
DEFAULT_OUT = ROOT / "build" / "llama.cpp"
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
CUDA_FLAGS = ["-DGGML_CUDA=ON", "-DCMAKE_CUDA_ARCHITECTURES=90", "-DGGML_NATIVE=OFF"]


def backend_dir(out: Path, cuda: bool) -> Path:
    return out / ("cuda" if cuda else "cpu")


def env_for(out: Path = DEFAULT_OUT, cuda: bool = False) -> dict[str, str]:
    """The variables that point llama-cpp-python and the cross-check at this build."""
    bin_dir = backend_dir(Path(out).resolve(), cuda) / "build" / "bin"
    return {"LLAMA_CPP_LIB_PATH": str(bin_dir), "LLAMA_BENCH": str(bin_dir / "llama-bench")}


COMMIT_FILE = "llama_cpp_commit.txt"
"""In a backend's folder: the vendored llama.cpp commit it was built from (llama-bench's `build_commit` cannot say
when the sdist's git history was left out, as on the bench hosts)."""


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


def env_file(out: Path = DEFAULT_OUT, cuda: bool = False) -> Path:
    """Where a finished build leaves `env_for` as JSON (what `nox -s tests` reads after building)."""
    return backend_dir(Path(out), cuda) / "env.json"


def _sdist(out: Path, given: Path | None) -> Path:
    if given is not None:
        return given
    found = sorted(out.glob(f"llama_cpp_python-{VERSION}.tar.gz"))
    if found:
        return found[0]
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", f"llama-cpp-python=={VERSION}", *PIP_SDIST, "--dest", str(out)],
        check=True,
    )
    return out / f"llama_cpp_python-{VERSION}.tar.gz"


def _source(out: Path, sdist: Path) -> Path:
    """The unpacked sdist (a directory given as --sdist is used as it is)."""
    if sdist.is_dir():
        return sdist
    src = out / "src" / f"llama_cpp_python-{VERSION}"
    if not (src / "vendor" / "llama.cpp" / "CMakeLists.txt").exists():
        shutil.rmtree(out / "src", ignore_errors=True)
        with tarfile.open(sdist) as tar:
            tar.extractall(out / "src", filter="data")
    return src


def build(out: Path = DEFAULT_OUT, sdist: Path | None = None, cuda: bool = False, jobs: int | None = None) -> dict:
    """Configure and build the libraries and llama-bench (skipped when a build with the same flags is there),
    then install the Python package on top of them; returns `env_for`."""
    out = Path(out)
    src = _source(out, _sdist(out, sdist))
    where = backend_dir(out, cuda)
    flags = CMAKE_FLAGS + (CUDA_FLAGS if cuda else [])
    stamp = where / "flags.json"
    env = env_for(out, cuda)
    if not (stamp.exists() and json.loads(stamp.read_text()) == flags and Path(env["LLAMA_BENCH"]).exists()):
        stamp.unlink(missing_ok=True)
        print(f"building llama.cpp (libraries and llama-bench) in {where / 'build'}: minutes", flush=True)
        tree = where / "build"
        # the sdist has no .git: without a ceiling, llama.cpp's build-info would take the commit of whatever
        # repository holds this folder (Fair Fight's own checkout) as llama.cpp's
        no_parent_repo = os.environ | {"GIT_CEILING_DIRECTORIES": str(src.resolve().parent)}
        subprocess.run(
            ["cmake", "-S", str(src / "vendor" / "llama.cpp"), "-B", str(tree), *flags], check=True, env=no_parent_repo
        )
        targets = ["--target", "llama", "llama-bench", "-j", str(jobs or os.cpu_count() or 2)]
        subprocess.run(["cmake", "--build", str(tree), *targets], check=True)
        stamp.write_text(json.dumps(flags))
    else:
        print(f"llama.cpp already built in {where / 'build'} (flags unchanged): reusing it", flush=True)
    (where / COMMIT_FILE).write_text(vendored_commit(src) + "\n")
    # the package's Python half only: its own CMake build is switched off, the libraries above are used
    no_index = os.environ.get("PIP_NO_INDEX") is not None
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", str(src)]
        + (["--no-build-isolation"] if no_index else []),
        check=True,
        env=os.environ | {"CMAKE_ARGS": "-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF"},
    )
    env_file(out, cuda).write_text(json.dumps(env, indent=2) + "\n")
    return env


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m runners.engines.llamacpp.build", description=__doc__.splitlines()[0])
    p.add_argument("--sdist", type=Path, default=None, help=f"llama-cpp-python {VERSION} sdist (file or directory)")
    p.add_argument("--cuda", action="store_true", help="build the CUDA backend (sm_90) as well")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--jobs", type=int, default=None)
    args = p.parse_args(argv)
    env = build(args.out, args.sdist, args.cuda, args.jobs)
    for key, value in env.items():
        print(f"export {key}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
