"""A second serving engine is one registry entry for the generator (issue 36): which tool a runner's record is
cross-checked against comes from the engine registry (runners/engines `tools_of`, `own_tools`, `tool_labels`),
never from an engine's name in generator/. Mocked: no second serving engine runs here, so its records are the
committed vLLM ones with the engine, its tool and their run ids renamed, and the engine is registered for this test
only. On the runner's side, a second engine takes its server's lifecycle, the load generator and its records' rows
from the core (`runners/serving.py`): a fake engine's server is started, driven and stopped by those parts alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from generator import derive, load
from runners import engines, metrics, schema, serving

ROOT = Path(__file__).resolve().parents[2]
NAME, TOOL = "fakeserve", "fakeserve-bench"


def _renamed(frame: pl.DataFrame) -> pl.DataFrame:
    out = frame.with_columns(pl.col("run_id").str.replace("vllm-bench", TOOL, literal=True))
    if "engine" in out.columns:
        out = out.with_columns(pl.col("engine").replace({"vllm": NAME, "vllm-bench": TOOL}))
    return out


def _serving_rows(results: derive.Results) -> pl.DataFrame:
    frames = [b.ranked for b in results.boards.values() if b.kind == "serving" and b.ranked.height]
    return pl.concat(frames, how="diagonal_relaxed").sort("suite", "workload", "settings_hash")


def test_a_registered_serving_engine_is_paired_with_its_own_tool_and_ranked(
    committed_results: derive.Results, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded, summary = committed_results.records, committed_results.runs
    as_vllm = _serving_rows(committed_results)
    vllm = engines.ENGINES["vllm"]
    others = {name: e for name, e in engines.ENGINES.items() if name != "vllm"}
    fake = engines.Engine(
        name=NAME,
        about="a second serving engine (test)",
        kinds=("serving",),
        packages=(),
        tool=TOOL,
        tool_label="fakeserve bench",
    )
    monkeypatch.setattr(engines, "ENGINES", others | {NAME: fake})  # the registry as it is, restored after
    records = load.Loaded(runs=_renamed(loaded.runs), rows=_renamed(loaded.rows), rejected=[])
    results = derive.results(records, _renamed(summary))
    ranked = _serving_rows(results)
    assert ranked.height == as_vllm.height > 0
    assert set(ranked["engine"]) == {NAME}
    assert ranked["bench_run"].str.contains(TOOL, literal=True).all()  # each paired with its own tool's record
    assert ranked.select("value", "lo", "hi", "rank").equals(as_vllm.select("value", "lo", "hi", "rank"))
    # registered with another tool, the same records have no record of that tool to agree with: none ranks, and the
    # reason names the tool the registry gives
    other = engines.Engine(name=NAME, about="x", kinds=("serving",), packages=(), tool="other-bench")
    monkeypatch.setattr(engines, "ENGINES", others | {NAME: other})
    unchecked = derive.results(records, _renamed(summary))
    assert not any(b.ranked.height for b in unchecked.boards.values() if b.kind == "serving")
    reasons = pl.concat([b.unranked for b in unchecked.boards.values() if b.kind == "serving"], how="diagonal_relaxed")
    assert reasons["unranked"].str.contains("no other-bench record of this test", literal=True).any()
    assert vllm.tool == "vllm-bench"


FAKE_SERVER = """
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for _ in range(body["max_tokens"]):
            self.wfile.write(b"data: " + json.dumps({"choices": [{"text": "x"}]}).encode() + b"\\n\\n")
            self.wfile.flush()
        usage = {"prompt_tokens": len(body["prompt"]), "completion_tokens": body["max_tokens"]}
        self.wfile.write(b"data: " + json.dumps({"choices": [], "usage": usage}).encode() + b"\\n\\ndata: [DONE]\\n\\n")

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""
"""A serving engine in a few lines: an OpenAI-compatible completions server that streams one chunk per token."""

DRIVER = """
import json, sys
from pathlib import Path
from runners import serving

script, out = Path(sys.argv[1]), Path(sys.argv[2])
server = serving.Server(lambda port: [sys.executable, str(script), str(port)], {}, out.with_suffix(".log"),
                        name="the fakeserve server")
try:
    asks = serving.prompts(100, serving.WARMUP_PROMPTS + 6, 5, seed=1)
    requests, duration, _joules = serving.drive_point(server, "/v1/completions", "fake", asks, 4, {"temperature": 1.0},
                                             concurrency=2, request_rate=None, seed=1)
finally:
    server.stop()
out.write_text(json.dumps({"rows": serving.served_rows(requests, duration), "stopped": server.proc.poll() is not None}))
"""
"""A second engine's runner, as far as the core takes it: start its server, drive one served point, stop it, and
make the point's rows (run in vLLM's Python, which brings the load generator's aiohttp)."""


@pytest.mark.engine
def test_a_second_serving_engine_needs_only_the_core_serving_parts(tmp_path: Path, vllm_python: str) -> None:
    """A fake serving engine (its server is the few lines above, not an engine: none but vLLM is installed here)
    started, health-checked, driven and stopped by `runners.serving`, whose rows are a served point's as vLLM's
    are: they pass the record checks and `metrics.serving_metrics` reads them back."""
    (tmp_path / "fake_server.py").write_text(FAKE_SERVER)
    (tmp_path / "driver.py").write_text(DRIVER)
    out = tmp_path / "point.json"
    proc = subprocess.run(
        [vllm_python, str(tmp_path / "driver.py"), str(tmp_path / "fake_server.py"), str(out)],
        cwd=ROOT, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    point = json.loads(out.read_text())
    assert point["stopped"]
    rows = point["rows"]
    for r in rows:
        rule = schema.METRIC_RULES[r["metric"]]
        assert r["unit"] == rule.unit and r["value"] >= rule.low
    requests, duration = metrics.requests_from_rows(rows)
    assert len(requests) == 6 and all(r.ok for r in requests)  # the warm-up requests are not in the point
    assert {(r.prompt_tokens, r.output_tokens, len(r.itl_s)) for r in requests} == {(5, 4, 3)}
    figures = metrics.serving_metrics(requests, duration, 1000.0, 1000.0)
    assert figures["completed_requests"] == 6 and figures["failed_requests"] == 0
    # a server that exits while starting is an error that names it (a failure record's text), never a hang
    with pytest.raises(RuntimeError, match="the fakeserve server exited with 3 while starting"):
        serving.Server(lambda port: [sys.executable, "-c", "raise SystemExit(3)"], {}, tmp_path / "dead.log",
                       name="the fakeserve server")  # fmt: skip
