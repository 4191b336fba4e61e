"""MLX's own quantized weights, written directly from the seeded pool: the Hugging Face folder of a Llama model with
every matrix in mlx-lm's affine format (`mx.quantize`: per group of 64 values along a row, a float16 scale and bias
and the values packed into uint32), as `mlx_lm.convert --quantize` writes it. Never through an fp16 folder: a 70B
model's is 141 GB, more than a bench host's disk; its 4-bit folder is ~40 GB.

Which format and why: MLX serves its own affine quantization natively (`nn.QuantizedLinear`, `QuantizedEmbedding`:
quantized matmuls on Metal, CUDA and the CPU), 4-bit for a 70B on one GPU and 8-bit beside llama.cpp's Q8_0; it
cannot run GGUF K-quants on the GPU. The pool is quantized once by `mx.quantize` and each tensor tiled from its groups
as the fp16 writer tiles values (`llama_files.tiles`: offsets are multiples of 256 values, so whole groups), so the
folder is what `mx.quantize` makes of each fp16 tensor, which tests/runners/engines/test_mlx.py checks on a tiny
shape.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from runners import cache, llama_files
from runners.spec import ModelSpec

GROUP_SIZE = 64
"""Values per quantization group (mlx-lm's default)."""
WEIGHTS = {"mlx-q4": 4, "mlx-q8": 8}
"""An MLX variant's `weights` setting and its bits per value (`hf` is the fp16 folder, `llama_files.hf_folder`)."""


@functools.cache
def quantized_pool(seed: int, bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The seeded pool quantized by MLX's own `mx.quantize`, one row per group of `GROUP_SIZE`: (packed uint32 values
    `(groups, GROUP_SIZE * bits / 32)`, float16 scales `(groups,)`, float16 biases `(groups,)`)."""
    import mlx.core as mx

    pool = llama_files._pool(seed).reshape(-1, GROUP_SIZE)
    packed, scales, biases = mx.quantize(mx.array(pool), group_size=GROUP_SIZE, bits=bits)
    return np.asarray(packed), np.asarray(scales).reshape(-1), np.asarray(biases).reshape(-1)


def quantized_tensor(spec: ModelSpec, hf_name: str, seed: int, bits: int) -> tuple[np.ndarray, ...]:
    """One matrix as mlx-lm stores it: packed values `(rows, cols * bits / 32)` uint32, scales and biases
    `(rows, cols / GROUP_SIZE)` float16, tiled from the quantized pool's groups."""
    rows, cols = llama_files.hf_shapes(spec)[hf_name]
    if cols % GROUP_SIZE:
        raise ValueError(
            f"model {spec.name!r}, tensor {hf_name}: rows of {cols} values do not split into groups of {GROUP_SIZE}"
        )
    packed, scales, biases = quantized_pool(seed, bits)
    groups = rows * cols // GROUP_SIZE
    out_packed = np.empty((groups, packed.shape[1]), dtype=np.uint32)
    out_scales = np.empty(groups, dtype=np.float16)
    out_biases = np.empty(groups, dtype=np.float16)
    for start, count, offset in llama_files.tiles(hf_name, rows * cols, seed):
        a, b = start // GROUP_SIZE, (start + count) // GROUP_SIZE
        src = slice(offset // GROUP_SIZE, (offset + count) // GROUP_SIZE)
        out_packed[a:b], out_scales[a:b], out_biases[a:b] = packed[src], scales[src], biases[src]
    per_row = cols // GROUP_SIZE
    return (out_packed.reshape(rows, -1), out_scales.reshape(rows, per_row), out_biases.reshape(rows, per_row))


def _entries(spec: ModelSpec, bits: int) -> list[tuple[str, str, tuple[int, ...]]]:
    """(name, safetensors dtype, shape) of every stored tensor, in file order."""
    out: list[tuple[str, str, tuple[int, ...]]] = []
    for name, shape in llama_files.hf_shapes(spec).items():
        if len(shape) == 1:
            out.append((name, "F16", shape))
            continue
        stem = name.removesuffix(".weight")
        rows, cols = shape
        out += [
            (name, "U32", (rows, cols * bits // 32)),
            (f"{stem}.scales", "F16", (rows, cols // GROUP_SIZE)),
            (f"{stem}.biases", "F16", (rows, cols // GROUP_SIZE)),
        ]
    return out


def write_folder(spec: ModelSpec, seed: int, weights: str, target: Path) -> Path:
    """config.json (with mlx-lm's `quantization`), model.safetensors (streamed tensor by tensor) and the tokenizer."""
    bits = WEIGHTS[weights]
    tmp = target.with_name(f".tmp-{target.name}-{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=False)
    try:
        _write(spec, seed, bits, tmp)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # a failed write (a full disk: a 70B folder is ~40 GB) leaves none
    return target


def _write(spec: ModelSpec, seed: int, bits: int, tmp: Path) -> None:
    entries = _entries(spec, bits)
    header: dict[str, Any] = {"__metadata__": {"format": "mlx", "writer": "fairfight", "recipe": llama_files.RECIPE}}
    offset = 0
    for name, dtype, shape in entries:
        size = int(np.prod(shape)) * (4 if dtype == "U32" else 2)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    with open(tmp / "model.safetensors", "wb") as f:
        f.write(len(blob).to_bytes(8, "little") + blob)
        for name, shape in llama_files.hf_shapes(spec).items():
            if len(shape) == 1:
                f.write(np.ones(shape, dtype="<f2").tobytes())  # norms: ones, as llama_files.tensor
                continue
            for part in quantized_tensor(spec, name, seed, bits):
                f.write(np.ascontiguousarray(part).tobytes())
    config = llama_files.hf_config(spec) | {"quantization": {"group_size": GROUP_SIZE, "bits": bits}}
    (tmp / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    llama_files.write_tokenizer(spec, tmp)


def folder(spec: ModelSpec, seed: int, weights: str, cache_dir: Path) -> Path:
    """The folder MLX loads for `weights`: the fp16 Hugging Face folder (`hf`) or a quantized one, made once per key."""
    if weights == "hf":
        return llama_files.hf_folder(spec, seed, cache_dir)
    if weights not in WEIGHTS:
        raise ValueError(f"MLX weights {weights!r}: expected 'hf' or one of {list(WEIGHTS)}")
    target = Path(cache_dir) / llama_files.key(spec, seed) / weights
    target.parent.mkdir(parents=True, exist_ok=True)
    with cache.locked(target.parent / f".{weights}.lock"):  # a second maker waits, then finds it made
        if not target.exists():
            write_folder(spec, seed, weights, target)
    return target


def weight_bytes_per_token(folder_path: Path) -> int:
    """Bytes of the weights a decoded token reads, from the folder's safetensors header: every tensor but the token
    embedding's (one row of it is looked up), whatever the format."""
    with open(folder_path / "model.safetensors", "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
    return sum(
        v["data_offsets"][1] - v["data_offsets"][0]
        for k, v in header.items()
        if k != "__metadata__" and not k.startswith("model.embed_tokens.")
    )
