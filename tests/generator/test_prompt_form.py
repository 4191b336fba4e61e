"""What a served request carried is part of a served point's configuration (issue 61, item 4): the vLLM runner sent
random token ids until 2026-12-06 and sends `vllm bench serve`'s kind of text prompts since, which the server must
tokenize (about 0.6 ms of TTFT at one request in flight on an H100). A runner record without
`workload.prompt_form` sent token ids, a tool record without it sent the tool's text (the registry's
`tool_prompt_form`), so old and new runner points never pool, while every record written before the field keeps
its configuration."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from generator import load
from generator.load import columns
from runners import engines
from tests import replicate

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "data/h100/20261130T201439Z-llama-8b-serve-c1-i512-o128-vllm-tp1-6272d4.parquet"
"""A committed served point from before the field: the runner sent token ids."""
TOOL = ROOT / "data/h100/20261130T201439Z-llama-8b-serve-c1-i512-o128-vllm-tp1-vllm-bench-6272d4.parquet"
"""`vllm bench serve` beside it, which sent text."""


def _saying(source: Path, folder: Path, form: str | None, suffix: str) -> Path:
    """`source` with its workload saying `form` (none: the field left out), under another run id."""
    run_id = source.stem.replace("-6272d4", f"-{suffix}")
    return replicate.with_workload(source, folder, run_id, **({} if form is None else {"prompt_form": form}))


def test_text_and_token_id_points_are_two_configurations_and_old_records_keep_theirs(tmp_path: Path) -> None:
    folder = tmp_path / "data" / "h100"
    folder.mkdir(parents=True)
    paths = {
        "runner, before": _saying(RUNNER, folder, None, "a00000"),
        "runner, token ids said": _saying(RUNNER, folder, "token ids", "a00001"),
        "runner, text": _saying(RUNNER, folder, "text", "a00002"),
        "tool, before": _saying(TOOL, folder, None, "a00003"),
        "tool, text said": _saying(TOOL, folder, "text", "a00004"),
    }
    loaded = load.load(tmp_path / "data")
    assert not loaded.rejected, loaded.rejected  # runners/bounds.py declares the field
    flat = columns.flatten(loaded.runs)
    hashes = dict(flat.select("run_id", "settings_hash").iter_rows())
    settings = dict(flat.select("run_id", "settings").iter_rows())
    h = {k: hashes[p.stem] for k, p in paths.items()}
    assert h["runner, before"] == h["runner, token ids said"] != h["runner, text"]
    assert h["tool, before"] == h["tool, text said"] != h["runner, text"]
    # a record written before the field keeps the configuration it had: nothing of the form in its settings
    for key in ("runner, before", "tool, before", "tool, text said"):
        assert "prompt_form" not in json.loads(settings[paths[key].stem]), key
    assert json.loads(settings[paths["runner, text"].stem])["prompt_form"] == "text"
    # an offline test or a training run has no prompt form, whatever its record says
    assert columns._prompt_form({"kind": "offline", "prompt_form": "text"}, "vllm") == {}
    assert flat.filter(pl.col("run_id") == paths["runner, text"].stem)["kind"].to_list() == ["serve"]


def test_the_registry_says_what_an_unsaid_record_sent() -> None:
    assert engines.unrecorded_prompt_form("vllm-bench") == "text"  # vllm bench serve has always sent text
    assert engines.unrecorded_prompt_form("vllm") == "token ids"
    assert engines.unrecorded_prompt_form("an-engine-of-tomorrow") == "token ids"
