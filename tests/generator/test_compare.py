"""`compare A B` on the committed H200 data: identical runs are "same", a clearly faster variant is called and fails
the threshold, configurations pool their runs (narrowed by commit), editions compare configuration by configuration,
and a bad selector exits 2 with a message that names it."""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from generator import derive
from generator.commands import compare
from generator.load import editions
from tests.conftest import committed

ROOT = Path(__file__).resolve().parents[2]
H100 = ROOT / "data" / "h100"
AA = (
    "20261129T200258Z-train-gpt-1.27b-mb4-ddp-amp-stock-31951e",
    "20261129T200455Z-train-gpt-1.27b-mb4-ddp-amp-stock-975f42",
)
"""Two full-length runs of one configuration (ddp-amp-stock, micro-batch 4, 2 × H200, beside other jobs)."""
AMP, AMP_REPEAT = (
    "20261201T032125Z-train-gpt-1.27b-1gpu-mb8-ddp-amp-stock-feae69",
    "20261130T171925Z-train-gpt-1.27b-1gpu-mb8-ddp-amp-stock-b1c87e",
)
TUNED = "20261201T032458Z-train-gpt-1.27b-1gpu-mb8-ddp-tuned-1f987a"
"""ddp-amp-stock and ddp-tuned on one H200: the tuned variant is about 20% faster."""
FSDP = "670688922c44"
"""fsdp2-compile on 2 × H200: four full-length runs, two at harness commit 49a084d, one each at efa4f7b and 5cf30b6."""
SERVE_FAILED = "20261130T053546Z-llama-8b-serve-c8-i512-o128-vllm-tp1-38a16c"
SERVE_OK = "20261130T054058Z-llama-8b-serve-c8-i512-o128-vllm-tp1-c8b9fb"
SMALL = (*AA, AMP, AMP_REPEAT, TUNED, SERVE_FAILED, SERVE_OK)


@pytest.fixture(scope="module")
def ds() -> compare.Dataset:
    """Every committed result file, loaded and derived once."""
    return compare.load_dataset(ROOT / "data")


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir of a few committed files, for the command line (which loads its data itself)."""
    data = tmp_path_factory.mktemp("compare") / "data"
    (data / "h100").mkdir(parents=True)
    for stem in SMALL:
        shutil.copy(H100 / f"{stem}.parquet", data / "h100")
    return data


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="compare")
    compare.add_cli_args(parser)
    status = compare.main(parser.parse_args(list(argv)))
    out, err = capsys.readouterr()
    return status, out, err


def test_two_runs_of_one_configuration_are_the_same(ds: compare.Dataset) -> None:
    runs = ds.runs.filter(pl.col("run_id").is_in(AA))
    assert runs["settings_hash"].n_unique() == 1 and runs["excluded"].is_null().all()
    report = compare.compare(*AA, ds)
    (row,) = report.rows
    assert row["figure"] == "steps/s" and row["verdict"] == "same"
    assert row["floor"] > 0 and row["floor_basis"] == "the spread of A's repeats at its commit"
    assert abs(row["change"]) < 0.01 and report.exit_status == 0
    assert compare.compare(*reversed(AA), ds).rows[0]["verdict"] == "same"  # whichever is A


def test_a_faster_variant_is_called_and_fails_beyond_the_threshold(
    ds: compare.Dataset, small: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (row,) = compare.compare(AMP, TUNED, ds).rows
    assert row["verdict"] == "faster" and 0.15 < row["change"] < 0.25
    assert row["ratio_lo"] > 1 and row["beyond_threshold"]
    assert compare.compare(TUNED, AMP, ds).rows[0]["verdict"] == "slower"
    status, out, _ = _cli(capsys, AMP, TUNED, "--data", str(small), "--threshold", "5%")
    assert status == 0  # faster: only slowdowns fail unless asked
    assert "faster, beyond 5%" in out and "+20.0%" in out and out.strip().splitlines()[-1].startswith("B against A:")
    assert _cli(capsys, AMP, TUNED, "--data", str(small), "--fail-on", "both")[0] == 1
    assert _cli(capsys, AMP, TUNED, "--data", str(small), "--fail-on", "faster")[0] == 1
    assert _cli(capsys, TUNED, AMP, "--data", str(small))[0] == 1  # slower beyond 5%
    assert _cli(capsys, TUNED, AMP, "--data", str(small), "--fail-on", "faster")[0] == 0
    assert _cli(capsys, TUNED, AMP, "--data", str(small), "--threshold", "0.25")[0] == 0
    assert _cli(capsys, *AA, "--data", str(small))[0] == 0


def test_a_configuration_pools_its_runs_and_narrows_by_commit(ds: compare.Dataset) -> None:
    runs = ds.runs.filter((pl.col("settings_hash") == FSDP) & pl.col("excluded").is_null())
    assert runs.height == 4
    side = compare.select(FSDP[:7], ds)  # a unique prefix
    assert side.what == "configuration" and side.runs.height == 4
    (row,) = compare.compare(FSDP, FSDP, ds).rows
    assert row["a"]["value"] == pytest.approx(runs["value"].median())
    assert row["a"]["lo"] == runs["lo"].min() and row["a"]["hi"] == runs["hi"].max()
    assert row["verdict"] == "same" and row["ratio"] == 1
    report = compare.compare(f"{FSDP}@49a084d", f"{FSDP}@commit=efa4f7b", ds)
    assert (len(report.a.runs), len(report.b.runs)) == (2, 1) and "at commit 49a084d" in report.a.label
    assert report.exit_status == 0  # about 1.5% apart: within the 5% threshold whatever the verdict
    with pytest.raises(compare.UsageError, match="has no run at commit 1234567; it has: 49a084d"):
        compare.select(f"{FSDP}@1234567", ds)
    # a run that wrote its commit in 7 digits (early records did) is at the full commit it begins, as the history
    # across commits pools it (commit_pairs.full_commits)
    abbreviated = ds.runs.with_columns(
        harness_commit=pl.when(pl.col("harness_commit").str.starts_with("49a084d"))
        .then(pl.lit("49a084d"))
        .otherwise(pl.col("harness_commit"))
    )
    short = dataclasses.replace(ds, runs=abbreviated)
    assert compare.select(f"{FSDP}@49a084d{'0' * 33}", short).runs.height == 2
    assert compare.select(f"{FSDP}@49a084d", short).runs.height == 2
    with pytest.raises(compare.UsageError, match="has no run at commit 49a08"):
        compare.select(f"{FSDP}@49a08{'f' * 35}", short)
    with pytest.raises(compare.UsageError, match="narrows a configuration"):
        compare.select(f"{AA[0]}@49a084d", ds)


def test_a_configuration_on_two_kinds_of_hardware_is_refused_with_its_runs(ds: compare.Dataset) -> None:
    """A settings hash names no hardware: a configuration whose runs span two (here one of FSDP's runs relabelled as
    4 GPUs, as a contributor's run on other hardware would land) is one side no spread can widen. It is refused in a
    sentence naming each hardware's runs, where it stopped on an AssertionError's traceback."""
    one = ds.runs.filter(pl.col("settings_hash") == FSDP)["run_id"][0]
    moved = ds.runs.with_columns(
        accelerator_count=pl.when(pl.col("run_id") == one).then(4).otherwise(pl.col("accelerator_count"))
    )
    mixed = dataclasses.replace(ds, runs=moved)
    with pytest.raises(compare.UsageError, match=f"ran on 2 kinds of hardware.*4 × NVIDIA H200: {one}"):
        compare.compare(FSDP, FSDP, mixed)
    (row,) = compare.compare(f"{FSDP}@49a084d", f"{FSDP}@49a084d", ds).rows  # one hardware: compared as before
    assert row["verdict"] == "same"


def test_other_step_sizes_compare_by_tokens_per_second(ds: compare.Dataset) -> None:
    one_gpu = "20261129T202326Z-train-gpt-1.27b-mb4-ddp-amp-stock-c8dc85"  # the same workload on one H200
    (row,) = compare.compare(AA[0], one_gpu, ds).rows
    assert row["figure"] == "tokens/s" and any("4,096 and 8,192 tokens" in n for n in row["notes"])


def test_a_run_that_did_not_finish_is_named_instead_of_a_ratio(ds: compare.Dataset) -> None:
    (row,) = compare.compare(SERVE_FAILED, SERVE_OK, ds).rows
    assert row["verdict"] is None and row["ratio"] is None and row["a"]["basis"].startswith("stopped: failed")
    report = compare.compare(SERVE_OK, SERVE_FAILED, ds)
    assert report.rows[0]["lost"] and report.exit_status == 1  # B lost A's figure, as asv counts a new failure
    assert "lost: B has no figure" in compare.render(report)


def test_identical_editions_are_the_same_everywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    (data / "h100").mkdir(parents=True)
    for stem in (*AA, AMP, TUNED):
        shutil.copy(H100 / f"{stem}.parquet", data / "h100")
    committed(tmp_path)
    editions.release("e1", data, now=datetime(2026, 12, 1, 10, tzinfo=UTC))
    committed(tmp_path)
    editions.release("e2", data, now=datetime(2026, 12, 1, 11, tzinfo=UTC))
    shutil.copy(H100 / f"{SERVE_OK}.parquet", data / "h100")
    committed(tmp_path)
    editions.release("e3", data, now=datetime(2026, 12, 1, 12, tzinfo=UTC))
    status, out, _ = _cli(capsys, "edition:e1", "edition:e2", "--data", str(data), "--json")
    report = json.loads(out)
    assert status == 0 and report["exit_status"] == 0
    assert len(report["rows"]) == 3 and {r["verdict"] for r in report["rows"]} == {"same"}
    assert all(r["settings_hash"] for r in report["rows"])
    status, out, _ = _cli(capsys, "edition:e1", "edition:e3", "--data", str(data))
    assert status == 0 and "only in B (not compared): h100 · llama-8b-serve-c8-i512-o128" in out
    status, _, err = _cli(capsys, "edition:e1", "edition:e9", "--data", str(data))
    assert status == 2 and "edition 'e9'" in err and "editions: e1, e2, e3" in err


def test_bad_selectors_exit_2_and_say_what_to_do(
    ds: compare.Dataset, small: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = _cli(capsys, "no-such-run", AMP, "--data", str(small))
    assert status == 2 and "'no-such-run': no run id, configuration hash or harness commit" in err and not out
    status, out, err = _cli(capsys, AMP[-6:], TUNED, "--data", str(small), "--json")  # a suffix: named as close
    assert status == 2 and f"close: {AMP}" in err and json.loads(out)["exit_status"] == 2
    with pytest.raises(compare.UsageError, match=f"ambiguous: it begins 6 runs \\({AA[0][:17]}.*… \\(3 more\\)"):
        compare.select("20261129T200", ds)
    with pytest.raises(compare.UsageError, match="runs of different workloads"):
        compare.compare(AMP, SERVE_OK, ds)
    with pytest.raises(compare.UsageError, match="an edition compares with another edition"):
        compare.compare(AMP, "edition:e1", ds)
    with pytest.raises(argparse.ArgumentTypeError, match="write 5% for 5 percent"):
        compare.threshold("5")
    assert compare.threshold("5%") == compare.threshold("0.05") == 0.05


def test_json_output_parses(small: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _cli(capsys, AMP, TUNED, "--data", str(small), "--json", "--fail-on", "both")
    report = json.loads(out)
    assert status == report["exit_status"] == 1 and report["fail_on"] == "both" and report["rows"][0]["fails"]
    (row,) = report["rows"]
    assert row["verdict"] == "faster" and row["a"]["runs"] == [AMP] and row["b"]["runs"] == [TUNED]
    assert row["ratio_lo"] < row["ratio"] < row["ratio_hi"] and report["threshold"] == 0.05


def test_compare_and_the_site_read_one_results(ds: compare.Dataset, committed_results: derive.Results) -> None:
    """compare's runs, figures and floors are the site's own `derive.results` (one code path): on every committed
    board of every kind, a ranked configuration compared with itself has the board's figure, its interval the
    board's, and any run it counts that the board does not rank carries the note saying why; the fallback floor of a
    kind is the largest spread of its repeats at one commit (pooled across commits, a harness change counted as
    noise: 14% for one-GPU training on an H200). The interval is the board row's own, or none where the board has
    none (issue 55: `compare` once printed a run's within-run span beside the board's)."""
    results = committed_results
    mine = compare.dataset(ROOT / "data", results)
    assert mine.kind_floors == ds.kind_floors == results.kind_floors
    assert mine.run_floors == ds.run_floors and mine.runs.equals(ds.runs)
    # a kind's floor is the largest spread of repeats at one commit of that kind on that hardware, none other
    largest: dict = {}
    for run_id, kind, acc, count, shared in results.every_run.runs.select(
        "run_id", "kind", "accelerator", "accelerator_count", "shared_host"
    ).iter_rows():
        if run_id in results.every_run.run_floors:
            key = (kind, acc, count, bool(shared))
            largest[key] = max(largest.get(key, 0.0), results.every_run.run_floors[run_id])
    assert results.kind_floors == largest and len(largest) >= 5
    figure = {"train": ("steps_per_s", "steps_per_s_lo", "steps_per_s_hi"), "inference": ("value", "lo", "hi"),
              "serving": ("value", "lo", "hi")}  # fmt: skip
    same = {kind: 0 for kind in figure}
    for (suite, workload), board in results.boards.items():
        for row in board.ranked.iter_rows(named=True):
            selector = f"{row['settings_hash']}@workload={workload}"
            (pair,) = compare.compare(selector, selector, mine).rows
            counted = set(pair["a"]["runs"])
            assert set(row["run_ids"]) <= counted, (suite, workload, row["settings_hash"])
            extra = counted - set(row["run_ids"])
            noted = {n.split(":")[0].removeprefix("A ") for n in pair["notes"] if n.startswith("A ")}
            assert extra <= noted, (suite, workload, extra)
            if extra or pair["figure"] != {"train": "steps/s"}.get(board.kind, pair["figure"]):
                continue
            value, lo, hi = (row[c] for c in figure[board.kind])
            assert pair["a"]["value"] == pytest.approx(value, rel=1e-12)
            # one interval per configuration, from one function (`evidence.interval`): the board's, or none with it
            assert (pair["a"]["lo"] is None) == (lo is None), (suite, workload, row["settings_hash"])
            if lo is not None:
                assert pair["a"]["lo"] == pytest.approx(lo, rel=1e-12) and pair["a"]["hi"] == pytest.approx(
                    hi, rel=1e-12
                )
            same[board.kind] += 1
    assert all(n > 0 for n in same.values()), same
