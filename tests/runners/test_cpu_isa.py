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


def test_libraries_are_kept_off_amx_wherever_it_is_advertised_and_unproven() -> None:
    amx = frozenset({"avx512f", "amx_tile", "amx_int8", "amx_bf16"})
    ran = {f.option: "yes" for f in cpu_isa.FEATURES}
    faulted = ran | {"AMX_TILE": "faulted (SIGILL)", "AMX_INT8": "off: needs AMX_TILE"}
    guard = {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16", "OPENBLAS_CORETYPE": "SKYLAKEX"}
    assert cpu_isa.runtime_env(faulted, amx) == guard
    assert cpu_isa.runtime_env(faulted, amx, amx_proven=True) == guard  # a fault of the probe's is never overruled
    # the probe ran `tilezero`, but only a real kernel run proves AMX (issue 54): unproven, it is kept off
    assert cpu_isa.runtime_env(ran, amx) == guard
    assert cpu_isa.runtime_env(ran, amx, amx_proven=True) == {}
    assert cpu_isa.runtime_env(faulted, frozenset({"avx512f"})) == {}  # not advertised: no library would pick it
    not_built = ran | {"AMX_TILE": "not compiled: unknown flag"}
    assert cpu_isa.runtime_env(not_built, amx, amx_proven=True) == {}  # an old compiler says nothing of the CPU
    # a Sapphire Rapids-class CPU: oneDNN kept at its level just below AMX, where its float8 matmul has a kernel
    fp16 = cpu_isa.runtime_env(faulted, amx | {"avx512_fp16"})
    assert fp16 == guard | {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_FP16"}
    avx512 = frozenset(f for o in ("AVX2", "AVX512") for f in cpu_isa.BY_OPTION[o].cpuinfo)
    no_avx512 = ran | {"AVX512": "faulted (SIGILL)"}
    assert cpu_isa.runtime_env(no_avx512, avx512) == {
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "OPENBLAS_CORETYPE": "HASWELL",
        "ATEN_CPU_CAPABILITY": "avx2",
    }
    assert cpu_isa.runtime_env(ran, avx512) == {}  # runs what it advertises, no AMX: nothing in doubt


def test_a_proof_of_amx_holds_for_this_boot_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIRFIGHT_CACHE", str(tmp_path))
    monkeypatch.setattr(cpu_isa, "_boot_id", lambda: "boot-1")
    assert cpu_isa.proven("AMX") is None
    cpu_isa.prove("AMX", "llama.cpp's AMX kernels ran q8_0 (a recorded proof, no kernel run)")
    assert cpu_isa.proven("AMX") == "llama.cpp's AMX kernels ran q8_0 (a recorded proof, no kernel run)"
    monkeypatch.setattr(cpu_isa, "_boot_id", lambda: "boot-2")  # rebooted, or another host sharing the cache
    assert cpu_isa.proven("AMX") is None
    monkeypatch.setattr(cpu_isa, "_boot_id", lambda: "boot-1")
    cpu_isa._proofs_file().write_text("[1, 2]")  # damaged: no proof
    assert cpu_isa.proven("AMX") is None


def test_the_bench_hands_cpu_runners_the_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    guard = {"ONEDNN_MAX_CPU_ISA": "AVX2", "OPENBLAS_CORETYPE": "HASWELL"}
    monkeypatch.setattr(cpu_isa, "runtime_env", lambda verdicts, amx_proven=False: guard)
    monkeypatch.setattr(cpu_isa, "probe", lambda compiler=None: {})
    variant = spec.load_suite("cpu-smoke").variants["ddp-amp-stock"]
    assert bench.runner_env("cpu", variant).items() >= guard.items()
    assert not bench.runner_env("cuda", variant).keys() & guard.keys()
    from runners import provenance  # and a record shows them: they change which kernels ran

    assert provenance.environment(guard) == guard


def test_sets_are_dropped_newest_first_with_everything_that_needs_them() -> None:
    every = [f.option for f in cpu_isa.FEATURES]
    assert sorted(o for _, options in cpu_isa.GROUPS for o in options) == sorted(every)  # each option in one set
    assert cpu_isa.newest_group(every) == "AMX" and cpu_isa.newest_group([]) is None
    assert cpu_isa.without(every, "AMX") == [o for o in every if not o.startswith("AMX")]
    no_avx512 = cpu_isa.without(every, "AVX-512")  # the extensions and AMX need it: they go with it
    assert no_avx512 == ["SSE42", "F16C", "FMA", "BMI2", "AVX", "AVX2", "AVX_VNNI"]
    assert cpu_isa.newest_group(no_avx512) == "AVX-VNNI"
    assert cpu_isa.without(every, "AVX2") == ["SSE42", "AVX"]


@x86
def test_a_build_whose_kernels_faulted_is_followed_by_one_without_the_newest_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ladder `plan` walks on this boot's record of checks. The verdicts here are written by the test, not by a
    kernel run (the real fault, a build for a set this host lacks, is tests/runners/engines/test_llamacpp.py's)."""
    from runners.engines.llamacpp import kernels

    monkeypatch.setenv("FAIRFIGHT_CACHE", str(tmp_path))
    monkeypatch.setattr(cpu_isa, "probe", lambda compiler=None: {f.option: "yes" for f in cpu_isa.FEATURES})
    first = llamacpp_build.plan()
    assert first.checked is None and first.refuted == () and "AMX_INT8" in first.on
    kernels.record(first.base, first.key, {"result": "faulted", "summary": "faulted (SIGILL) on q8_0"})
    second = llamacpp_build.plan()
    assert second.on == tuple(o for o in first.on if not o.startswith("AMX"))
    assert second.refuted == (("AMX", "faulted (SIGILL) on q8_0"),) and second.where != first.where
    assert "-DGGML_AMX_INT8=OFF" in second.flags and "-DGGML_AVX512_BF16=ON" in second.flags
    # the refusal is in the key: not the folder of a build the probe alone left without AMX
    monkeypatch.setattr(cpu_isa, "probe", lambda compiler=None: {o: "yes" for o in second.on})
    assert llamacpp_build.plan().where != second.where
    monkeypatch.setattr(cpu_isa, "probe", lambda compiler=None: {f.option: "yes" for f in cpu_isa.FEATURES})
    kernels.record(second.base, second.key, {"result": "ok", "summary": "ran f16, q8_0, q4_k_m with 1 and 2 threads"})
    assert llamacpp_build.plan() == dataclasses.replace(second, checked=kernels.records(second.base)[second.key])
    for _ in range(len(cpu_isa.GROUPS)):  # every build faults: down to the baseline, then a refusal in words
        now = llamacpp_build.plan()
        kernels.record(now.base, now.key, {"result": "faulted", "summary": f"faulted (SIGILL) with {len(now.on)} sets"})
        if not now.on:
            break
    with pytest.raises(llamacpp_build.BuildError, match="fault on this host even with no optional instruction set"):
        llamacpp_build.plan()
