"""What tuning bought (generator/tuning.py): the ladder in the suite's order at each micro-batch, each rung over the
rung below and over stock with the interval `metrics.ratio_interval` gives, and its memory against stock's. The
synthetic tests build sweep points by hand; the last test reads the page built from the committed data/."""

from __future__ import annotations

import re

import polars as pl
import pytest

from generator import tuning
from runners import metrics

ORDER = ["ddp-fp32-stock", "ddp-amp-stock", "ddp-tuned", "fsdp2-compile"]


def _points() -> pl.DataFrame:
    rows = [  # variant, tier, micro-batch, steps/s, lo, hi, memory (the whole run's peak, the steady steps')
        ("fsdp2-compile", "tuned", 4, 15.0, 14.8, 15.2, 40.0, 14.0),
        ("ddp-amp-stock", "stock", 4, 10.0, 9.9, 10.1, 90.0, 30.0),  # stock's peak: its step-0 compile transient
        ("ddp-tuned", "tuned", 4, 14.0, 13.8, 14.1, 30.0, 30.0),
        ("ddp-amp-stock", "stock", 2, 14.0, 13.9, 14.1, 33.0, 33.0),
        ("ddp-tuned", "tuned", 2, 14.05, 13.0, 15.0, 28.0, None),
        ("a-variant-outside-the-suite", "tuned", 2, 9.0, 8.0, 10.0, 20.0, 20.0),
    ]
    keys = ("variant", "tier", "micro_batch", "steps_per_s", "steps_per_s_lo", "steps_per_s_hi", "peak_mem_gib",
            "peak_mem_steady_gib")  # fmt: skip
    return pl.DataFrame(
        [dict(zip(keys, r, strict=True)) | {"label": r[0], "runs": 1, "run_ids": [f"{r[0]}-{r[2]}"]} for r in rows]
    )


def test_the_ladder_climbs_in_the_suites_order_at_each_micro_batch() -> None:
    rungs = tuning.ladder(_points(), ORDER)
    assert [(r["micro_batch"], r["variant"]) for r in rungs] == [
        (2, "ddp-amp-stock"), (2, "ddp-tuned"), (2, "a-variant-outside-the-suite"),
        (4, "ddp-amp-stock"), (4, "ddp-tuned"), (4, "fsdp2-compile"),
    ]  # fmt: skip
    stock, _, fsdp = rungs[3:]
    assert stock["over_stock"] is None and stock["over_previous"] is None and stock["memory_ratio"] == 1.0
    expected = metrics.ratio_interval(14.0, 13.8, 14.1, 15.0, 14.8, 15.2)
    assert (fsdp["over_previous"]["ratio"], fsdp["over_previous"]["lo"], fsdp["over_previous"]["hi"]) == expected
    assert fsdp["over_previous"]["settled"] == "faster" and fsdp["over_stock"]["ratio"] == pytest.approx(1.5)
    assert fsdp["memory_ratio"] == pytest.approx(14 / 30) and fsdp["over_previous"]["over"] == "ddp-tuned"
    assert rungs[1]["memory_ratio"] is None  # no steady-state memory recorded: no ratio, never the whole-run peak's
    assert rungs[1]["over_stock"]["settled"] == "not settled"  # 14.05 against 14.0: the interval holds 1
    assert rungs[2]["over_previous"]["settled"] == "slower"
    best = tuning.best_per_micro_batch(rungs)
    assert best[4]["label"] == "fsdp2-compile" and best[4]["fastest"] == "fastest" and best[4]["undecided_with"] == []
    assert tuning.ladder(_points().clear(), ORDER) == []


def test_the_fastest_rung_is_named_only_where_its_interval_settles_it() -> None:
    """At micro-batch 2 the highest figure (ddp-tuned, 14.05) is not settled over stock (14.0; the ratio's interval
    holds 1): the page says undecided and names the rung it is undecided with, never "the fastest"."""
    best = tuning.best_per_micro_batch(tuning.ladder(_points(), ORDER))
    assert best[2]["label"] == "ddp-tuned" and best[2]["fastest"] == tuning.UNDECIDED
    assert best[2]["undecided_with"] == ["ddp-amp-stock"]  # settled over the variant outside the suite (9.0)


def test_memory_ratios_divide_steady_state_memory() -> None:
    """Stock's whole-run peak (90 GiB) is its compile transient; the ratio divides the steady steps' peaks."""
    at4 = {r["variant"]: r for r in tuning.ladder(_points(), ORDER) if r["micro_batch"] == 4}
    assert at4["ddp-tuned"]["memory_ratio"] == pytest.approx(30 / 30)  # not 30 / 90
    assert tuning.memory_ratio(None, at4["ddp-tuned"]) is None


def test_the_committed_sweep_gives_a_rung_per_point_each_with_its_runs() -> None:
    """The committed data/: a rung per sweep point, each with its runs; at micro-batch 4, FSDP2 with compile is
    settled faster than stock (the page built from it: tests/test_browser_tables.py)."""
    from generator import checks, derive, load
    from tests.conftest import ROOT

    loaded, summary = checks.checked(load.load(ROOT / "data"))
    results = derive.results(loaded, summary)  # as the site derives it
    assert results.verdict is not None
    points = results.verdict.points
    rungs = tuning.ladder(points, ORDER)
    assert len(rungs) == points.height and all(r["run_ids"] for r in rungs)
    assert sum(len(r) for r in results.tuning.ladders.values()) == len(rungs)  # the page's figures are these
    at4 = {r["variant"]: r for r in rungs if r["micro_batch"] == 4}
    assert at4["ddp-amp-stock"]["over_stock"] is None and at4["fsdp2-compile"]["over_stock"]["settled"] == "faster"
    assert re.fullmatch(r"[\w.-]+", at4["fsdp2-compile"]["run_ids"][0])
