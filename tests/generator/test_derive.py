"""derive's pure functions on small hand-built summaries (the end-to-end tests feed them real CPU runs)."""

from datetime import datetime, timedelta

import polars as pl
import pytest

from generator import derive


def _summary(rates: list[float], shared: list[bool]) -> pl.DataFrame:
    """Full-length, parity-passing measured runs of one configuration, one per rate."""
    n = len(rates)
    start = datetime(2026, 11, 29)
    return pl.DataFrame(
        {
            "run_id": [f"run-{i}" for i in range(n)],
            "suite": ["h100"] * n,
            "workload": ["train-gpt-1.27b-mb4"] * n,
            "variant": ["fsdp2-compile"] * n,
            "settings_hash": ["0123456789ab"] * n,
            "accelerator": ["NVIDIA H200"] * n,
            "accelerator_count": [2] * n,
            "micro_batch": [4] * n,
            "origin": ["measured"] * n,
            "status": ["ok"] * n,
            "retracted_by": pl.Series([None] * n, dtype=pl.String),
            "full_length": [True] * n,
            "loss_parity_ok": [True] * n,
            "unverified": pl.Series([None] * n, dtype=pl.String),
            "started_at": [start + timedelta(hours=i) for i in range(n)],
            "steps_per_s": rates,
            "steps_per_s_lo": [r * 0.99 for r in rates],
            "steps_per_s_hi": [r * 1.01 for r in rates],
            "shared_host": shared,
        }
    )


def test_repeats_keep_shared_and_solo_runs_apart() -> None:
    """Two runs beside other jobs and two alone: two A/A groups, each with its own spread; never one mixed group."""
    summary = _summary([14.9, 14.95, 15.1, 14.9], [True, True, False, False])
    groups = derive.repeats(summary).sort("shared_host")
    assert groups["shared_host"].to_list() == [False, True]
    assert groups["runs"].to_list() == [2, 2]
    alone, shared = groups.rows(named=True)
    assert alone["run_id"] == ["run-2", "run-3"]
    assert alone["spread"] == pytest.approx(0.2 / 15.0)
    assert shared["spread"] == pytest.approx(0.05 / 14.925)


def test_runs_of_one_variant_name_with_other_settings_are_not_repeats() -> None:
    """A variant name can cover runs whose settings differ (made at different harness commits): one configuration is
    one settings hash, so each set of settings has its own A/A spread and a pair of different ones has none."""
    summary = _summary([18.9, 21.8, 21.7, 21.9], [False] * 4).with_columns(
        settings_hash=pl.Series(["aaaaaaaaaaaa", "bbbbbbbbbbbb", "bbbbbbbbbbbb", "bbbbbbbbbbbb"])
    )
    groups = derive.repeats(summary)
    assert groups["settings_hash"].to_list() == ["bbbbbbbbbbbb"] and groups["runs"].to_list() == [3]
    assert groups["spread"].item() < 0.01  # not the 14% that pooling 18.9 with 21.8 would make


def test_a_single_run_per_condition_is_not_a_repeat() -> None:
    summary = _summary([14.9, 15.1], [True, False])
    assert derive.repeats(summary).height == 0


def test_a_run_stopped_by_its_time_budget_is_not_a_repeat() -> None:
    """A/A is the whole workload run twice: a run stopped early (status timeout, with a steady figure from its
    first windows) does not widen its configuration's spread."""
    summary = _summary([10.0, 10.1, 9.0], [False, False, False])
    summary = summary.with_columns(status=pl.Series(["ok", "ok", "timeout"]))
    (group,) = derive.repeats(summary).rows(named=True)
    assert group["run_id"] == ["run-0", "run-1"] and group["spread"] < 0.02
