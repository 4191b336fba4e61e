"""A point, row or curve is one configuration (issue 55): the weights' format and quantization are part of a served or
inference point's identity, and every label of weights comes from the run's own record (generator/load/weights.py),
never a page's default: vLLM's `dtype` is its activations' type (float16 for its FP8 and AWQ runs too)."""

from __future__ import annotations

import json

import polars as pl

from generator.derive import serving
from generator.load import columns, weights

FP8 = {"weights": "dummy-fp8", "dtype": "float16", "quantization": "fp8"}
AWQ = {"weights": "dummy-awq", "dtype": "float16", "quantization": "awq"}
FP16 = {"weights": "hf", "dtype": "float16", "quantization": None}


def _config(settings: dict, quantization: dict | None) -> str:
    files = {"load_format": "dummy", **({"quantization_config": quantization} if quantization else {})}
    return json.dumps({"variant": {"settings": settings}, "model_files": files})


def test_the_weights_label_is_the_records_own_never_its_dtype() -> None:
    """A vLLM FP8 or AWQ record says dtype float16 (its activations) and names its weights' format in its variant's
    `weights` and its model files' `quantization_config`: the label reads those, so FP8 and AWQ are never "float16"
    nor "fp16", and never one label."""
    frame = pl.DataFrame(
        {
            "config": [
                _config({"weights": "dummy-fp8", "dtype": "float16"}, {"quant_method": "fp8"}),
                _config({"weights": "dummy-awq", "dtype": "float16"}, {"quant_method": "awq", "bits": 4}),
                _config({"weights": "hf", "dtype": "float16"}, None),
                _config({"weights": "q8_0"}, None),
                _config({"weights": "q4_k_m"}, None),
            ]
        }
    )
    flat = frame.select(columns.column(c) for c in weights.FORMAT_COLUMNS)
    assert flat["quantization"].to_list() == ["fp8", "awq", None, None, None]
    labels = flat.select(weights.label_expr())["weights_label"].to_list()
    assert labels[0].startswith("FP8") and labels[1].startswith("AWQ")
    assert labels[2] == "fp16"
    assert labels[3] == "Q8_0 GGUF" and labels[4] == "Q4_K_M GGUF"
    assert len(set(labels)) == len(labels)
    assert not any("float16" in label for label in labels)
    # a quantized folder of ours would still be named by the method its files declare, not by its dtype
    assert weights.label("hf", "float16", "fp8") == "fp8, from the Hugging Face folder"
    assert weights.label(None, "float16", None) is None  # training names no weights


def _served(run: str, settings: dict, ttft: float, tpot: float, rate: float) -> dict:
    return {
        "run_id": run,
        "suite": "h100",
        "model_name": "llama-32b",
        "accelerator": "NVIDIA H200",
        "accelerator_count": 1,
        "concurrency": 1,
        "kind": "serve",
        "origin": "measured",
        "status": "ok",
        "retracted_by": None,
        "output_tokens_per_s": rate,
        "median_tpot_ms": tpot,
        "median_itl_ms": tpot,
        "median_ttft_ms": ttft,
        "weights_label": weights.label(settings["weights"], settings["dtype"], settings["quantization"]),
    }


def test_an_fp8_run_and_an_awq_run_are_two_served_points_never_one() -> None:
    """vLLM's FP8 run (TTFT 65 ms) and its AWQ run (103 ms) of one model, hardware and concurrency: two points, each
    with its own figures, never one point whose TTFT is the median of the two (84 ms)."""
    frame = pl.DataFrame(
        [
            _served("fp8", FP8, 65.0, 11.0, 89.7),
            _served("awq", AWQ, 103.0, 11.6, 83.5),
            _served("awq-again", AWQ, 101.0, 11.7, 83.0),
        ]
    )
    points = serving.latency_points(frame)
    assert points.height == 2
    by_label = {r["weights_label"]: r for r in points.iter_rows(named=True)}
    fp8 = next(r for label, r in by_label.items() if label.startswith("FP8"))
    awq = next(r for label, r in by_label.items() if label.startswith("AWQ"))
    assert fp8["runs"] == 1 and fp8["ttft_ms"] == 65.0 and fp8["run_ids"] == ["fp8"]
    assert awq["runs"] == 2 and awq["ttft_ms"] == 102.0 and sorted(awq["run_ids"]) == ["awq", "awq-again"]


def test_points_of_two_gpu_models_are_two_lines_in_one_order_whatever_the_input_order() -> None:
    """vLLM's 8B at one request in flight on an H100 and on an H200, same weights and tensor-parallel size: two points
    in one fixed order (the sort left the GPU model out, and two builds of the same data drew the served-model chart's
    points in group_by's order: different bytes), each on its own line of the chart, never one line joining them."""
    from generator.render import model_charts

    h100 = _served("h100-run", FP8, 30.0, 6.5, 152.0) | {"accelerator": "NVIDIA H100 80GB HBM3"}
    h200 = _served("h200-run", FP8, 22.0, 4.8, 201.0)
    orders = [serving.latency_points(pl.DataFrame(rows)) for rows in ([h100, h200], [h200, h100]) for _ in range(20)]
    assert all(o.equals(orders[0]) for o in orders)
    assert orders[0]["accelerator"].to_list() == ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]
    spec = model_charts.latency_throughput(orders[0]).to_dict(validate=False)
    lines = {row["tp"] for row in next(iter(spec["datasets"].values()))}
    assert len(lines) == 2 and all(" × NVIDIA H" in line for line in lines), lines


def test_calibrated_copy_bandwidths_come_in_one_order() -> None:
    """ "One GPU, every engine" lists each hardware model's calibrated copy bandwidth in the order they come: two builds
    of the same data listed H100 and H200 in either order (group_by's), so the page's bytes differed."""
    from generator.derive import copy_bound

    rows = [("NVIDIA H200", 4.21e12), ("NVIDIA H100 80GB HBM3", 3.02e12), ("NVIDIA H200", 4.20e12)] * 50
    for order in (rows, rows[::-1]):
        frame = pl.DataFrame(order, schema={"accelerator": pl.String, "copy_bytes_per_s": pl.Float64}, orient="row")
        found = [copy_bound.copy_bandwidths(frame.with_columns(origin=pl.lit("measured"))) for _ in range(20)]
        assert all(list(f) == ["NVIDIA H100 80GB HBM3", "NVIDIA H200"] for f in found)


def test_tensor_parallel_scaling_is_one_curve_per_weights() -> None:
    """The latest AWQ run on one GPU is never the base an FP8 run on two GPUs is scaled against, nor does it hide
    the FP8 run on one GPU: each weights format is its own curve."""
    from datetime import UTC, datetime, timedelta

    def run(n: int, settings: dict, gpus: int, rate: float) -> dict:
        return _served(f"r{n}", settings, 50.0, 10.0, rate) | {
            "workload": "llama-32b-serve-c1", "entry": "e", "requests": 16, "out_rate": rate,
            "accelerator_count": gpus, "started_at": datetime(2026, 12, 1, tzinfo=UTC) + timedelta(minutes=n),
        }  # fmt: skip

    frame = pl.DataFrame([run(1, FP8, 1, 90.0), run(2, AWQ, 1, 80.0), run(3, FP8, 2, 160.0)])
    scaling = serving.tp_scaling(frame)
    rows = {(r["weights_label"][:3], r["accelerator_count"]): r for r in scaling.iter_rows(named=True)}
    assert set(rows) == {("FP8", 1), ("AWQ", 1), ("FP8", 2)}
    assert rows[("FP8", 2)]["base_gpus"] == 1 and rows[("FP8", 2)]["speedup"] == 160.0 / 90.0
    assert rows[("AWQ", 1)]["speedup"] == 1.0
