"""The GPT-style decoder in MLX, built from a ModelSpec: the same shapes, parameter names and maths as
runners/engines/torch/model.py (no biases, no dropout, LayerNorm without bias, exact GELU, causal attention, untied
head),
so both start from the same initial-weights file and their losses can be compared step by step.

Mixed precision mirrors torch.autocast(bfloat16): parameters stay float32; each matmul casts its input and weight
to the compute dtype; LayerNorm and the loss run in float32, and the residual stream stays float32 (a bf16 branch
added to it is promoted, as in PyTorch). Imported only inside the MLX runner's process.
"""

from __future__ import annotations

import mlx.core as mx
import mlx.nn as nn
import numpy as np
from mlx.utils import tree_flatten

from runners.spec import ModelSpec


class Dense(nn.Module):
    """A bias-free linear layer whose matmul runs in the compute dtype (torch.autocast's rule for linear)."""

    def __init__(self, d_in: int, d_out: int, compute: mx.Dtype) -> None:
        super().__init__()
        self.weight = mx.zeros((d_out, d_in))
        self.compute = compute

    def __call__(self, x: mx.array) -> mx.array:
        return x.astype(self.compute) @ self.weight.astype(self.compute).T


class Norm(nn.Module):
    """LayerNorm without bias, in float32 (autocast runs layer_norm in float32)."""

    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = mx.ones((dim,))
        self.eps = eps

    def __call__(self, x: mx.array) -> mx.array:
        return mx.fast.layer_norm(x.astype(mx.float32), self.weight, None, self.eps)


class Attention(nn.Module):
    def __init__(self, spec: ModelSpec, compute: mx.Dtype) -> None:
        super().__init__()
        self.heads = spec.heads
        self.qkv = Dense(spec.dim, 3 * spec.dim, compute)
        self.proj = Dense(spec.dim, spec.dim, compute)

    def __call__(self, x: mx.array) -> mx.array:
        b, t, d = x.shape
        hd = d // self.heads
        q, k, v = mx.split(self.qkv(x), 3, axis=-1)
        q, k, v = (z.reshape(b, t, self.heads, hd).transpose(0, 2, 1, 3) for z in (q, k, v))
        y = mx.fast.scaled_dot_product_attention(q, k, v, scale=hd**-0.5, mask="causal")
        return self.proj(y.transpose(0, 2, 1, 3).reshape(b, t, d))


class MLP(nn.Module):
    def __init__(self, spec: ModelSpec, compute: mx.Dtype) -> None:
        super().__init__()
        self.up = Dense(spec.dim, spec.ffn_dim, compute)
        self.down = Dense(spec.ffn_dim, spec.dim, compute)

    def __call__(self, x: mx.array) -> mx.array:
        return self.down(nn.gelu(self.up(x)))  # nn.gelu is the exact (erf) GELU, as torch's F.gelu


class Block(nn.Module):
    def __init__(self, spec: ModelSpec, compute: mx.Dtype) -> None:
        super().__init__()
        self.ln1 = Norm(spec.dim, spec.norm_eps)
        self.attn = Attention(spec, compute)
        self.ln2 = Norm(spec.dim, spec.norm_eps)
        self.mlp = MLP(spec, compute)

    def __call__(self, x: mx.array) -> mx.array:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, spec: ModelSpec, compute: mx.Dtype = mx.float32) -> None:
        super().__init__()
        if spec.family != "gpt":
            raise ValueError(f"GPT module built from a {spec.family!r} spec")
        self.wte = mx.zeros((spec.vocab, spec.dim))
        self.wpe = mx.zeros((spec.context, spec.dim))
        self.blocks = [Block(spec, compute) for _ in range(spec.layers)]
        self.ln_f = Norm(spec.dim, spec.norm_eps)
        if not spec.tied_embeddings:
            self.head = Dense(spec.dim, spec.vocab, compute)
        self.compute = compute
        self.tied = spec.tied_embeddings

    def __call__(self, idx: mx.array) -> mx.array:
        t = idx.shape[1]
        x = self.wte[idx] + self.wpe[:t]
        for block in self.blocks:
            x = block(x)
        x = self.ln_f(x)
        if self.tied:
            return x.astype(self.compute) @ self.wte.astype(self.compute).T
        return self.head(x)

    def load_numpy(self, weights: dict[str, np.ndarray]) -> None:
        """Copy the framework-independent initial weights in; names and shapes must match exactly."""
        params = dict(tree_flatten(self.parameters()))
        if set(params) != set(weights):
            missing, extra = sorted(set(params) - set(weights)), sorted(set(weights) - set(params))
            raise ValueError(f"initial weights do not match the model: missing {missing}, unexpected {extra}")
        for name, p in params.items():
            if tuple(p.shape) != weights[name].shape:
                raise ValueError(f"initial weight {name}: shape {weights[name].shape}, the model has {p.shape}")
        self.load_weights([(name, mx.array(weights[name])) for name in params], strict=True)


def loss_fn(model: GPT, x: mx.array, y: mx.array) -> mx.array:
    """Mean next-token cross-entropy in float32, as the torch runner's `F.cross_entropy(logits.float(), y)`."""
    logits = model(x).astype(mx.float32)
    return nn.losses.cross_entropy(logits, y, reduction="mean")
