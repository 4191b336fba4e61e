"""PyTorch variant settings and how they are applied, in one documented order (torchtitan's pattern):

    build the model → load the shared initial weights → convert Linear layers to float8 training (if asked,
    torchao) → compile per block (if asked) → compile the loss head (if asked and the whole model is not
    compiled) → wrap for data parallelism (DDP, or FSDP2 `fully_shard` per block then the root) → build the
    optimizer over the wrapped parameters → compile the whole model (if asked).

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
    "compile_mode": "default",  # reduce-overhead: CUDA graphs (cudagraph trees) over each compiled region
    # the loss (final norm, LM head, cross-entropy) computed inside the model's forward and so inside a compiled
    # region: the whole compiled model's (compile_scope "model"), else its own compiled region (`loss_head`)
    "compile_loss": False,
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
    # float8 training (torchao.float8, a PyTorch project; FSDP2 variants only): "none" trains as PyTorch does.
    "float8_recipe": "none",  # none | tensorwise | rowwise | rowwise_with_gw_hp (Float8LinearConfig.from_recipe_name)
    "float8_convert_head": False,  # whether the LM head converts too (torchtitan keeps the output layer high precision)
    "float8_dim_multiple": 16,  # a Linear converts only if both its dims are multiples of this (_scaled_mm needs 16)
    "float8_all_gather": False,  # Float8LinearConfig.enable_fsdp_float8_all_gather: FSDP2 gathers float8 weights
    "float8_precompute_scale": False,  # precompute_float8_dynamic_scale_for_fsdp after each optimizer step
}
FLOAT8_MIN_CAPABILITY = (8, 9)
"""float8 matmuls (`torch._scaled_mm`) need Ada or Hopper tensor cores (compute capability 8.9 or later)."""
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
    "float8_recipe": ("none", "tensorwise", "rowwise", "rowwise_with_gw_hp"),
}


def defaults_for(parallel: str) -> dict[str, Any]:
    """PyTorch's defaults for every setting a variant with this parallelism must write out."""
    return COMMON | (FSDP2 if parallel == "fsdp2" else DDP)


def defaults_of(settings: dict[str, Any]) -> dict[str, Any]:
    """PyTorch's defaults for every setting of a variant with these settings (its parallelism, DDP where unsaid)."""
    return defaults_for(settings.get("parallel", "ddp"))


def check_settings(variant: spec.Variant, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every setting written out, none unknown, each of its default's type and within its choices."""
    s = dict(variant.settings) | (overrides or {})
    where = f"variant {variant.name!r}: settings"
    parallel = s.get("parallel")
    if not isinstance(parallel, str) or parallel not in CHOICES["parallel"]:
        raise spec.SpecError(f"{where}: key 'parallel': {parallel!r} is not one of {list(CHOICES['parallel'])}")
    checked = spec.check_written_out(where, s, defaults_for(parallel), CHOICES)
    if parallel == "fsdp2":
        check_float8(where, checked)
    return checked


def check_float8(where: str, s: dict[str, Any]) -> None:
    """The float8 settings that only make sense together (torchao asserts the first two at conversion; saying so
    here fails a bad variant before any process starts)."""
    recipe = s["float8_recipe"]
    if s["float8_all_gather"] and recipe != "tensorwise":
        raise spec.SpecError(f"{where}: key 'float8_all_gather': float8 all-gather needs float8_recipe 'tensorwise'")
    if s["float8_precompute_scale"] and not (recipe == "tensorwise" and s["float8_all_gather"]):
        raise spec.SpecError(
            f"{where}: key 'float8_precompute_scale': precomputed scales serve the tensorwise float8 all-gather only"
        )
    multiple = s["float8_dim_multiple"]
    if multiple < 16 or multiple % 16:
        raise spec.SpecError(f"{where}: key 'float8_dim_multiple': {multiple} is not a positive multiple of 16")


def compute_precision(settings: dict[str, Any]) -> str:
    """The precision the matmuls run in, which picks the peak that MFU is measured against. A float8 variant is
    `fp8`: its converted Linear layers (nearly all of the model's FLOPs) run float8 matmuls; attention and an
    unconverted head run in bf16, so its MFU is also worth reading against the bf16 peak (`REFERENCE_PRECISION`)."""
    if uses_float8(settings):
        return "fp8"
    if settings["precision"] == "bf16-autocast" or settings.get("param_dtype") == "bf16":
        return "bf16"
    return "fp32" if settings["matmul_precision"] == "highest" else "tf32"


def uses_float8(settings: dict[str, Any]) -> bool:
    """Whether a variant trains with float8 matmuls (DDP variants have no float8 settings: never)."""
    return settings.get("float8_recipe", "none") != "none"


REFERENCE_PRECISION = {"fp8": "bf16"}
"""The second peak a precision's MFU is shown against: float8 runs beside the bf16 peak every bf16 run uses."""


def float8_converts(fqn: str, in_features: int, out_features: int, *, settings: dict[str, Any]) -> bool:
    """Whether the Linear layer at `fqn` converts to float8 training: the LM head (`head`) only if asked, and no
    layer whose dims are not multiples of `float8_dim_multiple`."""
    if fqn == "head" and not settings["float8_convert_head"]:
        return False
    multiple = settings["float8_dim_multiple"]
    return in_features % multiple == 0 and out_features % multiple == 0


def check_float8_device(torch: Any, device: Any) -> None:
    """Fail early, with the reason, where float8 matmuls cannot run (a CPU runs them through torch._scaled_mm's
    reference kernels, which is how the tests check the variant; it measures nothing worth publishing)."""
    if device.type == "cuda" and torch.cuda.get_device_capability(device) < FLOAT8_MIN_CAPABILITY:
        name = torch.cuda.get_device_name(device)
        major, minor = FLOAT8_MIN_CAPABILITY
        raise RuntimeError(
            f"float8 training needs a CUDA GPU with compute capability >= {major}.{minor}; {name} has "
            + ".".join(map(str, torch.cuda.get_device_capability(device)))
        )


def apply_float8(model: Any, *, settings: dict[str, Any], device: Any) -> list[str]:
    """Swap the Linear layers `float8_converts` picks for torchao's Float8Linear (before compile and FSDP2, as
    torchtitan does); returns the names of the layers converted."""
    import dataclasses

    import torch

    check_float8_device(torch, device)
    try:
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training
    except ImportError as e:
        raise RuntimeError(
            "float8 training needs torchao (the `torch` extra; on a host without a network, the `host-torch` "
            "wheelhouse: see site_src/docs/offline-hosts.md)"
        ) from e
    config = dataclasses.replace(
        Float8LinearConfig.from_recipe_name(settings["float8_recipe"]),
        enable_fsdp_float8_all_gather=settings["float8_all_gather"],
    )
    converted: list[str] = []

    def keep(module: Any, fqn: str) -> bool:
        ok = float8_converts(fqn, module.in_features, module.out_features, settings=settings)
        if ok:
            converted.append(fqn)
        return ok

    convert_to_float8_training(model, module_filter_fn=keep, config=config)
    return converted


def after_step_hook(model: Any, *, settings: dict[str, Any]) -> Any:
    """What runs after each optimizer step, or None: with the tensorwise float8 all-gather, one all-reduce
    computes every float8 weight's scale for the next step's all-gather."""
    if not settings.get("float8_precompute_scale"):
        return None
    from torchao.float8 import precompute_float8_dynamic_scale_for_fsdp

    return lambda: precompute_float8_dynamic_scale_for_fsdp(model)


def apply_compile_blocks(model: Any, *, settings: dict[str, Any]) -> None:
    """Compile each transformer block in place (before wrapping, as torchtitan does for FSDP2)."""
    for block in model.blocks:
        block.compile(mode=settings["compile_mode"])


def apply_compile_loss(model: Any, *, settings: dict[str, Any]) -> None:
    """Compile the loss head (final norm, LM head, fp32 cross-entropy) as one region, so the logits' cast, softmax
    and its backward fuse around the head's matmul; a whole compiled model holds it already."""
    import torch

    if settings["compile"] and settings["compile_scope"] == "model":
        return
    model.loss_head = torch.compile(model.loss_head, mode=settings["compile_mode"])


def loss_function(forward: Any, *, settings: dict[str, Any]) -> Any:
    """`loss(x, y)`: inside the model's forward with `compile_loss`, else after it, in eager mode."""
    from runners.engines.torch.model import cross_entropy

    if settings["compile_loss"]:
        return lambda x, y: forward(x, y)
    return lambda x, y: cross_entropy(forward(x), y)


def step_begin_hook(*, settings: dict[str, Any]) -> Any:
    """What runs before each step, or None: with CUDA graphs, a mark that the previous step's graph outputs may be
    overwritten (cudagraph trees then replay instead of waiting for the outputs to die)."""
    if not (settings["compile"] or settings["compile_loss"]) or settings["compile_mode"] != "reduce-overhead":
        return None
    import torch

    return torch.compiler.cudagraph_mark_step_begin


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


def build(model: Any, *, settings: dict[str, Any], device: Any, world: int) -> tuple[Any, Any, Any]:
    """Apply float8, compilation and parallelism in the documented order; returns (`loss(x, y)`, optimizer,
    what to call after each optimizer step or None)."""
    import torch

    torch.set_float32_matmul_precision(settings["matmul_precision"])
    if uses_float8(settings):
        apply_float8(model, settings=settings, device=device)
    if settings["compile"] and settings["compile_scope"] == "block":
        apply_compile_blocks(model, settings=settings)
    if settings["compile_loss"]:
        apply_compile_loss(model, settings=settings)
    if settings["parallel"] == "ddp":
        wrapped = apply_ddp(model, settings=settings, device=device)
    else:
        wrapped = apply_fsdp2(model, settings=settings, device=device, world=world)
    optimizer = build_optimizer(wrapped.parameters(), settings=settings)
    if settings["compile"] and settings["compile_scope"] == "model":
        wrapped = torch.compile(wrapped, mode=settings["compile_mode"])
    return loss_function(wrapped, settings=settings), optimizer, after_step_hook(model, settings=settings)
