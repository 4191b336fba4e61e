"""The append-only store, the schema checks and the environment allowlist."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from generator import load
from generator import store as gstore
from generator.commands import validate
from generator.load import one_file
from runners import layout, provenance, schema, store
from tests.conftest import write_footer_once


def _run(**over: object) -> dict[str, object]:
    now = datetime(2026, 11, 29, tzinfo=UTC)
    run = {
        "run_id": "r1",
        "suite": "cpu-smoke",
        "workload": "w",
        "engine": "torch",
        "engine_version": "2.13.0",
        "variant": "v",
        "tier": "stock",
        "status": "ok",
        "error": None,
        "origin": "measured",
        "source": None,
        "started_at": now,
        "ended_at": now + timedelta(seconds=5),
        "harness_commit": "abc",
        "harness_dirty": False,
        "accelerator": "cpu",
        "accelerator_count": 2,
        "config": "{}",
        "hardware": "{}",
        "software": "{}",
        "environment": "{}",
        "calibration": None,
    }
    return run | over


def _as_version(table: pa.Table, version: int) -> pa.Table:
    """A record's table labelled an older version, to write in that version's layout (its columns as they are)."""
    return table.set_column(0, table.schema.field(0), pa.array([version] * table.num_rows, pa.int32()))


ROWS = [
    dict(trial=0, step=0, phase="warmup", metric="step_time_s", value=0.1, unit="s"),
    dict(trial=0, step=None, phase="run", metric="steps_completed", value=1.0, unit="steps"),
]


def test_write_is_atomic_and_append_only(tmp_path: Path) -> None:
    path = store.write_run(tmp_path, schema.make_table(_run(), ROWS))
    assert path == tmp_path / "cpu-smoke" / "2026-11" / "r1.parquet"  # the month the run started
    assert pq.read_table(path).num_rows == 2
    assert [p.name for p in path.parent.iterdir()] == ["r1.parquet"]  # no temporary file left behind
    with pytest.raises(FileExistsError):
        store.write_run(tmp_path, schema.make_table(_run(), ROWS))
    # nor under another month: the same run started later (a claim re-imported next month, say) is refused too
    with pytest.raises(FileExistsError, match="already recorded"):
        later = _run(started_at=datetime(2026, 12, 1, tzinfo=UTC), ended_at=datetime(2026, 12, 1, 1, tzinfo=UTC))
        store.write_run(tmp_path, schema.make_table(later, ROWS))
    assert not (tmp_path / "cpu-smoke" / "2026-12").exists()
    assert pq.read_table(path).num_rows == 2  # the first record is untouched


def test_invalid_records_are_refused_with_row_and_field(tmp_path: Path) -> None:
    bad_rows = [*ROWS, dict(trial=0, step=1, phase="steady", metric="step_time_s", value=float("nan"), unit="s")]
    with pytest.raises(ValueError, match=r"row 2, field 'value': nan is not finite"):
        store.write_run(tmp_path, schema.make_table(_run(), bad_rows))
    with pytest.raises(ValueError, match=r"field 'status'"):
        store.write_run(tmp_path, schema.make_table(_run(status="great"), ROWS))
    with pytest.raises(ValueError, match=r"field 'error': status 'failed' needs an error text"):
        store.write_run(tmp_path, schema.make_table(_run(status="failed"), ROWS))
    assert not any(tmp_path.rglob("*.parquet"))


def _row(metric: str, value: float, unit: str, **over: object) -> dict[str, object]:
    return dict(trial=0, step=None, phase="run", metric=metric, value=value, unit=unit) | over


SEMANTIC_FAULTS = {
    # name: (run-level changes, rows added to the good ones, the problem expected)
    "unit of a known metric": ({}, [_row("peak_mem_gib", 3.0, "MiB")], "row 2, field 'unit': 'MiB' for metric"),
    "negative loss": ({}, [_row("loss", -0.5, "nats", phase="steady", step=0)], "loss = -0.5: must be at least 0"),
    "zero step time": ({}, [_row("step_time_s", 0.0, "s", phase="steady", step=1)], "must be above 0"),
    "zero tokens/s": ({}, [_row("tokens_per_s", 0.0, "tokens/s", phase="steady")], "tokens_per_s = 0.0: must be"),
    "no output token": ({}, [_row("output_tokens", 0.0, "tokens", phase="steady")], "output_tokens = 0.0: must be"),
    "answered, uncounted": (
        {},
        [_row("request_ok", 1.0, "bool", phase="steady", trial=7)],
        "row 2, field 'metric': request 7 is answered (request_ok = 1) but has no output_tokens row",
    ),
    "fractional count": ({}, [_row("steps_completed", 2.5, "steps")], "steps_completed = 2.5: must be a whole"),
    "infinite value": ({}, [_row("peak_mem_gib", float("inf"), "GiB")], "field 'value': inf is not finite"),
    "negative step": ({}, [_row("loss", 1.0, "nats", phase="steady", step=-3)], "row 2, field 'step': negative step"),
    "negative trial": ({}, [_row("loss", 1.0, "nats", trial=-1)], "row 2, field 'trial': negative trial"),
    "unknown engine": ({"engine": "tensorflow"}, [], "row 0, field 'engine': 'tensorflow': measured records"),
    "unknown import": ({"engine": "torch", "origin": "imported"}, [], "field 'engine': 'torch': imported records"),
    "unknown suite": ({"suite": "h1000"}, [], "row 0, field 'suite': 'h1000' has no suite file"),
    "no devices": ({"accelerator_count": 0}, [], "field 'accelerator_count': 0 devices"),
    "time travel": ({"ended_at": datetime(2026, 1, 1, tzinfo=UTC)}, [], "field 'ended_at': run ends before it starts"),
    "bad JSON": ({"config": "{'a': 1}"}, [], "row 0, field 'config': not valid JSON"),
    "bad origin": ({"origin": "rumour"}, [], "row 0, field 'origin': 'rumour' is not one of"),
}


@pytest.mark.parametrize("fault", list(SEMANTIC_FAULTS))
def test_semantic_faults_are_refused_and_reported_by_file_row_and_field(fault: str, tmp_path: Path) -> None:
    """Each bad value is refused by the store (nothing written) and, written anyway, rejected by the loader and by
    `nox -s validate` (generator.commands.validate), naming the file, the row and the field."""
    over, extra, expected = SEMANTIC_FAULTS[fault]
    table = schema.make_table(_run(**over), [*ROWS, *extra])
    with pytest.raises(ValueError, match=re.escape(expected)):
        store.write_run(tmp_path / "refused", table)
    assert not (tmp_path / "refused").exists() or not any((tmp_path / "refused").rglob("*.parquet"))
    data = tmp_path / "data"
    (data / "cpu-smoke").mkdir(parents=True)
    layout.write(table, data / "cpu-smoke" / "r1.parquet")  # written around the store, as a crafted file would be
    store.write_run(data, schema.make_table(_run(run_id="good"), ROWS))
    loaded = load.load(data)
    assert loaded.runs["run_id"].to_list() == ["good"]
    [rejected] = loaded.rejected
    assert rejected.path == "data/cpu-smoke/r1.parquet" and any(expected in p for p in rejected.problems)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert validate.main([str(data)]) == 1
    assert f"{data / 'cpu-smoke' / 'r1.parquet'}: " in out.getvalue() and expected in out.getvalue()
    assert "2 file(s) checked, 1 with problems" in out.getvalue()


def test_file_level_faults_are_reported_and_the_copy_in_its_suite_folder_kept(tmp_path: Path) -> None:
    """Two runs in one file, a copy of a run in another suite's folder, and a file from a newer Fair Fight: each is
    rejected with its reason; the file in its own suite's folder is kept (copies that differ: tests/test_hostile.py)."""
    data = tmp_path / "data"
    store.write_run(data, schema.make_table(_run(), ROWS))
    (data / "h100").mkdir()
    (data / "h100" / "r1.parquet").write_bytes(
        (data / "cpu-smoke" / "2026-11" / "r1.parquet").read_bytes()
    )  # the same id
    two = pa.concat_tables([schema.make_table(_run(run_id="r2"), ROWS), schema.make_table(_run(run_id="r3"), ROWS)])
    pq.write_table(_as_version(two, 2), data / "cpu-smoke" / "r2.parquet")  # schema 2's layout holds two runs
    newer = schema.make_table(_run(run_id="r4"), ROWS)
    newer = newer.set_column(0, newer.schema.field(0), pa.array([schema.SCHEMA_VERSION + 1] * 2, pa.int32()))
    pq.write_table(newer, data / "cpu-smoke" / "r4.parquet")
    loaded = load.load(data)
    assert loaded.runs["path"].to_list() == ["data/cpu-smoke/2026-11/r1.parquet"]
    problems = {r.path: r.problems[0] for r in loaded.rejected}
    assert problems == {
        "data/h100/r1.parquet": "field 'suite': 'cpu-smoke', but the file is in folder 'h100'/: a suite's files live "
        "in data/cpu-smoke/ (or its month folders, data/cpu-smoke/2026-11/)",
        "data/cpu-smoke/r2.parquet": "row 2, field 'run_id': differs from row 0 ('r3' != 'r2'): one run per file",
        "data/cpu-smoke/r4.parquet": f"written by schema version {schema.SCHEMA_VERSION + 1}, newer than this Fair "
        f"Fight ({schema.SCHEMA_VERSION}): update your checkout",
    }


def test_loader_reports_bad_files_by_name_and_keeps_good_ones(tmp_path: Path) -> None:
    store.write_run(tmp_path / "data", schema.make_table(_run(), ROWS))
    (tmp_path / "data" / "cpu-smoke" / "garbage.parquet").write_text("not parquet")
    table = layout.to_file(schema.make_table(_run(run_id="r2"), ROWS)).drop_columns(["unit"])
    write_footer_once(table, tmp_path / "data" / "cpu-smoke" / "r2.parquet")
    (tmp_path / "data" / "cpu-smoke" / ".tmp-r3-1.parquet").write_text("a half-written temporary file")
    loaded = load.load(tmp_path / "data")
    assert loaded.runs["run_id"].to_list() == ["r1"]
    rejected = {r.path: r.problems for r in loaded.rejected}
    assert set(rejected) == {"data/cpu-smoke/garbage.parquet", "data/cpu-smoke/r2.parquet"}
    assert "not a readable Parquet file" in rejected["data/cpu-smoke/garbage.parquet"][0]
    assert rejected["data/cpu-smoke/r2.parquet"] == (
        "field 'unit': missing column (a schema-3 file's columns: run_id, trial, step, phase, metric, value, unit)",
    )


def test_environment_is_an_allowlist_without_secrets() -> None:
    env = {
        "NCCL_DEBUG": "INFO",
        "CUDA_VISIBLE_DEVICES": "0,1",
        "OMP_NUM_THREADS": "1",
        "HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI",
        "VLLM_API_KEY": "planted-secret-1",
        "TORCH_HUB_TOKEN": "planted-secret-2",
        "NCCL_SOCKET_IFNAME": "ghp_abcdefghijklmnopqrstuvwx",  # a token-shaped value under an allowed name
        "HOME": "/root",
    }
    captured = provenance.environment(env)
    assert captured == {"CUDA_VISIBLE_DEVICES": "0,1", "NCCL_DEBUG": "INFO", "OMP_NUM_THREADS": "1"}
    assert "planted" not in json.dumps(captured) and "hf_" not in json.dumps(captured)


def test_topo_link_reads_the_pair_of_gpus_used() -> None:
    # `nvidia-smi topo -m` as printed on a 4-GPU host (header escapes kept, columns trimmed); no GPU here, so the
    # text is inlined.
    topo = """\
\t\x1b[4mGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\x1b[0m
GPU0\t X \tNV18\tNV18\tSYS\t0-63\t0
GPU1\tNV18\t X \tNV18\tNV18\t0-63\t0
GPU2\tNV18\tNV18\t X \tNV18\t0-63\t0
GPU3\tSYS\tNV18\tNV18\t X \t0-63\t0
"""
    assert provenance.topo_link(topo, 0, 1) == "NV18"
    assert provenance.topo_link(topo, 0, 3) == "SYS"
    assert provenance.topo_link(topo, 3, 0) == "SYS"
    assert provenance.topo_link(topo, 1, 0) == "NV18"  # column GPU0 carries the escape in the raw text
    assert provenance.topo_link(topo, 2, 5) is None
    assert provenance.topo_link("", 0, 1) is None


def test_harness_commit_named_by_the_caller_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    named = "0123456789abcdef0123456789abcdef01234567"
    monkeypatch.setenv("FAIRFIGHT_HARNESS_COMMIT", named)
    assert provenance.harness() == (named, None)  # not this checkout's HEAD, so its dirty flag says nothing
    for wrong in ("2925152", "HEAD", named.upper(), named + "0"):  # abbreviated, a ref, upper case, too long
        monkeypatch.setenv("FAIRFIGHT_HARNESS_COMMIT", wrong)
        with pytest.raises(ValueError, match="not a full commit id"):
            provenance.harness()
    tree = subprocess.run(["git", "rev-parse", "HEAD^{tree}"], cwd=provenance.REPO_ROOT, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip
    if tree:  # in a checkout: a tree's id is hex of the right length but not a commit
        monkeypatch.setenv("FAIRFIGHT_HARNESS_COMMIT", tree)
        with pytest.raises(ValueError, match="not as a commit"):
            provenance.harness()
    monkeypatch.delenv("FAIRFIGHT_HARNESS_COMMIT")
    commit, dirty = provenance.harness()
    assert commit is None or (len(commit) == 40 and dirty in (True, False))


def test_the_load_cache_reuses_unchanged_files_and_rechecks_changed_ones(tmp_path: Path, monkeypatch) -> None:
    data, cache = tmp_path / "data", tmp_path / "cache"
    for i in range(3):
        store.write_run(
            data, schema.make_table(_run(run_id=f"r{i}", started_at=datetime(2026, 11, i + 1, tzinfo=UTC)), ROWS)
        )
    cold = load.load(data, cache)
    kept = cache / gstore.FOLDER / load.LOADED  # the build store's entries of the load cache: heads and rows
    assert len([p for p in kept.iterdir() if not p.name.endswith(gstore.NOTE) and not p.name.startswith(".")]) == 2
    checked: list[str] = []
    real = one_file.read_checked
    monkeypatch.setattr(
        one_file, "read_checked", lambda path, content: (checked.append(path.name), real(path, content))[1]
    )
    warm = load.load(data, cache)
    assert checked == []  # nothing re-read: every file matched its path and sha256
    assert warm.runs.equals(cold.runs) and warm.rows.equals(cold.rows)
    # one file replaced by a bad one with the same name, one removed, one added: only the changed are read
    bad = layout.to_file(schema.make_table(_run(run_id="r1"), ROWS)).drop_columns(["unit"])
    pq.write_table(bad, data / "cpu-smoke" / "2026-11" / "r1.parquet")
    (data / "cpu-smoke" / "2026-11" / "r2.parquet").unlink()
    store.write_run(data, schema.make_table(_run(run_id="r3"), ROWS))
    again = load.load(data, cache)
    assert sorted(checked) == ["r1.parquet", "r3.parquet"]
    assert again.runs["run_id"].to_list() == ["r0", "r3"]  # ordered by start
    assert [r.path for r in again.rejected] == ["data/cpu-smoke/2026-11/r1.parquet"]
    assert again.rows["run_id"].to_list() == ["r0", "r0", "r3", "r3"]
    assert load.load(data).runs.equals(again.runs)  # the same as without a cache
