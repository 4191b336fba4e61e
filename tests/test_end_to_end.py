"""A real bench run on CPU (torch DDP over gloo, 2 processes) → result file → the site shows that run."""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest

from generator import derive, load
from generator.derive import parity, summaries
from generator.render import commits
from runners import layout, metrics, spec
from tests.conftest import REPEAT_NOTE, SCALING_NOTE, TORCH_VARIANTS, checked_rows, run_module, write_as_submitted

SMOKE = spec.load_suite("cpu-smoke")


VARIANTS = TORCH_VARIANTS


def _files(data: Path) -> dict[str, Path]:
    """The bench run's file for each variant."""
    files = {layout.read(p).select(["variant"])["variant"][0].as_py(): p for p in data.rglob("*.parquet")}
    assert sorted(files) == sorted(VARIANTS), files
    return files


@pytest.mark.bench
def test_bench_writes_one_valid_record_per_variant(bench_data) -> None:
    data, proc = bench_data
    assert "summary (figure: median [its own 95% interval]; training over timing windows" in proc.stdout
    for variant in VARIANTS:
        assert variant in proc.stdout
    work = SMOKE.workloads[0]
    files = _files(data)
    heads = {v: layout.read(p).select(["status", "error"]).slice(0, 1).to_pylist()[0] for v, p in files.items()}
    assert all(h["status"] == "ok" for h in heads.values()), (heads, proc.stdout[-3000:], proc.stderr[-3000:])
    first_losses = {}
    for variant, path in files.items():
        rows = checked_rows(path)
        run = rows[0]
        assert (run["suite"], run["workload"], run["status"]) == ("cpu-smoke", work.name, "ok"), variant
        assert run["engine"] == "torch" and run["engine_version"].startswith("2.")
        assert run["accelerator_count"] == 2 and run["origin"] == "measured"
        config = json.loads(run["config"])
        assert config["derived"]["flops_per_token"] == SMOKE.models["gpt-tiny"].flops_per_token(work.seq_len)
        assert config["variant"]["settings"] == SMOKE.variants[variant].settings
        assert json.loads(run["environment"]).get("OMP_NUM_THREADS") == "1"  # set by torchrun, allowlisted
        calibration = json.loads(run["calibration"])
        assert calibration["matmul_flops"] > 0 and calibration["copy_bytes_per_s"] > 0
        assert calibration["allreduce_busbw_bytes_per_s"] > 0
        steps = [r for r in rows if r["metric"] == "step_time_s"]
        assert [r["step"] for r in steps] == list(range(work.steps))
        assert {r["phase"] for r in steps[: work.warmup_steps]} == {"warmup"}
        assert {r["phase"] for r in steps[work.warmup_steps :]} == {"steady"}
        assert all(r["value"] > 0 for r in steps)
        run_values = {r["metric"]: r["value"] for r in rows if r["phase"] == "run"}
        assert run_values["steps_completed"] == work.steps
        assert run_values["startup_s"] > 0 and run_values["warmup_s"] > 0 and run_values["peak_rss_gib"] > 0
        losses = [r["value"] for r in rows if r["metric"] == "loss"]
        assert abs(losses[0] - math.log(512)) < 0.3  # random init: about ln(vocab)
        assert losses[-1] < losses[0] - 0.5, variant  # and it learns the stream's structure
        first_losses[variant] = losses[0]
    # same initial weights file, same tokens: every variant starts from the same loss
    assert max(first_losses.values()) - min(first_losses.values()) < 0.01, first_losses


@pytest.mark.bench
def test_every_variant_passes_loss_parity(bench_data) -> None:
    data, _ = bench_data
    loaded = load.load(data)
    summary = derive.run_summary(loaded.runs, loaded.rows)
    parity = dict(summary.select("variant", "loss_parity_ok").iter_rows())
    assert parity == dict.fromkeys(VARIANTS, True), summary.select("variant", "loss_first_gap", "loss_max_rel_gap")
    # proof of the same work: every variant recorded the same initial weights and token stream
    hashes = summary.select("weights_sha256", "state_sha256", "data_sha256").unique()
    assert hashes.height == 1 and all(len(h) == 64 for h in hashes.row(0)), hashes
    measured = summary.filter(pl.col("origin") == "measured")
    assert set(measured["hashes_from"]) == {"fed"}  # hashed from what each process fed its model
    board = derive.leaderboards(summary)[("cpu-smoke", "train-gpt-tiny-mb4")]
    assert sorted(board["variant"]) == sorted(VARIANTS)
    assert board.filter(variant="ddp-fp32-stock")["speedup"].to_list() == [pytest.approx(1.0)]


@pytest.mark.bench
def test_site_shows_the_runs_and_reports_the_corrupt_file(bench_data, built_site: Path) -> None:
    data, _ = bench_data
    index = (built_site / "index.html").read_text()
    board = (built_site / "leaderboards" / "cpu-smoke-train-gpt-tiny-mb4.html").read_text()
    assert "cpu-smoke" in index and "train-gpt-tiny-mb4" in index
    assert "1 result file(s) rejected" in index
    for path in _files(data).values():
        assert path.stem in board
        # its harness commit, beside it (this build has no repository address: shown, not linked)
        assert str(commits.link(layout.read(path).column("harness_commit")[0].as_py(), None)) in board
    assert 'class="ff-chart"' in board and "application/json" in board
    for variant, path in _files(data).items():  # a page per run, with the file's hash and its settings
        run_page = (built_site / "runs" / f"{path.stem}.html").read_text()
        assert hashlib.sha256(path.read_bytes()).hexdigest() in run_page
        assert "python -m runners bench --suite cpu-smoke" in run_page and variant in run_page
        assert f'href="../runs/{path.stem}.html"' in board
    for name in ("runs.parquet", "runs.csv.gz"):
        assert (built_site / "downloads" / name).stat().st_size > 0
    samples = pl.read_parquet(built_site / "downloads" / "samples" / "cpu-smoke" / "*.parquet")  # in parts
    for path in _files(data).values():  # every row of each run: in its suite's samples, and gzipped beside its page
        run_csv = pl.read_csv(built_site / "runs" / f"{path.stem}.csv.gz", schema_overrides={"step": pl.Int32})
        assert run_csv.columns == ["trial", "step", "phase", "metric", "value", "unit"]  # the name says the run
        original = pl.from_arrow(layout.read(path).select(run_csv.columns)).cast(run_csv.schema)
        assert run_csv.equals(original)  # every row, in file order, values exact
        own = samples.filter(pl.col("run_id") == path.stem).select(run_csv.columns).cast(run_csv.schema)
        assert own.equals(original)
        page = (built_site / "runs" / f"{path.stem}.html").read_text()
        part = re.search(r'href="\.\./(downloads/samples/cpu-smoke/[^"]+\.parquet)"', page)
        assert part, path.stem  # the page names the part that holds its rows
        own = pl.read_parquet(built_site / part.group(1)).filter(pl.col("run_id") == path.stem)
        assert own.select(run_csv.columns).cast(run_csv.schema).equals(original)
    # bench_data's four runs and built_site's two extra stock runs
    assert samples.filter(pl.col("metric") == "step_time_s").height == (len(VARIANTS) + 2) * SMOKE.workloads[0].steps
    for page in ("claims", "failures", "hardware", "engines", "downloads", "methodology"):
        assert (built_site / f"{page}.html").exists(), page
    rejected = (built_site / "rejected.html").read_text()
    assert "corrupt-run.parquet" in rejected and "not a readable Parquet file" in rejected
    assert (built_site / "assets" / "js" / "vega.js").stat().st_size > 100_000  # served by the site itself
    for page in built_site.rglob("*.html"):
        text = page.read_text()
        assert "cdn.jsdelivr" not in text and "fonts.googleapis" not in text, page


@pytest.mark.bench
def test_failures_are_recorded_and_the_suite_goes_on(tmp_path: Path, torch_engine: str) -> None:
    """A run over its time budget keeps its completed steps; a run that crashes at start gets a failure record."""
    text = spec.SUITES_DIR.joinpath("cpu-smoke.toml").read_text()
    over_budget = text.replace("time_budget_s = 300.0", "time_budget_s = 0.001").replace(
        'name = "train-gpt-tiny-mb4"', 'name = "over-budget"'
    )
    # No GPU here, so no NCCL: the runner dies in init_process_group before it can write anything.
    no_gpu = (
        text.split("[[workloads]]")[1]
        .split("\n\n")[0]  # the training workload's table alone
        .replace('dist_backend = "gloo"', 'dist_backend = "nccl"')
        .replace('name = "train-gpt-tiny-mb4"', 'name = "needs-a-gpu"')
    )
    suite = tmp_path / "faults.toml"
    suite.write_text(over_budget + "\n[[workloads]]" + no_gpu)
    proc = run_module(
        "runners",
        "bench",
        "--suite",
        str(suite),
        "--variant",
        "ddp-fp32-stock",
        "--data-dir",
        str(tmp_path / "data"),
        check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    loaded = load.load(tmp_path / "data")
    assert loaded.rejected == []
    by_workload = {r["workload"]: r for r in loaded.runs.to_dicts()}
    timeout = by_workload["over-budget"]
    assert timeout["status"] == "timeout" and "time budget" in timeout["error"]
    completed = loaded.rows.filter(run_id=timeout["run_id"], metric="steps_completed")["value"].to_list()
    assert completed == [5.0]  # one window of 5 steps, then it stopped and said so
    crash = by_workload["needs-a-gpu"]
    assert crash["status"] == "failed" and "runner exited with" in crash["error"]
    assert "over-budget" in proc.stdout and "needs-a-gpu" in proc.stdout and "failed" in proc.stdout


@pytest.mark.bench
def test_validate_names_file_row_and_field(bench_data, tmp_path: Path) -> None:
    data, _ = bench_data
    good = _files(data)["ddp-fp32-stock"]
    table = layout.read(good)
    values = table.column("value").to_pylist()
    row = table.column("metric").to_pylist().index("step_time_s", 1)
    values[row] = -1.0  # a negative step time
    bad = tmp_path / good.name
    write_as_submitted(table.set_column(table.column_names.index("value"), "value", pa.array(values)), bad)
    ok = run_module("generator.commands.validate", str(good))
    assert "1 file(s) checked, 0 with problems" in ok.stdout
    proc = run_module("generator.commands.validate", str(bad), check=False)
    assert proc.returncode == 1
    assert f"{bad}: row {row}, field 'value': step_time_s = -1.0: a time is never negative" in proc.stdout


def test_a_cuda_suite_without_gpus_says_what_to_do(tmp_path: Path) -> None:
    proc = run_module("runners", "bench", "--suite", "h100", "--data-dir", str(tmp_path), check=False)
    assert proc.returncode != 0
    assert "suite h100 needs 2 NVIDIA GPU(s)" in proc.stderr
    assert not any(tmp_path.iterdir())
    # a served variant needs as many GPUs as its tensor-parallel size: the 70B suite asks for 8, or 4 for TP4 alone
    proc = run_module("runners", "bench", "--suite", "h100-x8", "--data-dir", str(tmp_path), check=False)
    assert proc.returncode != 0 and "suite h100-x8 needs 8 NVIDIA GPU(s)" in proc.stderr
    tp4 = ("runners", "bench", "--suite", "h100-x8", "--variant", "vllm-tp4", "--data-dir", str(tmp_path))
    assert "suite h100-x8 needs 4 NVIDIA GPU(s)" in run_module(*tp4, check=False).stderr
    assert not any(tmp_path.iterdir())


def test_too_few_steps_are_refused_before_anything_runs(tmp_path: Path) -> None:
    """`--steps` within the warm-up would have made a runner die and left a failure record that measured nothing."""
    cmd = ("runners", "bench", "--suite", "h100", "--workload", "train-gpt-1.27b-1gpu-mb8", "--steps", "20")
    proc = run_module(*cmd, "--data-dir", str(tmp_path), check=False)
    assert proc.returncode != 0
    assert "--steps 20 leaves no steady steps after the 20 warm-up steps of h100/train-gpt-1.27b-1gpu" in proc.stderr
    assert not any(tmp_path.iterdir())


@pytest.mark.bench
def test_the_same_data_gives_a_byte_identical_site(bench_data, built_site: Path, tmp_path: Path) -> None:
    """Build again from the same files (the corrupt one included), as the first was built (`fairfight site`), and
    compare every byte."""
    data = built_site.parent / "data"
    again = tmp_path / "site"
    run_module("fairfight", "site", "--data", str(data), "--out", str(again), "--work", str(tmp_path / "build"))
    first = {p.relative_to(built_site): p.read_bytes() for p in built_site.rglob("*") if p.is_file()}
    second = {p.relative_to(again): p.read_bytes() for p in again.rglob("*") if p.is_file()}
    assert sorted(first) == sorted(second)
    assert [k for k in first if first[k] != second[k]] == []
    # and again into the same place, warm: the load cache and the kept run pages give the same bytes
    run_module("fairfight", "site", "--data", str(data), "--out", str(again), "--work", str(tmp_path / "build"))
    third = {p.relative_to(again): p.read_bytes() for p in again.rglob("*") if p.is_file()}
    assert sorted(first) == sorted(third)
    assert [k for k in first if first[k] != third[k]] == []


@pytest.mark.bench
def test_repeats_and_scaling_reach_the_leaderboard(built_site: Path) -> None:
    """built_site holds a one-process stock run and a repeat of the two-process one: the A/A spread and the
    scaling efficiency come from them, the one-process run stays out of the ranking, and the notes show."""
    loaded = load.load(built_site.parent / "data")
    summary = derive.run_summary(loaded.runs, loaded.rows)
    stock = summary.filter(pl.col("variant") == "ddp-fp32-stock")
    single = stock.filter(pl.col("accelerator_count") == 1).row(0, named=True)
    assert single["note"] == SCALING_NOTE and not single["suite_scale"] and single["full_length"]
    assert not single["shared_host"]  # a note alone is not a shared host: a CPU run used the whole host
    assert single["parity_baseline"] == single["run_id"]  # its own device count is its own baseline
    two = stock.filter(pl.col("accelerator_count") == 2)
    if two["busy_host"].any():  # other work took this host's CPUs as a run ran: it is rightly nobody's repeat
        took = two.filter(pl.col("busy_host")).select("others_cpu_cores", "cpu_cores").row(0)
        pytest.skip(f"the host was busy while a repeat ran (others took {took[0]:.2f} of {took[1]} cores): no repeat")
    repeats = derive.repeats(summary).filter(pl.col("variant") == "ddp-fp32-stock").row(0, named=True)
    assert repeats["runs"] == 2 and repeats["accelerator_count"] == 2
    mid = (repeats["highest"] + repeats["lowest"]) / 2
    assert repeats["spread"] == pytest.approx((repeats["highest"] - repeats["lowest"]) / mid)
    points = derive.scaling(summary).filter(pl.col("variant") == "ddp-fp32-stock").sort("accelerator_count")
    assert points["accelerator_count"].to_list() == [1, 2]
    assert points["efficiency"][0] == 1.0 and points["efficiency"][1] > 0
    board = derive.leaderboards(summary)[("cpu-smoke", "train-gpt-tiny-mb4")]
    assert single["run_id"] not in board["run_id"].to_list()
    # the two identical runs are one configuration: one row, one rank, an interval as wide as their spread at least
    stock_row = board.filter(pl.col("variant") == "ddp-fp32-stock").row(0, named=True)
    assert board.filter(pl.col("variant") == "ddp-fp32-stock").height == 1 and stock_row["runs"] == 2
    assert sorted(stock_row["run_ids"]) == sorted(repeats["run_id"])
    assert stock_row["steps_per_s_lo"] <= repeats["lowest"] and stock_row["steps_per_s_hi"] >= repeats["highest"]

    page = (built_site / "leaderboards" / "cpu-smoke-train-gpt-tiny-mb4.html").read_text()
    assert "Repeats (A/A)" in page and "Scaling across device counts" in page
    assert 'id="chart-cpu-smoke-train-gpt-tiny-mb4_scaling"' in page
    run_page = (built_site / "runs" / f"{single['run_id']}.html").read_text()
    assert SCALING_NOTE in run_page and "--world-size 1" in run_page
    assert REPEAT_NOTE in (built_site / "runs" / f"{repeats['run_id'][1]}.html").read_text()


@pytest.mark.bench
def test_vectorised_loss_windows_match_the_formula(bench_data) -> None:
    """derive computes every run's loss windows in one polars pass; they must be metrics.window_means exactly."""
    data, _ = bench_data
    loaded = load.load(data)
    runs = summaries.config_fields(loaded.runs)
    curves = parity.loss_curves(runs, loaded.rows)
    work = SMOKE.workloads[0]
    for run_id in runs["run_id"]:
        losses = loaded.rows.filter((pl.col("run_id") == run_id) & (pl.col("metric") == "loss")).sort("step")
        values = losses["value"].to_list()
        expected = metrics.window_means(values[work.warmup_steps :], work.window_steps)
        assert curves[run_id].first == values[0]
        assert curves[run_id].windows == pytest.approx(expected, rel=1e-12) and len(expected) > 0
