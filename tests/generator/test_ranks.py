"""Ranks that mean something on the inference and serving boards: only runs that agree with their engine's own tool
rank, one row per configuration, and every published board (training, inference, serving) keeps the rules on the
committed data. The unit tests run on synthetic frames; the last test loads data/ itself."""

from __future__ import annotations

import functools
import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from generator import board_pages, checks, derive, inference, load, serving, test_boards
from runners import metrics

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 11, 30, tzinfo=UTC)
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _run(n: int, **over: object) -> dict:
    """One inference run as the board reads it: llama.cpp's tg test, paired with llama-bench at ratio 1."""
    settings = over.pop("settings", {"weights": "f16"})
    row = {
        "suite": "s",
        "workload": "llama-tiny-tg16-d0",
        "run_id": f"r{n}",
        "variant": "llamacpp-f16",
        "engine": "llamacpp",
        "origin": "measured",
        "retracted_by": None,
        "status": "ok",
        "error_short": "",
        "unverified": None,
        "depth": 0,
        "started_at": T0 + timedelta(minutes=n),
        "harness_commit": COMMIT,
        "accelerator": "NVIDIA H200",
        "accelerator_count": 1,
        "rate_med": 100.0,
        "rate_lo": 99.0,
        "rate_hi": 101.0,
        "bench_run": f"r{n}-tool",
        "bench_status": "ok",
        "bench_ratio": 1.0,
        "settings": json.dumps(settings, sort_keys=True),
    }
    row.update(over)
    row["settings_hash"] = hashlib.sha256(row["settings"].encode()).hexdigest()[:12]
    return row


def _board(runs: list[dict]) -> tuple[pl.DataFrame, pl.DataFrame]:
    return inference.board(pl.DataFrame(runs))


def test_a_runner_ranks_only_beside_its_own_tool_within_tolerance() -> None:
    tol = metrics.OWN_TOOL_REL_TOL
    ranked, unranked = _board(
        [
            _run(1, bench_ratio=1 + tol * 0.9, settings={"a": 1}),
            _run(2, bench_ratio=1.30, settings={"a": 2}),  # MLX's pp against mlx_lm.benchmark
            _run(3, bench_run=None, bench_status=None, bench_ratio=None, settings={"a": 3}),
            _run(4, bench_status="failed", settings={"a": 4}),
            _run(5, status="failed", error_short="boom", rate_med=None, settings={"a": 5}),
            _run(6, unverified="no datasheet peak", settings={"a": 6}),
        ]
    )
    assert ranked["run_id"].to_list() == ["r1"] and ranked["rank"].to_list() == [1]
    why = dict(unranked.select("run_id", "unranked").iter_rows())
    assert "llama-bench" in why["r2"] and "1.3" in why["r2"] and f"±{tol * 100:g}%" in why["r2"]
    assert why["r3"].startswith("not cross-checked: no llama-bench record")
    assert "failed" in why["r4"] and why["r5"] == "stopped: failed (boom)" and why["r6"] == "no datasheet peak"


def test_a_test_the_tool_cannot_run_does_not_rank_and_says_why() -> None:
    """mlx_lm.benchmark has no KV-cache depth: MLX at depth has nothing to agree with."""
    deep = _run(1, engine="mlx", variant="mlx-f16", depth=4096, bench_run=None, bench_status=None, bench_ratio=None)
    ranked, unranked = _board([deep])
    assert ranked.height == 0
    assert unranked["unranked"][0] == (
        "not cross-checked: no mlx_lm.benchmark record of this test (mlx_lm.benchmark has no KV-cache depth)"
    )
    # an engine with no own tool (the external contract) needs none
    outside = _run(2, engine="external", bench_run=None, bench_status=None, bench_ratio=None)
    assert _board([outside])[0]["run_id"].to_list() == ["r2"]


def test_a_served_point_must_agree_on_latency_too() -> None:
    """Throughput within tolerance is not enough for a served point: median TTFT and TPOT must agree as well."""
    base = {"kind": "serve", "engine": "vllm", "variant": "vllm-tp1", "out_med": None, "out_lo": None, "out_hi": None}
    runs = [
        _run(1, **base, output_tokens_per_s=3600.0, bench_ttft_ratio=1.43, bench_tpot_ratio=1.0, settings={"a": 1}),
        _run(2, **base, output_tokens_per_s=3500.0, bench_ttft_ratio=1.01, bench_tpot_ratio=0.9, settings={"a": 2}),
        _run(3, **base, output_tokens_per_s=3400.0, bench_ttft_ratio=0.98, bench_tpot_ratio=1.02, settings={"a": 3}),
    ]
    frame = pl.DataFrame(runs).drop("depth", "rate_med", "rate_lo", "rate_hi")
    ranked, unranked = serving.board(frame)
    assert ranked["run_id"].to_list() == ["r3"]
    why = dict(unranked.select("run_id", "unranked").iter_rows())
    assert why["r1"].startswith("median TTFT disagrees with vllm bench: runner / tool = 1.43")
    assert why["r2"].startswith("median TPOT disagrees with vllm bench")
    assert ranked["interval_basis"][0] == "one run, one measurement: no interval"


def test_one_configuration_is_one_row_and_different_settings_never_merge() -> None:
    runs = [
        _run(1, rate_med=100.0, rate_lo=99.0, rate_hi=101.0),
        _run(2, rate_med=110.0, rate_lo=109.5, rate_hi=110.5),
        _run(3, rate_med=104.0, rate_lo=103.0, rate_hi=105.0, settings={"weights": "f16", "flash_attn": True}),
    ]
    ranked, _ = _board(runs)
    assert ranked.height == 2
    pair = ranked.filter(pl.col("runs") == 2).row(0, named=True)
    assert pair["run_ids"] == ["r1", "r2"] and pair["value"] == 105.0
    assert pair["lo"] <= 100.0 and pair["hi"] >= 110.0  # at least the spread of its runs' figures
    assert pair["interval_basis"] == "2 runs: lowest low to highest high"
    other = ranked.filter(pl.col("runs") == 1).row(0, named=True)
    assert other["differs"] == "flash_attn=true" and pair["differs"] == "flash_attn=null"
    assert ranked["rank"].to_list() == [1, 1]  # the single run's interval lies inside the pair's: a tie


def test_board_data_is_one_row_per_configuration() -> None:
    """A configuration's runs that do not rank join its row; one with no ranked run is one unranked row. Each row
    names the harness commits of its runs, each unranked run its own."""
    failed = dict(status="failed", error_short="segfault", rate_med=None, rate_lo=None, rate_hi=None)
    ranked, unranked = _board(
        [
            _run(1),
            _run(2, **failed, harness_commit="fedcba9"),
            _run(3, bench_ratio=1.3, settings={"a": 1}),
            _run(4, bench_ratio=1.29, settings={"a": 1}, harness_commit=None),
        ]
    )
    rows = board_pages.board_rows(ranked, unranked, "tokens/s", ("value", "lo", "hi"))
    assert len(rows) == 2 and len({r["settings_hash"] for r in rows}) == 2
    first, second = rows
    assert first["rank"] == 1 and first["verified"] and first["runs"] == ["r1"]
    assert first["unranked_runs"] == [
        {"run": "r2", "status": "failed", "reason": "stopped: failed (segfault)", "harness_commit": "fedcba9"}
    ]
    assert first["harness_commits"] == [COMMIT]  # the ranked runs' (r1's); r2's is in its own entry
    assert second["rank"] is None and not second["verified"] and second["runs"] == ["r3", "r4"]
    assert second["harness_commits"] == [COMMIT, None]  # a run that recorded no commit is a null
    assert "1.29" in second["reason"]  # the latest run's reason


@functools.cache
def _committed() -> tuple[load.Loaded, pl.DataFrame]:
    return checks.checked(load.load(ROOT / "data"))


def _published_boards() -> dict[str, list[dict]]:
    """Every board of the committed data, as the site publishes it (board_pages.board_rows)."""
    loaded, summary = _committed()
    out = {}
    for (suite, workload), board in derive.leaderboards(summary).items():
        unranked = derive.candidates(summary.filter((pl.col("suite") == suite) & (pl.col("workload") == workload)))
        unranked = unranked.filter(pl.col("unranked").is_not_null())
        figure = ("steps_per_s", "steps_per_s_lo", "steps_per_s_hi")
        out[f"{suite}/{workload}"] = board_pages.board_rows(board, unranked, "steps/s", figure)
    tests = inference.test_summary(summary, loaded.rows)
    served = serving.test_summary(summary, loaded.rows)
    for frame, board_of in ((tests, inference.board), (served, serving.board)):
        for (suite, workload), group in frame.partition_by("suite", "workload", as_dict=True).items():
            ranked, unranked = board_of(group)
            out[f"{suite}/{workload}"] = board_pages.board_rows(ranked, unranked, "tokens/s", ("value", "lo", "hi"))
    return out


@pytest.mark.slow
def test_every_published_board_keeps_the_rank_rules() -> None:
    """Issue 23's done-when on the committed data: no ranked row is unverified or stopped, a settings hash is one
    row, a configuration of two or more runs has an interval at least as wide as its runs' figures, and no run has
    two ranks."""
    boards = _published_boards()
    assert len(boards) > 20
    run_values = _run_figures()
    for name, rows in boards.items():
        hashes = [r["settings_hash"] for r in rows]
        assert len(hashes) == len(set(hashes)), name
        seen: dict[str, object] = {}
        for r in rows:
            if r["rank"] is not None:
                assert r["verified"] and r["status"] == "ok" and r["reason"] is None, (name, r)
                figures = [run_values[i] for i in r["runs"] if run_values.get(i) is not None]
                if len(r["runs"]) >= 2 and figures:
                    assert r["interval_low"] <= min(figures) and r["interval_high"] >= max(figures), (name, r)
            else:
                assert not r["verified"] and r["reason"], (name, r)
            for run in r["runs"]:
                assert seen.setdefault(run, r["rank"]) == r["rank"], (name, run)


def _run_figures() -> dict[str, float | None]:
    """Each measured run's own figure (steps/s median, or tokens/s median over repetitions, or a served point's)."""
    loaded, summary = _committed()
    out = dict(summary.select("run_id", "steps_per_s").iter_rows())
    tests = inference.test_summary(summary, loaded.rows)
    out |= dict(tests.select("run_id", "rate_med").iter_rows())
    served = serving.test_summary(summary, loaded.rows)
    out |= dict(served.select("run_id", pl.coalesce("out_med", "output_tokens_per_s")).iter_rows())
    return out


def test_the_rank_rule_names_the_tolerance() -> None:
    assert f"±{metrics.OWN_TOOL_REL_TOL * 100:g}%" in test_boards.RANK_RULE


def test_a_one_run_row_is_widened_to_the_aa_spread_of_its_kind_on_its_hardware() -> None:
    """Intervals include what varies between repeats: a configuration of one run gets at least the A/A spread
    measured between repeated ranked runs of the same kind of test on the same hardware, and says so; a served point
    (one measurement, no interval of its own) gets one; other hardware is not widened by it."""
    shared = {"kind": "tg", "shared_host": False}
    repeated = [_run(1, **shared, rate_med=100.0), _run(2, **shared, rate_med=110.0)]  # one configuration: 9.5%
    single = _run(3, **shared, rate_med=200.0, rate_lo=199.0, rate_hi=201.0, settings={"weights": "q8_0"})
    other = _run(
        4,
        **shared,
        rate_med=50.0,
        rate_lo=49.5,
        rate_hi=50.5,
        accelerator="NVIDIA H100 80GB HBM3",
        settings={"weights": "f16", "on": "h100"},
    )  # a configuration's hash covers its hardware
    frame = pl.DataFrame([*repeated, single, other])
    spreads = inference.aa_spreads(frame)
    assert spreads == {("tg", "NVIDIA H200", 1, False): pytest.approx(10 / 105)}
    ranked, _ = inference.board(frame, spreads)
    row = ranked.filter(pl.col("run_ids").list.first() == "r3").row(0, named=True)
    assert row["lo"] == pytest.approx(200 * (1 - 5 / 105)) and row["hi"] == pytest.approx(200 * (1 + 5 / 105))
    assert "widened to the A/A spread of tg tests on 1 × NVIDIA H200 (9.52%)" in row["interval_basis"]
    pair = ranked.filter(pl.col("runs") == 2).row(0, named=True)
    assert (pair["lo"], pair["hi"]) == (99.0, 110.0)  # two runs: their own span, not widened
    elsewhere = ranked.filter(pl.col("run_ids").list.first() == "r4").row(0, named=True)
    assert (elsewhere["lo"], elsewhere["hi"]) == (49.5, 50.5) and "widened" not in elsewhere["interval_basis"]

    base = {"kind": "serve", "engine": "vllm", "variant": "vllm-tp1", "out_med": None, "out_lo": None, "out_hi": None}
    points = [
        _run(n, **base, shared_host=False, output_tokens_per_s=v, bench_ttft_ratio=1.0, bench_tpot_ratio=1.0)
        for n, v in ((5, 3000.0), (6, 3300.0))
    ] + [_run(7, **base, shared_host=False, output_tokens_per_s=1000.0, bench_ttft_ratio=1.0, bench_tpot_ratio=1.0,
              settings={"a": 1})]  # fmt: skip
    served = pl.DataFrame(points).drop("depth", "rate_med", "rate_lo", "rate_hi")
    served_spreads = serving.aa_spreads(served)
    ranked, _ = serving.board(served, served_spreads)
    point = ranked.filter(pl.col("runs") == 1).row(0, named=True)
    assert point["lo"] == pytest.approx(1000 * (1 - 150 / 3150)) and point["hi"] == pytest.approx(
        1000 * (1 + 150 / 3150)
    )
    assert point["interval_basis"].startswith("one run, one measurement; widened to the A/A spread of serve")
