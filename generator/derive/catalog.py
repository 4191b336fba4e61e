"""The catalogue pages' tables: failed runs, the hardware and its calibration, and the engines that ran."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

import generator.derive.counting as counting
import generator.derive.summaries as summaries
from generator.derive.claims import PRECISIONS
from runners import metrics, schema


@dataclass(frozen=True, slots=True, kw_only=True)
class Catalog:
    failures: pl.DataFrame
    """Every run that did not finish, newest first."""
    hardware: pl.DataFrame
    """Per hardware, device count, precision, interconnect and driver: the calibrated matmul and copy figures."""
    calibrated_peaks: pl.DataFrame
    """The calibrated peak each run's calibrated MFU divides by (one per hardware model and precision)."""
    engines: pl.DataFrame
    """Per engine, version, origin and device: its runs, variants and hardware."""
    engine_sections: list[dict[str, Any]]
    """Per engine of the registry (`schema.ENGINE_ABOUT`, in its order): its name, what it is, its own tool, what it
    runs, and its rows of `engines` (`versions`)."""
    other_engines: list[dict[str, Any]]
    """The rows of `engines` of no registered engine: own tools, claims, retractions."""
    datasheet_peaks: list[dict[str, Any]]
    """Per device of the datasheet table (`metrics.DATASHEET_PEAK_FLOPS`), its peak at each precision
    (`claims.PRECISIONS`; None where the datasheet gives none)."""


def tables(summary: pl.DataFrame) -> Catalog:
    measured = summary.filter(counting.MEASURED)
    hardware = (
        measured.filter(pl.col("calibrated_matmul_flops").is_not_null())
        .with_columns(copy=pl.col("copy_bytes_per_s"), busbw=pl.col("busbw_bytes_per_s"))
        .group_by("accelerator", "accelerator_count", "compute_precision", "interconnect", "driver", "cuda")
        .agg(
            runs=pl.len(),
            **summaries.median_range("calibrated_matmul_flops", "matmul_median", "matmul_min", "matmul_max"),
            copy_median=pl.col("copy").median(),
            busbw_median=pl.col("busbw").median(),
        )
        .sort("accelerator", "accelerator_count", "compute_precision")
    )
    used = (  # the calibrated peak each run's calibrated MFU divides by (derive: one per hardware model and precision)
        measured.filter(pl.col("model_matmul_flops").is_not_null())
        .group_by("accelerator", "matmul_precision")
        .agg(peak=pl.col("model_matmul_flops").first(), runs=pl.col("calibrated_matmul_flops").is_not_null().sum())
        .sort("accelerator", "matmul_precision")
    )
    engines = (
        summary.group_by("engine", "engine_version", "origin", "device")
        .agg(runs=pl.len(), variants=pl.col("variant").unique().sort(), hardware=pl.col("accelerator").unique().sort())
        .sort("engine", "engine_version", "origin", "device", nulls_last=True)
    )
    rows = engines.to_dicts()
    return Catalog(
        failures=summary.filter(pl.col("status") != "ok").sort("started_at", descending=True),
        hardware=hardware,
        calibrated_peaks=used,
        engines=engines,
        engine_sections=[
            dict(name=name, **about, versions=[r for r in rows if r["engine"] == name])
            for name, about in schema.ENGINE_ABOUT.items()
        ],
        other_engines=[r for r in rows if r["engine"] is not None and r["engine"] not in schema.ENGINE_ABOUT],
        datasheet_peaks=[
            {"device": device, **{p: peaks.get(p) for p in PRECISIONS}}
            for device, peaks in metrics.DATASHEET_PEAK_FLOPS.items()
        ],
    )
