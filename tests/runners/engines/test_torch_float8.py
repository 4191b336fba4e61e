"""The fsdp2-float8 variant: its settings and module filter as pure functions, and a real run on CPU (torch 2.13's
torch._scaled_mm runs float8 on a CPU) under FSDP2 over gloo on 2 processes, whose loss follows bf16 FSDP2's."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from runners import layout, metrics, record, spec
from runners.engines.torch import setup as torch_setup
from tests.conftest import run_module

VARIANTS = spec.load_variants()
FLOAT8 = VARIANTS["fsdp2-float8"]


def test_float8_settings_are_written_out_and_checked() -> None:
    settings = torch_setup.check_settings(FLOAT8)
    assert settings["float8_recipe"] == "tensorwise" and settings["float8_all_gather"] is True
    assert torch_setup.compute_precision(settings) == "fp8"
    assert torch_setup.REFERENCE_PRECISION["fp8"] == "bf16"
    # every other FSDP2 variant writes float8 out as off, and stays a bf16 run
    assert torch_setup.compute_precision(torch_setup.check_settings(VARIANTS["fsdp2-compile"])) == "bf16"
    with pytest.raises(spec.SpecError, match="float8 all-gather needs float8_recipe 'tensorwise'"):
        torch_setup.check_settings(FLOAT8, {"float8_recipe": "rowwise"})
    no_gather = {"float8_all_gather": False}
    with pytest.raises(spec.SpecError, match="precomputed scales serve the tensorwise float8 all-gather only"):
        torch_setup.check_settings(FLOAT8, no_gather)
    torch_setup.check_settings(FLOAT8, no_gather | {"float8_precompute_scale": False, "float8_recipe": "rowwise"})
    with pytest.raises(spec.SpecError, match="'float8_dim_multiple': 8 is not a positive multiple of 16"):
        torch_setup.check_settings(FLOAT8, {"float8_dim_multiple": 8})
    with pytest.raises(spec.SpecError, match="unknown key 'float8_recipe'"):  # DDP variants have no float8
        torch_setup.check_settings(VARIANTS["ddp-tuned"], {"float8_recipe": "tensorwise"})


def test_module_filter_keeps_the_head_and_odd_dims_in_bf16() -> None:
    s = torch_setup.check_settings(FLOAT8)
    assert torch_setup.float8_converts("blocks.0.attn.qkv", 4096, 12288, settings=s)
    assert not torch_setup.float8_converts("head", 4096, 32000, settings=s)
    assert torch_setup.float8_converts("head", 4096, 32000, settings=s | {"float8_convert_head": True})
    assert not torch_setup.float8_converts("blocks.0.mlp.up", 4096, 11000, settings=s)  # 11000 = 16·687.5
    assert not torch_setup.float8_converts("blocks.0.mlp.up", 4096, 4128, settings=s | {"float8_dim_multiple": 64})


def _fake_torch(capability: tuple[int, int]) -> SimpleNamespace:
    cuda = SimpleNamespace(get_device_capability=lambda _: capability, get_device_name=lambda _: "NVIDIA A100")
    return SimpleNamespace(cuda=cuda)


def test_float8_refuses_a_gpu_without_float8_tensor_cores_early() -> None:
    gpu = SimpleNamespace(type="cuda", index=0)
    with pytest.raises(RuntimeError, match=r"needs a CUDA GPU with compute capability >= 8\.9; NVIDIA A100 has 8\.0"):
        torch_setup.check_float8_device(_fake_torch((8, 0)), gpu)
    torch_setup.check_float8_device(_fake_torch((9, 0)), gpu)  # Hopper
    torch_setup.check_float8_device(_fake_torch((8, 0)), SimpleNamespace(type="cpu"))  # _scaled_mm's CPU kernels


def test_float8_datasheet_peaks_are_twice_bf16() -> None:
    for name in ("NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe"):
        fp8, bf16 = metrics.datasheet_peak_flops(name, "fp8"), metrics.datasheet_peak_flops(name, "bf16")
        assert fp8 is not None and bf16 is not None and fp8 == pytest.approx(2 * bf16, rel=1e-3)
    assert metrics.datasheet_peak_flops("NVIDIA H200", "fp8") == 1978.9e12  # 3,958 with sparsity, halved


def test_calibration_line_names_both_matmul_peaks() -> None:
    cal = {"matmul_precision": "fp8", "matmul_flops": 1485e12, "reference_matmul_precision": "bf16"}
    cal |= {"reference_matmul_flops": 754e12, "copy_bytes_per_s": 4.2e12, "allreduce_busbw_bytes_per_s": None}
    line = record.calibration_line(cal)
    assert "fp8 matmul 1485.0 TFLOP/s, bf16 matmul 754.0 TFLOP/s, copy 4200 GB/s" in line
    cpu = {"matmul_flops": 48.3e9, "copy_bytes_per_s": 9e9, "allreduce_busbw_bytes_per_s": 1.5e9}
    assert "matmul 48.3 GFLOP/s, copy 9 GB/s, all-reduce bus 1.5 GB/s" in record.calibration_line(
        cpu
    )  # not 0.0 TFLOP/s


def test_apply_float8_converts_the_blocks_but_not_the_head() -> None:
    import torch

    from runners.engines.torch.model import GPT

    model = GPT(spec.load_suite("cpu-smoke").models["gpt-tiny"])
    converted = torch_setup.apply_float8(model, settings=torch_setup.check_settings(FLOAT8), device=torch.device("cpu"))
    linears = ("attn.qkv", "attn.proj", "mlp.up", "mlp.down")
    assert converted == [f"blocks.{i}.{name}" for i in range(2) for name in linears]
    assert type(model.blocks[0].mlp.up).__name__ == "Float8Linear"
    assert type(model.head) is torch.nn.Linear


def _run(path: Path) -> tuple[dict, list[float]]:
    rows = layout.read(path).to_pylist()
    losses = [r["value"] for r in sorted((r for r in rows if r["metric"] == "loss"), key=lambda r: r["step"])]
    return rows[0], losses


@pytest.mark.slow
@pytest.mark.bench
def test_float8_trains_under_fsdp2_with_loss_parity(tmp_path: Path, torch_engine: str) -> None:
    """Two gloo processes, float8 weights all-gathered, 20 steps without compile, the loss head's included (the
    compiled path is the GPU's; cold compilation would take most of a minute here). Tolerance: the published
    loss-parity rule (metrics.loss_parity: first loss within 0.01 nats, every steady window within 3%) against bf16
    FSDP2; measured here the windows differ by about 0.02%."""
    proc = run_module(
        "runners", "bench", "--suite", "cpu-smoke", "--workload", "train-gpt-tiny-mb4", "--variant", "fsdp2-compile",
        "--variant", "fsdp2-float8", "--steps", "20", "--set", "compile=false", "--set", "compile_loss=false",
        "--data-dir", str(tmp_path),
    )  # fmt: skip
    files = {p.name.split("-mb4-")[1].rsplit("-", 1)[0]: p for p in (tmp_path / "cpu-smoke").rglob("*.parquet")}
    (bf16_run, bf16), (f8_run, f8) = _run(files["fsdp2-compile"]), _run(files["fsdp2-float8"])
    assert f8_run["status"] == "ok", proc.stdout
    assert f8_run["variant"] == "fsdp2-float8[compile=false,compile_loss=false]"
    config, calibration = json.loads(f8_run["config"]), json.loads(f8_run["calibration"])
    assert (config["compute_precision"], config["reference_precision"]) == ("fp8", "bf16")
    assert (calibration["matmul_precision"], calibration["reference_matmul_precision"]) == ("fp8", "bf16")
    assert calibration["matmul_flops"] > 0 and calibration["reference_matmul_flops"] > 0
    assert json.loads(f8_run["software"])["torchao"], "the record names the torchao that ran"
    bf16_config = json.loads(bf16_run["config"])
    assert bf16_config["compute_precision"] == "bf16" and "reference_precision" not in bf16_config
    warmup, window = config["workload"]["warmup_steps"], config["workload"]["window_steps"]
    first_gap, rel, ok = metrics.loss_parity(
        f8[0], bf16[0], metrics.window_means(f8[warmup:], window), metrics.window_means(bf16[warmup:], window)
    )
    assert ok, (first_gap, rel)
    assert f8 != bf16, "float8 matmuls round differently from bf16: identical losses mean float8 never ran"
