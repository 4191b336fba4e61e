"""`fairfight bench --wanted FILE` (runners/wanted_runs.py): the wanted runs this host fits, each as many times as the
list says, from the list `fairfight wanted --format json` prints. The committed data want H200 runs only, so the
lists here are written out: one cpu-smoke run on this host's CPU (wanted twice, by two answers), one H200 run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runners import provenance
from runners.wanted_runs import Host, fitting

ROOT = Path(__file__).resolve().parents[2]
HERE = "fairfight bench --suite cpu-smoke --workload train-gpt-tiny-mb4 --variant ddp-amp-stock --micro-batch 2"
THERE = "fairfight bench --suite h100 --workload train-gpt-1.27b-mb4 --variant ddp-tuned --micro-batch 2"


def _wanted(tmp_path: Path, runs: tuple[int, int] = (3, 2)) -> Path:
    cpu = provenance.cpu_model()
    entries = [
        dict(command=HERE, runs=runs[0], device="cpu", accelerator=cpu, accelerator_count=2),
        dict(command=HERE, runs=runs[1], device="cpu", accelerator=cpu, accelerator_count=2),
        dict(command=THERE, runs=5, device="cuda", accelerator="NVIDIA H200", accelerator_count=2),
    ]
    path = tmp_path / "wanted.json"
    path.write_text(json.dumps(entries))
    return path


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fairfight", "bench", *args], cwd=ROOT, capture_output=True,
                          text=True)  # fmt: skip


def test_a_dry_run_plans_what_this_host_fits_as_often_as_wanted(tmp_path: Path) -> None:
    done = _bench("--wanted", str(_wanted(tmp_path)), "--dry-run", "--data-dir", str(tmp_path / "data"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"3 × {HERE}\nsuite cpu-smoke: the plan")  # the most any answer wants
    assert "h100" not in done.stdout and not (tmp_path / "data").exists()
    assert "1 of 3 wanted entries fit this host (CPU: " in done.stderr


def test_the_fit_is_the_hardware_the_runs_used() -> None:
    h200s = Host("another CPU", ("NVIDIA H200", "NVIDIA H200"))
    listed = [dict(command=THERE, runs=5, device="cuda", accelerator="NVIDIA H200", accelerator_count=2),
              dict(command=HERE, runs=1, device="cpu", accelerator="some CPU", accelerator_count=2)]  # fmt: skip
    assert fitting(listed, h200s) == {THERE: 5}
    assert fitting(listed, Host("another CPU", ("NVIDIA H200",))) == {}  # the fight runs on 2 GPUs
    assert fitting(listed, Host("some CPU", ())) == {HERE: 1}


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--suite", "h100"), "bench --wanted: each wanted run gives its own suite and settings; leave out --suite"),
        ((), "bench: give --suite NAME (runners/suites/NAME.toml or a path), or --wanted FILE"),
    ],
)
def test_mistakes_are_one_sentence(tmp_path: Path, args: tuple[str, ...], said: str) -> None:
    wanted = ("--wanted", str(_wanted(tmp_path))) if args else ()
    done = _bench(*wanted, *args)
    assert done.returncode != 0 and "Traceback" not in done.stderr and done.stderr.strip().endswith(said)


def test_an_entry_without_a_field_is_named(tmp_path: Path) -> None:
    path = tmp_path / "wanted.json"
    path.write_text(json.dumps([{"command": HERE, "device": "cpu", "accelerator": "x", "accelerator_count": 2}]))
    done = _bench("--wanted", str(path))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert done.stderr.strip() == f"bench --wanted {path}: entry 0 has no field 'runs'"


@pytest.mark.bench
def test_it_runs_them_and_writes_their_records(tmp_path: Path, torch_engine: str) -> None:
    """A real cpu-smoke run (torch, gloo, 2 processes), wanted once: one record, at the wanted micro-batch."""
    data = tmp_path / "data"
    done = _bench("--wanted", str(_wanted(tmp_path, (1, 1))), "--data-dir", str(data), "--format", "json")
    assert done.returncode == 0, done.stderr[-2000:]
    (run,) = json.loads(done.stdout)["runs"]
    assert run["status"] == "ok" and run["workload"] == "train-gpt-tiny-mb4" and run["variant"] == "ddp-amp-stock"
    (record,) = data.rglob("*.parquet")
    import pyarrow.parquet as pq

    run_fields = json.loads(pq.ParquetFile(record).schema_arrow.metadata[b"fairfight.run"])  # the run-level columns
    config = run_fields["config"] if isinstance(run_fields["config"], dict) else json.loads(run_fields["config"])
    assert config["workload"]["micro_batch"] == 2 and config["workload"]["overridden"] == ["micro_batch"]
