"""Cold repetitions (issue 55, item 7): a llama.cpp record made before the runner ran one repetition untimed (it
lacks `workload.untimed_repetitions`; every committed one so far) timed its first repetition cold, so that repetition
is left out of its figures, and its row and run page say so; a record that ran the untimed repetition keeps all of
its. Which engines gained the untimed repetition, and which field shows it, is one registry fact."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from generator import derive, load
from generator.derive import checks, copy_bound, inference
from generator.load import columns
from runners import engines
from tests import replicate

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "data/h100/20261130T022839Z-llama-8b-pp512-d0-llamacpp-f16-f5705d.parquet"
"""A committed llama.cpp pp512 record from before the untimed repetition: its first of five ran cold (13,535 tokens/s
against 23,578-23,895)."""
TOOL = ROOT / "data/h100/20261130T022839Z-llama-8b-pp512-d0-llamacpp-f16-llama-bench-f5705d.parquet"


def test_the_registry_names_the_engines_that_gained_an_untimed_repetition() -> None:
    fields = engines.cold_first_repetition()
    assert fields == {"llamacpp": "untimed_repetitions", "llama-bench": "untimed_repetitions"}
    declared = {c.name: c.path for c in columns.COLUMNS}
    for field in fields.values():  # the generator reads the field as a flattened config column
        assert declared[field] == f"$.workload.{field}"


def _with_warm_up(source: Path, folder: Path) -> Path:
    """`source` as the runner writes it now: the same rows, its config saying one repetition ran untimed, under
    another run id."""
    run_id = source.stem.replace("-f5705d", "-a0a0a0").replace("022839Z", "022840Z")
    return replicate.with_workload(source, folder, run_id, untimed_repetitions=1)


def test_the_first_repetition_of_an_old_record_is_left_out_and_a_new_ones_is_kept(tmp_path: Path) -> None:
    folder = tmp_path / "data" / "h100"
    folder.mkdir(parents=True)
    for f in (RUNNER, TOOL):
        shutil.copy(f, folder / f.name)
    new = _with_warm_up(RUNNER, folder)
    loaded, summary = checks.checked(load.load(tmp_path / "data"))
    tests = inference.per_run_figures(summary, loaded.rows, copy_bound.copy_bandwidths(summary))
    by_run = {r["run_id"]: r for r in tests.iter_rows(named=True)}
    old, warm = by_run[RUNNER.stem], by_run[new.stem]
    reps = loaded.rows.filter(
        (pl.col("run_id") == RUNNER.stem) & (pl.col("metric") == "tokens_per_s") & (pl.col("phase") == "steady")
    ).sort("trial")["value"]
    cold, rest = reps[0], reps[1:]
    assert cold < 0.6 * min(rest)  # the recorded cold repetition
    assert old["cold_first_dropped"] and old["repetitions"] == len(rest)
    assert old["rate_lo"] > cold and old["rate_mean"] == pytest.approx(sum(rest) / len(rest))
    assert not warm["cold_first_dropped"] and warm["repetitions"] == len(reps)  # ran the untimed one: all timed kept
    assert warm["rate_lo"] == pytest.approx(cold)
    # the tool's record of the same test, made beside it before the runner's change, drops its first alike
    tool = by_run[TOOL.stem]
    assert tool["cold_first_dropped"] and tool["repetitions"] == len(rest)


@pytest.mark.slow
@pytest.mark.parametrize("workload", ["llama-8b-pp512-d0", "llama-14b-pp512-d0"])
def test_the_committed_f16_pp512_rows_no_longer_hold_their_cold_repetitions(
    committed_results: derive.Results, workload: str
) -> None:
    """The issue's rows: 8B and 14B F16 pp512 at depth 0 on one H200 read [13,535, 25,001] and [7,842, 14,208], the
    low end each a run's cold first repetition. Now every run's cold repetition lies below the row's interval, and the
    row says its cold repetitions were left out."""
    results = committed_results
    board = results.boards[("h100", workload)]
    # the H200's row (an H100's, recorded with the untimed repetition, has no cold one)
    (row,) = board.ranked.filter(
        (pl.col("variant") == "llamacpp-f16") & (pl.col("accelerator") == "NVIDIA H200")
    ).iter_rows(named=True)
    assert row["cold_first_dropped"] and row["lo"] is not None
    firsts = (
        results.records.rows.filter(
            pl.col("run_id").is_in(row["run_ids"]), pl.col("metric") == "tokens_per_s", pl.col("phase") == "steady"
        )
        .sort("trial")
        .group_by("run_id")
        .agg(first=pl.col("value").first(), rest=pl.col("value").slice(1).min())
    )
    assert firsts.height == len(row["run_ids"])
    for first, rest in firsts.select("first", "rest").iter_rows():
        assert first < row["lo"] <= rest, (workload, first, row["lo"], rest)
    pages = results.page_runs.filter(pl.col("run_id").is_in(row["run_ids"]))
    assert pages["cold_first_dropped"].to_list() == [True] * len(row["run_ids"])
