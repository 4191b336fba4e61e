"""The measured copy bound's reference bandwidth: per hardware model, the device copy bandwidth calibrated in the same
job as the runs that measured one (bytes read + written per second, `runners/calibrate.py`), the median of every
measured run's own. Inference and serving runs calibrate nothing of their own, so every page that sets a decode
beside the copy bound (the boards, "One GPU, every engine") takes this one figure per hardware model: `derive.results`
derives it once a build and hands the same mapping to each."""

from __future__ import annotations

import polars as pl

import generator.derive.counting as counting


def copy_bandwidths(summary: pl.DataFrame) -> dict[str, float]:
    """Per hardware model (`accelerator`), the median of every measured run's own calibrated copy bandwidth."""
    found = (
        summary.filter(counting.MEASURED & pl.col("copy_bytes_per_s").is_not_null())
        .group_by("accelerator")
        .agg(pl.col("copy_bytes_per_s").median())
        .sort("accelerator")  # by name: group_by's order differs from build to build, and pages list these in order
    )
    return dict(found.iter_rows())
