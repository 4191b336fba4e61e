"""A model's GGUF files (`gguf_file`: F16, Q8_0 and Q4_K_M, made once per key), the quantized ones written directly
from the seeded pool, never through an F16 file: a 70B model's F16 file is
141 GB, more than a bench host's 64 GiB disk, while its Q4_K_M file is ~40 GB.

The pool (`runners/llama_files.py`) is quantized once per block type by llama.cpp's own quantizer
(`ggml_quantize_chunk`, the function `llama_model_quantize` calls; without an importance matrix each block is
quantized on its own, `quantize_row_*_ref`), and each tensor is then tiled from those blocks exactly as the F16
writer tiles values (window offsets are multiples of 256 values, so whole blocks). Which type each tensor gets
follows llama.cpp's mixture for the file type (src/llama-quant.cpp `llama_tensor_get_type_impl`, in the llama.cpp
vendored in llama-cpp-python 0.3.36): the file is then the one `llama_model_quantize` makes from the F16 file, tensor
for tensor and byte for byte, which tests/runners/engines/test_llamacpp.py checks on tiny shapes.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from runners import cache, llama_files
from runners.spec import ModelSpec

F32, F16, Q8_0, Q4_K, Q5_K, Q6_K = 0, 1, 8, 12, 13, 14
"""ggml type ids (ggml.h `enum ggml_type`)."""
BLOCKS = {Q8_0: (32, 34), Q4_K: (256, 144), Q5_K: (256, 176), Q6_K: (256, 210)}
"""(values, bytes) per block of each quantized type (ggml-common.h: block_q8_0, block_q4_K, block_q5_K, block_q6_K)."""
TYPE_NAMES = {F32: "F32", F16: "F16", Q8_0: "Q8_0", Q4_K: "Q4_K", Q5_K: "Q5_K", Q6_K: "Q6_K"}
FILE_TYPES = {"q8_0": 7, "q4_k_m": 15}
"""`general.file_type` (llama_ftype): LLAMA_FTYPE_MOSTLY_Q8_0, LLAMA_FTYPE_MOSTLY_Q4_K_M."""
QUANTIZATION_VERSION = 2
"""`general.quantization_version` (ggml.h GGML_QNT_VERSION), which llama_model_quantize writes."""


def _use_more_bits(layer: int, layers: int) -> bool:
    """llama-quant.cpp `use_more_bits`: the first and last eighth of the layers, and every third one between."""
    return layer < layers // 8 or layer >= 7 * layers // 8 or (layer - layers // 8) % 3 == 2


def tensor_type(spec: ModelSpec, hf_name: str, weights: str) -> int:
    """The ggml type llama.cpp's quantizer gives one tensor of a Llama model for a file type (q8_0 or q4_k_m).

    Norms stay F32. Q8_0: every matrix Q8_0. Q4_K_M: Q4_K, except the output head (Q6_K), and attn_v and ffn_down
    in the layers `_use_more_bits` picks (Q6_K); llama.cpp takes an 80-layer Llama with grouped-query attention for
    its 70B (models/llama.cpp `LLM_TYPE_70B`) and gives its other attn_v Q5_K. Tensors are counted by layer number,
    as llama.cpp orders them (`weight_name_comparer`)."""
    shape = llama_files.hf_shapes(spec)[hf_name]
    if len(shape) == 1:
        return F32
    if weights == "q8_0":
        chosen = Q8_0
    elif weights == "q4_k_m":
        chosen = Q4_K
        gguf = llama_files.gguf_name(hf_name)
        layer = int(gguf.split(".")[1]) if gguf.startswith("blk.") else -1
        if gguf == "output.weight":
            chosen = Q6_K
        elif gguf.endswith("attn_v.weight"):
            if _use_more_bits(layer, spec.layers):
                chosen = Q6_K
            elif spec.layers == 80 and spec.heads != spec.kv_heads:
                chosen = Q5_K
        elif gguf.endswith("ffn_down.weight") and _use_more_bits(layer, spec.layers):
            chosen = Q6_K
    else:
        raise ValueError(f"weights {weights!r}: expected one of {list(FILE_TYPES)}")
    values = BLOCKS[chosen][0]
    if shape[-1] % values:  # llama.cpp would fall back to another type (tensor_type_fallback); we do not guess it
        raise ValueError(
            f"model {spec.name!r}, tensor {hf_name}: rows of {shape[-1]} values do not split into {TYPE_NAMES[chosen]} "
            f"blocks of {values}; a directly quantized file needs every matrix's width to be a multiple of {values}"
        )
    return chosen


def _lib_folder() -> Path:
    """Where llama.cpp's libraries are: the build `LLAMA_CPP_LIB_PATH` names (ours, runners/engines/llamacpp/
    build.py), else the llama_cpp package's own."""
    folder = os.environ.get("LLAMA_CPP_LIB_PATH")
    if folder:
        return Path(folder)
    try:
        import llama_cpp
    except ImportError:
        raise RuntimeError(
            'no llama.cpp library to quantize with: build it (eval "$(python -m runners.engines.llamacpp.build)") '
            "or point LLAMA_CPP_LIB_PATH at one"
        ) from None
    return Path(llama_cpp.__file__).parent / "lib"


def quantizer_provenance() -> dict[str, str]:
    """Which ggml quantized the pool: its build's folder name (the build's key; no path of the machine) and, where
    the build recorded it, the llama.cpp commit (reference quantizers can change between commits; the file's sha256
    says which bytes came out)."""
    folder = _lib_folder().resolve()
    for up in (folder.parent.parent, folder.parent.parent.parent):
        commit_file = up / "llama_cpp_commit.txt"
        if commit_file.is_file():
            return {"quantizer_build": up.name, "quantizer_llama_cpp": commit_file.read_text().strip()[:40]}
    return {"quantizer_build": folder.parent.parent.name}


def _ggml() -> Any:
    """llama.cpp's ggml library, for its quantizer (`_lib_folder`)."""
    folder = _lib_folder()
    for name in ("libggml-base.so", "libggml-base.dylib", "libggml.so", "libggml.dylib"):
        if (Path(folder) / name).exists():
            lib = ctypes.CDLL(str(Path(folder) / name))
            lib.ggml_quantize_chunk.restype = ctypes.c_size_t
            lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                                ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]  # fmt: skip
            return lib
    raise RuntimeError(f"no ggml library in {folder}: build llama.cpp first (python -m runners.engines.llamacpp.build)")


@functools.cache
def quantized_pool(seed: int, ggml_type: int) -> np.ndarray:
    """The seeded pool quantized by llama.cpp's quantizer: one row of bytes per block, `(blocks, block bytes)`."""
    values, size = BLOCKS[ggml_type]
    pool = np.ascontiguousarray(llama_files._pool(seed).astype(np.float32))  # F16 to F32 exactly, as llama.cpp does
    rows = pool.size // 256
    out = np.empty((pool.size // values, size), dtype=np.uint8)
    written = _ggml().ggml_quantize_chunk(ggml_type, pool.ctypes.data, out.ctypes.data, 0, rows, 256, None)
    if written != out.nbytes:
        raise RuntimeError(f"ggml_quantize_chunk wrote {written} bytes, expected {out.nbytes}")
    return out


def quantized_tensor(spec: ModelSpec, hf_name: str, seed: int, ggml_type: int) -> np.ndarray:
    """One matrix's quantized bytes, `(rows, bytes per row)`, in llama.cpp's row order: the tensor's windows of the
    pool (`llama_files.tiles`) as the pool's quantized blocks."""
    shape = llama_files.hf_shapes(spec)[hf_name]
    values, size = BLOCKS[ggml_type]
    blocks = quantized_pool(seed, ggml_type)
    n = int(np.prod(shape))
    out = np.empty((n // values, size), dtype=np.uint8)
    for start, count, offset in llama_files.tiles(hf_name, n, seed):
        out[start // values : (start + count) // values] = blocks[offset // values : (offset + count) // values]
    rows = out.reshape(shape[0], shape[1] // values * size)
    return llama_files.gguf_permuted(spec, hf_name, rows)


def write_gguf_quantized(spec: ModelSpec, seed: int, weights: str, target: Path) -> dict[str, Any]:
    """Write the Q8_0 or Q4_K_M GGUF file of the model to `target` (atomically, tensor by tensor); returns how it
    was made, with the count of tensors of each type and which ggml quantized it."""
    plan = {name: tensor_type(spec, name, weights) for name in llama_files.hf_shapes(spec)}
    tmp = target.with_name(f".tmp-{target.name}-{os.getpid()}")
    try:
        _write(spec, seed, weights, plan, tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)  # an interrupted or failed write (a full disk: a 70B file is ~40 GB) leaves none
    counts: dict[str, int] = {}
    for kind in plan.values():
        counts[TYPE_NAMES[kind]] = counts.get(TYPE_NAMES[kind], 0) + 1
    return {
        "tool": "runners.llama_quant.write_gguf_quantized",
        "quantizer": "ggml_quantize_chunk (llama.cpp's, on the seeded pool)",
        "ftype": FILE_TYPES[weights],
        "tensor_types": dict(sorted(counts.items())),
        **quantizer_provenance(),
    }


def _write(spec: ModelSpec, seed: int, weights: str, plan: dict[str, int], tmp: Path) -> None:
    import gguf

    w = llama_files.gguf_writer(spec, tmp, FILE_TYPES[weights])
    w.add_quantization_version(QUANTIZATION_VERSION)
    shapes = llama_files.hf_shapes(spec)
    for name, kind in plan.items():
        shape = shapes[name]
        if kind == F32:
            w.add_tensor_info(llama_files.gguf_name(name), shape, np.dtype(np.float32), int(np.prod(shape)) * 4)
        else:
            values, size = BLOCKS[kind]
            byte_shape = (shape[0], shape[1] // values * size)
            w.add_tensor_info(llama_files.gguf_name(name), byte_shape, np.dtype(np.uint8), shape[0] * byte_shape[1],
                              raw_dtype=gguf.GGMLQuantizationType(kind))  # fmt: skip
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for name, kind in plan.items():
        if kind == F32:
            w.write_tensor_data(np.ones(shapes[name], dtype=np.float32))  # norms: ones, as llama_files.tensor
        else:
            w.write_tensor_data(quantized_tensor(spec, name, seed, kind))
    w.close()


def gguf_file(spec: ModelSpec, seed: int, weights: str, cache_dir: Path) -> tuple[Path, dict[str, Any]]:
    """The GGUF file of `weights` (f16, q8_0 or q4_k_m), each written directly, made once per key and reused;
    returns it and how it was made (recorded beside it as `<file>.json`: the recipe, the writer and its sha256)."""
    if weights not in llama_files.WEIGHT_TYPES:
        raise ValueError(f"weights {weights!r}: expected one of {list(llama_files.WEIGHT_TYPES)}")
    folder = Path(cache_dir) / llama_files.key(spec, seed)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"model-{weights}.gguf"
    made = path.with_name(path.name + ".json")
    if path.exists() and made.exists():
        return path, json.loads(made.read_text())
    if weights == "f16":
        llama_files.write_gguf_f16(spec, seed, path)
        how: dict[str, Any] = {"tool": "runners.llama_files.write_gguf_f16"}
    else:
        how = write_gguf_quantized(spec, seed, weights, path)
    how |= {"recipe": llama_files.RECIPE, "seed": seed, "weights": weights}
    how |= {"sha256": cache.file_sha256(path), "bytes": path.stat().st_size}
    made.write_text(json.dumps(how, indent=2, sort_keys=True) + "\n")
    return path, how
