"""PyTorch variant settings and how they are applied, in one documented order (torchtitan's pattern):

    build the model → load the shared initial weights → compile per block (if asked) →
    wrap for data parallelism (DDP, or FSDP2 `fully_shard` per block then the root) →
    compile the whole model (if asked) → build the optimizer over the wrapped parameters.

Every variant writes each setting out, even where it equals PyTorch's default; `DEFAULTS` holds those
defaults so the site can show what a variant changed. torch is imported inside functions only.
"""

from __future__ import annotations

from typing import Any

from runners import spec

# Settings every torch variant writes out, with PyTorch's own defaults.
COMMON: dict[str, Any] = {
    "parallel": "ddp",  # ddp: DistributedDataParallel | fsdp2: torch.distributed.fsdp.fully_shard per block
    "precision": "fp32",  # fp32 | bf16-autocast (torch.autocast around forward and loss)
    "matmul_precision": "highest",  # torch.set_float32_matmul_precision: highest (no TF32) | high | medium
    "optimizer": "adamw",
    "lr": 1e-3,
    "betas": [0.9, 0.999],
    "eps": 1e-8,
    "weight_decay": 1e-2,
    "optimizer_impl": "default",  # default (torch picks) | foreach | fused
    "compile": False,
    "compile_scope": "model",  # model: torch.compile the wrapped model | block: compile each block in place
    "compile_mode": "default",
}
# Settings of DistributedDataParallel, with its defaults.
DDP: dict[str, Any] = {
    "bucket_cap_mb": 25.0,
    "gradient_as_bucket_view": False,
    "static_graph": False,
    "find_unused_parameters": False,
    "comm_hook": "none",  # none | bf16_compress (torch.distributed.algorithms.ddp_comm_hooks.default_hooks)
}
# Settings of FSDP2's fully_shard and MixedPrecisionPolicy, with their defaults (None dtypes mean fp32 here).
FSDP2: dict[str, Any] = {
    "param_dtype": "fp32",  # dtype of the unsharded parameters used in forward/backward
    "reduce_dtype": "fp32",  # dtype of the gradient reduce-scatter
    "reshard_after_forward": True,
}
CHOICES: dict[str, tuple[Any, ...]] = {
    "parallel": ("ddp", "fsdp2"),
    "precision": ("fp32", "bf16-autocast"),
    "matmul_precision": ("highest", "high", "medium"),
    "optimizer": ("adamw",),
    "optimizer_impl": ("default", "foreach", "fused"),
    "compile_scope": ("model", "block"),
    "compile_mode": ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"),
    "comm_hook": ("none", "bf16_compress"),
    "param_dtype": ("fp32", "bf16"),
    "reduce_dtype": ("fp32", "bf16"),
}


def defaults_for(parallel: str) -> dict[str, Any]:
    """PyTorch's defaults for every setting a variant with this parallelism must write out."""
    return COMMON | (FSDP2 if parallel == "fsdp2" else DDP)


def check_settings(variant: spec.Variant, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every setting written out, none unknown, each of its default's type and within its choices."""
    s = dict(variant.settings) | (overrides or {})
    where = f"variant {variant.name!r}: settings"
    parallel = s.get("parallel")
    if parallel not in CHOICES["parallel"]:
        raise spec.SpecError(f"{where}: key 'parallel': {parallel!r} is not one of {list(CHOICES['parallel'])}")
    return spec.check_written_out(where, s, defaults_for(parallel), CHOICES)


def parse_overrides(items: list[str] | None) -> dict[str, Any]:
    """`--set key=value` pairs for sweeps; values parse as JSON where they can (25 → 25, true → True)."""
    import json

    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise spec.SpecError(f"--set {item!r}: expected KEY=VALUE")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def compute_precision(settings: dict[str, Any]) -> str:
    """The precision the matmuls run in, which picks the peak that MFU is measured against."""
    if settings["precision"] == "bf16-autocast" or settings.get("param_dtype") == "bf16":
        return "bf16"
    return "fp32" if settings["matmul_precision"] == "highest" else "tf32"


def apply_compile_blocks(model: Any, *, settings: dict[str, Any]) -> None:
    """Compile each transformer block in place (before wrapping, as torchtitan does for FSDP2)."""
    for block in model.blocks:
        block.compile(mode=settings["compile_mode"])


def apply_ddp(model: Any, *, settings: dict[str, Any], device: Any) -> Any:
    import torch
    from torch.nn.parallel import DistributedDataParallel

    ddp = DistributedDataParallel(
        model,
        device_ids=[device.index] if device.type == "cuda" else None,
        bucket_cap_mb=settings["bucket_cap_mb"],
        gradient_as_bucket_view=settings["gradient_as_bucket_view"],
        static_graph=settings["static_graph"],
        find_unused_parameters=settings["find_unused_parameters"],
    )
    if settings["comm_hook"] == "bf16_compress":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        ddp.register_comm_hook(torch.distributed.group.WORLD, default_hooks.bf16_compress_hook)
    return ddp


def apply_fsdp2(model: Any, *, settings: dict[str, Any], device: Any, world: int) -> Any:
    """`fully_shard` each block, then the root, with the variant's mixed-precision policy."""
    import torch
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16}
    mesh = init_device_mesh(device.type, (world,))
    policy = MixedPrecisionPolicy(
        param_dtype=dtypes[settings["param_dtype"]], reduce_dtype=dtypes[settings["reduce_dtype"]]
    )
    for block in model.blocks:
        fully_shard(block, mesh=mesh, mp_policy=policy, reshard_after_forward=settings["reshard_after_forward"])
    # the root keeps its parameters gathered after forward: the backward needs them right away
    fully_shard(model, mesh=mesh, mp_policy=policy, reshard_after_forward=False)
    return model


def build_optimizer(params: Any, *, settings: dict[str, Any]) -> Any:
    import torch

    impl = settings["optimizer_impl"]
    return torch.optim.AdamW(
        params,
        lr=settings["lr"],
        betas=tuple(settings["betas"]),
        eps=settings["eps"],
        weight_decay=settings["weight_decay"],
        **({"fused": True} if impl == "fused" else {"foreach": True} if impl == "foreach" else {}),
    )


def build(model: Any, *, settings: dict[str, Any], device: Any, world: int) -> tuple[Any, Any]:
    """Apply compilation and parallelism in the documented order; returns (module to call, optimizer)."""
    import torch

    torch.set_float32_matmul_precision(settings["matmul_precision"])
    if settings["compile"] and settings["compile_scope"] == "block":
        apply_compile_blocks(model, settings=settings)
    if settings["parallel"] == "ddp":
        wrapped = apply_ddp(model, settings=settings, device=device)
    else:
        wrapped = apply_fsdp2(model, settings=settings, device=device, world=world)
    optimizer = build_optimizer(wrapped.parameters(), settings=settings)
    if settings["compile"] and settings["compile_scope"] == "model":
        wrapped = torch.compile(wrapped, mode=settings["compile_mode"])
    return wrapped, optimizer
