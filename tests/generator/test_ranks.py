"""Ranks that mean something on the inference and serving boards: only runs that agree with their engine's own tool
rank, one row per configuration, and every published board (training, inference, serving) keeps the rules on the
committed data. The unit tests run on synthetic frames; the last tests read data/ as the session derived it
(`committed_results`)."""

from __future__ import annotations

import hashlib
import json
import math
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from generator import derive, render
from generator.derive import configurations, copy_bound, inference, ladder, serving
from runners import metrics

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
        # what a row's MBU is made of (`ladder.with_bandwidth_use`); none here: these boards rank, they do not decode
        "kind": "tg",
        "decode_bytes_per_token": None,
        "datasheet_bandwidth": None,
        "copy_bandwidth": None,
        "decode_rate": None,
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


def test_mlx_ranks_the_figure_its_tool_checked() -> None:
    """MLX's runner also times mlx_lm.benchmark's own path (its prompt time holds the first decoded token), and only
    that figure is held to the tool's: so that is the figure its row ranks by, not the test's own (issue 35: on an
    H200 the MLX pp figure ranked was 1.33x the tool's)."""
    timed = dict(tool_path_med=17000.0, tool_path_lo=16900.0, tool_path_hi=17100.0)
    mlx = _run(1, engine="mlx", variant="mlx-f16", rate_med=22550.0, rate_lo=22500.0, rate_hi=22600.0, **timed)
    llama = _run(2, settings={"weights": "q8_0"}, tool_path_med=None, tool_path_lo=None, tool_path_hi=None)
    ranked, _ = _board([mlx, llama])
    values = dict(ranked.select(pl.col("run_ids").list.first(), "value").iter_rows())
    assert values == {"r1": 17000.0, "r2": 100.0}
    row = ranked.filter(pl.col("engine") == "mlx").row(0, named=True)
    assert row["lo"] <= 16900.0 and row["hi"] >= 17100.0


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
    assert ranked["interval_basis"][0].startswith("one run, one measurement: no interval")
    assert ranked["lo"][0] is None and ranked["hi"][0] is None  # never a zero-width interval


def test_a_served_points_tolerance_is_what_the_tool_reproduces_itself() -> None:
    """`vllm bench serve` repeated three times on one served point moved 20% in median TTFT: a runner within 15% of it
    agrees, one 30% off does not; throughput and TPOT, which the tool reproduced within 5%, keep the ±5% rule; other
    hardware, where the tool was never repeated, keeps ±5% for all three."""
    tool = [
        {"engine": "vllm-bench", "kind": "serve", "status": "ok", "accelerator": "NVIDIA H200", "accelerator_count": 1,
         "suite": "s", "workload": "w", "settings_hash": "h", "out_rate": 1000.0 * k, "median_ttft_ms": ttft,
         "median_tpot_ms": 5.0} for k, ttft in ((1.0, 100.0), (1.01, 122.2), (1.005, 111.1))
    ]  # fmt: skip
    tolerances = serving.tool_tolerances(pl.DataFrame(tool)).row(0, named=True)
    assert tolerances["tol_ttft"] == pytest.approx(22.2 / 111.1) and tolerances["tool_repeats"] == 3
    tolerances.pop("tool_repeats")
    assert tolerances["tol_out"] == metrics.OWN_TOOL_REL_TOL and tolerances["tol_tpot"] == metrics.OWN_TOOL_REL_TOL
    base = {"kind": "serve", "engine": "vllm", "variant": "vllm-tp1", "out_med": None, "out_lo": None, "out_hi": None,
            "output_tokens_per_s": 3000.0, "bench_ratio": 1.0, "bench_tpot_ratio": 1.0, **tolerances}  # fmt: skip
    runs = [_run(1, **base, bench_ttft_ratio=1.15), _run(2, **base, bench_ttft_ratio=1.3, settings={"a": 2})]
    ranked, unranked = serving.board(pl.DataFrame(runs).drop("depth", "rate_med", "rate_lo", "rate_hi"))
    assert ranked["run_ids"].to_list() == [["r1"]]
    assert unranked["unranked"][0] == "median TTFT disagrees with vllm bench: runner / tool = 1.3, beyond ±20%"
    elsewhere = _run(3, **(base | dict.fromkeys(tolerances, None)), bench_ttft_ratio=1.15)
    (reason,) = serving.board(pl.DataFrame([elsewhere]).drop("depth", "rate_med", "rate_lo", "rate_hi"))[1]["unranked"]
    assert reason.endswith("beyond ±5%")


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
    figure = ("value", "lo", "hi")
    spans = configurations.unranked_spans(unranked, figure)
    rows = render.boards.board_rows(ranked, unranked, spans, "tokens/s", figure)
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


def _published_boards(results: derive.Results) -> dict[str, list[dict]]:
    """Every board of the committed data as the site publishes it: the site's own `derive.results` (every kind),
    as its board JSON has it (render.boards.board_rows)."""
    figures = {
        "train": ("steps/s", ("steps_per_s", "steps_per_s_lo", "steps_per_s_hi")),
        "inference": ("tokens/s", ("value", "lo", "hi")),
        "serving": ("output tokens/s", ("value", "lo", "hi")),
    }
    return {
        f"{suite}/{workload}": render.boards.board_rows(
            board.ranked, board.unranked, board.unranked_spans, *figures[board.kind]
        )
        for (suite, workload), board in results.boards.items()
    }


@pytest.mark.slow
def test_every_published_board_keeps_the_rank_rules(committed_results: derive.Results) -> None:
    """Issue 23's done-when on the committed data: no ranked row is unverified or stopped, a settings hash is one
    row, a configuration of two or more runs has an interval at least as wide as its runs' figures, and no run has
    two ranks."""
    boards = _published_boards(committed_results)
    assert len(boards) > 20
    run_values = _run_figures(committed_results)
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
            elif r["verified"]:  # verified, without an interval: no rank, and the row says why (issue 55)
                assert r["interval_low"] is None and r["interval_high"] is None, (name, r)
                assert r["reason"].startswith(("unreplicated", "one run, one measurement")), (name, r)
            else:
                assert r["reason"], (name, r)
            for run in r["runs"]:
                assert seen.setdefault(run, r["rank"]) == r["rank"], (name, run)


@pytest.mark.slow
def test_no_published_interval_excludes_a_run_of_its_own_configuration(committed_results: derive.Results) -> None:
    """Every row of every committed board, one run or many, holds each of its runs' figures, and a training row also
    every run of its settings that stopped on its time budget with a steady-state figure (issue 35: the 1-GPU stock
    row's interval once excluded such a run, 7.455 steps/s). No row has an interval of zero width."""
    summary = committed_results.runs
    run_values = _run_figures(committed_results)
    stopped = summary.filter(
        (pl.col("origin") == "measured") & (pl.col("status") == "timeout") & pl.col("steps_per_s_lo").is_not_null()
        & pl.col("unverified").is_null() & pl.col("retracted_by").is_null() & (pl.col("loss_parity_ok") != False)  # noqa: E712
    )  # fmt: skip
    siblings: dict[tuple[str, str], list[float]] = {}
    for suite, workload, settings, figure in stopped.select("suite", "workload", "settings_hash", "steps_per_s").rows():
        siblings.setdefault((f"{suite}/{workload}", settings), []).append(figure)
    checked = 0
    for name, rows in _published_boards(committed_results).items():
        for r in rows:
            if r["rank"] is None:
                continue
            figures = [run_values[i] for i in r["runs"] if run_values.get(i) is not None]
            figures += siblings.get((name, r["settings_hash"]), [])
            if r["interval_low"] is None:
                assert len(r["runs"]) == 1, (name, r)  # one measurement and no spread pooled: no interval at all
                continue
            assert r["interval_low"] < r["interval_high"], (name, r)
            for x in figures:
                assert r["interval_low"] <= x <= r["interval_high"], (name, r["settings_hash"], x)
                checked += 1
    assert checked > 100
    one_gpu_stock = [figures for (name, _), figures in siblings.items() if name.endswith("1gpu-mb8")]
    assert any(7.45 < x < 7.46 for f in one_gpu_stock for x in f)  # the audit's run is among those checked


def test_the_one_run_widening_on_the_committed_data_is_the_pooled_formula(committed_results: derive.Results) -> None:
    """A configuration of one run on 2 × H200 is widened by t(0.975, df)·s each side of its figure in ln units, s
    pooled (`metrics.pooled_log_sd`, the within-groups mean square of ln steps/s) over every group of identical settings
    with two or more runs that measured their steady state on that hardware, computed here by hand from the runs."""
    summary = committed_results.runs
    measured = summary.filter(
        (pl.col("origin") == "measured") & pl.col("status").is_in(["ok", "timeout"])
        & pl.col("steps_per_s_lo").is_not_null() & pl.col("unverified").is_null() & pl.col("retracted_by").is_null()
        & (pl.col("loss_parity_ok") != False) & (pl.col("accelerator") == "NVIDIA H200")  # noqa: E712
        & (pl.col("accelerator_count") == 2)
    )  # fmt: skip
    squares, df, groups = 0.0, 0, 0
    for values in measured.group_by("suite", "workload", "settings_hash").agg(pl.col("steps_per_s"))["steps_per_s"]:
        if len(values) >= 2:
            logs = [math.log(v) for v in values]
            squares += sum((x - sum(logs) / len(logs)) ** 2 for x in logs)
            df, groups = df + len(logs) - 1, groups + 1
    sd = math.sqrt(squares / df)
    t = {6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}[df]  # the t table (NIST e-Handbook §1.3.6.7.2)
    board = derive.leaderboards(summary)[("h100", "train-gpt-1.27b-mb16")]
    row = board.filter(pl.col("variant") == "ddp-amp-stock").row(0, named=True)
    assert row["runs"] == 1
    x = row["steps_per_s"]
    assert row["steps_per_s_lo"] == pytest.approx(x * math.exp(-t * sd), rel=2e-4)
    assert row["steps_per_s_hi"] == pytest.approx(x * math.exp(t * sd), rel=2e-4)
    assert f"s = {sd:.2%} pooled over {groups} group(s)" in row["interval_basis"]
    assert f"({df} degrees of freedom, t = {t:.3f})" in row["interval_basis"]


def _run_figures(results: derive.Results) -> dict[str, float | None]:
    """Each measured run's own figure (steps/s median, or tokens/s median over repetitions, or a served point's)."""
    loaded, summary = results.records, results.runs
    out = dict(summary.select("run_id", "steps_per_s").iter_rows())
    bandwidths = copy_bound.copy_bandwidths(summary)
    tests = inference.per_run_figures(summary, loaded.rows, bandwidths)
    out |= dict(tests.select("run_id", inference.FIGURE[0]).iter_rows())  # the figure each run ranks by
    served = serving.per_run_figures(summary, loaded.rows, bandwidths)
    out |= dict(served.select("run_id", pl.coalesce("out_med", "output_tokens_per_s")).iter_rows())
    return out


def test_the_rank_rule_names_the_tolerance() -> None:
    assert f"±{metrics.OWN_TOOL_REL_TOL * 100:g}%" in ladder.RANK_RULE


def test_a_one_run_row_gets_the_spread_pooled_over_its_kind_on_its_hardware() -> None:
    """Intervals include what varies between repeats: a configuration of one run is widened by t·s each side (in
    ln units), s the between-run spread pooled over the repeated configurations of its kind of test on its hardware
    and t Student's quantile for its degrees of freedom, and says so; a served point (one measurement, no interval of
    its own) gets one; a row of two runs holds both; other hardware is not widened by it."""
    shared = {"kind": "tg", "shared_host": False}
    repeated = [_run(1, **shared, rate_med=100.0), _run(2, **shared, rate_med=110.0)]  # one configuration
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
    spreads = inference.pooled_spreads(frame)
    sd = math.log(110 / 100) / math.sqrt(2)  # two runs: the sd of their logs, 1 degree of freedom
    assert set(spreads) == {("llamacpp", "tg", "NVIDIA H200", 1)}
    assert spreads[("llamacpp", "tg", "NVIDIA H200", 1)] == metrics.PooledSpread(pytest.approx(sd), 1, 1)
    ranked, _ = inference.board(frame, spreads)
    row = ranked.filter(pl.col("run_ids").list.first() == "r3").row(0, named=True)
    half = 12.706204736 * sd  # t(0.975, 1)
    assert row["lo"] == pytest.approx(200 * math.exp(-half)) and row["hi"] == pytest.approx(200 * math.exp(half))
    assert "pooled over 1 group(s) of identical settings on 1 × NVIDIA H200, tg tests" in row["interval_basis"]
    pair = ranked.filter(pl.col("runs") == 2).row(0, named=True)
    centre, pair_half = math.log(100 * 110) / 2, half / math.sqrt(2)
    assert pair["lo"] == pytest.approx(math.exp(centre - pair_half)) and pair["lo"] < 99.0
    assert pair["hi"] == pytest.approx(math.exp(centre + pair_half)) and pair["hi"] > 110.0
    # one run on hardware where its engine repeated nothing: unreplicated, no interval and no rank (issue 55)
    elsewhere = ranked.filter(pl.col("run_ids").list.first() == "r4").row(0, named=True)
    assert elsewhere["lo"] is None and elsewhere["hi"] is None and elsewhere["rank"] is None
    assert (
        elsewhere["interval_basis"].startswith("unreplicated")
        and "49.5 – 50.5 within the run" in elsewhere["interval_basis"]
    )

    base = {"kind": "serve", "engine": "vllm", "variant": "vllm-tp1", "out_med": None, "out_lo": None, "out_hi": None}
    points = [
        _run(n, **base, shared_host=False, output_tokens_per_s=v, bench_ttft_ratio=1.0, bench_tpot_ratio=1.0)
        for n, v in ((5, 3000.0), (6, 3300.0))
    ] + [_run(7, **base, shared_host=False, output_tokens_per_s=1000.0, bench_ttft_ratio=1.0, bench_tpot_ratio=1.0,
              settings={"a": 1})]  # fmt: skip
    served = pl.DataFrame(points).drop("depth", "rate_med", "rate_lo", "rate_hi")
    ranked, _ = serving.board(served, serving.pooled_spreads(served))
    point = ranked.filter(pl.col("runs") == 1).row(0, named=True)
    served_half = 12.706204736 * math.log(3300 / 3000) / math.sqrt(2)
    assert point["lo"] == pytest.approx(1000 * math.exp(-served_half))
    assert point["hi"] == pytest.approx(1000 * math.exp(served_half))
    assert point["interval_basis"].endswith("; one measurement a run")
    # without a pooled spread a served point has no interval at all, never one of zero width
    (alone,) = serving.board(served.filter(pl.col("run_id") == "r7"), {})[0].iter_rows(named=True)
    assert alone["lo"] is None and alone["hi"] is None and "no interval" in alone["interval_basis"]
    # the floor is a relative spread: a pair exactly as far apart as an A/A pair is "same" whichever side is A
    floor = metrics.relative_spread([10.0, 10.5])
    assert metrics.compare_verdict(10.0, 10.5, 1.01, 1.09, floor) == "same"
    assert metrics.compare_verdict(10.5, 10.0, 0.92, 0.99, floor) == "same"


def test_a_setting_a_record_lacks_reads_as_its_default_so_one_configuration_is_one_row(
    committed_results: derive.Results,
) -> None:
    """ddp-amp-stock on one H200: two runs recorded before `compile_loss` existed and the others after, written out as
    its default (false): one configuration, one row of its finished runs (one stopped on its time budget and is inside
    the row's interval)."""
    summary = committed_results.runs
    stock = summary.filter(
        (pl.col("workload") == "train-gpt-1.27b-1gpu-mb8") & (pl.col("variant") == "ddp-amp-stock")
        & (pl.col("micro_batch") == 8) & (pl.col("origin") == "measured") & (pl.col("accelerator") == "NVIDIA H200")
    )  # fmt: skip
    # the four of 2026-11-30/12-01, and the repeats on later host starts (issue 61), which write it out
    assert stock.height >= 4 and stock["settings_hash"].n_unique() == 1
    assert set(stock["settings"].map_elements(lambda t: json.loads(t)["settings"]["compile_loss"], pl.Boolean)) == {
        False
    }
    row = derive.leaderboards(summary)[("h100", "train-gpt-1.27b-1gpu-mb8")].filter(
        (pl.col("variant") == "ddp-amp-stock") & (pl.col("accelerator") == "NVIDIA H200")
    )
    finished = stock.filter(pl.col("status") == "ok")
    assert finished.height == stock.height - 1 and row["runs"].to_list() == [finished.height]
    stopped = stock.filter(pl.col("status") != "ok")["steps_per_s"][0]
    assert row["steps_per_s_lo"][0] <= stopped <= row["steps_per_s_hi"][0]


def test_a_sweep_point_says_it_is_one_and_each_engine_and_device_count_has_its_calibrated_peak(
    committed_results: derive.Results,
) -> None:
    summary = committed_results.runs
    points = derive.candidates(summary).filter(
        pl.col("sweep_point") & ~pl.col("full_length") & (pl.col("status") == "ok")
    )  # a short run at another micro-batch is a sweep point before it is short
    assert points.height and all(r.startswith("a sweep point at micro-batch") for r in points["unranked"])
    measured = summary.filter((pl.col("origin") == "measured") & (pl.col("accelerator") == "NVIDIA H200"))
    peaks = measured.group_by("engine", "accelerator_count", "matmul_precision").agg(
        pl.col("calibrated_matmul_flops").median().alias("median"), pl.col("model_matmul_flops").unique()
    )
    for row in peaks.drop_nulls("median").iter_rows(named=True):
        assert row["model_matmul_flops"] == [row["median"]], row  # one peak per kind: its own runs' median
    torch = dict(peaks.filter((pl.col("engine") == "torch") & (pl.col("matmul_precision") == "bf16"))
                 .select("accelerator_count", "median").iter_rows())  # fmt: skip
    assert torch[2] > torch[1] > torch[4]  # they differ: pooling them would move every calibrated MFU
