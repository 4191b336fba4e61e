"""Issue 22's levers for PyTorch, each a named setting: the loss inside a compiled region (`compile_loss`), CUDA
graphs (`compile_mode = "reduce-overhead"`, whose step mark is asked for only where it applies) and bf16 gradient
reduction (`reduce_dtype`). The compiled loss head computes what the eager loss computes; a real two-process run
with the loss compiled keeps loss parity with the variant as written."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from runners import layout, metrics, spec
from runners.engines.torch import setup as torch_setup
from tests.conftest import run_module

VARIANTS = spec.load_variants()


def test_every_torch_variant_writes_the_levers_out() -> None:
    for variant in VARIANTS.values():
        if variant.engine == "torch":
            s = torch_setup.check_settings(variant)
            assert isinstance(s["compile_loss"], bool) and s["compile_mode"] in torch_setup.CHOICES["compile_mode"]
    assert torch_setup.check_settings(VARIANTS["fsdp2-compile"], {"reduce_dtype": "bf16"})["reduce_dtype"] == "bf16"
    with pytest.raises(spec.SpecError, match="'compile_loss'"):
        torch_setup.check_settings(VARIANTS["ddp-tuned"], {"compile_loss": "yes"})


def test_cuda_graph_step_mark_only_where_a_region_is_compiled_with_them() -> None:
    s = torch_setup.check_settings(VARIANTS["ddp-fp32-stock"])
    assert torch_setup.step_begin_hook(settings=s) is None
    assert torch_setup.step_begin_hook(settings=s | {"compile_mode": "reduce-overhead"}) is None  # nothing compiled
    hook = torch_setup.step_begin_hook(settings=s | {"compile_loss": True, "compile_mode": "reduce-overhead"})
    assert hook is not None and hook.__name__ == "cudagraph_mark_step_begin"


def test_compiled_loss_head_computes_the_eager_loss_and_gradients() -> None:
    """The loss head compiled on its own (the per-block variants' path) against the same model in eager mode."""
    import torch

    from runners.engines.torch.model import GPT, cross_entropy

    torch.manual_seed(0)
    model_spec = spec.load_suite("cpu-smoke").models["gpt-tiny"]
    eager = GPT(model_spec)
    for p in eager.parameters():
        torch.nn.init.normal_(p, std=0.02)
    compiled = copy.deepcopy(eager)
    settings = torch_setup.check_settings(VARIANTS["fsdp2-compile"], {"compile": False, "compile_loss": True})
    torch_setup.apply_compile_loss(compiled, settings=settings)
    assert compiled.loss_head is not eager.loss_head and hasattr(compiled.loss_head, "_torchdynamo_orig_callable")
    tokens = torch.randint(0, model_spec.vocab, (2, 17))
    x, y = tokens[:, :-1], tokens[:, 1:]
    want = cross_entropy(eager(x), y)
    got = torch_setup.loss_function(compiled, settings=settings)(x, y)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    want.backward()
    got.backward()
    for (name, a), b in zip(eager.named_parameters(), compiled.parameters(), strict=True):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-4, atol=1e-6, msg=name)


def test_a_whole_compiled_model_holds_the_loss_itself() -> None:
    from runners.engines.torch.model import GPT

    model = GPT(spec.load_suite("cpu-smoke").models["gpt-tiny"])
    original = model.loss_head
    settings = torch_setup.check_settings(VARIANTS["ddp-tuned"], {"compile_loss": True})
    torch_setup.apply_compile_loss(model, settings=settings)  # compile_scope "model": nothing of its own
    assert model.loss_head == original


def _losses(path: Path) -> tuple[dict, list[float]]:
    rows = layout.read(path).to_pylist()
    return rows[0], [r["value"] for r in sorted((r for r in rows if r["metric"] == "loss"), key=lambda r: r["step"])]


@pytest.mark.slow
@pytest.mark.bench
def test_the_loss_in_the_compiled_region_keeps_parity_under_fsdp2(tmp_path: Path, torch_engine: str) -> None:
    """Two gloo processes, FSDP2, blocks eager and the loss head compiled with bf16 gradient reduction (as the
    variant writes them), against an eager loss after the model with fp32 reduction (20 steps; compiling the blocks
    too would take most of a minute on CPU)."""
    common = ("--suite", "cpu-smoke", "--workload", "train-gpt-tiny-mb4", "--variant", "fsdp2-compile", "--steps", "20")
    base, lever = tmp_path / "base", tmp_path / "lever"
    run_module(
        "runners", "bench", *common, "--set", "compile=false", "--set", "compile_loss=false",
        "--set", "reduce_dtype=fp32", "--data-dir", str(base),
    )  # fmt: skip
    run_module("runners", "bench", *common, "--set", "compile=false", "--data-dir", str(lever))
    (b_run, b), (l_run, lv) = (_losses(next((d / "cpu-smoke").rglob("*.parquet"))) for d in (base, lever))
    assert l_run["status"] == "ok", l_run["error"]
    settings = json.loads(l_run["config"])["variant"]["settings"]
    assert (settings["compile_loss"], settings["reduce_dtype"]) == (True, "bf16")
    config = json.loads(b_run["config"])
    warmup, window = config["workload"]["warmup_steps"], config["workload"]["window_steps"]
    first_gap, rel, ok = metrics.loss_parity(
        lv[0], b[0], metrics.window_means(lv[warmup:], window), metrics.window_means(b[warmup:], window)
    )
    assert ok, (first_gap, rel)
