"""The verdict's point intervals go through the one evidence mechanism (issue 55): `verdict._intervals` is
`evidence.interval` for each reading, so a sweep point's interval follows a board row's rules: a run whose own
interval is wider than its figure has its span left out, a point of one run without a pooled spread is unreplicated
(no interval, never its own span dressed as a between-run one), and no interval has zero width. On the committed data
the published figures are those of `evidence.interval` for every point."""

from __future__ import annotations

import math

import polars as pl
import pytest

from generator import derive
from generator.derive import evidence, verdict
from runners import metrics

KEY = ("torch", "NVIDIA H200", 2)
SPREAD = metrics.PooledSpread(0.01, 6, 4)


def _points(rows: list[dict]) -> pl.DataFrame:
    base = {"engine": "torch", "accelerator": "NVIDIA H200", "runs": 1, "end_to_end_figures": [None]}
    return pl.DataFrame([base | r for r in rows])


def test_a_run_without_a_steady_state_has_its_span_left_out() -> None:
    """Two runs of a point, one of them wider in its own interval than its figure (0.72 [-47.8, 69.1]): the point's
    interval is the pooled spread's around both figures, not [-47.8, 69.1]."""
    points = _points([{"figures": [11.9, 0.72], "own_lo": [11.7, -47.8], "own_hi": [12.1, 69.1], "runs": 2,
                       "end_to_end_figures": [11.0, 0.7]}])  # fmt: skip
    (row,) = verdict._intervals(points, 2, {"steady": {KEY: SPREAD}, "end_to_end": {KEY: SPREAD}}).iter_rows(named=True)
    assert row["steps_per_s_lo"] > 0 and row["steps_per_s_hi"] < 69.1
    found = evidence.interval([11.9, 0.72], [(11.9, 11.7, 12.1), (0.72, -47.8, 69.1)], SPREAD)
    assert (row["steps_per_s_lo"], row["steps_per_s_hi"]) == (found.lo, found.hi) and found.flagged == 1


def test_a_point_of_one_run_without_a_spread_is_unreplicated() -> None:
    points = _points([{"figures": [14.6], "own_lo": [14.5], "own_hi": [14.7], "end_to_end_figures": [13.9]}])
    (row,) = verdict._intervals(points, 2, {}).iter_rows(named=True)
    assert row["steps_per_s_lo"] is None and row["steps_per_s_hi"] is None
    assert row["end_to_end_lo"] is None and row["end_to_end_hi"] is None  # never [13.9, 13.9]
    assert row["interval_basis"].startswith("unreplicated")


@pytest.mark.slow
def test_the_committed_verdict_points_are_the_evidence_mechanisms(committed_results: derive.Results) -> None:
    results = committed_results
    assert results.verdict is not None
    points, spreads = results.verdict.points, results.verdict.spreads
    assert points.height > 10
    for row in points.iter_rows(named=True):
        key = (row["engine"], row["accelerator"], results.verdict.fight.devices)
        own = results.runs.filter(pl.col("run_id").is_in(row["run_ids"])).sort("started_at", "run_id")
        found = evidence.interval(
            own["steps_per_s"].to_list(),
            list(own.select("steps_per_s", "steps_per_s_lo", "steps_per_s_hi").iter_rows()),
            spreads["steady"].get(key),
        )
        assert math.isclose(row["steps_per_s_lo"], found.lo) and math.isclose(row["steps_per_s_hi"], found.hi)
        assert row["steps_per_s_lo"] < row["steps_per_s_hi"]
