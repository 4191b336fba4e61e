"""The GPT-style decoder in PyTorch, built from a ModelSpec (nanoGPT's shape, without biases or dropout).

Imported only inside the torch runner's processes: torch is not needed to import the rest of `runners`.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from runners.spec import ModelSpec


class Attention(nn.Module):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.heads = spec.heads
        self.qkv = nn.Linear(spec.dim, 3 * spec.dim, bias=False)
        self.proj = nn.Linear(spec.dim, spec.dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, d))


class MLP(nn.Module):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.up = nn.Linear(spec.dim, spec.ffn_dim, bias=False)
        self.down = nn.Linear(spec.ffn_dim, spec.dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x)))


class Block(nn.Module):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(spec.dim, eps=spec.norm_eps, bias=False)
        self.attn = Attention(spec)
        self.ln2 = nn.LayerNorm(spec.dim, eps=spec.norm_eps, bias=False)
        self.mlp = MLP(spec)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, spec: ModelSpec) -> None:
        super().__init__()
        if spec.family != "gpt":
            raise ValueError(f"GPT module built from a {spec.family!r} spec")
        self.spec = spec
        self.wte = nn.Parameter(torch.empty(spec.vocab, spec.dim))
        self.wpe = nn.Parameter(torch.empty(spec.context, spec.dim))
        self.blocks = nn.ModuleList(Block(spec) for _ in range(spec.layers))
        self.ln_f = nn.LayerNorm(spec.dim, eps=spec.norm_eps, bias=False)
        self.head = None if spec.tied_embeddings else nn.Linear(spec.dim, spec.vocab, bias=False)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        """The logits, or with `targets` the mean cross-entropy loss (the loss inside the model's forward, so a
        compiled model or a compiled `loss_head` holds it)."""
        t = idx.shape[1]
        x = F.embedding(idx, self.wte) + self.wpe[:t]
        for block in self.blocks:
            x = block(x)
        return self.logits(x) if targets is None else self.loss_head(x, targets)

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        x = self.ln_f(x)
        return x @ self.wte.t() if self.head is None else self.head(x)

    def loss_head(self, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Final norm, LM head and loss: the step's largest matmul and its softmax, one region to compile."""
        return cross_entropy(self.logits(x), targets)

    @torch.no_grad()
    def load_numpy(self, weights: dict[str, np.ndarray]) -> None:
        """Copy the framework-independent initial weights in; names and shapes must match exactly."""
        params = dict(self.named_parameters())
        if set(params) != set(weights):
            missing, extra = sorted(set(params) - set(weights)), sorted(set(weights) - set(params))
            raise ValueError(f"initial weights do not match the model: missing {missing}, unexpected {extra}")
        for name, p in params.items():
            p.copy_(torch.from_numpy(weights[name]))


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The training loss, in fp32 whatever the logits' dtype: every variant computes it so, compiled or not."""
    return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.reshape(-1))
