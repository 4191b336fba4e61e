"""MLX (mlx-cpu here): the training runner against PyTorch on the same weights and data, and the generation runner
against mlx_lm.benchmark. Real engines on CPU with tiny shapes; OpenBLAS is preloaded where installed, as the bench
session does (`nox -s tests` installs it)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from generator import derive, load
from runners import artifacts, layout, schema, spec
from runners.engines.mlx import train as mlx_train
from tests.conftest import checked_rows, run_module

SMOKE = spec.load_suite("cpu-smoke")
ONE_DEVICE = "train-gpt-tiny-1dev"


@pytest.mark.engine
def test_mlx_model_matches_torch_on_the_shared_weights(mlx_engine: str) -> None:
    """The same initial-weights file gives the same loss in both engines, fp32 and bf16 (mixed)."""
    import mlx.core as mx
    import torch

    from runners.engines.mlx import model as mlx_model
    from runners.engines.torch import model as torch_model

    mx.set_default_device(mx.cpu)
    model_spec = SMOKE.models["gpt-tiny"]
    weights = artifacts.init_weights(model_spec, 0)
    tokens = artifacts.token_batches(vocab=model_spec.vocab, seed=0, steps=range(1), global_batch=4, seq_len=64)[0]
    reference = torch_model.GPT(model_spec)
    reference.load_numpy(weights)
    with torch.no_grad():
        logits = reference(torch.from_numpy(tokens[:, :-1]))
        want = torch.nn.functional.cross_entropy(
            logits.view(-1, model_spec.vocab), torch.from_numpy(tokens[:, 1:]).reshape(-1)
        )
    for compute, tolerance in ((mx.float32, 1e-5), (mx.bfloat16, 1e-2)):
        model = mlx_model.GPT(model_spec, compute)
        model.load_numpy(weights)
        got = mlx_model.loss_fn(model, mx.array(tokens[:, :-1]), mx.array(tokens[:, 1:])).item()
        assert abs(got - want.item()) < tolerance, (compute, got, want.item())
    wrong = dict(weights)
    wrong.pop("head.weight")
    with pytest.raises(ValueError, match=r"missing \['head.weight'\]"):
        mlx_model.GPT(model_spec).load_numpy(wrong)


def test_mlx_settings_are_written_out_and_checked() -> None:
    variant = SMOKE.variants["mlx-fp32"]
    assert mlx_train.check_settings(variant) == variant.settings | {"lr": 1e-3, "eps": 1e-8, "weight_decay": 1e-2}
    assert mlx_train.compute_precision(mlx_train.check_settings(SMOKE.variants["mlx-bf16-compile"])) == "bf16"
    # MLX runs float32 matmuls in TF32 on GPUs that have it unless told not to (MLX_ENABLE_TF32=0); CPUs have none
    fp32 = mlx_train.check_settings(variant)
    assert mlx_train.compute_precision(fp32, "cuda") == "tf32" and mlx_train.compute_precision(fp32, "cpu") == "fp32"
    assert mlx_train.compute_precision(fp32 | {"tf32": False}, "cuda") == "fp32"
    with pytest.raises(spec.SpecError, match="unknown key 'fused'"):
        mlx_train.check_settings(variant, {"fused": True})
    with pytest.raises(spec.SpecError, match=r"'precision': 'fp16' is not one of"):
        mlx_train.check_settings(variant, {"precision": "fp16"})
    broken = spec.Variant(name="mlx-x", engine="mlx", tier="stock", description="x", settings={"precision": "fp32"})
    with pytest.raises(spec.SpecError, match="missing key 'betas'"):
        mlx_train.check_settings(broken)


def test_openblas_is_preloaded_on_a_linux_cpu_when_installed() -> None:
    env = mlx_train.launch_env("cpu")
    installed = [p for p in mlx_train.OPENBLAS if Path(p).exists()]
    assert env == ({"LD_PRELOAD": installed[0]} if installed else {})
    assert mlx_train.launch_env("cuda") == {} and mlx_train.blas_used("cuda") is None
    assert "reference BLAS" in mlx_train.blas_used("cpu") or "OpenBLAS" in mlx_train.blas_used("cpu")


def test_each_mlx_rank_gets_its_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """NCCL ranks share a rendezvous on this host and take one visible GPU each; ring ranks get their rank (the host
    file comes from the launcher)."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    cuda = mlx_train.rank_env("cuda", 2)
    assert [e["CUDA_VISIBLE_DEVICES"] for e in cuda] == ["2", "3"] and [e["MLX_RANK"] for e in cuda] == ["0", "1"]
    assert {e["NCCL_HOST_IP"] for e in cuda} == {"127.0.0.1"} and len({e["NCCL_PORT"] for e in cuda}) == 1
    assert all(e["MLX_WORLD_SIZE"] == "2" for e in cuda)
    assert {e["FAIRFIGHT_ENERGY_GPUS"] for e in cuda} == {"2,3"}  # rank 0 meters both GPUs' energy
    with pytest.raises(spec.SpecError, match="names only 2 GPU"):
        mlx_train.rank_env("cuda", 4)
    assert mlx_train.rank_env("cpu", 2) == [{"MLX_RANK": "0"}, {"MLX_RANK": "1"}]


@pytest.mark.engine
@pytest.mark.bench
@pytest.mark.slow
def test_mlx_data_parallel_over_two_processes_matches_ddp(tmp_path: Path, mlx_engine: str, torch_engine: str) -> None:
    """The two-process workload: MLX launches a rank per device over mx.distributed's ring (TCP, this CPU), each
    taking its rows of the global batch and averaging gradients; its loss follows DDP's step by step."""
    data = tmp_path / "data"
    run_module(
        "runners", "bench", "--suite", "cpu-smoke", "--workload", "train-gpt-tiny-mb4", "--variant", "ddp-fp32-stock",
        "--variant", "mlx-fp32", "--data-dir", str(data), "--steps", "30",
    )  # fmt: skip
    files = {layout.read(p).select(["variant"])["variant"][0].as_py(): p for p in data.rglob("*.parquet")}
    assert sorted(files) == ["ddp-fp32-stock", "mlx-fp32"]
    run = layout.read(files["mlx-fp32"]).slice(0, 1).to_pylist()[0]
    assert run["status"] == "ok" and run["accelerator_count"] == 2, run["error"]
    config, calibration = json.loads(run["config"]), json.loads(run["calibration"])
    assert "mx.distributed over ring" in config["launcher"] and config["workload"]["world_size"] == 2
    assert calibration["allreduce_ranks"] == 2 and calibration["allreduce_busbw_bytes_per_s"] > 0
    losses = {
        v: np.array([r["value"] for r in layout.read(p).to_pylist() if r["metric"] == "loss"]) for v, p in files.items()
    }
    assert len(losses["mlx-fp32"]) == 30
    assert np.max(np.abs(losses["mlx-fp32"] - losses["ddp-fp32-stock"])) < 1e-3
    loaded = load.load(data)
    parity = dict(derive.run_summary(loaded.runs, loaded.rows).select("variant", "loss_parity_ok").iter_rows())
    assert parity == {"ddp-fp32-stock": True, "mlx-fp32": True}


@pytest.fixture(scope="module")
def mlx_train_data(tmp_path_factory: pytest.TempPathFactory, mlx_engine: str, torch_engine: str) -> Path:
    """A real bench session of the one-device workload: PyTorch's fp32 baseline and both MLX variants."""
    data = tmp_path_factory.mktemp("mlx") / "data"
    run_module(
        "runners", "bench", "--suite", "cpu-smoke", "--workload", ONE_DEVICE, "--variant", "ddp-fp32-stock",
        "--variant", "mlx-fp32", "--variant", "mlx-bf16-compile", "--data-dir", str(data), "--steps", "30",
    )  # fmt: skip
    return data


@pytest.mark.engine
@pytest.mark.bench
@pytest.mark.slow
def test_mlx_training_records_and_loss_parity_with_torch(mlx_train_data: Path, tmp_path: Path) -> None:
    files = {layout.read(p).select(["variant"])["variant"][0].as_py(): p for p in mlx_train_data.rglob("*.parquet")}
    assert sorted(files) == ["ddp-fp32-stock", "mlx-bf16-compile", "mlx-fp32"]
    losses = {}
    for variant, path in files.items():
        rows = checked_rows(path)
        run = rows[0]
        assert run["status"] == "ok" and run["accelerator_count"] == 1, (variant, run["error"])
        losses[variant] = np.array([r["value"] for r in rows if r["metric"] == "loss"])
        assert len(losses[variant]) == 30
        if variant.startswith("mlx"):
            config = json.loads(run["config"])
            assert run["engine"] == "mlx" and run["engine_version"].startswith("0.")
            assert config["engine_defaults"]["bias_correction"] is False  # MLX's default, changed by the variant
            assert config["variant"]["settings"]["bias_correction"] is True
            assert config["blas"] == mlx_train.blas_used("cpu") or "OpenBLAS" in config["blas"]
            assert json.loads(run["calibration"])["matmul_flops"] > 0
            run_values = {r["metric"]: r["value"] for r in rows if r["phase"] == "run"}
            assert run_values["steps_completed"] == 30 and run_values["warmup_s"] > 0
    # same initial weights, same tokens, same optimizer maths: fp32 MLX follows PyTorch fp32 step by step
    assert np.max(np.abs(losses["mlx-fp32"] - losses["ddp-fp32-stock"])) < 1e-3
    assert np.max(np.abs(losses["mlx-bf16-compile"] - losses["ddp-fp32-stock"])) < 2e-2
    assert losses["mlx-fp32"][-1] < losses["mlx-fp32"][0] - 0.5  # and it learns
    loaded = load.load(mlx_train_data)
    summary = derive.run_summary(loaded.runs, loaded.rows)
    parity = dict(summary.select("variant", "loss_parity_ok").iter_rows())
    assert parity == {"ddp-fp32-stock": True, "mlx-fp32": True, "mlx-bf16-compile": True}
    # the same work, proven from what each process fed its model: MLX's weights as loaded and its token batches hash
    # as PyTorch's do (runners/artifacts.py state_sha256, tokens_sha256)
    fed = summary.select("state_sha256", "data_sha256", "hashes_from").unique()
    assert fed.height == 1 and fed["hashes_from"][0] == "fed" and len(fed["state_sha256"][0]) == 64, fed
    # 30 of the workload's 60 steps: shown below the ranking as short runs, with their figures
    shown = derive.candidates(summary).filter(pl.col("workload") == ONE_DEVICE)
    assert sorted(shown["variant"]) == sorted(files)
    assert all(reason.startswith("a short run") for reason in shown["unranked"])
    assert shown.filter(pl.col("engine") == "mlx")["mfu_calibrated"].min() > 0
    site = tmp_path / "site"
    run_module("generator.build", "--data", str(mlx_train_data), "--out", str(site), "--work", str(tmp_path / "w"))
    page = (tmp_path / "w" / "docs" / "leaderboards" / f"cpu-smoke-{ONE_DEVICE}.md").read_text()
    for variant in files:
        assert f"| {variant} |" in page or f"| {variant} <small>" in page
    assert "| mlx 0." in page and "| torch 2." in page


TOOL_OUTPUT = """Running warmup..
Timing with prompt_tokens=64, generation_tokens=16, batch_size=1.
Trial 1:  prompt_tps=1234.500, generation_tps=180.250, peak_memory=0.031, total_time=0.140
Trial 2:  prompt_tps=1200.000, generation_tps=190.000, peak_memory=0.031, total_time=0.130
Averages: prompt_tps=1217.250, generation_tps=185.125, peak_memory=0.031
"""


def test_mlx_lm_benchmark_output_is_read_with_clear_errors() -> None:
    from runners.engines.mlx import tool as mlx_lm_bench

    trials = mlx_lm_bench.parse(TOOL_OUTPUT)
    assert [t["prompt_tps"] for t in trials] == [1234.5, 1200.0] and trials[1]["generation_tps"] == 190.0
    assert [r["value"] for r in mlx_lm_bench.sample_rows(trials, "generation_tps")] == [180.25, 190.0]
    with pytest.raises(ValueError, match=r"out\.txt line 3: field 'prompt_tps': 'fast' is not a number"):
        mlx_lm_bench.parse(TOOL_OUTPUT.replace("prompt_tps=1234.500", "prompt_tps=fast"), "out.txt")
    with pytest.raises(ValueError, match=r"line 4: no field 'generation_tps'"):
        mlx_lm_bench.parse(TOOL_OUTPUT.replace("generation_tps=190.000, ", ""))
    with pytest.raises(ValueError, match="no `Trial N:` lines"):
        mlx_lm_bench.parse("Averages: prompt_tps=1.0")


@pytest.mark.engine
def test_mlx_quantized_weights_are_mx_quantize_of_each_tensor(tmp_path: Path, mlx_engine: str) -> None:
    """MLX's 4- and 8-bit folders, written from the pool's quantized groups (never through fp16), hold what
    `mx.quantize` makes of each fp16 tensor, load in mlx-lm as quantized layers, and decode what mlx-lm's own
    quantization of the fp16 folder decodes."""
    import mlx.core as mx
    import mlx.nn as nn
    from mlx_lm import load as mlx_load

    from runners import llama_files, mlx_files

    tiny = SMOKE.models["llama-tiny"]
    prompt = mx.array([[1, 2, 3, 4, 5, 6, 7, 8]])
    for weights, bits in mlx_files.WEIGHTS.items():
        folder = mlx_files.folder(tiny, 0, weights, tmp_path)
        stored = mx.load(str(folder / "model.safetensors"))
        for name, shape in llama_files.hf_shapes(tiny).items():
            if len(shape) == 1:
                continue
            expected = mx.quantize(mx.array(llama_files.tensor(name, shape, 0)), group_size=64, bits=bits)
            stem = name.removesuffix(".weight")
            for part, key in zip(expected, (name, f"{stem}.scales", f"{stem}.biases"), strict=True):
                assert np.array_equal(np.asarray(stored[key]), np.asarray(part)), (weights, key)
        model, _ = mlx_load(str(folder))
        assert isinstance(model.model.layers[0].self_attn.q_proj, nn.QuantizedLinear)
        reference, _ = mlx_load(str(mlx_files.folder(tiny, 0, "hf", tmp_path)))
        nn.quantize(reference, group_size=64, bits=bits)  # mlx-lm's own path: convert -q quantizes every layer alike
        ours, theirs = model(prompt), reference(prompt)
        assert bool(mx.all(mx.isfinite(ours))) and np.array_equal(np.asarray(ours), np.asarray(theirs)), weights
        expected_bytes = sum(
            int(np.prod(stored[k].shape)) * stored[k].dtype.size for k in stored if not k.startswith("model.embed")
        )
        assert mlx_files.weight_bytes_per_token(folder) == expected_bytes
        assert bits * tiny.non_embedding_params / 8 < expected_bytes < (bits + 1) * tiny.non_embedding_params / 8
    with pytest.raises(ValueError, match="expected 'hf' or one of"):
        mlx_files.folder(tiny, 0, "q4_k_m", tmp_path)


@pytest.mark.engine
@pytest.mark.slow
@pytest.mark.parametrize("variant", ["mlx-f16", "mlx-q4"])
def test_mlx_generation_beside_mlx_lm_benchmark(variant: str, tmp_path: Path, mlx_engine: str) -> None:
    """A real bench session of MLX's depth-0 tests on the tiny Llama: the runner's records, mlx_lm.benchmark's beside
    them (imported, paired), and the inference page showing both; fp16 and MLX's own 4-bit weights."""
    from generator.derive import copy_bound, inference
    from runners import mlx_files

    data = tmp_path / "data"
    proc = run_module(
        "runners", "bench", "--suite", "cpu-smoke", "--workload", "llama-tiny-pp64-d0", "--workload",
        "llama-tiny-tg16-d0", "--variant", variant, "--data-dir", str(data),
        FAIRFIGHT_CACHE=str(tmp_path / "cache"),
    )  # fmt: skip
    assert f"{variant} (mlx-lm-benchmark)" in proc.stdout
    assert f"[1-2/2] [llama-tiny] {variant} (stock): 2 test(s)" in proc.stdout  # counted with every run of the session
    tables = [layout.read(p) for p in data.rglob("*.parquet")]
    assert len(tables) == 4 and all(schema.check_table(t) == [] for t in tables)
    loaded = load.load(data)
    summary = derive.run_summary(loaded.runs, loaded.rows)
    tests = inference.per_run_figures(summary, loaded.rows, copy_bound.copy_bandwidths(summary))
    measured = tests.filter(pl.col("origin") == "measured")
    assert sorted(measured["kind"]) == ["pp", "tg"] and set(measured["engine"]) == {"mlx"}
    assert set(measured["status"]) == {"ok"}
    for row in measured.iter_rows(named=True):
        config = json.loads(row["config"])
        tiny = SMOKE.models["llama-tiny"]
        folder = mlx_files.folder(tiny, 0, config["variant"]["settings"]["weights"], tmp_path / "cache" / "models")
        per_token = mlx_files.weight_bytes_per_token(folder)
        if variant == "mlx-f16":
            per_token = 2 * (tiny.total_params - 512 * 256)
        assert config["model_file"]["weight_bytes_per_token"] == per_token
        assert ("quantization" in config["model_file"]) == (variant != "mlx-f16")
        assert row["bench_run"] is not None and "-mlx-lm-benchmark-" in row["bench_run"]
        # mlx-lm's own generate path, timed by the runner as the tool times it: the like-for-like figure
        assert row["tool_path_rate"] is not None and row["tool_path_rate"] > 0
        assert row["bench_ratio"] == pytest.approx(row["tool_path_rate"] / row["bench_rate"])
        # the same engine timed two ways: a tiny model on a shared 2-core CPU is noisy, the GPU figures are closer
        assert 0.4 < row["bench_ratio"] < 2.5, row
    imported = tests.filter(pl.col("origin") == "imported")
    assert set(imported["engine"]) == {"mlx-lm-benchmark"}
    # each tool record names the runner record it checks (a field, not a tag in its run id)
    assert sorted(imported["pairs_with"]) == sorted(measured["run_id"])
    assert all(json.loads(c)["imported"]["tool"] == "mlx_lm.benchmark" for c in imported["config"])


def test_apple_suite_is_refused_off_apple_silicon(tmp_path: Path) -> None:
    """Metal cannot run here: the bench session says where it runs and writes nothing."""
    proc = run_module("runners", "bench", "--suite", "apple", "--data-dir", str(tmp_path / "data"), check=False)
    assert proc.returncode != 0
    assert "run(s) on an Apple GPU (Metal)" in proc.stderr and "nox -s bench-apple" in proc.stderr
    assert not (tmp_path / "data").exists()
    apple = spec.load_suite("apple")
    assert {apple.variants[v].engine for w in apple.workloads for v in w.variants} == {"mlx"}
    assert all(w.device == "metal" and w.world_size == 1 for w in apple.workloads)
    assert apple.inference[0].variants == ("mlx-f16",)


def test_an_apple_gpu_is_named_from_mlx() -> None:
    """What a Mac's record says of its GPU. Metal cannot run here, so MLX's device_info is a stand-in with the
    fields MLX reports on Apple Silicon (device_name, memory_size)."""

    class AppleMX:
        @staticmethod
        def device_info() -> dict[str, object]:
            return {"device_name": "Apple M3 Max", "memory_size": 64 * 2**30, "architecture": "applegpu_g15s"}

    hw = mlx_train.hardware("metal", AppleMX())
    assert hw["accelerator"] == "Apple M3 Max GPU" and hw["accelerator_memory_gib"] == 64.0
    assert hw["device"] == "metal" and hw["count"] == 1


def _apple_output(prompt: int = 512, trials: int = 5) -> str:
    lines = ["Running warmup..", f"Timing with prompt_tokens={prompt}, generation_tokens=128, batch_size=1."]
    for i in range(trials):
        lines.append(
            f"Trial {i + 1}:  prompt_tps={980 + i:.3f}, generation_tps={31.5 + i / 10:.3f}, peak_memory=16.912, "
            f"total_time={4.6 + i / 100:.3f}"
        )
    return "\n".join([*lines, "Averages: prompt_tps=982.000, generation_tps=31.700, peak_memory=16.912", ""])


def test_mlx_lm_benchmark_output_from_a_mac_imports_once_and_checked(tmp_path: Path) -> None:
    """A contributor's mlx_lm.benchmark output (the tool's format; we have no Mac here) becomes the apple suite's
    depth-0 pp and tg records, imported and valid; a file with other lengths is refused whole."""
    from runners.engines.mlx import importer

    apple = spec.load_suite("apple")
    entry, variant = apple.inference_entry("llama-8b"), apple.variants["mlx-f16"]
    good = tmp_path / "m3.txt"
    good.write_text(_apple_output())
    data = tmp_path / "data"
    args = dict(source="a contributor's M3 Max, 64 GB", hardware="Apple M3 Max GPU", date="2026-11-30T10:00:00Z")
    done = importer.import_mlx_lm_benchmark(good, apple, entry, variant, data_dir=data, **args)
    assert len(done) == 2 and "llama-8b-pp512-d0: 982.0 tokens/s" in done[0] and "llama-8b-tg128-d0" in done[1]
    again = importer.import_mlx_lm_benchmark(good, apple, entry, variant, data_dir=data, **args)
    assert len(again) == 2 and all("already imported" in line for line in again)
    files = sorted(data.rglob("*.parquet"))
    assert len(files) == 2
    for path in files:
        run = checked_rows(path)[0]
        assert (run["origin"], run["engine"], run["accelerator"]) == (
            "imported",
            "mlx-lm-benchmark",
            "Apple M3 Max GPU",
        )
    loaded = load.load(data)
    assert loaded.runs.height == 2 and not loaded.rejected
    bad = tmp_path / "other.txt"
    bad.write_text(_apple_output(prompt=256, trials=3))
    with pytest.raises(ValueError) as refused:
        importer.import_mlx_lm_benchmark(bad, apple, entry, variant, data_dir=tmp_path / "d2", **args)
    assert "field 'prompt_tokens': 256, but apple's llama-8b runs 512" in str(refused.value)
    assert "3 trials, but llama-8b takes 5 repetitions" in str(refused.value)
    assert not (tmp_path / "d2").exists()
    with pytest.raises(ValueError, match="--date '2026-12-01' has no time zone"):
        importer.import_mlx_lm_benchmark(good, apple, entry, variant, data_dir=data, **(args | {"date": "2026-12-01"}))
