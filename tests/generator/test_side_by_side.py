"""One model, one GPU, every engine (generator/derive/side_by_side.py), on the committed H200 records: every figure is
the one its own board publishes, MBU and the bandwidth bound are the formulas of runners/metrics.py over the calibrated
copy bandwidth, a table holds one precision family, and the KV-cache depth table's bytes are the record's own."""

from __future__ import annotations

import statistics
from pathlib import Path

import polars as pl
import pytest

from generator import derive
from generator.derive import copy_bound, inference, serving, side_by_side, verdict
from runners import metrics


@pytest.fixture(scope="module")
def derived(committed_results: derive.Results) -> dict:
    results = committed_results
    tests, served = results.tests, results.served
    spreads = inference.pooled_spreads(tests) | serving.pooled_spreads(served)
    assert spreads == results.test_spreads
    board_rows = [(b.ranked, b.unranked) for b in results.boards.values() if b.kind != "train"]
    return dict(summary=results.runs, tests=tests, served=served, spreads=spreads, rows=results.side_by_side.rows,
                board_rows=side_by_side.stacked_boards(board_rows))  # fmt: skip


def test_precision_families_are_named_by_bits_per_weight() -> None:
    assert [side_by_side.precision_family(b) for b in (4.83, 4.92, 8.5, 8.0, 16.0, 16.0006)] == [4, 4, 8, 8, 16, 16]
    assert side_by_side.precision_family(None) is None and side_by_side.precision_family(0) is None


def test_every_figure_is_its_boards(derived: dict) -> None:
    rows, tests, served, spreads = derived["rows"], derived["tests"], derived["served"], derived["spreads"]
    bandwidth = statistics.median(
        derived["summary"]
        .filter((pl.col("accelerator") == "NVIDIA H200") & (pl.col("origin") == "measured"))["copy_bytes_per_s"]
        .drop_nulls()
        .to_list()
    )
    h200 = rows.filter(pl.col("accelerator") == "NVIDIA H200")
    assert {"llama-8b", "llama-14b", "llama-32b", "llama-70b"} <= set(h200["model_name"].to_list())
    for row in h200.iter_rows(named=True):
        here = (pl.col("model_name") == row["model_name"]) & (pl.col("accelerator") == row["accelerator"])
        if row["engine"] == "vllm":
            c1 = served.filter(here & (pl.col("kind") == "serve") & (pl.col("concurrency") == 1))
            ranked, unranked = serving.board(c1.filter(pl.col("accelerator_count") == 1), spreads)
            source = pl.concat([ranked, unranked], how="diagonal_relaxed").filter(pl.col("run_id") == row["decode_run"])
            # its board row's decode rate: the median of its runs' 1000 / median TPOT
            runs = served.filter(pl.col("run_id").is_in(source["run_ids"].to_list()[0] or [row["decode_run"]]))
            rates = [metrics.decode_tokens_per_s(t) for t in runs["median_tpot_ms"].to_list()]
            assert row["decode"] == source["decode_rate"][0] == pytest.approx(statistics.median(rates))
            assert row["ttft_measured"] and row["ttft_ms"] == source["median_ttft_ms"][0]
        else:
            board = tests.filter(here & (pl.col("kind") == "tg") & (pl.col("depth") == 0))
            ranked, unranked = inference.board(board.filter(pl.col("accelerator_count") == 1), spreads)
            found = ranked.filter(pl.col("variant") == row["variant"]).sort("started_at")
            if row["decode_checked"]:  # the variant's newest ranked configuration, as its board has it
                assert (row["decode"], row["decode_lo"], row["decode_hi"]) == found.select("value", "lo", "hi").row(-1)
            else:
                assert not found.height and row["decode_reason"]
                reason = unranked.filter(pl.col("run_id") == row["decode_run"])["unranked"][0]
                assert row["decode_reason"] == reason
            assert row["ttft_measured"] is False  # computed from the prefill test's time, and said so
        per_token = row["decode_bytes_per_token"]
        assert row["copy_bytes_per_s"] == pytest.approx(bandwidth)
        # one MBU site-wide, against the datasheet, as the boards have it; the copy bound's fraction beside it
        datasheet = metrics.datasheet_memory(row["accelerator"])
        assert datasheet is not None
        assert row["mbu_datasheet"] == metrics.mbu(per_token, row["decode"], datasheet[1])
        assert row["copy_fraction"] == metrics.copy_bound_fraction(per_token, row["decode"], row["copy_bytes_per_s"])
        assert row["limit_tokens_per_s"] == metrics.bandwidth_bound_tokens_per_s(per_token, row["copy_bytes_per_s"])
        assert row["copy_fraction"] == pytest.approx(row["decode"] / row["limit_tokens_per_s"])
    seventy = h200.filter(pl.col("model_name") == "llama-70b")
    assert set(seventy["variant"].to_list()) == {
        "llamacpp-q4_k_m", "llamacpp-q4_k_m-kvq8", "vllm-tp1-fp8", "vllm-tp1-awq", "mlx-q4"
    }  # fmt: skip
    assert seventy["decode_checked"].all()  # each beside its engine's own tool
    bits = dict(seventy.select("variant", "family_bits").iter_rows())
    # FP8 is no 4-bit row; AWQ int4 sits with Q4_K_M
    assert bits == {"llamacpp-q4_k_m": 4, "llamacpp-q4_k_m-kvq8": 4, "vllm-tp1-fp8": 8, "vllm-tp1-awq": 4, "mlx-q4": 4}
    thirty_two = h200.filter(pl.col("model_name") == "llama-32b")
    families = thirty_two.group_by("family_bits").agg(pl.col("engine").unique().sort()).sort("family_bits").rows()
    # every engine in both families: MLX's own 4- and 8-bit weights beside GGUF and AWQ/FP8
    assert families == [(4, ["llamacpp", "mlx", "vllm"]), (8, ["llamacpp", "mlx", "vllm"])]


H200 = "NVIDIA H200"


def test_a_table_holds_one_precision_family(derived: dict) -> None:
    boards = side_by_side.boards(derived["rows"])
    assert boards
    for b in boards:
        assert b["spread"] == b["weight_gib_hi"] / b["weight_gib_lo"] - 1  # printed beside the family's name
        assert b["spread"] <= 0.15, b["model_name"]  # formats of one family: ~5% for GGUF Q4_K_M against MLX 4-bit
        assert {r["family_bits"] for r in b["rows"]} == {b["family_bits"]}
        assert set(b["missing"]) | set(b["engines"]) == set(side_by_side.engine_names().values())
    # on the H200 (the H100 ran llama.cpp alone)
    key = ("llama-14b", H200, 16)
    sixteen = next(b for b in boards if (b["model_name"], b["accelerator"], b["family_bits"]) == key)
    assert sixteen["engines"] == ["MLX", "llama.cpp", "vLLM"]  # the same fp16 values in all three


def test_the_kv_cache_table_counts_the_records_own_bytes(derived: dict) -> None:
    depth = side_by_side.kv_depth_rows(*derived["board_rows"])
    seventy = depth.filter((pl.col("model_name") == "llama-70b") & (pl.col("accelerator") == H200))  # every depth
    assert sorted(set(seventy["depth"].to_list())) == [0, 4096, 16384, 32768]
    tests = derived["tests"].filter(pl.col("run_id").is_in(seventy["run_id"].implode()))
    for row in seventy.iter_rows(named=True):
        run = tests.filter(pl.col("run_id") == row["run_id"]).row(0, named=True)
        kv = run["kv_bytes_per_token_of_depth"] * (run["depth"] + run["n_tokens"] / 2)  # by hand, beside metrics'
        assert row["kv_gib"] == pytest.approx(kv / 2**30)
        assert row["kv_share"] == pytest.approx(kv / run["decode_bytes_per_token"])
        assert run["decode_bytes_per_token"] == pytest.approx(run["weight_bytes_per_token"] + kv)
        # the figure and interval of the test's own board, as the decode rows above
        board = derived["tests"].filter(pl.col("workload") == run["workload"])
        ranked, _ = inference.board(board, derived["spreads"])
        mine = ranked.filter((pl.col("variant") == row["variant"]) & (pl.col("accelerator") == H200))
        mine = mine.sort("started_at").row(-1, named=True)
        assert row["checked"]
        assert (row["rate"], row["rate_lo"], row["rate_hi"]) == (mine["value"], mine["lo"], mine["hi"])
    (ratio,) = side_by_side.cache_ratios(seventy)  # the one variant pair that differs only in its KV cache
    assert (ratio["f16"], ratio["q8"]) == ("llamacpp-q4_k_m", "llamacpp-q4_k_m-kvq8")
    deepest = seventy.filter(pl.col("depth") == 32768)
    rates = dict(deepest.select("kv_type", "rate").iter_rows())
    assert ratio["depth"] == 32768 and ratio["ratio"] == rates["q8_0"] / rates["f16"]


def test_a_row_without_weight_bytes_is_set_apart_not_a_crash() -> None:
    """A record whose weights' bytes are unknown (vLLM in a dtype the runner does not count) has no family: no board
    takes it, and no board's heading divides by it."""
    known = {name: None for name in side_by_side.ROW_SCHEMA}
    known |= {"suite": "s", "model_name": "m", "accelerator": "NVIDIA H200", "engine": "llamacpp", "variant": "a",
              "family_bits": 16, "weight_gib": 13.0, "total_params": 8e9}  # fmt: skip
    unknown = known | {"engine": "vllm", "variant": "b", "family_bits": None, "weight_gib": None}
    boards = side_by_side.boards(pl.DataFrame([known, unknown], schema=side_by_side.ROW_SCHEMA))
    assert len(boards) == 1 and [r["variant"] for r in boards[0]["rows"]] == ["a"] and boards[0]["spread"] == 0


def test_the_home_page_owes_llama_cpp_at_scale_to_this_page(derived: dict) -> None:
    summary = derived["summary"]
    the_fight = verdict.fight(summary)
    assert the_fight is not None
    said = verdict.answer(verdict.sweep(summary, the_fight), the_fight)  # point figures: the item reads none of them
    item = next(o for o in verdict.owed(summary, the_fight, said) if o["item"].startswith("llama.cpp at 14B+"))
    assert item["href"] == "side-by-side.md" and item["status"] == "one side measured"
    assert "llama-70b (70.6B)" in item["detail"] and "32,768" in item["detail"] and "one GPU" in item["detail"]
    assert "F16 and Q8_0 KV caches" in item["detail"]
    assert "seed's own engine did not run" in item["detail"]


def test_one_mbu_site_wide_with_the_copy_bounds_fraction_beside_it(derived: dict) -> None:
    """The 70B FP8 run read 82.0% against the copy bandwidth here and 71.9% (datasheet) on its board: MBU is now the
    datasheet's on both, and the copy bound's fraction is beside it under its own name, from its own formula."""
    rows = derived["rows"].filter((pl.col("model_name") == "llama-70b") & (pl.col("variant") == "vllm-tp1-fp8"))
    row = rows.row(0, named=True)
    board = derived["served"].filter(pl.col("run_id") == row["decode_run"]).row(0, named=True)
    assert row["mbu_datasheet"] == pytest.approx(board["mbu_datasheet"])  # one MBU, the board's
    assert row["copy_fraction"] is not None and row["copy_fraction"] > row["mbu_datasheet"]
    # the boards' copy fraction: the copy bandwidth of the hardware model, as this page's (every GPU's together)
    bandwidths = copy_bound.copy_bandwidths(derived["summary"])
    served = derived["served"].filter(pl.col("decode_rate").is_not_null())
    tg = derived["tests"].filter(pl.col("kind") == "tg")
    for frame, rate in ((served, "decode_rate"), (tg, "rate_med")):
        known = pl.col("accelerator").is_in(list(bandwidths)) & pl.col("decode_bytes_per_token").is_not_null()
        assert frame.filter(known).height > 0 and frame.filter(~known)["copy_fraction"].is_null().all()
        for run in frame.filter(known).iter_rows(named=True):
            copy = bandwidths[run["accelerator"]] * run["accelerator_count"]
            expected = metrics.copy_bound_fraction(run["decode_bytes_per_token"], run[rate], copy)
            assert run["copy_fraction"] == pytest.approx(expected)


def test_the_page_names_the_copy_fraction_and_a_computed_ttft_as_a_lower_bound(derived: dict, tmp_path: Path) -> None:
    from generator.render import pages

    rows = derived["rows"]
    page = pages.render(
        pages.environment(), "side_by_side.md.j2", tmp_path / "side-by-side.md",
        models=[{"title": "m", "boards": [b | {"chart": ""} for b in side_by_side.boards(rows)], "card": None}],
        depths=[], bandwidths={},
    ).read_text()  # fmt: skip
    computed = rows.filter(pl.col("ttft_measured").not_() & pl.col("ttft_ms").is_not_null())
    assert computed.height and page.count("(computed: lower bound)") == computed.height
    assert "of the copy bound" in page and "MBU (datasheet)" in page
    assert "no decode can beat" not in page.lower()


def _board_row(results: derive.Results, run_id: str, checked: bool) -> dict:
    """The row of its board that a page's row names by its run: the ranked configuration whose runs hold it, else the
    unranked run itself."""
    for board in results.boards.values():
        if board.kind == "train":
            continue
        if checked:
            found = board.ranked.filter(pl.col("run_ids").list.contains(run_id))
        else:
            found = board.unranked.filter(pl.col("run_id") == run_id)
        if found.height:
            return found.row(0, named=True)
    raise AssertionError(f"no board has {run_id}")


def test_a_rows_mbu_is_its_boards_one_value_of_its_own_figure(committed_results: derive.Results) -> None:
    """A row's MBU and copy-bound fraction are derived once, on its board's row, from the row's own figure (the median
    of its runs' figures, as the rank rule says), and this page takes them from there. Before, the board took the median
    of its runs' MBUs, each of a run's mean tokens/s (and, for MLX, of the test's timing, not the tool's path the row
    ranks by), while this page computed its own from the row's figure: llama-8b mlx-f16 on the H100 read 73.9% (82.0% of
    the copy bound) on its board and 72.3% · 80.2% here, beside the same 161.4 tokens/s."""
    results = committed_results
    bandwidths = copy_bound.copy_bandwidths(results.runs)
    checked = 0
    for board in results.boards.values():
        if board.kind == "train":
            continue
        for frame in (board.ranked, board.unranked):
            for row in frame.iter_rows(named=True):
                if board.kind == "inference" and row["kind"] == "tg":
                    figure, gpus = row["value"], 1  # llama.cpp splits layers: one GPU's bandwidth at a time
                elif board.kind == "serving" and row["kind"] == "serve" and row["concurrency"] == 1:
                    figure, gpus = row["decode_rate"], row["accelerator_count"]  # tensor parallel: every GPU's
                else:
                    assert row["mbu_datasheet"] is None and row["copy_fraction"] is None
                    continue
                per_token, copy = row["decode_bytes_per_token"], bandwidths.get(row["accelerator"])
                if per_token is None or figure is None:
                    continue
                assert row["mbu_datasheet"] == pytest.approx(
                    metrics.mbu(per_token, figure, row["datasheet_bandwidth"] * gpus), rel=1e-12
                )
                if copy is not None:
                    expected = metrics.copy_bound_fraction(per_token, figure, copy * gpus)
                    assert row["copy_fraction"] == pytest.approx(expected, rel=1e-12)
                checked += 1
    assert checked > 50
    # a served row's decode figure is the median of its runs', as its output tokens/s is (not its latest run's)
    for board in results.boards.values():
        if board.kind != "serving":
            continue
        for row in board.ranked.filter(pl.col("decode_rate").is_not_null()).iter_rows(named=True):
            runs = results.served.filter(pl.col("run_id").is_in(row["run_ids"]))
            assert row["decode_rate"] == pytest.approx(runs["decode_rate"].median(), rel=1e-12)
    # this page's rows and its KV-cache table take their board row's values, the same floats
    depth = side_by_side.kv_depth_rows(
        *side_by_side.stacked_boards([(b.ranked, b.unranked) for b in results.boards.values() if b.kind != "train"])
    )
    pairs = [(r, r["decode_run"], r["decode_checked"], r["decode"]) for r in results.side_by_side.rows.to_dicts()]
    pairs += [(r, r["run_id"], r["checked"], r["rate"]) for r in depth.to_dicts()]
    for row, run_id, was_checked, decode in pairs:
        board_row = _board_row(results, run_id, was_checked)
        figure = board_row["decode_rate"] if board_row["kind"] == "serve" else board_row["value"]
        assert decode == figure
        assert (row["mbu_datasheet"], row["copy_fraction"]) == (board_row["mbu_datasheet"], board_row["copy_fraction"])
    # the reader's three rows: one MBU each, as both pages print it (one decimal of a percentage)
    named = {
        ("llama-8b", "NVIDIA H100 80GB HBM3", "mlx-f16"),
        ("llama-70b", "NVIDIA H100 80GB HBM3", "llamacpp-q4_k_m"),
        ("llama-8b", "NVIDIA H200", "llamacpp-f16"),
    }
    rows = results.side_by_side.rows.filter(
        pl.struct("model_name", "accelerator", "variant").map_elements(
            lambda s: (s["model_name"], s["accelerator"], s["variant"]) in named, return_dtype=pl.Boolean
        )
    )
    assert rows.height == 3
    for row in rows.iter_rows(named=True):
        board_row = _board_row(results, row["decode_run"], row["decode_checked"])
        assert f"{row['mbu_datasheet']:.1%}" == f"{board_row['mbu_datasheet']:.1%}"
        assert f"{row['copy_fraction']:.1%}" == f"{board_row['copy_fraction']:.1%}"
