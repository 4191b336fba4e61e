"""The GPUs' energy as the site shows it (generator/derive/energy.py): the figure a page prints is the formula of
runners/metrics.py over the run's own rows, a run too short for the counter gets no figure and says why, and a run
without energy rows gets none. The records are real: the one-GPU training runs recorded on an H200 on 2026-12-05."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from generator import checks, load
from runners import metrics
from tests.conftest import ROOT

METERED = sorted((ROOT / "data" / "h100" / "2026-12").glob("20261205T02*-train-gpt-1.27b-1gpu-mb8-*.parquet"))


def _summary(tmp_path: Path, files: list[Path]) -> tuple[pl.DataFrame, pl.DataFrame]:
    data = tmp_path / "data" / "h100"
    data.mkdir(parents=True)
    for f in files:
        shutil.copy(f, data / f.name)
    loaded, summary = checks.checked(load.load(tmp_path / "data"))
    return summary, loaded.rows


def test_tokens_per_joule_is_the_formula_over_the_runs_own_rows(tmp_path: Path) -> None:
    assert len(METERED) >= 4, "the metered H200 runs are committed under data/h100/2026-12"
    unmetered = sorted((ROOT / "data" / "h100").glob("20261201T0321*-train-gpt-1.27b-1gpu-mb8-*.parquet"))[:1]
    assert len(unmetered) == 1
    summary, rows = _summary(tmp_path, METERED + unmetered)
    for run in summary.filter(pl.col("run_id").is_in([f.stem for f in METERED])).iter_rows(named=True):
        energy = rows.filter(pl.col("run_id") == run["run_id"], pl.col("metric") == "energy_j")
        steady = energy.filter(pl.col("phase") == "steady")
        steps = steady["step"].max() + 1 - run["warmup_steps"]
        tokens = steps * run["tokens_per_step"]
        assert run["energy_j"] == pytest.approx(steady["value"].sum())
        assert run["tokens_per_joule"] == pytest.approx(metrics.tokens_per_joule(steady["value"].sum(), tokens))
        assert run["mean_power_w"] == pytest.approx(steady["value"].sum() / (steps * run["steady_step_s"]))
        # an H200 at its 700 W cap under training, and at rest well below it
        assert 300 < run["mean_power_w"] <= 720 and 30 < run["idle_power_w"] < 300
        assert run["energy_method"] == "nvml-total-energy" and run["energy_note"] is None
    for run in summary.filter(pl.col("run_id").is_in([f.stem for f in unmetered])).iter_rows(named=True):
        assert run["tokens_per_joule"] is None and run["energy_j"] is None and run["energy_note"] is None


def test_a_window_shorter_than_the_counters_steps_gets_no_figure_and_says_why() -> None:
    frame = pl.DataFrame({"energy_j": [70.0, 1400.0], "tokens": [512.0, 512.0], "s": [0.065, 2.0], "u": [0.1, 0.1]})
    from generator.derive import energy

    out = frame.select(**energy.figures("tokens", "s", "u"))
    assert out["tokens_per_joule"].to_list() == [None, pytest.approx(512 / 1400)]
    assert "fewer than 20 updates" in out["energy_note"][0] and out["energy_note"][1] is None
