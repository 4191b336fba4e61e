"""What tuning bought (generator/derive/tuning.py): the ladder in the suite's order at each micro-batch, each rung over
the rung below and over stock with the interval `metrics.ratio_interval` gives, and its memory against stock's. The
synthetic tests build sweep points by hand; the last test reads the page built from the committed data/."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

from generator import derive
from generator.derive import tuning
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


def test_the_committed_sweep_gives_a_rung_per_point_each_with_its_runs(committed_results: derive.Results) -> None:
    """The committed data/: a rung per sweep point, each with its runs; at micro-batch 4, FSDP2 with compile is
    settled faster than stock (the page built from it: tests/test_browser_tables.py)."""
    results = committed_results  # as the site derives it
    assert results.verdict is not None
    points = results.verdict.points
    rungs = tuning.ladder(points, ORDER)
    assert len(rungs) == points.height and all(r["run_ids"] for r in rungs)
    assert sum(len(r) for r in results.tuning.ladders.values()) == len(rungs)  # the page's figures are these
    at4 = {r["variant"]: r for r in rungs if r["micro_batch"] == 4}
    assert at4["ddp-amp-stock"]["over_stock"] is None and at4["fsdp2-compile"]["over_stock"]["settled"] == "faster"
    assert re.fullmatch(r"[\w.-]+", at4["fsdp2-compile"]["run_ids"][0])
    # the page's DDP rung: its settings listed (no run of the committed data measured them apart, so one rung)
    ddp = [r for r in results.tuning.ladders[4] if r["variant"] == "ddp-tuned"]
    assert len(ddp) == 1 and {k for k, _, _ in ddp[0]["changes"]} >= {
        "settings.compile", "settings.optimizer_impl", "settings.matmul_precision", "settings.static_graph",
        "settings.gradient_as_bucket_view",
    }  # fmt: skip
    assert ("settings.optimizer_impl", "default", "fused") in ddp[0]["changes"]
    for rung in (r for ladder in results.tuning.ladders.values() for r in ladder):  # a rung is measured, never made up
        assert rung["run_ids"] and (rung["changes"] or rung["tier"] == "stock")
    # the two fastest 120-step changes at micro-batch 4 name the base they lack: fsdp2-compile ran there, at other
    # lengths
    orphans = [s for s in results.tuning.singles if s["base"] is None and s["base_variant"] == "fsdp2-compile"]
    assert orphans and all(
        s["no_base"].startswith("no fsdp2-compile run of this length (120 steps) at micro-batch 4: its ")
        and "2000 steps" in s["no_base"]
        for s in orphans
    )


def _settings(variant: str, **knobs: object) -> str:
    """A curve's canonical settings as columns.py writes them: the variant's name and its settings."""
    settings = {"settings": {"a": 0, "b": 0, "c": 0} | knobs, "variant": variant, "world_size": 2}
    return json.dumps(settings, sort_keys=True)


def _knob_points() -> tuple[pl.DataFrame, pl.DataFrame]:
    """Stock and tuned three settings apart (a, b, c) at micro-batches 2 and 4; at 4, runs that changed stock's a, then
    a and b, measured the climb one setting at a time, beside runs that are not on it (a to another value; d)."""
    rows = [  # variant, tier, micro-batch, steps/s, settings
        ("ddp-amp-stock", "stock", 2, 10.0, _settings("ddp-amp-stock")),
        ("ddp-tuned", "tuned", 2, 14.0, _settings("ddp-tuned", a=1, b=1, c=1)),
        ("ddp-amp-stock", "stock", 4, 5.0, _settings("ddp-amp-stock")),
        ("ddp-tuned", "tuned", 4, 8.0, _settings("ddp-tuned", a=1, b=1, c=1)),
    ]
    between = [
        ("ddp-amp-stock[a=1]", "stock", 4, 6.0, _settings("ddp-amp-stock[a=1]", a=1)),
        ("ddp-amp-stock[a=1,b=1]", "stock", 4, 7.0, _settings("ddp-amp-stock[a=1,b=1]", a=1, b=1)),
        ("ddp-amp-stock[a=2]", "stock", 4, 5.5, _settings("ddp-amp-stock[a=2]", a=2)),  # not tuned's value
        ("ddp-amp-stock[d=1]", "stock", 4, 5.1, _settings("ddp-amp-stock[d=1]", d=1)),  # not a setting tuned changed
    ]

    def frame(rows: list[tuple[str, str, int, float, str]]) -> pl.DataFrame:
        keys = ("variant", "tier", "micro_batch", "steps_per_s", "curve_settings")
        same = {"peak_mem_gib": 30.0, "peak_mem_steady_gib": 30.0, "runs": 1}
        return pl.DataFrame(
            [
                dict(zip(keys, r, strict=True))
                | same
                | {"label": r[0], "steps_per_s_lo": r[3] * 0.99, "steps_per_s_hi": r[3] * 1.01}
                | {"run_ids": [f"{r[0]}-{r[2]}"]}
                for r in rows
            ]
        )

    return frame(rows), frame(between)


def test_a_rung_per_setting_where_runs_measured_them_apart() -> None:
    """Issue 59: DDP's settings were one rung. Where runs changed stock's settings toward tuned's one at a time (at
    micro-batch 4 here) each is a rung between them, with what it changed over the rung below and its ratio over
    that rung; where none did (micro-batch 2), one rung changes all three, and lists them."""
    points, between = _knob_points()
    rungs = tuning.ladder(points, ORDER, between)
    at4 = [r for r in rungs if r["micro_batch"] == 4]
    assert [r["label"] for r in at4] == ["ddp-amp-stock", "ddp-amp-stock[a=1]", "ddp-amp-stock[a=1,b=1]", "ddp-tuned"]
    assert [r["changes"] for r in at4] == [
        [], [("settings.a", 0, 1)], [("settings.b", 0, 1)], [("settings.c", 0, 1)]
    ]  # fmt: skip
    assert at4[3]["over_previous"]["over"] == "ddp-amp-stock[a=1,b=1]"
    assert at4[3]["over_previous"]["ratio"] == pytest.approx(8 / 7) and at4[3]["over_stock"]["ratio"] == 1.6
    at2 = [r for r in rungs if r["micro_batch"] == 2]
    assert [r["label"] for r in at2] == ["ddp-amp-stock", "ddp-tuned"]  # nothing measured between: none made up
    assert at2[1]["changes"] == [("settings.a", 0, 1), ("settings.b", 0, 1), ("settings.c", 0, 1)]
    assert [r["label"] for r in tuning.ladder(points, ORDER)] == ["ddp-amp-stock", "ddp-tuned"] * 2  # none between


def test_the_page_prints_whole_descriptions_and_each_rungs_settings(tmp_path: Path) -> None:
    """Issue 59: a rung's description was cut ("… (239 more characters)") with no way to read the rest. The page
    prints it whole, and lists the settings the rung changed; a change without a base says what is missing."""
    from generator.derive import verdict
    from generator.render import pages, tuning_page

    points, between = _knob_points()
    rungs = tuning.ladder(points, ORDER, between)
    long = "DDP with every advantage: " + ", ".join(f"setting number {i}" for i in range(40)) + ", and the end."
    fight = verdict.Fight("h100", "train-gpt-1.27b-mb4", 2, {}, {})
    missing = "no v run of this length (120 steps) at micro-batch 4"
    single = {"workload": "w", "accelerator_count": 2, "accelerator": "GPU", "change": "a=1", "base_variant": "v",
              "steps_requested": 120, "not_measured_at": [], "micro_batch": 4, "steps_per_s": 1.0, "steps_per_s_lo":
              None, "effect": None, "base": None, "peak_mem_gib": None, "peak_mem_steady_gib": None,
              "memory_ratio": None, "run_id": "r", "no_base": missing}  # fmt: skip
    figures = tuning.Tuning(fight, {4: [r for r in rungs if r["micro_batch"] == 4]}, {}, {"ddp-tuned": long}, [single])
    tuning_page.write(pages.environment(), tmp_path, figures)
    page = (tmp_path / "tuning.md").read_text()
    assert "more characters" not in page and long in page
    assert "1 setting changed over rung 3</summary>c 0 → 1</details>" in page
    assert "no base: no v run of this length (120 steps) at micro-batch 4" in page
