"""A second serving engine is one registry entry for the generator (issue 36): which tool a runner's record is
cross-checked against comes from the engine registry (runners/engines `tools_of`, `own_tools`, `tool_labels`),
never from an engine's name in generator/. Mocked: no second serving engine runs here, so its records are the
committed vLLM ones with the engine, its tool and their run ids renamed, and the engine is registered for this test
only."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from generator import checks, derive, load
from runners import engines

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


def test_a_registered_serving_engine_is_paired_with_its_own_tool_and_ranked(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded, summary = checks.checked(load.load(ROOT / "data"))
    as_vllm = _serving_rows(derive.results(loaded, summary))
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
