"""Deterministic, framework-independent artifacts from a ModelSpec: initial weights and a token stream.

Both are plain numpy, seeded per tensor and per step, so every training engine (and every world size) starts
from the same weights and sees the same data: losses can be compared across variants.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import numpy as np

from runners.spec import ModelSpec

INIT_STD = 0.02  # GPT-2 / nanoGPT initialisation
INIT_RECIPE = "gpt2-normal-0.02-v1"
"""The initial weights' recipe, by name (`init_weights`): a change to how they are made is a new name."""
DATA_RECIPE = "markov-successors4-v1"
"""The token stream's recipe, by name (`token_batches`): a change to how it is made is a new name."""


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


# --- the initial-weights file -------------------------------------------------------------------------------

_ST_DTYPES: dict[np.dtype[Any], str] = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16"}


def spec_key(spec: ModelSpec, seed: int) -> str:
    """A file-name-safe key of a model's shapes and seed: the same key means the same initial weights."""
    import dataclasses
    import hashlib
    import json

    shapes = dataclasses.asdict(spec) | {"seed": seed, "init": INIT_RECIPE}
    shapes.pop("name")
    digest = hashlib.sha256(json.dumps(shapes, sort_keys=True).encode()).hexdigest()[:12]
    return f"{spec.name}-seed{seed}-{digest}"


def write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """Write tensors in the safetensors format (a JSON header, then raw little-endian data), atomically."""
    import json
    import os

    header: dict[str, object] = {"__metadata__": {"format": "np", "writer": "fairfight"}}
    offset = 0
    for name, arr in tensors.items():
        header[name] = {
            "dtype": _ST_DTYPES[arr.dtype],
            "shape": list(arr.shape),
            "data_offsets": [offset, offset + arr.nbytes],
        }
        offset += arr.nbytes
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)  # the format pads the header to 8 bytes
    tmp = path.with_name(f".tmp-{path.name}-{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(len(blob).to_bytes(8, "little"))
        f.write(blob)
        for arr in tensors.values():
            f.write(np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"), copy=False).tobytes())
    os.replace(tmp, path)


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Memory-map a safetensors file written by `write_safetensors` (F32/F16 only)."""
    import json

    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
    data = np.memmap(path, dtype=np.uint8, mode="c", offset=8 + size)  # copy-on-write: the file is never changed
    names = {v: k for k, v in _ST_DTYPES.items()}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = data[begin:end].view(names[info["dtype"]]).reshape(info["shape"])
    return out


def state_sha256(tensors: dict[str, Any]) -> str:
    """sha256 of a model's weights as it holds them (arrays numpy can read, by parameter name, every engine's names
    being these; each is read only when hashed, so no second copy of the model is made): in name order, each name,
    dtype and shape, then its little-endian bytes. Two engines that loaded the same weights give the same digest,
    whatever they do with them next (cast, shard, convert)."""
    import hashlib

    digest = hashlib.sha256()
    for name in sorted(tensors):
        array = np.ascontiguousarray(np.asarray(tensors[name]))
        array = array.astype(array.dtype.newbyteorder("<"), copy=False)
        digest.update(f"{name}:{array.dtype.str}:{list(array.shape)};".encode())
        digest.update(array.data.cast("B"))
    return digest.hexdigest()


def tokens_sha256(tokens: np.ndarray) -> str:
    """sha256 of a token array's int64 little-endian bytes in C order: for the global batches of every step
    (`token_batches`, steps × global batch × (sequence + 1)), what every rank took its rows from."""
    import hashlib

    array = np.ascontiguousarray(tokens, dtype=np.dtype("<i8"))
    return hashlib.sha256(array.data.cast("B")).hexdigest()


def weights_file_sha256(spec: ModelSpec, seed: int, cache_dir: Path) -> str:
    """sha256 of the initial-weights file a run reads (`initial_weights_file`)."""
    import hashlib

    digest = hashlib.sha256()
    with open(initial_weights_file(spec, seed, cache_dir), "rb") as f:
        while chunk := f.read(1 << 24):
            digest.update(chunk)
    return digest.hexdigest()


def initial_weights_file(spec: ModelSpec, seed: int, cache_dir: Path) -> Path:
    """The seeded initial weights as one framework-independent safetensors file, made once and reused."""
    path = Path(cache_dir) / f"{spec_key(spec, seed)}.safetensors"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_safetensors(path, init_weights(spec, seed))
    return path
