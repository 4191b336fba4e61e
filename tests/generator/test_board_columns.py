"""Every column of the results model is declared in generator/load/fields.py (issue 36): its type, what it holds, and
how a board's row takes it from its configuration's runs (the median of its runs', every run's, the largest, the
smallest, or the latest run's). A column declared nowhere, a declared column that is missing, or one of another type
stops `derive.results`, naming the column, instead of silently showing the latest run's value."""

from __future__ import annotations

import importlib
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from generator import derive, load
from generator.derive import configurations, inference, ladder
from generator.load import fields

results_module = importlib.import_module("generator.derive.results")  # `derive.results` is its function


def _runs(**extra: list) -> pl.DataFrame:
    t0 = datetime(2026, 12, 1, tzinfo=UTC)
    base = {"suite": ["s", "s"], "workload": ["w", "w"], "settings_hash": ["h", "h"], "run_id": ["r1", "r2"],
            "started_at": [t0, t0], "steps_per_s": [1.0, 3.0], "peak_mem_gib": [2.0, 5.0], "coverage": [0.9, 0.8],
            "variant": ["v", "v"]}  # fmt: skip
    return pl.DataFrame(base | extra)


def test_each_declared_aggregation_is_what_a_row_takes() -> None:
    names = ("steps_per_s", "peak_mem_gib", "coverage", "run_id")
    row = _runs().group_by(configurations.KEYS).agg(configurations.aggregated(n) for n in names).row(0, named=True)
    assert (row["steps_per_s"], row["peak_mem_gib"], row["coverage"], row["run_id"]) == (2.0, 5.0, 0.8, "r2")
    on_tests = _runs().group_by(configurations.KEYS).agg(configurations.aggregated(n, tests=True) for n in names)
    assert on_tests.row(0, named=True)["steps_per_s"] == 3.0  # a test board ranks by `value`: training's is latest
    assert fields.aggregation("model_name") == "latest"  # a config column: a fact of the run, declared as such
    assert fields.aggregation("settings_hash") == "key"


def test_every_declared_column_says_what_it_holds() -> None:
    every = {f.name: f for group in (*fields.BOARDS.values(), fields.PAGE_RUNS) for f in group}
    assert len(every) > 200  # 231 on 2026-12-02
    assert not [name for name, f in every.items() if not f.what.strip()]
    assert {f.board for f in every.values()} <= set(fields.AGGREGATIONS)


def test_an_undeclared_board_column_stops_the_board() -> None:
    runs = _runs(tuning_gain=[1.1, 1.2])
    with pytest.raises(ValueError, match=r"board column 'tuning_gain' has no declared aggregation.*fields\.py"):
        configurations.rows(runs, {})
    tests = runs.with_columns(value=pl.col("steps_per_s"), lo=pl.lit(None), hi=pl.lit(None))
    with pytest.raises(ValueError, match=r"board column 'tuning_gain'.*fields\.py"):
        ladder.rows(tests)


def test_results_checks_its_frames_against_the_declarations(
    committed_results: derive.Results, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The committed records pass; a derivation that adds a column it did not declare (or drops or retypes one)
    stops `results`, naming the column and the frame."""
    loaded, summary = committed_results.records, committed_results.runs  # derived: every frame as declared
    page_rows = results_module.with_test_figures
    monkeypatch.setattr(
        results_module, "with_test_figures", lambda *a: page_rows(*a).with_columns(tuning_gain=pl.lit(1.0))
    )
    with pytest.raises(fields.SchemaError, match=r"the run pages' rows: column 'tuning_gain' is not declared"):
        derive.results(loaded, summary)
    monkeypatch.setattr(results_module, "with_test_figures", lambda *a: page_rows(*a).drop("rate_sd"))
    with pytest.raises(fields.SchemaError, match=r"the run pages' rows: declared column 'rate_sd' is missing"):
        derive.results(loaded, summary)
    monkeypatch.undo()
    # a test's column that a board would take: its board stops first, naming it
    real = inference.per_run_figures
    monkeypatch.setattr(inference, "per_run_figures", lambda *a: real(*a).with_columns(tuning_gain=pl.lit(1.0)))
    with pytest.raises(fields.SchemaError, match=r"board column 'tuning_gain' has no declared aggregation"):
        derive.results(loaded, summary)
    monkeypatch.undo()
    retyped = summary.with_columns(pl.col("windows").cast(pl.Float64))
    with pytest.raises(fields.SchemaError, match=r"the run summary: column 'windows' is Float64, declared Int64"):
        derive.results(loaded, retyped)


def test_a_frame_is_held_to_exactly_its_declared_columns() -> None:
    declared = (fields.Field("a", pl.Int64, "latest", "a"), fields.Field("b", pl.String, "latest", "b"))
    fields.check(pl.DataFrame({"a": [1], "b": ["x"]}), declared, "t")
    with pytest.raises(fields.SchemaError, match="t: column 'c' is not declared"):
        fields.check(pl.DataFrame({"a": [1], "b": ["x"], "c": [0.5]}), declared, "t")
    with pytest.raises(fields.SchemaError, match="t: declared column 'b' is missing"):
        fields.check(pl.DataFrame({"a": [1]}), declared, "t")
    with pytest.raises(fields.SchemaError, match="t: column 'a' is String, declared Int64"):
        fields.check(pl.DataFrame({"a": ["1"], "b": ["x"]}), declared, "t")


def test_the_downloads_page_describes_every_column_of_runs_as_declared(tmp_path: Path) -> None:
    """The downloads page's column table reads generator/load/fields.py: a derived figure is described there as it is
    declared, as the record's and the config's columns are (before, derived columns had no description)."""
    from generator import render
    from generator.render import pages

    runs = pl.DataFrame(schema={f.name: f.dtype for f in fields.RUN})
    empty = load.load(tmp_path / "nothing")
    render.catalog.write_downloads(pages.environment(), tmp_path / "docs", runs, empty.rows, [])
    text = (tmp_path / "docs" / "downloads.md").read_text()
    table = text.split("## Columns of `runs`", 1)[1]
    cells = [line.strip("| ").split(" | ") for line in table.splitlines() if line.startswith("| ")][1:]  # no header
    described = {name: what for name, _, what in cells}
    flat = [f for f in fields.RUN if not isinstance(f.dtype, pl.List | pl.Struct | pl.Object)]
    assert len(described) == len(flat) > 100
    for f in flat:  # as the page writes them: markdown escaped; the record's JSON columns are runs.parquet's alone
        said = f.what + (" (runs.parquet only)" if f.name in render.catalog.PARQUET_ONLY else "")
        assert described[pages.md_text(f.name)] == pages.md_text(said), f.name
    assert {"config", "hardware", "software", "environment", "calibration"} <= set(render.catalog.PARQUET_ONLY)
    assert described["loss&#95;mean&#95;rel&#95;gap"] == "mean relative window gap to that run&#39;s"


def test_records_where_no_training_run_ranks_still_derive_as_declared(committed_results: derive.Results) -> None:
    """A first bench of short runs ranks nothing: every training board is empty, of the declared columns and types
    all the same (an empty board once skipped the steps that add `differs`, and the schema check stopped the build)."""
    loaded, summary = committed_results.records, committed_results.runs
    found = derive.candidates(summary)
    ranked = found.filter(pl.col("unranked").is_null())["run_id"].implode()
    keep = pl.col("run_id").is_in(ranked).not_()
    subset = load.Loaded(runs=loaded.runs.filter(keep), rows=loaded.rows.filter(keep), rejected=loaded.rejected)
    results = derive.results(subset, summary.filter(keep))
    training = [b for b in results.boards.values() if b.kind == "train"]
    assert training and all(b.ranked.height == 0 for b in training)
    assert any(b.unranked.height for b in training)  # the short runs are still shown, below an empty ranking
