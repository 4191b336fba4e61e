"""The instruction-set probe: a fault in the probed program is an answer, never a crash; builds enable only what ran,
say every option out loud and key on the decision; libraries that pick kernels at run time are kept off an
instruction set the CPU advertises but cannot run. Real compiler, real child processes: on x86-64 only."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from runners import bench, cpu_isa, spec
from runners.engines.llamacpp import build as llamacpp_build

x86 = pytest.mark.skipif(not cpu_isa.is_x86(), reason="the probe tests x86-64 instruction sets")
AVX2 = cpu_isa.BY_OPTION["AVX2"]


@x86
def test_a_faulting_wrong_or_unbuildable_program_is_an_answer(tmp_path: Path) -> None:
    """`tilezero` raised SIGILL on a CPU that advertised AMX: the probe's child takes the fault, the caller reads it."""
    trap = dataclasses.replace(AVX2, option="TRAP", body="__builtin_trap(); int r = 0;")
    wrong = dataclasses.replace(AVX2, option="WRONG", expect=25)
    unknown = dataclasses.replace(AVX2, option="UNKNOWN", cflags=("-mno-such-instruction-set",))
    assert cpu_isa._compile(trap, "cc", tmp_path) is None
    assert cpu_isa._run(trap, tmp_path) == "faulted (SIGILL)"
    verdict = cpu_isa._compile(wrong, "cc", tmp_path) or cpu_isa._run(wrong, tmp_path)
    assert verdict in ("wrong answer '24' (expected 25)", "faulted (SIGILL)")  # SIGILL: a CPU without AVX2
    assert cpu_isa._compile(unknown, "cc", tmp_path).startswith("not compiled")
    faulty = {"AVX2": "faulted (SIGILL)", "AVX512": "not compiled: ...", "AVX512_VNNI": "off: needs AVX512"}
    everything = frozenset(f for feature in cpu_isa.FEATURES for f in feature.cpuinfo)
    # only a program that ran and failed counts as faulty: a compiler that lacks a flag says nothing of the CPU
    assert cpu_isa.advertised_but_faulty(faulty, everything) == ["AVX2"]


@x86
def test_the_probe_decides_every_feature_on_this_host() -> None:
    verdicts = cpu_isa.probe()
    assert list(verdicts) == [f.option for f in cpu_isa.FEATURES]
    for feature in cpu_isa.FEATURES:
        if verdicts[feature.option] == "yes":  # a feature runs only where everything it needs does
            assert all(verdicts[n] == "yes" for n in feature.needs), feature.option
    assert verdicts["SSE42"] == "yes"  # every x86-64 host we run on has run it (the baseline of our CI machines)
    assert cpu_isa.probe() is verdicts  # once per process; and kept for the boot, under a key of its inputs
    assert any((cpu_isa.cache.root() / "cpu-isa").glob("*.json"))


@x86
def test_the_llama_cpp_build_enables_only_what_ran_and_keys_on_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Like the Xeon VM of 2026-12-01: AMX advertised, `tilezero` faulting; everything up to AVX-512 BF16 running."""
    host = {f.option: "yes" for f in cpu_isa.FEATURES} | {"AVX_VNNI": "faulted (SIGILL)"}
    host |= {"AMX_TILE": "faulted (SIGILL)", "AMX_INT8": "off: needs AMX_TILE", "AMX_BF16": "off: needs AMX_TILE"}
    monkeypatch.setattr(cpu_isa, "probe", lambda compiler=None: host)
    flags = llamacpp_build.flags(cuda=False)
    assert "-DGGML_NATIVE=OFF" in flags and not any("NATIVE=ON" in f or "march" in f for f in flags)
    for feature in cpu_isa.FEATURES:  # every option said out loud: ggml's defaults move with SOURCE_DATE_EPOCH
        state = "ON" if host[feature.option] == "yes" else "OFF"
        assert f"-DGGML_{feature.option}={state}" in flags
    assert "-DGGML_AMX_TILE=OFF" in flags and "-DGGML_AVX512_BF16=ON" in flags
    assert llamacpp_build.flags(cuda=True)[: len(flags)] == flags  # the CUDA build's CPU half decides alike
    amx_off = llamacpp_build.backend_dir()
    monkeypatch.setattr(cpu_isa, "probe", lambda compiler=None: {f.option: "yes" for f in cpu_isa.FEATURES})
    assert llamacpp_build.backend_dir() != amx_off  # another decision, another build: never one for the other


def test_libraries_are_kept_off_amx_only_where_it_is_advertised_and_faulty() -> None:
    amx = frozenset({"avx512f", "amx_tile", "amx_int8", "amx_bf16"})
    ran = {f.option: "yes" for f in cpu_isa.FEATURES}
    faulted = ran | {"AMX_TILE": "faulted (SIGILL)", "AMX_INT8": "off: needs AMX_TILE"}
    guard = {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16", "OPENBLAS_CORETYPE": "SKYLAKEX"}
    assert cpu_isa.runtime_env(faulted, amx) == guard
    assert cpu_isa.runtime_env(ran, amx) == {}  # AMX runs: nothing to keep it from
    assert cpu_isa.runtime_env(faulted, frozenset({"avx512f"})) == {}  # not advertised: no library would pick it
    not_built = ran | {"AMX_TILE": "not compiled: unknown flag"}
    assert cpu_isa.runtime_env(not_built, amx) == {}  # an old compiler says nothing of the CPU


def test_the_bench_hands_cpu_runners_the_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    guard = {"ONEDNN_MAX_CPU_ISA": "AVX2", "OPENBLAS_CORETYPE": "HASWELL"}
    monkeypatch.setattr(cpu_isa, "runtime_env", lambda verdicts: guard)
    monkeypatch.setattr(cpu_isa, "probe", lambda compiler=None: {})
    variant = spec.load_suite("cpu-smoke").variants["ddp-amp-stock"]
    assert bench.runner_env("cpu", variant).items() >= guard.items()
    assert not bench.runner_env("cuda", variant).keys() & guard.keys()
    from runners import provenance  # and a record shows them: they change which kernels ran

    assert provenance.environment(guard) == guard
