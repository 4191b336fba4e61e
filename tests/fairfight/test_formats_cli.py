"""`--format text|json|csv|md` on every command that reports (`list`, `bench`'s summary, `validate`, `compare`): json
parses, csv reads back with its header, md renders as a table. Real commands on real files: committed result files
copied into a temporary folder, and one real bench run of the NumPy example engine."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from fairfight import cli
from runners import schema, store
from tests.conftest import ROOT, TRAIN, run_module, write_as_submitted
from tests.runners.test_formats import rendered
from tests.runners.test_store import ROWS, _run

H100 = ROOT / "data" / "h100"
AMP = "20261201T032125Z-train-gpt-1.27b-1gpu-mb8-ddp-amp-stock-feae69"
TUNED = "20261201T032458Z-train-gpt-1.27b-1gpu-mb8-ddp-tuned-1f987a"
AMP_REPEAT = "20261130T171925Z-train-gpt-1.27b-1gpu-mb8-ddp-amp-stock-b1c87e"
"""A repeat of AMP: torch's between-run spread on one H200, without which each run is unreplicated (undecided)."""


def _run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = cli.main(list(argv))
    return status, capsys.readouterr().out


def _check_formats(capsys: pytest.CaptureFixture[str], argv: list[str], columns: list[str]) -> dict:
    """Runs the command in json, csv and md; returns the parsed JSON after checking the other two."""
    status, out = _run_cli(capsys, *argv, "--format", "json")
    data = json.loads(out)
    status_csv, out = _run_cli(capsys, *argv, "--format", "csv")
    rows = list(csv.reader(io.StringIO(out, newline="")))
    assert rows[0] == columns and out.endswith("\r\n")
    status_md, out = _run_cli(capsys, *argv, "--format", "md")
    html = rendered(out)
    assert html.tables == 1 and html.rows[0][: len(columns)] == columns[: len(html.rows[0])]
    assert len(html.rows) == len(rows)  # the same rows as the CSV
    assert status == status_csv == status_md
    return data | {"_status": status, "_rows": rows}


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    data = _check_formats(capsys, ["list"], ["suite", "workload", "kind", "tests", "variants"])
    smoke = next(s for s in data["suites"] if s["suite"] == "cpu-smoke")
    assert {"name": TRAIN, "kind": "train"}.items() <= next(w for w in smoke["workloads"] if w["name"] == TRAIN).items()
    assert data["_rows"][1 + [r[1] for r in data["_rows"][1:]].index(TRAIN)][1:3] == [TRAIN, "train"]
    status, text = _run_cli(capsys, "list")
    assert status == 0 and "cpu-smoke:" in text and f"  {TRAIN}: " in text  # text is as before


def test_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    store.write_run(data, schema.make_table(_run(run_id="good"), ROWS))
    bad = schema.make_table(_run(run_id="bad"), ROWS).to_pylist()
    import pyarrow as pa

    bad[0]["status"] = "finished|<b>"  # not a status: a hostile value that must stay in its cell
    write_as_submitted(pa.Table.from_pylist(bad, schema=schema.make_table(_run(), ROWS).schema),
                   data / "cpu-smoke" / "bad.parquet")  # fmt: skip
    found = _check_formats(capsys, ["validate", str(data)], ["file", "status", "problem"])
    assert found["_status"] == found["exit_status"] == 1
    assert found["checked"] == 2 and found["rejected"] == 1
    rejected = [p for p in found["problems"] if p["status"] == "rejected"]
    assert rejected and all(p["file"].endswith("bad.parquet") for p in rejected)
    assert any("finished|<b>" in p["problem"] for p in rejected)  # named, and kept in its cell in md (checked above)
    assert len(found["_rows"]) == 1 + len(found["problems"])


def test_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    (data / "h100").mkdir(parents=True)
    for stem in (AMP, TUNED, AMP_REPEAT):
        shutil.copy(H100 / f"{stem}.parquet", data / "h100")
    columns = ["suite", "workload", "kind", "variant", "settings_hash", "figure", "a", "a_lo", "a_hi", "b", "b_lo"]
    argv = ["compare", TUNED, AMP, "--data-dir", str(data)]
    status, out = _run_cli(capsys, *argv, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out, newline="")))
    assert list(rows[0])[: len(columns)] == columns and status == 1  # B is slower: a slowdown fails
    (row,) = rows
    assert row["verdict"] == "slower" and row["fails"] == "true" and float(row["ratio"]) < 0.9
    found = json.loads(_run_cli(capsys, *argv, "--format", "json")[1])
    assert found["exit_status"] == 1 and found["rows"][0]["fails"] is True
    status, out = _run_cli(capsys, *argv, "--format", "md")
    html = rendered(out)
    assert html.tables == 1 and len(html.rows) == 2 and html.rows[1][0] == "yes" and "slower" in html.rows[1]
    assert "B against A: 0 faster, 1 slower" in out


def test_bench_summary(tmp_path: Path) -> None:
    """One real run of the NumPy example engine: with --format json, standard output is the summary alone (the
    progress and the runner's own output went to standard error)."""
    data = tmp_path / "data"
    proc = run_module(
        "fairfight", "bench", "--suite", "cpu-smoke", "--workload", "train-gpt-tiny-1dev",
        "--variants", str(ROOT / "examples" / "engines" / "numpy.toml"), "--variant", "numpy-bigram",
        "--steps", "25", "--data-dir", str(data), "--format", "json",
    )  # fmt: skip
    summary = json.loads(proc.stdout)
    (run,) = summary["runs"]
    assert summary["suite"] == "cpu-smoke" and summary["exit_status"] == 0
    assert run["status"] == "ok" and (run["count"], run["count_of"]) == (25, "steps") and Path(run["file"]).is_file()
    assert "[1/1]" in proc.stderr  # the progress is still shown, on standard error
    # numbers, not display strings (3 windows of 5 steady steps after 10 warm-up steps); the host's load around the
    # run, kept in its record by the bench (issue 55)
    assert run["unit"] == "steps/s" and isinstance(run["figure"], float) and isinstance(run["wall_s"], float)
    assert isinstance(run["load_1m_start"], float) and isinstance(run["load_1m_end"], float)
    from runners import layout

    hardware = json.loads(layout.read(Path(run["file"])).column("hardware")[0].as_py())
    assert hardware["host_load"]["load_1m_start"] == run["load_1m_start"]
    assert set(hardware["host_load"]) >= {"cpu_mhz_start", "cpu_mhz_end"}  # null where the OS does not tell
    # the host's CPU time around the run, and the one rule reading it: the run's own processes are never others'
    from runners import metrics

    load = hardware["host_load"]
    assert load["cpu_own_s"] > 0 and load["wall_s"] > 0
    busy = metrics.busy_host(load["cpu_busy_s"], load["cpu_own_s"], load["wall_s"], hardware["cpu_cores"])
    assert run["busy_host"] is busy and (any("busy host" in f for f in run["flags"]) is busy), run
    from runners import bench_report

    html = rendered(bench_report.render("md", "cpu-smoke", summary["runs"], 0))
    assert html.tables == 1 and html.rows[0] == list(bench_report.COLUMNS) and html.rows[1][2] == "ok"
    lines = list(csv.reader(io.StringIO(bench_report.render("csv", "cpu-smoke", summary["runs"], 0), newline="")))
    assert lines[0] == list(bench_report.COLUMNS) and lines[1][bench_report.COLUMNS.index("file")] == run["file"]
