"""One Llama-shaped model in every format, from its `ModelSpec`: a Hugging Face folder (config.json, safetensors,
an offline tokenizer), which MLX also loads, and GGUF files: F16, Q8_0 and Q4_K_M, each written directly
(`runners/llama_quant.py` for the quantized ones: never through an F16 file, which for a 70B model is 141 GB).
Deterministic and cached by content: the same spec, seed and recipe give the same bytes under the same key.

Weights are random (the benchmarks measure speed, not quality) but seeded, and made in seconds even at 70B:
every tensor is cut from one seeded pool of normal values at offsets seeded by the tensor's name (`tiles`), so
nothing of a model's size is ever drawn from a random generator. The offsets are multiples of 256 values, a
K-quant block, so a quantized file is the pool's quantized blocks tiled the same way, and equals what llama.cpp's
own quantizer makes of the F16 file. The GGUF file holds the same values as the Hugging Face folder, with q and k
permuted to llama.cpp's rotary layout as its own converter does.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from runners.spec import ModelSpec

RECIPE = "llama-pool-v2"
"""Names the way weights are made: a new recipe gives new keys, never new bytes under an old key (v1: offsets at
any value; v2: offsets at multiples of `ALIGN`, so quantized blocks tile as values do)."""
POOL_VALUES = 1 << 22
"""Values in the seeded pool (4 Mi fp16, 8 MiB); tensors are windows of it, tiled with seeded offsets."""
TILE_VALUES = POOL_VALUES // 2
"""Values per window of the pool (the last window of a tensor is what is left)."""
ALIGN = 256
"""Window offsets are multiples of this many values: the block of every quantized type we write (QK_K = 256 for
Q4_K, Q5_K and Q6_K; Q8_0's 32 divides it)."""
INIT_STD = 0.02
ROPE_THETA = 500000.0
"""Rotary base of Llama 3 (the 8B shape's source); it changes no FLOP and no byte read."""
BOS, EOS = "<|begin_of_text|>", "<|end_of_text|>"
MERGES = 64
"""Byte-pair merges in the offline tokenizer: enough to make it a real BPE, no more (prompts are token ids)."""
QUANT_TYPES = {"q8_0": 7, "q4_k_m": 15}
"""llama.cpp's `llama_ftype` of each quantized file we make (LLAMA_FTYPE_MOSTLY_Q8_0, LLAMA_FTYPE_MOSTLY_Q4_K_M)."""
WEIGHT_TYPES = ("f16", *QUANT_TYPES)


def hf_shapes(spec: ModelSpec) -> dict[str, tuple[int, ...]]:
    """Parameter names (Hugging Face `LlamaForCausalLM`) and shapes, in file order."""
    if spec.family != "llama":
        raise ValueError(f"model {spec.name!r}: Llama-format files need a llama-family spec, not {spec.family!r}")
    d, f, kv = spec.dim, spec.ffn_dim, spec.kv_heads * spec.head_dim
    shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (spec.vocab, d)}
    for i in range(spec.layers):
        p = f"model.layers.{i}."
        shapes |= {
            p + "input_layernorm.weight": (d,),
            p + "self_attn.q_proj.weight": (d, d),
            p + "self_attn.k_proj.weight": (kv, d),
            p + "self_attn.v_proj.weight": (kv, d),
            p + "self_attn.o_proj.weight": (d, d),
            p + "post_attention_layernorm.weight": (d,),
            p + "mlp.gate_proj.weight": (f, d),
            p + "mlp.up_proj.weight": (f, d),
            p + "mlp.down_proj.weight": (d, f),
        }
    shapes["model.norm.weight"] = (d,)
    if not spec.tied_embeddings:
        shapes["lm_head.weight"] = (spec.vocab, d)
    return shapes


_GGUF_NAMES = {
    "input_layernorm": "attn_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "post_attention_layernorm": "ffn_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}


def gguf_name(hf_name: str) -> str:
    """llama.cpp's name of a Hugging Face Llama tensor (as its convert_hf_to_gguf.py maps them)."""
    if hf_name == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf_name == "model.norm.weight":
        return "output_norm.weight"
    if hf_name == "lm_head.weight":
        return "output.weight"
    _, _, layer, rest = hf_name.split(".", 3)
    return f"blk.{layer}.{_GGUF_NAMES[rest.removesuffix('.weight')]}.weight"


def key(spec: ModelSpec, seed: int) -> str:
    """File-name-safe key of the weights: model name, seed and a digest of every shape and the recipe."""
    fields = dataclasses.asdict(spec) | {"seed": seed, "recipe": RECIPE}
    fields.pop("name")
    digest = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:12]
    return f"{spec.name}-seed{seed}-{digest}"


def _pool(seed: int) -> np.ndarray:
    return (np.random.default_rng([seed, 0x11A4A]).standard_normal(POOL_VALUES, dtype=np.float32) * INIT_STD).astype(
        np.float16
    )


def tiles(name: str, n: int, seed: int) -> Iterator[tuple[int, int, int]]:
    """(start, size, pool offset) of each window of a tensor of `n` values, in order: offsets seeded by (seed,
    name) and multiples of `ALIGN`, so a tensor never depends on which others are made."""
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    for start in range(0, n, TILE_VALUES):
        size = min(TILE_VALUES, n - start)
        yield start, size, int(rng.integers(0, (POOL_VALUES - size) // ALIGN + 1)) * ALIGN


def tensor(name: str, shape: tuple[int, ...], seed: int, pool: np.ndarray | None = None) -> np.ndarray:
    """One weight, fp16: norms are ones; matrices are windows of the seeded pool (`tiles`)."""
    n = int(np.prod(shape))
    if len(shape) == 1:
        return np.ones(shape, dtype=np.float16)
    pool = _pool(seed) if pool is None else pool
    out = np.empty(n, dtype=np.float16)
    for start, size, offset in tiles(name, n, seed):
        out[start : start + size] = pool[offset : offset + size]
    return out.reshape(shape)


def tensors(spec: ModelSpec, seed: int) -> Iterator[tuple[str, np.ndarray]]:
    """Every weight in file order, one at a time (a 14B model never sits in memory whole)."""
    pool = _pool(seed)
    for name, shape in hf_shapes(spec).items():
        yield name, tensor(name, shape, seed, pool)


# --- the tokenizer ------------------------------------------------------------------------------------------


def _byte_alphabet() -> list[str]:
    """GPT-2's byte-level alphabet: each byte as a printable character (bytes_to_unicode)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), 256))
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def vocabulary(spec: ModelSpec) -> tuple[list[str], list[tuple[str, str]]]:
    """Tokens (byte alphabet, a few merges, reserved fillers, then BOS and EOS last) and the merges."""
    alphabet = _byte_alphabet()
    letters = [c for c in "etaoinshrdlucmfw"]
    merges = [(a, b) for a in letters for b in letters][:MERGES]
    tokens = alphabet + [a + b for a, b in merges]
    if spec.vocab < len(tokens) + 2:
        raise ValueError(f"model {spec.name!r}: vocab {spec.vocab} is below the tokenizer's {len(tokens) + 2}")
    tokens += [f"<|reserved_{i}|>" for i in range(spec.vocab - len(tokens) - 2)]
    return [*tokens, BOS, EOS], merges


def tokenizer_json(spec: ModelSpec) -> dict[str, Any]:
    """A byte-level BPE `tokenizer.json` that Hugging Face `tokenizers` loads offline."""
    tokens, merges = vocabulary(spec)
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": len(tokens) - 2 + i, "content": t, "single_word": False, "lstrip": False, "rstrip": False}
            | {"normalized": False, "special": True}
            for i, t in enumerate((BOS, EOS))
        ],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": {t: i for i, t in enumerate(tokens)},
            "merges": [[a, b] for a, b in merges],
        },
    }


# --- writers ------------------------------------------------------------------------------------------------


def _atomic_dir(target: Path) -> Path:
    tmp = target.with_name(f".tmp-{target.name}-{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=False)
    return tmp


def hf_config(spec: ModelSpec) -> dict[str, Any]:
    vocab = len(vocabulary(spec)[0])
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": spec.vocab,
        "hidden_size": spec.dim,
        "intermediate_size": spec.ffn_dim,
        "num_hidden_layers": spec.layers,
        "num_attention_heads": spec.heads,
        "num_key_value_heads": spec.kv_heads,
        "head_dim": spec.head_dim,
        "max_position_embeddings": spec.context,
        "rms_norm_eps": spec.norm_eps,
        "rope_theta": ROPE_THETA,
        "hidden_act": "silu",
        "tie_word_embeddings": spec.tied_embeddings,
        "torch_dtype": "float16",
        "bos_token_id": vocab - 2,
        "eos_token_id": vocab - 1,
        "attention_bias": False,
        "mlp_bias": False,
    }


def write_hf_folder(spec: ModelSpec, seed: int, target: Path) -> Path:
    """config.json, model.safetensors (fp16, streamed tensor by tensor), tokenizer.json and tokenizer_config.json."""
    tmp = _atomic_dir(target)
    shapes = hf_shapes(spec)
    header: dict[str, Any] = {"__metadata__": {"format": "pt", "writer": "fairfight", "recipe": RECIPE}}
    offset = 0
    for name, shape in shapes.items():
        size = int(np.prod(shape)) * 2
        header[name] = {"dtype": "F16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    with open(tmp / "model.safetensors", "wb") as f:
        f.write(len(blob).to_bytes(8, "little") + blob)
        for _, arr in tensors(spec, seed):
            f.write(arr.astype("<f2", copy=False).tobytes())
    (tmp / "config.json").write_text(json.dumps(hf_config(spec), indent=2) + "\n")
    write_tokenizer(spec, tmp)
    os.replace(tmp, target)
    return target


def config_folder(spec: ModelSpec, seed: int, cache_dir: Path, name: str, quantization: dict[str, Any] | None) -> Path:
    """A model folder of config.json (with `quantization_config` where given) and the tokenizer, and no weights: what
    an engine that makes its own random weights (vLLM's `load_format="dummy"`) loads. Made once per key and name."""
    target = Path(cache_dir) / key(spec, seed) / name
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = _atomic_dir(target)
        config = hf_config(spec) | ({"quantization_config": quantization} if quantization else {})
        (tmp / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        write_tokenizer(spec, tmp)
        os.replace(tmp, target)
    return target


def write_tokenizer(spec: ModelSpec, folder: Path) -> None:
    """tokenizer.json and tokenizer_config.json of the offline tokenizer into a model folder."""
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer_json(spec)))
    (folder / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": BOS,
                "eos_token": EOS,
                "model_max_length": spec.context,
            },
            indent=2,
        )
        + "\n"
    )


def _permute(w: np.ndarray, heads: int) -> np.ndarray:
    """q/k rows from Hugging Face's rotary layout to llama.cpp's (convert_hf_to_gguf.py, LlamaModel.permute); rows
    move whole, so this serves a matrix of values and one of each row's quantized bytes alike."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf_permuted(spec: ModelSpec, hf_name: str, rows: np.ndarray) -> np.ndarray:
    """A tensor's rows in llama.cpp's order: q and k permuted for its rotary layout, the rest as they are."""
    if hf_name.endswith("q_proj.weight"):
        return _permute(rows, spec.heads)
    if hf_name.endswith("k_proj.weight"):
        return _permute(rows, spec.kv_heads)
    return rows


def gguf_writer(spec: ModelSpec, path: Path, file_type: int) -> Any:
    """A `gguf.GGUFWriter` at `path` holding the model's metadata and tokenizer (what llama.cpp's converter writes
    for a Llama), `file_type` its `general.file_type` (llama_ftype); tensors are added by the caller."""
    import gguf

    w = gguf.GGUFWriter(str(path), "llama")
    tokens, merges = vocabulary(spec)
    w.add_name(spec.name)
    w.add_file_type(file_type)
    w.add_context_length(spec.context)
    w.add_embedding_length(spec.dim)
    w.add_block_count(spec.layers)
    w.add_feed_forward_length(spec.ffn_dim)
    w.add_head_count(spec.heads)
    w.add_head_count_kv(spec.kv_heads)
    w.add_layer_norm_rms_eps(spec.norm_eps)
    w.add_rope_dimension_count(spec.head_dim)
    w.add_rope_freq_base(ROPE_THETA)
    w.add_vocab_size(spec.vocab)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([gguf.TokenType.NORMAL] * (len(tokens) - 2) + [gguf.TokenType.CONTROL] * 2)
    w.add_token_merges([f"{a} {b}" for a, b in merges])
    w.add_bos_token_id(len(tokens) - 2)
    w.add_eos_token_id(len(tokens) - 1)
    w.add_add_bos_token(False)
    return w


def write_gguf_f16(spec: ModelSpec, seed: int, target: Path) -> Path:
    """A GGUF file of the same weights: matrices F16, norms F32 (as llama.cpp's converter writes them)."""
    import gguf

    tmp = target.with_name(f".tmp-{target.name}-{os.getpid()}")
    w = gguf_writer(spec, tmp, gguf.LlamaFileType.MOSTLY_F16)
    shapes = hf_shapes(spec)
    for name, shape in shapes.items():
        dtype = np.float32 if len(shape) == 1 else np.float16
        w.add_tensor_info(gguf_name(name), shape, np.dtype(dtype), int(np.prod(shape)) * np.dtype(dtype).itemsize)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for name, arr in tensors(spec, seed):
        arr = gguf_permuted(spec, name, arr)
        w.write_tensor_data(arr.astype(np.float32) if arr.ndim == 1 else arr)
    w.close()
    os.replace(tmp, target)
    return target


def quantize(source: Path, target: Path, weights: str, threads: int = 0) -> dict[str, Any]:
    """Make a quantized GGUF from the F16 one with llama.cpp's own quantizer (`llama_model_quantize`); returns
    how it was made."""
    import llama_cpp  # first, before numpy touches anything (see ../shared/ENVIRONMENT.md)

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = QUANT_TYPES[weights]
    params.nthread = threads
    tmp = target.with_name(f".tmp-{target.name}-{os.getpid()}")
    code = llama_cpp.llama_model_quantize(str(source).encode(), str(tmp).encode(), params)
    if code != 0:
        tmp.unlink(missing_ok=True)
        raise RuntimeError(f"llama_model_quantize({source} → {weights}) returned {code}")
    os.replace(tmp, target)
    return {
        "tool": "llama_cpp.llama_model_quantize",
        "llama_cpp_python": llama_cpp.__version__,
        "ftype": params.ftype,
        "from": source.name,
    }


def hf_folder(spec: ModelSpec, seed: int, cache_dir: Path) -> Path:
    """The Hugging Face folder (also what mlx-lm loads), made once per key."""
    target = Path(cache_dir) / key(spec, seed) / "hf"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        write_hf_folder(spec, seed, target)
    return target
