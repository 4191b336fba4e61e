"""No interval of zero width anywhere (issue 55): a figure without an interval shows none (null), never lo = hi; and
the pooled between-run spread keeps the runs its code says it keeps (a run with no loss-parity baseline)."""

from __future__ import annotations

import math

import polars as pl
import pytest

from generator import derive
from generator.derive import configurations, inference, ladder, serving
from generator.render import boards
from runners import metrics
from tests.generator.test_ranks import _run


def test_with_width_drops_an_interval_of_no_width() -> None:
    assert metrics.with_width(1.0, 2.0) == (1.0, 2.0)
    assert metrics.with_width(3.0, 3.0) == (None, None)
    assert metrics.with_width(None, 3.0) == (None, None)


def test_one_repetition_has_no_interval() -> None:
    """A run of one repetition has a median and no interval (its order statistics are lo = hi = the figure)."""
    frame = pl.DataFrame({"run_id": ["one", "two", "none"], "v": [[5.0], [4.0, 6.0], []]})
    out = {r["run_id"]: r for r in derive.repetition_intervals(frame, "rate").iter_rows(named=True)}
    assert out["one"]["rate_med"] == 5.0
    assert out["one"]["rate_lo"] is None and out["one"]["rate_hi"] is None and out["one"]["rate_coverage"] is None
    assert out["one"]["repetitions"] == 1
    assert (out["two"]["rate_lo"], out["two"]["rate_hi"]) == (4.0, 6.0) and out["two"]["rate_coverage"] == 0.5
    assert out["none"]["rate_med"] is None and out["none"]["repetitions"] == 0


def test_a_row_whose_run_has_a_zero_width_interval_shows_none() -> None:
    """A configuration of one run whose own interval has no width (lo = hi = its figure) and no pooled spread: the
    row has no interval, never [figure, figure]."""
    row = _run(1, rate_med=100.0, rate_lo=100.0, rate_hi=100.0)
    ranked, _ = inference.board(pl.DataFrame([row]), {})
    (only,) = ranked.iter_rows(named=True)
    assert only["value"] == 100.0 and only["lo"] is None and only["hi"] is None


def test_an_unranked_configuration_of_one_measurement_has_no_interval_in_the_board_json() -> None:
    """A served point that does not rank (one measurement, no interval of its own): the board's data gives its figure
    and no interval, never lo = hi; an unranked configuration whose runs have intervals keeps their span."""
    unranked = pl.DataFrame(
        [
            _run(1, value=290.0, lo=None, hi=None, unranked="median TTFT disagrees", settings={"a": 1}),
            _run(2, value=50.0, lo=49.0, hi=51.0, unranked="not cross-checked", settings={"b": 1}),
        ]
    )
    figure = ("value", "lo", "hi")
    rows = boards.board_rows(
        pl.DataFrame(schema={c: pl.String for c in ("rank", "settings_hash")}).clear(),
        unranked,
        configurations.unranked_spans(unranked, figure),
        "output tokens/s",
        figure,
    )
    by_run = {r["runs"][0]: r for r in rows}
    assert by_run["r1"]["value"] == 290.0
    assert by_run["r1"]["interval_low"] is None and by_run["r1"]["interval_high"] is None
    assert (by_run["r2"]["interval_low"], by_run["r2"]["interval_high"]) == (49.0, 51.0)
    assert configurations.unranked_figure([7.0], [7.0], [7.0]) == (7.0, None, None)
    assert configurations.unranked_figure([7.0], [None], [None]) == (7.0, None, None)
    # runs that differ span their figures; a run's own interval joins the span
    assert configurations.unranked_figure([200.0, 202.0], [None, None], [None, None]) == (201.0, 200.0, 202.0)
    assert configurations.unranked_figure([200.0, 202.0], [199.0, None], [201.0, None]) == (201.0, 199.0, 202.0)


def test_a_served_point_of_one_run_has_no_range_over_runs() -> None:
    base = {"suite": "s", "model_name": "m", "weights_label": "fp16", "accelerator": "NVIDIA H200", "kind": "serve",
            "origin": "measured", "status": "ok", "retracted_by": None, "median_itl_ms": 5.0, "median_ttft_ms": 50.0,
            "concurrency": 1}  # fmt: skip
    points_ = [("a", 1, 100.0, 10.0), ("b", 2, 180.0, 6.0), ("c", 2, 200.0, 5.0)]
    frame = pl.DataFrame(
        [
            base | {"run_id": r, "accelerator_count": n, "output_tokens_per_s": rate, "median_tpot_ms": tpot}
            for r, n, rate, tpot in points_
        ]
    )
    points = {r["accelerator_count"]: r for r in serving.latency_points(frame).iter_rows(named=True)}
    one, two = points[1], points[2]
    assert one["per_gpu"] == 100.0 and one["per_gpu_lo"] is None and one["per_gpu_hi"] is None
    assert one["tpot_lo"] is None and one["tpot_hi"] is None
    assert (two["per_gpu_lo"], two["per_gpu_hi"]) == (90.0, 100.0) and (two["tpot_lo"], two["tpot_hi"]) == (5.0, 6.0)


def _training(run: str, figure: float, parity: bool | None, settings: str = "h1") -> dict:
    return {
        "run_id": run, "origin": "measured", "retracted_by": None, "status": "ok", "unverified": None,
        "steps_per_s": figure, "steps_per_s_lo": figure * 0.99, "steps_per_s_hi": figure * 1.01,
        "loss_parity_ok": parity,
        "accelerator": "NVIDIA H200", "accelerator_count": 1, "suite": "s", "workload": "w", "settings_hash": settings,
        "engine": "torch",
    }  # fmt: skip


def test_a_run_with_no_loss_parity_baseline_counts_in_the_pooled_spread() -> None:
    """`measured_runs` keeps a run whose parity is null (no baseline to depart from), as its comment says, and drops
    one that departs (False): polars' `!= False` is null for null, and a filter drops null."""
    summary = pl.DataFrame(
        [
            _training("passes-1", 10.0, True),
            _training("passes-2", 10.1, True),
            _training("no-baseline-1", 20.0, None, "h2"),
            _training("no-baseline-2", 22.0, None, "h2"),
            _training("departs", 50.0, False),
        ]
    )
    assert set(configurations.measured_runs(summary)["run_id"]) == {
        "passes-1", "passes-2", "no-baseline-1", "no-baseline-2"
    }  # fmt: skip
    spread = configurations.pooled_spreads(summary)[("torch", "NVIDIA H200", 1)]
    assert spread.groups == 2 and spread.df == 2
    expected = math.sqrt(((math.log(10.1 / 10.0)) ** 2 + (math.log(22.0 / 20.0)) ** 2) / 2 / 2)
    assert spread.sd == pytest.approx(expected)


def test_ladder_rows_use_with_width() -> None:
    """The same rule through `ladder.rows` directly: two runs of one figure and no spread span nothing."""
    runs = pl.DataFrame([_run(1, value=10.0, lo=None, hi=None), _run(2, value=10.0, lo=None, hi=None)])
    (row,) = ladder.rows(runs.drop("rate_med", "rate_lo", "rate_hi"), {}).iter_rows(named=True)
    assert row["lo"] is None and row["hi"] is None
