"""What a record says about the machine and software it ran on: every installed distribution, and on NVIDIA GPUs
each GPU's clocks, power limits, ECC and persistence mode as nvidia-smi reports them (absent, never guessed, where it
reports none or is not there)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

import pytest

from generator import load
from runners import bounds, provenance, record, schema, spec, store
from tests.conftest import TRAIN

# These tests run on CPU machines without a GPU, so nvidia-smi's output is inlined. Line 1 was captured on a lent H200
# host (nvidia-smi 580.159.04, CUDA 13.0, one GPU, idle) with the query gpu_state sends:
#   nvidia-smi --query-gpu=<GPU_QUERY's fields, comma-separated> --format=csv,noheader,nounits
# Lines 2 and 3 are that line edited, for a host of three: the markers nvidia-smi prints for a value it does not report
# (`[N/A]`, as that host printed for fan.speed; `[Not Supported]`), a name holding a comma, and a value that is not a
# number. Line 1's UUID is what `nvidia-smi --query-gpu=name,uuid` printed on another lease's host (2026-12-01); lines
# 2 and 3 have UUIDs made up for the sample.
H200_SAMPLE = (
    "0, 345, 1980, 3201, 3201, 1980, 3201, 700.00, 700.00, 700.00, Enabled, Enabled, "
    "GPU-214b3d79-d2b7-03c3-b74d-d4403ef9dd6f, NVIDIA H200\n"
    "1, 1980, 1980, 3201, 3201, [N/A], [N/A], 650.50, 650.50, 700.00, [Not Supported], Disabled, "
    "GPU-00000000-0000-0000-0000-000000000001, NVIDIA H200\n"
    "2, [Unknown Error], 1980, N/A, 3201, 1980, 3201, 700.00, seven hundred, 700.00, Enabled, Enabled, [N/A], "
    "NVIDIA H200, NVL\n"
)
FIELDS = [field for field, _, _ in provenance.GPU_QUERY]


def test_the_query_names_the_fields_nvidia_smi_documents() -> None:
    # as `nvidia-smi --help-query-gpu` (580.159.04, on the H200 host) lists them; `name` last, so a comma stays in it
    assert FIELDS == [
        "index",
        "clocks.current.sm",
        "clocks.max.sm",
        "clocks.current.memory",
        "clocks.max.memory",
        "clocks.applications.graphics",
        "clocks.applications.memory",
        "power.limit",
        "enforced.power.limit",
        "power.default_limit",
        "ecc.mode.current",
        "persistence_mode",
        "uuid",
        "name",
    ]
    in_run = [field for field, _, _ in provenance.RUN_GPU_QUERY]
    assert in_run == ["index", "clocks.current.sm", "clocks.current.memory", "power.draw", "temperature.gpu",
                      "clocks_event_reasons.active"]  # fmt: skip
    keys = {key for _, key, _ in provenance.GPU_QUERY} | {key for _, key, _ in provenance.RUN_GPU_QUERY}
    assert keys == set(bounds.GPU_FIELDS)


def test_nvidia_smi_output_of_an_h200_becomes_one_entry_per_gpu_without_invented_values() -> None:
    gpus = provenance.parse_gpu_csv(FIELDS, H200_SAMPLE)
    assert gpus[0] == {
        "index": 0,
        "name": "NVIDIA H200",
        "sm_clock_mhz": 345,
        "max_sm_clock_mhz": 1980,
        "memory_clock_mhz": 3201,
        "max_memory_clock_mhz": 3201,
        "applications_graphics_clock_mhz": 1980,
        "applications_memory_clock_mhz": 3201,
        "power_limit_w": 700.0,
        "enforced_power_limit_w": 700.0,
        "default_power_limit_w": 700.0,
        "ecc_mode": "Enabled",
        "persistence_mode": "Enabled",
        "uuid": "GPU-214b3d79-d2b7-03c3-b74d-d4403ef9dd6f",
    }
    # [N/A] and [Not Supported] are absent, not zero, not the text
    assert "applications_graphics_clock_mhz" not in gpus[1] and "applications_memory_clock_mhz" not in gpus[1]
    assert "ecc_mode" not in gpus[1] and gpus[1]["persistence_mode"] == "Disabled"
    assert gpus[1]["power_limit_w"] == 650.5 and gpus[1]["sm_clock_mhz"] == 1980
    # [Unknown Error], a bare N/A and a word where a number belongs: absent too; the comma stays in the name
    assert {"sm_clock_mhz", "memory_clock_mhz", "enforced_power_limit_w"}.isdisjoint(gpus[2])
    assert gpus[2]["name"] == "NVIDIA H200, NVL" and gpus[2]["max_memory_clock_mhz"] == 3201
    # a line cut short says nothing
    assert provenance.parse_gpu_csv(FIELDS, "0, 345\n\n") == []
    # nor is a value the record's checks would refuse (a clock of zero, a power limit that is not finite)
    odd = provenance.parse_gpu_csv(["index", "clocks.current.sm", "power.limit"], "0, 0, nan\n1, -5, inf\n")
    assert odd == [{"index": 0}, {"index": 1}]
    problems = bounds.json_problems(_documents(hardware={"device": "cuda", "count": 1, "gpus": gpus}))
    assert problems == []


def _fake_nvidia_smi(folder: Path, known: list[str]) -> Path:
    """An `nvidia-smi` that answers `--query-gpu` for the fields in `known` from H200_SAMPLE and refuses any other,
    as a driver that does not know a field does (the whole query, with exit status 2)."""
    lines = [line.split(",", len(FIELDS) - 1) for line in H200_SAMPLE.splitlines()]
    values = [dict(zip(FIELDS, [v.strip() for v in line], strict=True)) for line in lines]
    script = folder / "nvidia-smi"
    script.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"values, known = {values!r}, {known!r}\n"
        "query = next(a for a in sys.argv[1:] if a.startswith('--query-gpu='))\n"
        "fields = query.removeprefix('--query-gpu=').split(',')\n"
        "for field in fields:\n"
        "    if field not in known:\n"
        "        print(f'Field \"{field}\" is not a valid field to query.')\n"
        "        sys.exit(2)\n"
        "for gpu in values:\n"
        "    print(', '.join(gpu[f] for f in fields))\n"
    )
    script.chmod(0o755)
    return folder


def test_gpu_state_asks_nvidia_smi_once_and_field_by_field_when_a_field_is_unknown(tmp_path, monkeypatch) -> None:
    expected = provenance.parse_gpu_csv(FIELDS, H200_SAMPLE)
    monkeypatch.setenv("PATH", str(_fake_nvidia_smi(tmp_path, FIELDS)))
    assert provenance.gpu_state() == expected
    older = tmp_path / "older"  # a driver without application clocks: the rest is still recorded
    older.mkdir()
    monkeypatch.setenv("PATH", str(_fake_nvidia_smi(older, [f for f in FIELDS if "applications" not in f])))
    gpus = provenance.gpu_state()
    assert gpus == [{k: v for k, v in gpu.items() if not k.startswith("applications")} for gpu in expected]


def _cuda_hardware(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """`provenance.hardware("cuda", 1)` with torch's device query faked (no GPU here)."""
    import torch

    props = SimpleNamespace(name="NVIDIA H200", total_memory=150_754_820_096)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: props)
    return provenance.hardware("cuda", 1)


def test_without_nvidia_smi_a_cuda_record_has_no_gpu_state_and_is_still_written(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi on it
    assert provenance.gpu_state() is None
    hardware = _cuda_hardware(monkeypatch)
    assert "gpus" not in hardware and hardware["driver"] is None and hardware["accelerator"] == "NVIDIA H200"
    broken = tmp_path / "nvidia-smi"  # there, but failing (no driver loaded)
    broken.write_text(
        "#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the driver.'\nexit 9\n"
    )
    broken.chmod(0o755)
    assert provenance.gpu_state() is None and "gpus" not in _cuda_hardware(monkeypatch)
    path = store.write_run(tmp_path / "data", schema.make_table(_torch_run(hardware, cuda=True), ROWS))
    assert path.exists()


def test_with_nvidia_smi_a_cuda_record_holds_each_gpu(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(_fake_nvidia_smi(tmp_path, FIELDS)))
    hardware = _cuda_hardware(monkeypatch)
    assert hardware["gpus"] == provenance.parse_gpu_csv(FIELDS, H200_SAMPLE)
    assert hardware["driver"] is None  # the fake answers only the GPU state's query: nothing else is made up
    table = schema.make_table(_torch_run(hardware, cuda=True), ROWS)
    assert schema.check_table(table) == []


ROWS = [dict(trial=0, step=None, phase="run", metric="steps_completed", value=0.0, unit="steps")]


def _torch_run(hardware: dict[str, object], cuda: bool = False) -> dict[str, object]:
    """The run-level columns a torch run's record gets (runners/training.py `writer`, with what
    runners/engines/torch/train.py `_engine_record` adds), without running it: cpu-smoke's training workload, or the
    h100 suite's one-GPU one."""
    suite = spec.load_suite("h100" if cuda else "cpu-smoke")
    work = next(w for w in suite.workloads if w.name == ("train-gpt-1.27b-1gpu-mb8" if cuda else TRAIN))
    config = record.config(suite, work, suite.variants["ddp-amp-stock"], world_size=1)
    return record.run_columns(
        run_id="20261201T000000Z-provenance-test",
        config=config,
        engine_version=metadata.version("torch"),
        status="failed",
        error="not run: a test of the record's provenance",
        started=datetime.now(UTC),
        hardware=hardware,
        packages=("torch", "numpy", "pyarrow"),
    )


def test_a_cpu_record_lists_every_installed_package(tmp_path: Path) -> None:
    path = store.write_run(tmp_path / "data", schema.make_table(_torch_run(provenance.hardware("cpu", 1)), ROWS))
    loaded = load.load(tmp_path / "data")
    assert loaded.rejected == [] and loaded.runs.height == 1
    software = json.loads(loaded.runs["software"][0])
    packages = software["packages"]
    for name in ("numpy", "pyarrow", "torch"):
        assert f"{name}=={metadata.version(name)}" in packages
        assert software[name] == metadata.version(name)  # the engine's own packages, named as before
    names = [p.split("==")[0] for p in packages]
    assert names == sorted(set(names)) and all(bounds.PACKAGE.fullmatch(p) for p in packages)
    assert "typing-extensions" in names and "typing_extensions" not in names  # normalised (PEP 503)
    assert software.get("packages_omitted", 0) == 0 and len(packages) > 20
    assert len(path.read_bytes()) < 64 << 10


def test_the_package_list_is_bounded_and_says_how_much_it_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    def dist(name: str | None, version: str | None) -> SimpleNamespace:
        return SimpleNamespace(metadata={"Name": name}, version=version)

    many = [dist(f"Pkg_{i:05d}", "1.0") for i in range(3000)]
    odd = [dist(None, "1.0"), dist("ok", None), dist("weird name", "1"), dist("x", "<script>")]
    shadowed = [dist("Jinja2", "3.1.6"), dist("jinja2", "2.0")]  # the first on sys.path is the one imported
    monkeypatch.setattr(provenance.metadata, "distributions", lambda: [*shadowed, *odd, *many])
    listed, omitted = provenance.installed_packages()
    assert listed[0] == "jinja2==3.1.6" and "jinja2==2.0" not in listed
    assert len(listed) == bounds.MAX_PACKAGES and omitted == 4 + (3001 - bounds.MAX_PACKAGES)
    software = provenance.versions()
    assert software["packages_omitted"] == omitted
    assert bounds.json_problems(_documents(software=software)) == []


def _documents(**columns: dict[str, object]) -> dict[str, object]:
    """A run's row 0 as `bounds.json_problems` reads it, the named JSON columns given."""
    out: dict[str, object] = {
        "config": "{}",
        "hardware": "{}",
        "software": "{}",
        "environment": "{}",
        "calibration": None,
    }
    return out | {k: json.dumps(v) for k, v in columns.items()}


def test_every_committed_record_still_loads() -> None:
    # the new keys live in existing JSON columns (hardware.gpus, software.packages), no format change of their own, and
    # every file written before them passes the checks that now hold them
    folder = Path(__file__).resolve().parents[2] / "data"
    files = load.result_files(folder)
    assert len(files) > 100
    assert {str(p): problems for p in files if (problems := load.read_one(p)[1])} == {}


# nvidia-smi's answer to RUN_GPU_QUERY for two GPUs under load, written in the format the H200 host printed for
# GPU_QUERY (not captured: these tests run without a GPU); GPU 1 held at its power cap (clocks event reason 0x4).
RUN_SAMPLE = "0, 1980, 3201, 612.34, 57, 0x0000000000000000\n1, 1755, 3201, 699.10, 63, 0x0000000000000004\n"


def test_the_gpus_are_asked_once_during_the_run_on_a_thread_of_their_own(tmp_path, monkeypatch) -> None:
    """A real thread and a real subprocess; only nvidia-smi is a stand-in (no GPU here), counting its calls."""
    calls = tmp_path / "calls"
    script = tmp_path / "nvidia-smi"
    script.write_text(
        f"#!{sys.executable}\n"
        "import pathlib, sys\n"
        f"log = pathlib.Path({str(calls)!r})\n"
        "log.write_text(log.read_text() + 'x' if log.exists() else 'x')\n"
        f"sys.stdout.write({RUN_SAMPLE!r})\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    sampler = provenance.GpuSampler()
    assert sampler.result() is None  # never started: nothing to say
    sampler.start(160)
    sampler.start(180)  # later windows do not ask again
    got = sampler.result()
    assert got == {
        "at_step": 160,
        "gpus": [
            {"index": 0, "sm_clock_mhz": 1980, "memory_clock_mhz": 3201, "power_draw_w": 612.34, "temperature_c": 57,
             "clocks_event_reasons": "0x0000000000000000"},
            {"index": 1, "sm_clock_mhz": 1755, "memory_clock_mhz": 3201, "power_draw_w": 699.1, "temperature_c": 63,
             "clocks_event_reasons": "0x0000000000000004"},
        ],
    }  # fmt: skip
    assert calls.read_text() == "x"
    hardware = {"device": "cuda", "count": 2, "gpus_in_run": got}
    assert bounds.json_problems(_documents(hardware=hardware)) == []
    bad = {
        "device": "cuda",
        "count": 2,
        "gpus_in_run": {"at_step": 160, "gpus": [{"index": 0, "temperature_c": "hot"}]},
    }
    problems = bounds.json_problems(_documents(hardware=bad))
    assert [field for field, _ in problems] == ["hardware.gpus_in_run.gpus[0].temperature_c"]
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))  # no nvidia-smi: the sampler stays silent
    quiet = provenance.GpuSampler()
    quiet.start(160)
    assert quiet.result() is None
