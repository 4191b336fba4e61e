"""Deterministic, framework-independent artifacts from a ModelSpec: initial weights and a token stream.

Both are plain numpy, seeded per tensor and per step, so every training engine (and every world size) starts
from the same weights and sees the same data: losses can be compared across variants.
"""

from __future__ import annotations

import zlib

import numpy as np

from runners.spec import ModelSpec

INIT_STD = 0.02  # GPT-2 / nanoGPT initialisation


def gpt_param_shapes(spec: ModelSpec) -> dict[str, tuple[int, ...]]:
    """Names and shapes of the GPT-style model's parameters (the torch module uses the same names)."""
    d, f = spec.dim, spec.ffn_dim
    shapes: dict[str, tuple[int, ...]] = {"wte": (spec.vocab, d), "wpe": (spec.context, d)}
    for i in range(spec.layers):
        shapes |= {
            f"blocks.{i}.ln1.weight": (d,),
            f"blocks.{i}.attn.qkv.weight": (3 * d, d),
            f"blocks.{i}.attn.proj.weight": (d, d),
            f"blocks.{i}.ln2.weight": (d,),
            f"blocks.{i}.mlp.up.weight": (f, d),
            f"blocks.{i}.mlp.down.weight": (d, f),
        }
    shapes["ln_f.weight"] = (d,)
    if not spec.tied_embeddings:
        shapes["head.weight"] = (spec.vocab, d)
    return shapes


def _rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def init_tensor(spec: ModelSpec, name: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """One initial tensor, float32: norms at one, matrices N(0, 0.02), residual projections scaled 1/sqrt(2L).

    Seeded by (seed, name), so a tensor does not depend on which others are made or in what order.
    """
    if name.endswith(("ln1.weight", "ln2.weight", "ln_f.weight")):
        return np.ones(shape, dtype=np.float32)
    std = INIT_STD
    if name.endswith(("attn.proj.weight", "mlp.down.weight")):
        std = INIT_STD / np.sqrt(2 * spec.layers)  # GPT-2 paper, section 2.3
    out = _rng(seed, name).standard_normal(shape, dtype=np.float32)
    out *= np.float32(std)
    return out


def init_weights(spec: ModelSpec, seed: int) -> dict[str, np.ndarray]:
    """Every initial tensor of the GPT-style model."""
    if spec.family != "gpt":
        raise NotImplementedError(f"initial weights for family {spec.family!r} come with its training runner")
    return {name: init_tensor(spec, name, shape, seed) for name, shape in gpt_param_shapes(spec).items()}


SUCCESSORS = 4  # each token has this many possible next tokens: an entropy floor of ln 4 ≈ 1.386 nats


def successor_table(vocab: int, seed: int) -> np.ndarray:
    """The stream's grammar: for each token, `SUCCESSORS` fixed possible next tokens."""
    return _rng(seed, "stream.successors").integers(0, vocab, size=(vocab, SUCCESSORS), dtype=np.int64)


def token_batches(*, vocab: int, seed: int, steps: range, global_batch: int, seq_len: int) -> np.ndarray:
    """Sequences of a seeded Markov chain with learnable structure, shape (len(steps), global_batch, seq_len + 1).

    Step s's global batch depends only on (seed, s): any world size and any range of steps sees the same
    sequences. Rank r of W takes rows [r·B, (r+1)·B) of its step's global batch of W·B rows. The loss can fall
    from ln(vocab) towards ln(SUCCESSORS); a model that learns nothing stays near ln(vocab).
    """
    table = successor_table(vocab, seed)
    n = len(steps)
    first = np.empty((n, global_batch), dtype=np.int64)
    choice = np.empty((n, global_batch, seq_len), dtype=np.uint8)
    for i, s in enumerate(steps):
        rng = np.random.default_rng([seed, 1 + s])
        first[i] = rng.integers(0, vocab, size=global_batch)
        choice[i] = rng.integers(0, SUCCESSORS, size=(global_batch, seq_len), dtype=np.uint8)
    tokens = np.empty((n, global_batch, seq_len + 1), dtype=np.int64)
    tokens[:, :, 0] = first
    for t in range(seq_len):  # vectorised over every row of every step
        tokens[:, :, t + 1] = table[tokens[:, :, t], choice[:, :, t]]
    return tokens
