"""No borrowed spreads, no rank without an interval (issue 55): a row's between-run spread is its own engine's, of its
kind of test on its hardware; an engine with no repeats there has unreplicated rows (no interval, no rank); and a row
without an interval never ranks above one it could overlap: it has no rank at all."""

from __future__ import annotations

import math

import polars as pl
import pytest

from generator import derive
from generator.derive import inference, ladder, serving
from runners import metrics
from tests.generator.test_ranks import _run

TIMED = {"tool_path_lo": None, "tool_path_hi": None}


def _llama(n: int, rate: float, settings: dict) -> dict:
    return _run(n, kind="tg", shared_host=False, rate_med=rate, rate_lo=rate * 0.999, rate_hi=rate * 1.001,
                settings=settings, tool_path_med=None, **TIMED)  # fmt: skip


def _mlx(n: int, rate: float, settings: dict) -> dict:
    return _run(n, kind="tg", shared_host=False, engine="mlx", variant="mlx-f16", rate_med=rate, rate_lo=rate * 0.99,
                rate_hi=rate * 1.01, tool_path_med=rate, tool_path_lo=rate * 0.99, tool_path_hi=rate * 1.01,
                settings=settings)  # fmt: skip


def test_an_mlx_row_never_uses_llama_cpps_spread() -> None:
    """Two llama.cpp repeats on one H200 give llama.cpp's spread; MLX's one run on the same GPU gets none of it: it is
    unreplicated (no between-run interval, no rank, and its row says so), while llama.cpp's one-run row is widened by
    llama.cpp's own spread."""
    runs = pl.DataFrame(
        [
            _llama(1, 100.0, {"weights": "f16"}),
            _llama(2, 104.0, {"weights": "f16"}),
            _llama(3, 60.0, {"weights": "q8_0"}),
            _mlx(4, 90.0, {"weights": "hf"}),
        ]
    )
    spreads = inference.pooled_spreads(runs)
    assert set(spreads) == {("llamacpp", "tg", "NVIDIA H200", 1)}
    ranked, _ = inference.board(runs, spreads)
    rows = {r["run_ids"][0]: r for r in ranked.iter_rows(named=True)}
    mlx = rows["r4"]
    assert mlx["lo"] is None and mlx["hi"] is None and mlx["rank"] is None
    assert mlx["interval_basis"].startswith("unreplicated") and "by mlx on 1 × NVIDIA H200" in mlx["interval_basis"]
    one = rows["r3"]
    sd = math.log(104 / 100) / math.sqrt(2)
    half = metrics.student_t_quantile(0.975, 1) * sd
    assert one["lo"] == pytest.approx(60 * math.exp(-half)) and one["hi"] == pytest.approx(60 * math.exp(half))
    assert one["rank"] is not None
    # the unreplicated row comes after every ranked row, though it is faster than one of them
    assert ranked["rank"].to_list()[-1] is None and ranked["run_ids"].to_list()[-1] == ["r4"]


def test_mlx_with_its_own_repeats_gets_its_own_spread() -> None:
    runs = pl.DataFrame(
        [
            _llama(1, 100.0, {"weights": "f16"}),
            _llama(2, 100.5, {"weights": "f16"}),
            _mlx(3, 80.0, {"weights": "hf"}),
            _mlx(4, 88.0, {"weights": "hf"}),
            _mlx(5, 50.0, {"weights": "mlx-q4"}),
        ]
    )
    spreads = inference.pooled_spreads(runs)
    assert spreads[("mlx", "tg", "NVIDIA H200", 1)].sd == pytest.approx(math.log(88 / 80) / math.sqrt(2))
    assert spreads[("llamacpp", "tg", "NVIDIA H200", 1)].sd == pytest.approx(math.log(100.5 / 100) / math.sqrt(2))
    ranked, _ = inference.board(runs, spreads)
    q4 = ranked.filter(pl.col("run_ids").list.first() == "r5").row(0, named=True)
    half = metrics.student_t_quantile(0.975, 1) * math.log(88 / 80) / math.sqrt(2)
    assert q4["lo"] == pytest.approx(50 * math.exp(-half)) and q4["rank"] is not None


def test_a_row_without_an_interval_has_no_rank() -> None:
    """Two served points on one H200 with no served repeats there (one measurement each, no pooled spread): neither
    has an interval, so neither ranks above the other (once ranked 1 and 2 on a 5% gap)."""
    base = {"kind": "serve", "engine": "vllm", "variant": "vllm-tp1", "out_med": None, "out_lo": None, "out_hi": None,
            "bench_ttft_ratio": 1.0, "bench_tpot_ratio": 1.0, "shared_host": False}  # fmt: skip
    points = [_run(1, **base, output_tokens_per_s=89.7, settings={"w": "fp8"}),
              _run(2, **base, output_tokens_per_s=85.0, settings={"w": "awq"})]  # fmt: skip
    served = pl.DataFrame(points).drop("depth", "rate_med", "rate_lo", "rate_hi")
    ranked, _ = serving.board(served, serving.pooled_spreads(served))
    assert ranked.height == 2
    assert ranked["rank"].to_list() == [None, None]
    assert ranked["lo"].to_list() == [None, None]


def test_ranks_with_ties_gives_no_rank_without_an_interval() -> None:
    """The one rank function: an entry without an interval has no rank, and counts as above nobody."""
    assert metrics.ranks_with_ties([(10.0, 12.0), (None, None), (5.0, 6.0), (11.0, 13.0)]) == [1, None, 3, 1]
    assert metrics.ranks_with_ties([(None, None)]) == [None]


def test_the_rank_rule_says_spreads_are_the_engines_own() -> None:
    assert "never another engine's" in ladder.RANK_RULE and "unreplicated" in ladder.RANK_RULE


def _trained(run: str, engine: str, figure: float, settings: str, minute: int) -> dict:
    from datetime import UTC, datetime, timedelta

    return {
        "run_id": run, "engine": engine, "variant": f"{engine}-v", "origin": "measured", "retracted_by": None,
        "status": "ok", "unverified": None, "loss_parity_ok": True, "steps_per_s": figure,
        "steps_per_s_lo": figure * 0.995, "steps_per_s_hi": figure * 1.005, "accelerator": "NVIDIA H200",
        "accelerator_count": 1, "suite": "s", "workload": "w", "settings_hash": settings,
        "settings": '{"v": "' + settings + '"}',
        "started_at": datetime(2026, 12, 1, tzinfo=UTC) + timedelta(minutes=minute),
        "harness_commit": "c" * 40, "tokens_per_step": 1000.0,
    }  # fmt: skip


def test_a_training_row_never_uses_another_engines_spread() -> None:
    """torch's repeats on one H200 make torch's spread; MLX's one run of a configuration on the same GPU, with no MLX
    repeats there, is not widened by it: it is unreplicated (no interval, no rank, listed after the ranked rows),
    while torch's rows get torch's spread."""
    from generator.derive import configurations

    summary = pl.DataFrame(
        [
            _trained("t1", "torch", 10.0, "ta", 1),
            _trained("t2", "torch", 11.0, "ta", 2),
            _trained("m1", "mlx", 12.0, "ma", 3),
        ]
    )
    spreads = configurations.pooled_spreads(summary)
    assert set(spreads) == {("torch", "NVIDIA H200", 1)}
    board = configurations.rank(configurations.rows(summary, spreads))
    rows = {r["run_ids"][0]: r for r in board.iter_rows(named=True)}
    mlx = rows["m1"]
    assert mlx["steps_per_s_lo"] is None and mlx["steps_per_s_hi"] is None and mlx["rank"] is None
    assert mlx["interval_basis"].startswith("unreplicated") and "by mlx on 1 × NVIDIA H200" in mlx["interval_basis"]
    torch_row = rows["t1"]
    assert "pooled over 1 group(s) of identical settings on 1 × NVIDIA H200 by torch" in torch_row["interval_basis"]
    assert torch_row["rank"] == 1
    # faster than torch's row, yet never above it: it has no rank, and comes last
    assert board["run_ids"].to_list()[-1] == ["m1"]


@pytest.mark.slow
def test_the_committed_boards_keep_one_standard_of_evidence(committed_results: derive.Results) -> None:
    """On the committed records, through the site's own derivation and board JSON: no interval of zero width, no rank
    without an interval, a row's pooled spread is its own engine's, and FP8 and AWQ runs never share a served point."""
    from tests.generator.test_ranks import _published_boards

    boards = _published_boards(committed_results)
    ranked_rows = 0
    for name, rows in boards.items():
        for r in rows:
            low, high = r["interval_low"], r["interval_high"]
            assert (low is None) == (high is None), (name, r["settings_hash"])
            assert low is None or low < high, (name, r["settings_hash"])  # never lo = hi
            if r["rank"] is not None:
                assert low is not None, (name, r["settings_hash"])  # no rank without an interval
                ranked_rows += 1
    assert ranked_rows > 50
    results = committed_results
    assert all(len(key) == 4 for key in results.test_spreads)  # (engine, kind, hardware, devices)
    assert all(len(key) == 3 for spreads in results.training_spreads.values() for key in spreads)
    for board in results.boards.values():
        if board.kind == "train":
            continue
        for row in board.ranked.filter(pl.col("interval_basis").str.contains("pooled")).iter_rows(named=True):
            assert f"by {row['engine']}" in row["interval_basis"], (board.workload, row["variant"])
        mlx = board.ranked.filter(pl.col("engine") == "mlx")
        assert not mlx.filter(pl.col("interval_basis").str.contains("llamacpp")).height
    labels = dict(results.served.select("run_id", "weights_label").iter_rows())
    for points in results.latency.values():
        for run_ids in points["run_ids"].to_list():
            assert len({labels[r] for r in run_ids}) == 1, run_ids  # one point, one weights format
    fp8 = results.served.filter(pl.col("variant").str.ends_with("-fp8"))
    assert fp8.height and not fp8["weights_label"].str.contains("16").any()
