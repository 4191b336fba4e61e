"""A board whose every run is retracted is still a board: the build derives it (its test named from the retracted
runs' own config) instead of failing on valid data (found by issue 56's differential tests: retracting the only run
of an inference board raised IndexError in derive/results.py)."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from generator import derive, load
from generator.derive import checks
from runners import retract
from tests.conftest import ROOT


def test_an_inference_board_whose_only_run_is_retracted_derives(tmp_path: Path) -> None:
    source = ROOT / "data" / "h100" / "20261130T010158Z-llama-8b-pp512-d0-llamacpp-q8_0-3847f8.parquet"
    data = tmp_path / "data" / "h100"
    data.mkdir(parents=True)
    shutil.copy(source, data / source.name)
    retract.retract(
        tmp_path / "data", source.stem, "measured on the wrong clocks", now=datetime(2026, 12, 5, tzinfo=UTC)
    )
    loaded, summary = checks.checked(load.load(tmp_path / "data"))
    assert summary.filter(pl.col("run_id") == source.stem)["retracted_by"].is_not_null().all()
    out = derive.results(loaded, summary)
    boards = [b for (_, workload), b in out.boards.items() if workload == "llama-8b-pp512-d0"]
    assert len(boards) == 1 and boards[0].ranked.height == 0
    assert "llama-8b" in boards[0].config
