"""llama.cpp on CPU with a tiny Llama shape: the model files read back in every format, and a real bench session
(llama-cpp-python and llama-bench, both from one build of the vendored llama.cpp) records every test."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from generator import load
from runners import cache, cpu_isa, layout, llama_files, llama_quant, metrics, spec
from runners.engines.llamacpp import build as llamacpp_build
from runners.engines.llamacpp import kernels
from runners.engines.llamacpp import runner as llamacpp_runner
from tests.conftest import run_module

SMOKE = spec.load_suite("cpu-smoke")
TINY = SMOKE.models["llama-tiny"]
ENTRY = SMOKE.inference_entry("llama-tiny")


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory, llama_build: dict[str, str]) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.mark.engine
def test_every_format_reads_back_with_the_spec_shapes(model_cache: Path, mlx_engine: str) -> None:
    """GGUF (F16, Q8_0 and Q4_K_M, each written directly), the Hugging Face folder and MLX all hold the spec's
    tensors; the F16 GGUF and the safetensors hold the same values (q and k permuted for llama.cpp)."""
    import gguf
    import mlx.core as mx
    import numpy as np
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    shapes = llama_files.hf_shapes(TINY)
    assert sum(math.prod(s) for s in shapes.values()) == TINY.total_params
    folder = llama_files.hf_folder(TINY, ENTRY.seed, model_cache)
    st = load_file(str(folder / "model.safetensors"))
    assert {k: v.shape for k, v in st.items()} == shapes
    config = json.loads((folder / "config.json").read_text())
    assert (config["hidden_size"], config["num_key_value_heads"], config["vocab_size"]) == (256, 2, 512)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))  # offline: a file, no hub
    assert tokenizer.get_vocab_size() == TINY.vocab
    assert tokenizer.decode(tokenizer.encode("the fair fight").ids) == "the fair fight"
    mlx_weights = mx.load(str(folder / "model.safetensors"))
    assert {k: tuple(v.shape) for k, v in mlx_weights.items()} == shapes
    for weights in llama_files.WEIGHT_TYPES:
        path, how = llama_quant.gguf_file(TINY, ENTRY.seed, weights, model_cache)
        assert how["sha256"] == cache.file_sha256(path) and how["weights"] == weights
        reader = gguf.GGUFReader(str(path))
        tensors = {t.name: t for t in reader.tensors}
        assert set(tensors) == {llama_files.gguf_name(n) for n in shapes}
        assert sum(int(t.n_elements) for t in tensors.values()) == TINY.total_params
        for name, shape in shapes.items():
            assert tuple(int(d) for d in reversed(tensors[llama_files.gguf_name(name)].shape)) == shape
        if weights == "f16":
            q, v = "model.layers.0.self_attn.q_proj.weight", "model.layers.1.self_attn.v_proj.weight"
            q_gguf = np.asarray(tensors["blk.0.attn_q.weight"].data).reshape(shapes[q])
            assert np.array_equal(q_gguf, llama_files._permute(st[q], TINY.heads))
            assert np.array_equal(np.asarray(tensors["blk.1.attn_v.weight"].data).reshape(shapes[v]), st[v])
        else:
            assert how["tool"] == "runners.llama_quant.write_gguf_quantized" and "from_sha256" not in how
    # the same key gives the same bytes: a second cache makes an identical F16 file
    again, _ = llama_quant.gguf_file(TINY, ENTRY.seed, "f16", model_cache / "again")
    first, _ = llama_quant.gguf_file(TINY, ENTRY.seed, "f16", model_cache)
    assert cache.file_sha256(again) == cache.file_sha256(first)


def test_kv_cache_bytes_follow_grouped_query_attention() -> None:
    eight_b = spec.load_suite("h100").models["llama-8b"]
    # Llama-3-8B: 32 layers × 8 kv heads × 128 dims × (2 + 2) bytes = 128 KiB per token of context
    assert metrics.kv_cache_bytes_per_token(eight_b, 2, 2) == 131072
    assert metrics.mbu(16e9, 100, 4.8e12) == pytest.approx(1 / 3)


DECODE = """
import sys
import llama_cpp
llama_cpp.llama_backend_init()
model = llama_cpp.llama_model_load_from_file(sys.argv[1].encode(), llama_cpp.llama_model_default_params())
assert model, "not loaded"
params = llama_cpp.llama_context_default_params()
params.n_ctx, params.n_threads, params.n_threads_batch = 128, 2, 2
ctx = llama_cpp.llama_init_from_model(model, params)
for tokens in ([1, 2, 3, 4, 5, 6, 7, 8], [9], [10]):  # a prompt batch, then two single-token decodes
    array = (llama_cpp.llama_token * len(tokens))(*tokens)
    assert llama_cpp.llama_decode(ctx, llama_cpp.llama_batch_get_one(array, len(tokens))) == 0
logits = llama_cpp.llama_get_logits_ith(ctx, -1)
assert all(logits[i] == logits[i] for i in range(8)), "NaN logits"
print("decoded", " ".join(repr(logits[i]) for i in range(16)))
"""


def _decode(path: Path, llama_build: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", DECODE, str(path)], capture_output=True, text=True, timeout=300,
                          env=os.environ | llama_build)  # fmt: skip


EIGHTY = spec.ModelSpec(name="llama-tiny-80", family="llama", vocab=512, dim=256, layers=80, heads=4, kv_heads=2,
                        ffn_dim=512, context=256, norm="rmsnorm", activation="swiglu",
                        tied_embeddings=False)  # fmt: skip
"""80 layers with grouped-query attention: llama.cpp takes it for a 70B (LLM_TYPE_70B), whose attn_v it quantizes
differently, and `use_more_bits` picks layers all along it."""


@pytest.mark.engine
@pytest.mark.parametrize("model", [TINY, EIGHTY], ids=["2-layer", "80-layer"])
@pytest.mark.parametrize("weights", ["q8_0", "q4_k_m"])
def test_a_direct_quantized_file_is_the_quantizers_file(weights, model, tmp_path: Path, llama_build) -> None:
    """Written from the pool's quantized blocks, never through F16 (a 70B F16 file does not fit a bench host's disk),
    the file holds what llama.cpp's own quantizer makes of the F16 file: every tensor's type and bytes, and so the
    same logits."""
    import gguf
    import numpy as np

    direct, how = llama_quant.gguf_file(model, 0, weights, tmp_path)
    f16, _ = llama_quant.gguf_file(model, 0, "f16", tmp_path)
    theirs = tmp_path / f"quantizer-{weights}.gguf"
    llama_files.quantize(f16, theirs, weights)
    ours = {t.name: t for t in gguf.GGUFReader(str(direct)).tensors}
    quantized = {t.name: t for t in gguf.GGUFReader(str(theirs)).tensors}
    assert set(ours) == set(quantized)
    for name, t in quantized.items():
        assert ours[name].tensor_type == t.tensor_type, (name, ours[name].tensor_type.name, t.tensor_type.name)
        assert np.array_equal(np.asarray(ours[name].data), np.asarray(t.data)), name
    kinds = {t.tensor_type.name for t in ours.values()}
    k_quants = {"F32", "Q4_K", "Q6_K"} | ({"Q5_K"} if model is EIGHTY else set())
    assert kinds == ({"F32", "Q8_0"} if weights == "q8_0" else k_quants)
    assert sum(how["tensor_types"].values()) == len(ours)
    mine, reference = _decode(direct, llama_build), _decode(theirs, llama_build)
    assert mine.returncode == 0 and reference.returncode == 0, mine.stderr[-2000:] + reference.stderr[-2000:]
    assert mine.stdout == reference.stdout  # the same logits


def test_direct_quantization_refuses_rows_that_do_not_split_into_blocks() -> None:
    odd = spec.ModelSpec(name="odd", family="llama", vocab=512, dim=192, layers=1, heads=3, kv_heads=1, ffn_dim=384,
                         context=64, norm="rmsnorm", activation="swiglu", tied_embeddings=False)  # fmt: skip
    assert llama_quant.tensor_type(odd, "model.layers.0.mlp.up_proj.weight", "q8_0") == llama_quant.Q8_0
    with pytest.raises(ValueError, match="rows of 192 values do not split into Q4_K blocks of 256"):
        llama_quant.tensor_type(odd, "model.layers.0.mlp.up_proj.weight", "q4_k_m")


@pytest.mark.engine
@pytest.mark.parametrize("weights", ["q8_0", "q4_k_m"])
def test_a_quantized_decode_exits_cleanly(weights: str, model_cache: Path, llama_build: dict[str, str]) -> None:
    """In a child process, so that a fault is a red test that says what faulted, not a crashed fixture: on a CPU
    that advertised AMX but could not run it, llama.cpp built for "native" died with SIGILL at `tilezero` on the first
    decode of every Q8_0 and Q4_K_M file, F16 decoding fine (issue of 2026-12-01)."""
    import signal

    path, _ = llama_quant.gguf_file(TINY, ENTRY.seed, weights, model_cache)
    done = _decode(path, llama_build)
    flags = (Path(llama_build["LLAMA_BENCH"]).parents[2] / "flags.json").read_text()
    how = signal.Signals(-done.returncode).name if done.returncode < 0 else f"exit {done.returncode}"
    assert done.returncode == 0 and "decoded" in done.stdout, (
        f"decoding a {weights} file with llama.cpp's CPU build ended with {how}; the build's flags: {flags}\n"
        f"{done.stderr[-3000:]}"
    )


@pytest.mark.engine
def test_the_builds_instruction_sets_hold_in_a_real_decode(llama_build: dict[str, str], tmp_path: Path) -> None:
    """The build every llama.cpp test uses was judged on this boot by its own kernels, and they run again now: the
    built llama-bench, in a child process, on tiny F16, Q8_0 and Q4_K_M files with one thread and several. A decision
    that keeps a set the kernels fault on is a red test naming the sets, not a crashed fixture (issue 54: on a Xeon VM
    the probe ran `tilezero`, and llama.cpp's AMX kernel died with SIGILL at `tilezero`)."""
    where = Path(llama_build["LLAMA_BENCH"]).parents[2]
    chosen = llamacpp_build.plan()
    assert chosen.where == where and chosen.checked is not None and chosen.checked["result"] == "ok"
    decision = json.loads((where / llamacpp_build.ISA_FILE).read_text())
    assert decision["enabled"] == list(chosen.on) and decision["kernel_check"]["boot"] == kernels.boot()
    src = llamacpp_build.cache_dir() / "src" / f"llama_cpp_python-{llamacpp_build.VERSION}"  # the build's source
    again = kernels.check(where / "build" / "bin", tmp_path, bindings=src)
    sets = " ".join(chosen.on) or "no optional set"
    assert again["result"] == "ok", f"llama.cpp built for {sets} faulted in its own kernels: {again['summary']}"
    assert [r["weights"] for r in again["runs"]] == list(kernels.WEIGHTS) * 2  # llama-bench, then the bindings
    tests = len(kernels.threads()) * (len(kernels.PROMPTS) + 1)
    assert [r["tests"] for r in again["runs"]] == [tests] * 3 + [len(kernels.threads()) * kernels.REPETITIONS] * 3
    # where the build has AMX, the check ran ggml's AMX kernels (else it would have proved nothing of them)
    assert any(r["amx"] for r in again["runs"]) == ("AMX_INT8" in chosen.on)
    # each set the probe ran and the build leaves off was refuted by a fault of the kernels, newest first
    on = llamacpp_build.candidates()
    for refuted in decision["refuted_by_kernels"]:
        assert refuted["set"] == cpu_isa.newest_group(on) and refuted["evidence"].startswith(("faulted", "hung"))
        on = cpu_isa.without(on, refuted["set"])
    assert on == list(chosen.on)


def _unrunnable_set(verdicts: dict[str, str]) -> tuple[str, list[str]] | None:
    """The newest set this CPU cannot run whose instructions ggml's kernels use without asking the kernel first (not
    AMX: ggml asks Linux for the tile state and keeps off AMX where it is refused): its options, claimed with what
    they need."""
    for group, options in cpu_isa.GROUPS[1:]:
        claimed: list[str] = []
        for feature in cpu_isa.FEATURES:
            runnable = feature.option in options and not verdicts[feature.option].startswith(("yes", "not compiled"))
            if runnable and all(verdicts[n] == "yes" or n in claimed for n in feature.needs):
                claimed.append(feature.option)
        if any(verdicts[o].startswith("faulted") for o in claimed):
            return group, claimed
    return None


@pytest.mark.engine
@pytest.mark.slow
def test_a_set_the_probe_vouches_for_but_the_kernels_fault_on_is_dropped(
    llama_build: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real fault of llama.cpp's kernels on this CPU: the probe is made to vouch for the newest set this CPU cannot
    run (as the Xeon VM's probe vouched for AMX), llama.cpp is built for it in a folder of the test's own, its kernels
    die, and the build is made again without that set; that one decodes. Only the probe's answer is not real."""
    truth = cpu_isa.probe()
    found = _unrunnable_set(truth)
    if not cpu_isa.is_x86() or found is None:
        pytest.skip("this CPU runs every set whose kernels ggml uses unasked: no real fault to make")
    group, claimed = found
    monkeypatch.setattr(cpu_isa, "probe", lambda compiler=None: truth | {o: "yes" for o in claimed})
    out = tmp_path / "llama"
    src = llamacpp_build.cache_dir() / "src" / f"llama_cpp_python-{llamacpp_build.VERSION}"  # the fixture's source
    old_choice = llamacpp_build.plan(out)
    chosen = llamacpp_build.make(out, sdist=src)
    seen = kernels.records(out)
    assert seen[old_choice.key]["result"] == "faulted", seen  # the probe's choice: its kernels died on this CPU
    assert any(r["verdict"].startswith("faulted (SIG") for r in seen[old_choice.key]["runs"])
    assert [g for g, _ in chosen.refuted] == [group] and set(chosen.on) == set(cpu_isa.enabled(truth))
    assert seen[chosen.key]["result"] == "ok" and chosen.checked == seen[chosen.key]
    decision = json.loads((chosen.where / llamacpp_build.ISA_FILE).read_text())
    assert [r["set"] for r in decision["refuted_by_kernels"]] == [group]
    env = llamacpp_build.env_for(out)
    assert json.loads((chosen.where / llamacpp_build.STAMP).read_text()) == chosen.flags
    path, _ = llama_quant.gguf_file(TINY, ENTRY.seed, "q8_0", tmp_path / "models")
    done = _decode(path, env)  # the test's decode, through the Python bindings, with the build kept
    assert done.returncode == 0 and "decoded" in done.stdout, done.stderr[-2000:]
    recorded = llamacpp_build.build_provenance(env["LLAMA_CPP_LIB_PATH"])
    assert recorded["llama.cpp isa check"].startswith("ok on this boot: ran f16, q8_0, q4_k_m with 1 and ")
    assert "through llama-bench and the bindings" in recorded["llama.cpp isa check"]
    assert recorded["llama.cpp isa refuted"].startswith(f"{group} (faulted (SIG")


@pytest.mark.engine
def test_a_fault_only_in_the_bindings_is_not_taken_for_the_instruction_sets(
    llama_build: dict[str, str], tmp_path: Path
) -> None:
    """On the H200 image (an Intel Xeon VM with AMX), llama-bench ran every build's kernels cleanly, the AMX ones
    included, while the bindings' decode died with SIGSEGV in every build, the baseline's too; the check took each
    fault for the newest set's and built five times before blaming the CPU. Here the bindings package the check
    loads is one whose first call dereferences a null pointer (a real SIGSEGV in the decode's process, standing in
    for that image's, which cannot be made on this host) and the build is the fixture's real one: llama-bench runs,
    the decode faults, the evidence keeps the fault handler's stack, and the check says the fault is the bindings'
    alone, which `build.make` answers with a build with no optional set before it drops one."""
    bindings = tmp_path / "bindings"
    (bindings / "llama_cpp").mkdir(parents=True)
    (bindings / "llama_cpp" / "__init__.py").write_text(
        "import ctypes\n\ndef llama_backend_init():\n    ctypes.string_at(0)  # a null pointer: SIGSEGV\n"
    )
    where = Path(llama_build["LLAMA_BENCH"]).parents[2]
    result = kernels.check(where / "build" / "bin", tmp_path / "models", bindings=bindings)
    bench = [r for r in result["runs"] if not r["command"].startswith("llama_cpp")]
    decodes = [r for r in result["runs"] if r["command"].startswith("llama_cpp")]
    assert [r["verdict"] for r in bench] == ["ran"] * 3
    assert [r["verdict"] for r in decodes] == ["faulted (SIGSEGV)"] * 3, decodes
    assert result["result"] == "faulted" and kernels.only_bindings_faulted(result)
    assert all("Fatal Python error: Segmentation fault" in r["stderr"] for r in decodes)
    assert all("llama_backend_init" in r["stderr"] for r in decodes)  # the stack names where the decode died
    # a fault of llama-bench itself (the CI Xeon's SIGILL at `tilezero`) is the instruction sets' to answer for
    bench_fault = result | {"runs": [bench[0] | {"verdict": "faulted (SIGILL)"}, *result["runs"][1:]]}
    assert not kernels.only_bindings_faulted(bench_fault)
    clean = result | {"runs": [r | {"verdict": "ran"} for r in result["runs"]]}
    assert not kernels.only_bindings_faulted(clean)


@pytest.fixture(scope="session")
def llama_bench_data(
    tmp_path_factory: pytest.TempPathFactory, llama_build: dict[str, str]
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """A real `python -m runners bench --suite cpu-smoke --workload llama-tiny` of two variants."""
    data = tmp_path_factory.mktemp("llama") / "data"
    proc = run_module(
        "runners",
        "bench",
        "--suite",
        "cpu-smoke",
        "--workload",
        "llama-tiny",
        "--variant",
        "llamacpp-f16",
        "--variant",
        "llamacpp-q8_0",
        "--data-dir",
        str(data),
        FAIRFIGHT_CACHE=str(tmp_path_factory.mktemp("cache")),
        **llama_build,
    )
    return data, proc


@pytest.mark.engine
@pytest.mark.slow
def test_bench_records_every_test_and_the_llama_bench_cross_check(llama_bench_data, llama_build) -> None:
    data, proc = llama_bench_data
    commit_file = Path(llama_build["LLAMA_BENCH"]).parents[2] / "llama_cpp_commit.txt"
    commit = commit_file.read_text().strip()[:12] if commit_file.exists() else "unknown"
    records = {}
    for path in sorted((data / "cpu-smoke").rglob("*.parquet")):
        rows = layout.read(path).to_pylist()
        records[(rows[0]["engine"], rows[0]["variant"], rows[0]["workload"])] = rows
    tests = [t.workload for t in ENTRY.tests()]
    assert len(records) == 2 * 2 * len(tests), proc.stdout  # two variants, each measured and cross-checked
    for variant in ("llamacpp-f16", "llamacpp-q8_0"):
        for engine in ("llamacpp", "llama-bench"):
            found = {w: records[(engine, variant, w)] for w in tests if (engine, variant, w) in records}
            assert sorted(found) == sorted(tests), (variant, engine, proc.stdout)
            for rows in found.values():
                head = rows[0]
                assert head["status"] == "ok"
                assert head["origin"] == ("measured" if engine == "llamacpp" else "imported")
                rates = [r["value"] for r in rows if r["metric"] == "tokens_per_s"]
                assert len(rates) == ENTRY.repetitions and all(r > 0 and math.isfinite(r) for r in rates)
                config = json.loads(head["config"])
                assert config["variant"]["settings"]["weights"] == variant.removeprefix("llamacpp-")
                assert config["variant"]["settings"]["n_threads"] >= 1  # pinned, not "0"
                assert config["model_file"]["sha256"] and config["workload"]["depth"] in ENTRY.depths
                built = json.loads(head["software"])  # which kernels produced it: the build's instruction sets
                assert built["llama.cpp build"] == Path(llama_build["LLAMA_BENCH"]).parents[2].name
                flags = json.loads((Path(llama_build["LLAMA_BENCH"]).parents[2] / "flags.json").read_text())
                on = [f[len("-DGGML_") : -len("=ON")] for f in flags if f.startswith("-DGGML_") and f.endswith("=ON")]
                native = "-DGGML_NATIVE=ON" in flags  # off x86-64: no probe, a native build
                expected = "native: what the CPU advertises" if native else " ".join(on) or "baseline x86-64"
                assert built["llama.cpp isa"] == expected
                assert built["llama.cpp isa faulty"] == (
                    None if native else " ".join(cpu_isa.advertised_but_faulty(cpu_isa.probe())) or "none"
                )
                if engine == "llama-bench":  # the same settings went to llama-bench, explicitly
                    cmd = config["imported"]["command"]
                    assert f"-t {config['variant']['settings']['n_threads']}" in cmd and "-fa on" in cmd
                    assert head["engine_version"] == f"llama.cpp {commit} of llama-cpp-python 0.3.36"
                else:
                    own = [r["value"] for r in rows if r["metric"] == "llama_tokens"]
                    assert own == [float(config["workload"]["n_tokens"])] * ENTRY.repetitions
            for rows in found.values():  # one whole repetition untimed first, on both sides; llama-bench's is dropped
                config = json.loads(rows[0]["config"])
                assert config["workload"]["untimed_repetitions"] == llamacpp_runner.UNTIMED_REPETITIONS == 1
                if engine == "llama-bench":
                    assert len(config["imported"]["result"]["samples_ns"]) == ENTRY.repetitions + 1
            if engine == "llamacpp":  # as llama-bench: the depth is filled once, by the untimed repetition of its first
                # test; every timed repetition restores the state it kept
                for depth in ENTRY.depths:
                    at_depth = [rows for w, rows in found.items() if w.endswith(f"-d{depth}")]
                    fills = [json.loads(rows[0]["config"])["workload"]["depth_fills"] for rows in at_depth]
                    assert sum(fills) == 0, (variant, depth, fills)
    assert "summary" in proc.stdout and "tokens/s" in proc.stdout


@pytest.mark.engine
@pytest.mark.slow
def test_the_site_ranks_the_runner_beside_llama_bench(llama_bench_data, tmp_path: Path) -> None:
    """An inference test's page shows each runner record beside llama-bench's figure and the ratio: a row that
    disagrees beyond the tolerance is listed with the ratio that kept it out (a tiny model on a shared 2-core CPU does
    not always agree within 5%); one that agrees, from one run with no repeats of identical settings on this host, is
    unreplicated (no between-run interval, so no rank); the home page lists the test."""
    data, _ = llama_bench_data
    site = tmp_path / "site"
    run_module("generator.build", "--data", str(data), "--out", str(site), "--work", str(tmp_path / "work"))
    for test in ENTRY.tests():
        page = (site / "leaderboards" / f"cpu-smoke-{test.workload}.html").read_text()
        assert "llamacpp-f16" in page and "llamacpp-q8_0" in page and "own tools (imported)" in page
        assert "Ratio" in page and "-llama-bench-" in page  # each runner row links its llama-bench record
        board = json.loads((site / "leaderboards" / f"cpu-smoke-{test.workload}.json").read_text())
        assert {r["variant"] for r in board["rows"]} >= {"llamacpp-f16", "llamacpp-q8_0"}
        for row in board["rows"]:
            if row["rank"] is None:  # disagreeing with llama-bench, or one run with no repeats here to give an interval
                assert "llama-bench" in row["reason"] or "unreplicated" in row["reason"] or row["status"] != "ok", row
                if row["verified"] and row["status"] == "ok":
                    assert row["reason"].startswith("unreplicated"), row
            elif test.depth:
                assert "Depth fills" in page and "every repetition" not in page  # these records say how many
        ranked = [r for r in board["rows"] if r["rank"] is not None]
        assert all(r["verified"] and r["status"] == "ok" for r in ranked)
    home = (site / "index.html").read_text()
    assert all(t.workload in home for t in ENTRY.tests())


def test_the_vendored_commit_is_never_the_enclosing_repository(tmp_path: Path) -> None:
    """A trimmed sdist without its git history sits inside another repository (Fair Fight's checkout, on the bench
    hosts): llama.cpp's commit must come from the sdist or be `unknown`, never be the enclosing repository's."""
    from runners.engines.llamacpp import build as llamacpp_build

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(
        ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty",
         "-m", "enclosing"], check=True,
    )  # fmt: skip
    src = tmp_path / "llama_cpp_python-0.3.36"
    (src / "vendor" / "llama.cpp").mkdir(parents=True)
    assert llamacpp_build.vendored_commit(src) == "unknown"
    (src / "LLAMA_CPP_COMMIT").write_text("0c1e57098bba43ac29e6e3b677cdceebdd22334f\n")
    assert llamacpp_build.vendored_commit(src) == "0c1e57098bba43ac29e6e3b677cdceebdd22334f"


def _llama_bench_output(data: Path, variant: str) -> list[dict]:
    """llama-bench's own JSON results, as kept in the cross-check's records of one variant."""
    out = []
    for path in sorted((data / "cpu-smoke").rglob(f"*-{variant}-llama-bench-*.parquet")):
        out.append(json.loads(layout.read(path).column("config")[0].as_py())["imported"]["result"])
    return out


@pytest.mark.engine
def test_llama_bench_output_from_elsewhere_imports_once_and_checked(llama_bench_data, tmp_path: Path) -> None:
    """`python -m runners import llama-bench`: real llama-bench output (the cross-check's, written out as a
    contributor's file) becomes imported records that load cleanly; again, nothing new; a result run with other
    settings or on another model refuses the whole file, naming result and field."""
    data, _ = llama_bench_data
    results = _llama_bench_output(data, "llamacpp-f16")
    assert len(results) == len(ENTRY.tests())
    given = tmp_path / "theirs.jsonl"
    given.write_text("".join(json.dumps(r) + "\n" for r in results))
    target = tmp_path / "data"
    cmd = ("runners", "import", "llama-bench", str(given), "--suite", "cpu-smoke", "--inference", "llama-tiny")
    cmd += ("--variant", "llamacpp-f16", "--source", "a contributor's laptop (test)", "--data-dir", str(target))
    first = run_module(*cmd)
    assert first.stdout.count("tokens/s (mean)") == len(results)
    loaded = load.load(target)
    assert loaded.rejected == [] and set(loaded.runs["origin"]) == {"imported"}
    assert set(loaded.runs["engine"]) == {"llama-bench"}
    assert set(loaded.runs["source"]) == {"a contributor's laptop (test)"}
    rates = loaded.rows.filter(metric="tokens_per_s")["value"].to_list()
    # every repetition llama-bench reported (our cross-check runs one more, the cold one, and drops it on its own
    # records; an imported result keeps what the tool printed)
    assert len(rates) == sum(len(r["samples_ns"]) for r in results) and all(r > 0 for r in rates)
    again = run_module(*cmd)
    assert again.stdout.count("already imported") == len(results)
    assert len(load.result_files(target)) == len(results)
    bad = [dict(r) for r in results]
    bad[1]["n_batch"] = 7
    bad[2]["model_n_params"] = 123
    given.write_text(json.dumps(bad))  # llama-bench's -o json form: one array
    refused = run_module(*cmd[:-2], "--data-dir", str(tmp_path / "other"), check=False)
    assert refused.returncode == 1 and "refused, nothing imported" in refused.stderr
    assert "result 2, field 'n_batch': 7, but llamacpp-f16 sets" in refused.stderr
    assert "result 3, field 'model_n_params': 123, but llama-tiny has" in refused.stderr
    assert not (tmp_path / "other").exists()
