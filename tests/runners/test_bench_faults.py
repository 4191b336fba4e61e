"""Faults lose nothing: concurrent writers, a runner killed with SIGKILL in the middle of its steps, and a run that
runs out of memory."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from generator import load
from runners import bench, layout, schema, store
from tests.conftest import ROOT
from tests.runners.test_store import ROWS, _run


def _write_many(args: tuple[Path, str, int]) -> list[str]:
    """One writer process: `count` records with its own ids, then one id every writer also writes."""
    data, name, count = args
    outcomes = [store.write_run(data, schema.make_table(_run(run_id=f"{name}-{i}"), ROWS)).name for i in range(count)]
    try:
        outcomes.append(store.write_run(data, schema.make_table(_run(run_id="contested", variant=name), ROWS)).name)
    except FileExistsError:
        outcomes.append("refused")
    return outcomes


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with ProcessPoolExecutor(4) as pool:
        results = list(pool.map(_write_many, [(data, f"w{k}", 25) for k in range(4)]))
    files = sorted(p.name for p in (data / "cpu-smoke" / "2026-11").iterdir())  # the month the runs started
    assert files == sorted([f"w{k}-{i}.parquet" for k in range(4) for i in range(25)] + ["contested.parquet"])
    # exactly one writer got the contested id; the others were refused, and its record is whole
    assert sorted(r[-1] for r in results) == ["contested.parquet", "refused", "refused", "refused"]
    loaded = load.load(data)
    assert loaded.rejected == [] and loaded.runs.height == 101 and loaded.rows.height == 202


def _processes_with(words: list[str]) -> list[int]:
    """Pids whose command line holds every word (read from /proc: no pgrep needed)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:  # the process ended meanwhile
                continue
            if all(w in cmdline for w in words):
                pids.append(int(entry.name))
    return pids


@pytest.mark.bench
def test_a_runner_killed_mid_run_leaves_a_failure_record_and_no_partial_file(tmp_path: Path, torch_engine: str) -> None:
    data = tmp_path / "data"
    cmd = [sys.executable, "-m", "runners", "bench", "--suite", "cpu-smoke", "--workload", "train-gpt-tiny-mb4"]
    cmd += ["--variant", "ddp-fp32-stock"]
    cmd += ["--variant", "ddp-amp-stock", "--steps", "100", "--data-dir", str(data)]
    bench = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    killed = False
    lines = []
    for line in bench.stdout:  # type: ignore[union-attr]
        lines.append(line)
        if not killed and "step 40/100" in line:  # the first variant is training: kill its processes outright
            pids = _processes_with(["runners.engines.torch.train", "ddp-fp32-stock", "--steps 100"])
            assert pids, "no runner process found to kill"
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
            killed = True
    assert bench.wait(timeout=600) == 1, "".join(lines[-40:])  # a failed variant: the suite reports it
    assert killed, "".join(lines[-40:])
    names = sorted(p.name for p in (data / "cpu-smoke").rglob("*"))
    assert not [n for n in names if n.startswith(".")], names  # no temporary file left
    heads = {
        layout.read(p).slice(0, 1).to_pylist()[0]["variant"]: layout.read(p).slice(0, 1).to_pylist()[0]
        for p in (data / "cpu-smoke").rglob("*.parquet")
    }
    assert sorted(heads) == ["ddp-amp-stock", "ddp-fp32-stock"]  # the suite went on to the next variant
    assert heads["ddp-fp32-stock"]["status"] == "failed" and "-9" in heads["ddp-fp32-stock"]["error"]
    assert heads["ddp-amp-stock"]["status"] == "ok"
    assert load.load(data).rejected == []


@pytest.mark.engine
@pytest.mark.bench
def test_a_run_out_of_memory_is_an_oom_record_and_the_suite_goes_on(
    tmp_path: Path, mlx_engine: str, torch_engine: str
) -> None:
    """Real memory exhaustion, on CPU: the bench runs under an 8 GiB address-space limit (inherited by its runners)
    with a micro-batch of 20,000 sequences, which needs more. PyTorch's CPU allocator raises; MLX's CPU backend,
    under the same limit on 2026-11-30, died with SIGSEGV instead, which is recorded as a failure."""
    import resource

    data = tmp_path / "data"
    cmd = [sys.executable, "-m", "runners", "bench", "--suite", "cpu-smoke", "--workload", "train-gpt-tiny-1dev"]
    cmd += ["--variant", "ddp-fp32-stock", "--variant", "mlx-fp32", "--micro-batch", "20000", "--steps", "12"]
    cmd += ["--data-dir", str(data)]
    limit = 8 * 2**30

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, preexec_fn=cap, timeout=600)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    loaded = load.load(data)
    assert loaded.rejected == []
    runs = {r["variant"]: r for r in loaded.runs.to_dicts()}
    assert sorted(runs) == ["ddp-fp32-stock", "mlx-fp32"], proc.stdout[-3000:]  # the suite went on
    torch_run = runs["ddp-fp32-stock"]
    assert torch_run["status"] == "oom" and "can't allocate memory" in torch_run["error"], torch_run["error"]
    assert runs["mlx-fp32"]["status"] in ("oom", "failed") and runs["mlx-fp32"]["error"]
    assert "oom" in proc.stdout  # the summary table says it


def test_the_bench_writes_only_records_of_runs_it_started(tmp_path: Path) -> None:
    """The one writer of result files: a runner's good record is written once; a record the store refuses comes back
    with its reason (for the failure record the bench then writes); a record of a run it did not start, a record
    claiming another engine or variant than the bench started, two records of one run (neither is written: another
    process wrote to the file) and a line that is not JSON are reported and skipped, and never stop the lines after
    them."""
    from runners import bench, record

    out = tmp_path / "records.jsonl"
    record.emit(out, _run(run_id="good"), ROWS)
    record.emit(out, _run(run_id="stranger"), ROWS)
    record.emit(out, _run(run_id="twice"), ROWS)
    record.emit(out, _run(run_id="twice"), ROWS)  # a second record of the same run
    record.emit(out, _run(run_id="posing", engine="mlx", variant="mlx-fp32"), ROWS)  # not what was started
    with open(out, "a") as f:
        f.write("not json\n")
        f.write(json.dumps({"run": {"run_id": "bad", "started_at": "2026-11-29T00:00:00+00:00"}, "rows": []}) + "\n")
    record.emit(out, _run(run_id="late"), ROWS)  # after the bad lines: still written
    head = _run(run_id="x")
    identity = {k: head[k] for k in ("suite", "workload", "engine", "variant", "tier", "origin")}
    refused = bench.write_records(
        out, tmp_path / "data", {r: identity for r in ("good", "twice", "posing", "bad", "late")}
    )
    written = sorted(p.stem for p in (tmp_path / "data").rglob("*.parquet"))
    assert written == ["good", "late"]
    assert sorted(refused) == ["bad", "posing", "twice"] and refused["bad"].startswith("its record was refused")
    assert "2 records of 'twice'" in refused["twice"]
    assert "field 'engine': 'mlx', but the bench started this run as 'torch'" in refused["posing"]
    assert bench._failure_text(refused["bad"], 0, "").startswith("its record was refused")


def test_a_runner_killed_by_a_signal_says_so_on_its_errors_last_line() -> None:
    """The boards show an error's last line: for a segfault that is the exit, named, not the runner's last progress
    line (a llama.cpp runner once read "model file ... ready" there)."""
    text = bench._failure_text(None, -11, "loading\nmodel file model-f16.gguf (14.96 GiB) ready\n")
    assert text.splitlines()[-1] == "runner exited with -11 (killed by SIGSEGV)"
    assert "model-f16.gguf (14.96 GiB) ready" in text  # its output is kept above
    assert bench._failure_text("a row refused", 1, "").endswith("runner exited with 1")
