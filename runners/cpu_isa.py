"""Which optional x86 instruction sets this CPU really executes, proven by running them, not read from its flags.

A CPU's `/proc/cpuinfo` flags say what it advertises, which is not always what runs: on one CI-class Intel Xeon VM
that advertised `amx_tile amx_int8 amx_bf16` (XCR0's tile bits set, `arch_prctl(ARCH_REQ_XCOMP_PERM)` granted),
`tilezero` raised SIGILL, and llama.cpp built with `-march=native` died on the first decode of every quantized file
(2026-12-01, ../shared/ENVIRONMENT.md). So each instruction set a native build could enable is compiled into a tiny
program with exactly the compiler flags ggml would add for it (ggml/src/ggml-cpu/CMakeLists.txt, the non-native x86
branch), and run in a child process: it must exit 0 and print the right answer. A fault (SIGILL, SIGSEGV), a wrong
answer, a compiler that does not know the flag or a hang is an answer ("no"), never a crash of the caller.

`probe()` gives builds their candidates (llama.cpp's CMake options, `runners/engines/llamacpp/build.py`, which then
judges each build by its own kernels: the probe is a proxy, and on the Xeon VM of issue 54 its `tilezero` ran while
llama.cpp's AMX kernel faulted); `runtime_env()` keeps libraries that pick their kernels at run time from the CPU's
flags (oneDNN and ATen in torch, OpenBLAS under MLX) off a set that the CPU advertises but does not run, and off AMX
until a real kernel has run it on this boot (`prove`, `proven`).

    python -m runners.cpu_isa          (this CPU: each feature, advertised and proven)
"""

from __future__ import annotations

import functools
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from runners import cache

_HEAD = "#include <immintrin.h>\n#include <stdio.h>\n#include <string.h>\n"


@dataclass(frozen=True, kw_only=True, slots=True)
class Feature:
    """One of ggml's x86 instruction-set options."""

    option: str
    """ggml's CMake option, without `GGML_` (`AVX512_VNNI` is `-DGGML_AVX512_VNNI`)."""
    cflags: tuple[str, ...]
    """The compiler flags ggml adds for it when GGML_NATIVE is off; the probe compiles with these and the flags of
    the features it needs."""
    cpuinfo: tuple[str, ...]
    """The `/proc/cpuinfo` flags that advertise it."""
    needs: tuple[str, ...]
    """Options it builds on: enabled only where these are."""
    body: str
    """C statements computing `int r`; the probe prints it and succeeds only if it equals `expect`."""
    expect: int


# The bodies read their inputs through volatile variables so the compiler cannot fold the instruction away.
FEATURES: tuple[Feature, ...] = (
    Feature(option="SSE42", cflags=("-msse4.2",), cpuinfo=("sse4_2",), needs=(), expect=0x62228939,
            body="volatile unsigned a = 1, b = 2; int r = (int)_mm_crc32_u32(a, b);"),
    Feature(option="F16C", cflags=("-mf16c",), cpuinfo=("f16c",), needs=(), expect=3,
            body="volatile float x = 3.0f; __m128 v = _mm_set1_ps(x);"
                 "int r = (int)_mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(v, 0)));"),
    Feature(option="FMA", cflags=("-mfma",), cpuinfo=("fma",), needs=(), expect=7,
            body="volatile float x = 2.0f; __m128 v = _mm_set1_ps(x);"
                 "int r = (int)_mm_cvtss_f32(_mm_fmadd_ps(v, v, _mm_set1_ps(3.0f)));"),
    Feature(option="BMI2", cflags=("-mbmi2",), cpuinfo=("bmi2",), needs=(), expect=0x5,
            body="volatile unsigned a = 0xF5, m = 0x0F; int r = (int)_pext_u32(a, m);"),
    Feature(option="AVX", cflags=("-mavx",), cpuinfo=("avx",), needs=(), expect=16,
            body="volatile float x = 2.0f; __m256 v = _mm256_set1_ps(x); v = _mm256_mul_ps(v, v);"
                 "float o[8]; _mm256_storeu_ps(o, v); int r = (int)(o[0] + o[3] + o[5] + o[7]);"),
    Feature(option="AVX2", cflags=("-mavx2",), cpuinfo=("avx2",), needs=("AVX",), expect=24,
            body="volatile int x = 3; __m256i v = _mm256_set1_epi32(x);"
                 "v = _mm256_mullo_epi32(v, _mm256_set1_epi32(8));"
                 "int o[8]; _mm256_storeu_si256((__m256i *)o, v); int r = o[7];"),
    Feature(option="AVX_VNNI", cflags=("-mavxvnni",), cpuinfo=("avx_vnni",), needs=("AVX2",), expect=8,
            body="volatile int x = 0x01010101; __m256i a = _mm256_set1_epi32(x);"
                 "__m256i v = _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), a, _mm256_set1_epi32(0x02020202));"
                 "int o[8]; _mm256_storeu_si256((__m256i *)o, v); int r = o[0];"),
    Feature(option="AVX512", cflags=("-mavx512f", "-mavx512cd", "-mavx512vl", "-mavx512dq", "-mavx512bw"),
            cpuinfo=("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"), needs=("AVX2", "FMA", "F16C"),
            expect=80,
            body="volatile float x = 5.0f; __m512 v = _mm512_set1_ps(x); v = _mm512_add_ps(v, v);"
                 "volatile short y = 3; __m512i w = _mm512_set1_epi16(y); w = _mm512_add_epi16(w, w);"
                 "int r = (int)_mm512_reduce_add_ps(v) / 2 + _mm_extract_epi16(_mm512_castsi512_si128(w), 7) - 6;"),
    Feature(option="AVX512_VBMI", cflags=("-mavx512vbmi",), cpuinfo=("avx512vbmi",), needs=("AVX512",), expect=63,
            body="volatile char c = 0; unsigned char idx[64], src[64], o[64];"
                 "for (int i = 0; i < 64; i++) { idx[i] = (unsigned char)(63 - i); src[i] = (unsigned char)(i + c); }"
                 "__m512i v = _mm512_permutexvar_epi8(_mm512_loadu_si512(idx), _mm512_loadu_si512(src));"
                 "_mm512_storeu_si512(o, v); int r = o[0];"),
    Feature(option="AVX512_VNNI", cflags=("-mavx512vnni",), cpuinfo=("avx512_vnni",), needs=("AVX512",), expect=8,
            body="volatile int x = 0x01010101; __m512i a = _mm512_set1_epi32(x);"
                 "__m512i v = _mm512_dpbusd_epi32(_mm512_setzero_si512(), a, _mm512_set1_epi32(0x02020202));"
                 "int r = _mm512_reduce_add_epi32(v) / 16;"),
    Feature(option="AVX512_BF16", cflags=("-mavx512bf16",), cpuinfo=("avx512_bf16",), needs=("AVX512",), expect=6,
            body="volatile float x = 3.0f; __m512 v = _mm512_set1_ps(x);"
                 "__m256bh h = _mm512_cvtneps_pbh(v); __m512 back = _mm512_cvtpbh_ps(h);"
                 "int r = (int)_mm512_reduce_add_ps(back) / 8;"),
    # AMX: ask the kernel for the tile state (ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), configure two 16x64-byte
    # tiles, zero one (`tilezero`, the instruction that faulted) and multiply into it, then check a value.
    Feature(option="AMX_TILE", cflags=("-mamx-tile",), cpuinfo=("amx_tile",), needs=("AVX512",), expect=0,
            body="AMX_SETUP _tile_zero(0); int out[16 * 16]; memset(out, 1, sizeof out); _tile_stored(0, out, 64);"
                 "_tile_release(); int r = out[0] | out[255];"),
    Feature(option="AMX_INT8", cflags=("-mamx-int8",), cpuinfo=("amx_int8",), needs=("AMX_TILE", "AVX512_VNNI"),
            expect=128,
            body="AMX_SETUP signed char a[16 * 64], b[16 * 64]; int out[16 * 16];"
                 "memset(a, 1, sizeof a); memset(b, 2, sizeof b); _tile_zero(0);"
                 "_tile_loadd(1, a, 64); _tile_loadd(2, b, 64); _tile_dpbssd(0, 1, 2); _tile_stored(0, out, 64);"
                 "_tile_release(); int r = out[17];"),
    Feature(option="AMX_BF16", cflags=("-mamx-bf16",), cpuinfo=("amx_bf16",), needs=("AMX_TILE", "AVX512_BF16"),
            expect=32,
            body="AMX_SETUP unsigned short a[16 * 32], b[16 * 32]; float out[16 * 16];"
                 "for (int i = 0; i < 16 * 32; i++) { a[i] = 0x3F80; b[i] = 0x3F80; }"  # bf16 1.0
                 "_tile_zero(0); _tile_loadd(1, a, 64); _tile_loadd(2, b, 64); _tile_dpbf16ps(0, 1, 2);"
                 "_tile_stored(0, out, 64); _tile_release(); int r = (int)out[5];"),
)  # fmt: skip

_AMX_SETUP = r"""
#include <sys/syscall.h>
#include <unistd.h>
#define AMX_SETUP \
    if (syscall(SYS_arch_prctl, 0x1023, 18)) { puts("arch_prctl refused"); return 3; } \
    unsigned char cfg[64] = {0}; cfg[0] = 1; \
    for (int t = 0; t < 3; t++) { cfg[16 + 2 * t] = 64; cfg[48 + t] = 16; } \
    _tile_loadconfig(cfg);
"""
BY_OPTION = {f.option: f for f in FEATURES}
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("AMX", ("AMX_TILE", "AMX_INT8", "AMX_BF16")),
    ("AVX-512 extensions", ("AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16")),
    ("AVX-512", ("AVX512",)),
    ("AVX-VNNI", ("AVX_VNNI",)),
    ("AVX2", ("AVX2", "FMA", "F16C", "BMI2")),
    ("AVX", ("AVX",)),
    ("SSE4.2", ("SSE42",)),
)
"""The options in sets a build drops together, the most recent first: where a build's own kernels fault although the
probe ran every set (runners/engines/llamacpp/kernels.py), the most recent set still on goes first."""
PROBE_VERSION = 1
"""Names the probe programs: part of a build's key, so a changed probe re-decides."""


def _flags_for(feature: Feature) -> list[str]:
    """The feature's own flags and those of everything it needs, as ggml would pass them together."""
    seen: list[str] = []
    for option in feature.needs:
        seen += [f for f in _flags_for(BY_OPTION[option]) if f not in seen]
    return seen + [f for f in feature.cflags if f not in seen]


def _source(feature: Feature) -> str:
    amx = _AMX_SETUP if feature.option.startswith("AMX") else ""
    return f'{_HEAD}{amx}\nint main(void) {{ {feature.body} printf("%d\\n", r); return 0; }}\n'


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _compile(feature: Feature, compiler: str, folder: Path) -> str | None:
    """Build the feature's program; None, or why it could not be built."""
    src, exe = folder / f"{feature.option}.c", folder / feature.option
    src.write_text(_source(feature))
    try:
        built = subprocess.run([compiler, "-O1", *_flags_for(feature), str(src), "-o", str(exe)],
                               capture_output=True, text=True, timeout=120)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"not compiled ({type(e).__name__})"
    if built.returncode != 0:
        return "not compiled: " + (built.stderr.strip().splitlines() or ["?"])[-1][:160]
    return None


def _run(feature: Feature, folder: Path) -> str:
    """ "yes", or why not: the program faulted (signal named), hung, failed or answered wrong."""
    try:
        ran = subprocess.run([str(folder / feature.option)], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return "hung (20 s)"
    except OSError as e:
        return f"not run ({type(e).__name__})"
    if ran.returncode < 0:
        return f"faulted ({_signal_name(ran.returncode)})"
    if ran.returncode != 0:
        return f"exited {ran.returncode}: {ran.stdout.strip()[:80]}"
    if ran.stdout.strip() != str(feature.expect):
        return f"wrong answer {ran.stdout.strip()[:40]!r} (expected {feature.expect})"
    return "yes"


def cpuinfo_flags() -> frozenset[str]:
    """The flags this CPU advertises (Linux `/proc/cpuinfo`; empty elsewhere)."""
    path = Path("/proc/cpuinfo")
    if not path.exists():
        return frozenset()
    for line in path.read_text().splitlines():
        if line.startswith(("flags", "Features")):
            return frozenset(line.partition(":")[2].split())
    return frozenset()


def is_x86() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64")


def _boot_id() -> str:
    path = Path("/proc/sys/kernel/random/boot_id")
    return path.read_text().strip() if path.exists() else ""


@functools.cache
def probe(compiler: str | None = None) -> dict[str, str]:
    """Each feature's verdict on this CPU with `compiler` (CMake's: `$CC`, else `cc`): "yes" only where its program
    compiled, ran and answered right, and everything it needs is "yes" too. Empty off x86-64.

    Kept for the rest of this boot in the user cache, under a name hashed from the boot id (unique to one boot of one
    host), the compiler, the CPU's flags and the probe's version: another host sharing the cache, a reboot or another
    compiler probes afresh."""
    if not is_x86():
        return {}
    compiler = compiler or os.environ.get("CC", "cc")
    key = {"v": PROBE_VERSION, "boot": _boot_id(), "cc": cache.tool_version(compiler), "flags": sorted(cpuinfo_flags())}
    kept = cache.root() / "cpu-isa" / f"{cache.short_hash(key)}.json"
    if key["boot"]:
        try:
            found = json.loads(kept.read_text())
            whole = isinstance(found, dict) and set(found) == set(BY_OPTION)
            if whole and all(isinstance(v, str) for v in found.values()):
                return found
        except (OSError, ValueError):
            pass
    verdicts: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="fairfight-isa-") as tmp, ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        built = dict(zip(BY_OPTION, pool.map(lambda f: _compile(f, compiler, Path(tmp)), FEATURES), strict=True))
        for feature in FEATURES:  # in order: a feature's needs are decided before it
            missing = [n for n in feature.needs if verdicts.get(n) != "yes"]
            failed = built[feature.option]
            verdicts[feature.option] = (
                f"off: needs {', '.join(missing)}" if missing else failed or _run(feature, Path(tmp))
            )
    if key["boot"]:
        kept.parent.mkdir(parents=True, exist_ok=True)
        tmp_file = kept.with_name(f".{kept.name}.{os.getpid()}")
        tmp_file.write_text(json.dumps(verdicts))
        os.replace(tmp_file, kept)
    return verdicts


def enabled(verdicts: dict[str, str]) -> list[str]:
    """The options a build turns on."""
    return [option for option, verdict in verdicts.items() if verdict == "yes"]


def newest_group(on: list[str]) -> str | None:
    """The most recent set (GROUPS) with an option in `on`, or None when `on` is the baseline."""
    return next((name for name, options in GROUPS if set(options) & set(on)), None)


def without(on: list[str], group: str) -> list[str]:
    """`on` less a set's options and every option that needs one of them, in FEATURES' order."""
    dropped = set(dict(GROUPS)[group])
    for feature in FEATURES:  # in order: an option's needs come before it
        if set(feature.needs) & dropped:
            dropped.add(feature.option)
    return [option for option in on if option not in dropped]


def _proofs_file() -> Path:
    key = {"v": PROBE_VERSION, "boot": _boot_id(), "flags": sorted(cpuinfo_flags())}
    return cache.root() / "cpu-isa" / f"proven-{cache.short_hash(key)}.json"


def prove(group: str, evidence: str) -> None:
    """Keep for the rest of this boot that a real kernel ran a set (GROUPS) cleanly on this host, with what showed it
    (runners/engines/llamacpp/kernels.py: llama.cpp's AMX kernels): what `runtime_env` needs to let other libraries
    use it. Nothing is kept where the host has no boot id."""
    if not _boot_id():
        return
    path = _proofs_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = {g: e for g in dict(GROUPS) if (e := proven(g))} | {group: evidence}
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(kept, sort_keys=True))
    os.replace(tmp, path)


def proven(group: str) -> str | None:
    """How a real kernel proved a set on this boot (`prove`), or None (never, or a damaged record)."""
    try:
        found = json.loads(_proofs_file().read_text())
    except (OSError, ValueError):
        return None
    value = found.get(group) if isinstance(found, dict) else None
    return value if isinstance(value, str) and value else None


RAN_AND_FAILED = ("faulted", "wrong answer", "exited", "hung")
"""How a verdict begins when the program was built and run but did not do its job (not: a compiler that lacks the
flag, or a feature left off because one it needs is)."""


def advertised_but_faulty(verdicts: dict[str, str], flags: frozenset[str] | None = None) -> list[str]:
    """Features the CPU advertises in full whose program ran and failed: the case that crashed llama.cpp."""
    flags = cpuinfo_flags() if flags is None else flags
    return [
        f.option
        for f in FEATURES
        if verdicts.get(f.option, "").startswith(RAN_AND_FAILED) and all(name in flags for name in f.cpuinfo)
    ]


def runtime_env(
    verdicts: dict[str, str], flags: frozenset[str] | None = None, amx_proven: bool = False
) -> dict[str, str]:
    """Settings that keep libraries choosing kernels from the CPU's flags at run time off a set the CPU advertises
    but may not run: oneDNN (torch's CPU matmuls, `ONEDNN_MAX_CPU_ISA`), torch's own kernels (`ATEN_CPU_CAPABILITY`)
    and OpenBLAS's dynamic kernel choice (`OPENBLAS_CORETYPE`, whose Sapphire Rapids kernels use AMX). A set is kept
    from them where the probe ran it and it failed; AMX also wherever the CPU advertises it and no real kernel run
    on this boot has proven it (`amx_proven`: llama.cpp's kernel check ran its AMX kernels cleanly,
    runners/engines/llamacpp/kernels.py), because the probe's one instruction did not predict a real kernel. Empty
    where nothing is in doubt, as on every CPU that does not advertise AMX and runs what it advertises."""
    flags = cpuinfo_flags() if flags is None else flags
    faulty = set(advertised_but_faulty(verdicts, flags))
    if all(n in flags for n in BY_OPTION["AMX_TILE"].cpuinfo) and not amx_proven:
        faulty |= {"AMX_TILE"}
    if not faulty:
        return {}
    avx2 = verdicts.get("AVX2") == "yes" and "AVX2" not in faulty
    if faulty & {"AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16"} or verdicts.get("AVX512") != "yes":
        # no AVX-512 either: torch's own kernels to AVX2 where AVX-512 is what failed
        env = {"ONEDNN_MAX_CPU_ISA": "AVX2" if avx2 else "SSE41", "OPENBLAS_CORETYPE": "HASWELL" if avx2 else "NEHALEM"}
        advertised = all(n in flags for n in BY_OPTION["AVX512"].cpuinfo)
        return env | ({"ATEN_CPU_CAPABILITY": "avx2" if avx2 else "default"} if advertised else {})
    best = "AVX512_CORE_BF16" if verdicts.get("AVX512_BF16") == "yes" else "AVX512_CORE"
    if best == "AVX512_CORE_BF16" and "avx512_fp16" in flags:
        # oneDNN's level just below AMX: its float8 matmul (torch._scaled_mm on a CPU, the fsdp2-float8 variant's
        # CPU test) has no kernel under it ("could not create a primitive descriptor" at AVX512_CORE_BF16, and ran
        # at AVX512_CORE_FP16, torch 2.13 on an Intel Xeon VM whose AMX faulted, 2026-12-06). AVX512-FP16 works on
        # the ZMM state the AVX-512 probe already ran on; AMX needs tile state of its own, which is what faults.
        best = "AVX512_CORE_FP16"
    return {"ONEDNN_MAX_CPU_ISA": best, "OPENBLAS_CORETYPE": "SKYLAKEX"}


def summary(verdicts: dict[str, str]) -> dict[str, object]:
    """What a record keeps of the decision: the probe's version, each verdict, and what was advertised but faulted."""
    return {
        "probe_version": PROBE_VERSION,
        "verdicts": dict(verdicts),
        "advertised_but_faulty": advertised_but_faulty(verdicts),
        "key": cache.short_hash({"v": PROBE_VERSION, "verdicts": verdicts}),
    }


def main() -> int:
    verdicts = probe()
    if not verdicts:
        print(f"{platform.machine()}: no x86 instruction sets to probe")
        return 0
    flags = cpuinfo_flags()
    for f in FEATURES:
        shown = "advertised" if all(n in flags for n in f.cpuinfo) else "not advertised"
        print(f"{f.option:12} {shown:15} {verdicts[f.option]}")
    env = runtime_env(verdicts, flags)
    if env:
        print("runtime settings: " + json.dumps(env))
    return 0


if __name__ == "__main__":
    sys.exit(main())
