"""What weights a test ran on, named from the run's own record: part of a served or inference point's identity.

A served point run on FP8 weights and one run on AWQ weights are two configurations, never two runs of one point,
however alike the rest of their settings; and a label of weights, precision or format is the run's own (its variant's
`weights` setting and, for a vLLM folder, the `quantization_config` the record says its model files carried), never a
page's default: vLLM's `dtype` is the activations' type and says nothing of the weights' format.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

WEIGHT_LABELS = {
    "f16": "F16 GGUF",
    "q8_0": "Q8_0 GGUF",
    "q4_k_m": "Q4_K_M GGUF",
    "float16": "fp16",
    "bfloat16": "bf16",
    "mlx-q4": "MLX 4-bit",
    "mlx-q8": "MLX 8-bit",
    "dummy-fp8": "FP8, vLLM's own random values",
    "dummy-awq": "AWQ int4, vLLM's own random values",
    "dummy": "fp16, vLLM's own random values",
}
"""How a run names its weights, by its variant's `weights` setting: llama.cpp's GGUF types, MLX's quantized folders,
vLLM's quantized dummy folders; for our Hugging Face folder (`hf`), by the engine's dtype it ran it in."""

FORMAT_COLUMNS = ("weights", "dtype", "quantization")
"""The record's columns (`columns.COLUMNS`) a run's weights are named from."""


def label(weights: str | None, dtype: str | None = None, quantization: str | None = None) -> str | None:
    """A run's weights in words, from its record: `weights` (the variant's setting), `dtype` (the engine's, where it
    ran our Hugging Face folder) and `quantization` (the method its model files declare). None for a run that names no
    weights (training)."""
    if weights is None:
        return None
    if weights == "hf":
        if quantization is not None:
            return f"{quantization}, from the Hugging Face folder"
        return WEIGHT_LABELS.get(str(dtype), "fp16") if dtype is not None else "fp16"  # our folder is fp16
    known = WEIGHT_LABELS.get(weights)
    if known is not None:
        return known
    return weights if quantization is None else f"{weights} ({quantization})"


def label_expr(columns: Sequence[str] = FORMAT_COLUMNS) -> pl.Expr:
    """`label` of each run as a polars expression, `weights_label`; `columns`: the frame's columns (a
    `FORMAT_COLUMNS` column it lacks reads as null)."""
    fields = [pl.col(c) if c in columns else pl.lit(None, dtype=pl.String).alias(c) for c in FORMAT_COLUMNS]
    return (
        pl.struct(*fields)
        .map_elements(lambda r: label(r["weights"], r["dtype"], r["quantization"]), return_dtype=pl.String)
        .alias("weights_label")
    )
