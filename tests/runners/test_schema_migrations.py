"""Schema versions: files written by every earlier version still load, upgraded in memory and never rewritten."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa
import pytest

from generator import load
from runners import schema

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _versions() -> list[Path]:
    return sorted(FIXTURES.glob("schema-v*"), key=lambda d: int(d.name.removeprefix("schema-v")))


def test_there_are_fixture_files_of_every_schema_version() -> None:
    assert [d.name for d in _versions()] == [f"schema-v{v}" for v in range(1, schema.SCHEMA_VERSION + 1)]


@pytest.mark.parametrize("folder", _versions(), ids=lambda d: d.name)
def test_files_of_every_schema_version_load_with_the_current_code(folder: Path) -> None:
    files = load.result_files(folder / "data")
    loaded = load.load(folder / "data")
    assert loaded.rejected == [] and loaded.runs.height == len(files) >= 5
    assert set(loaded.runs["origin"]) >= {"measured", "imported", "claim"}
    assert set(loaded.runs["schema_version"]) == {schema.SCHEMA_VERSION}


def test_a_migration_upgrades_old_files_in_memory_and_leaves_them_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """A made-up next version (the unit `nats` spelt `nat`) shows the path a real migration takes: the loader
    upgrades each old file as it reads it; a version without a migration is refused with a clear reason."""
    folder = _versions()[-1] / "data"
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in load.result_files(folder)}
    old = schema.SCHEMA_VERSION

    def rename_nats(table: pa.Table) -> pa.Table:
        unit = pa.array(["nat" if u == "nats" else u for u in table.column("unit").to_pylist()])
        table = table.set_column(table.column_names.index("unit"), "unit", unit)
        version = pa.array([old + 1] * table.num_rows, pa.int32())
        return table.set_column(0, table.schema.field(0), version)

    monkeypatch.setattr(schema, "SCHEMA_VERSION", old + 1)
    monkeypatch.setitem(schema.METRIC_RULES, "loss", schema.Metric("nat"))
    monkeypatch.setitem(schema.MIGRATIONS, old, rename_nats)
    loaded = load.load(folder)
    assert loaded.rejected == [] and set(loaded.runs["schema_version"]) == {old + 1}
    assert "nat" in set(loaded.rows["unit"]) and "nats" not in set(loaded.rows["unit"])
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in load.result_files(folder)} == before
    monkeypatch.delitem(schema.MIGRATIONS, old)
    loaded = load.load(folder)
    assert loaded.runs.height == 0
    assert {r.problems for r in loaded.rejected} == {(f"no migration from schema version {old}",)}


def test_schema_2_reads_mlx_gpu_runs_made_before_the_tf32_setting_with_it() -> None:
    """The one committed record that claimed fp32 at 271% of the H200's fp32 peak ran MLX's default TF32 (its
    environment has no MLX_ENABLE_TF32): it now reads tf32 with a note, its bf16 sibling gains only the setting,
    and a record that wrote the setting down (made after the fix) is left as it was."""
    import json

    data = Path(__file__).resolve().parents[2] / "data" / "h100"
    names = {
        "fp32": "20261130T171703Z-train-gpt-1.27b-1gpu-mb8-mlx-fp32-c92a08",
        "bf16": "20261130T171812Z-train-gpt-1.27b-1gpu-mb8-mlx-bf16-compile-eb58f5",
        "after": "20261130T172818Z-train-gpt-1.27b-1gpu-mb8-mlx-fp32-986602",
    }
    loaded = load.load(data.parent, files=[data / f"{n}.parquet" for n in names.values()])
    assert loaded.rejected == []
    configs = {r: json.loads(c) for r, c in loaded.runs.select("run_id", "config").iter_rows()}
    calibrations = {r: json.loads(c) for r, c in loaded.runs.select("run_id", "calibration").iter_rows()}
    # the same job's calibration matmul ran with the same default: TF32, measured at 343 TFLOP/s, not fp32's 67
    assert calibrations[names["fp32"]]["matmul_precision"] == "tf32"
    assert calibrations[names["bf16"]]["matmul_precision"] == "bf16"
    fp32, bf16, after = (configs[names[k]] for k in ("fp32", "bf16", "after"))
    assert fp32["compute_precision"] == "tf32" and fp32["variant"]["settings"]["tf32"] is True
    assert fp32["migrated"] == [schema.MLX_TF32_NOTE]
    assert bf16["compute_precision"] == "bf16" and bf16["variant"]["settings"]["tf32"] is True
    assert bf16["migrated"] == [schema.MLX_TF32_SETTING_NOTE]
    assert max(len(schema.MLX_TF32_NOTE), len(schema.MLX_TF32_SETTING_NOTE)) <= 200
    assert "migrated" not in after and after["compute_precision"] == "tf32"


def _doctored(tmp_path: Path, change) -> Path:
    """A copy of the committed schema-1 MLX record with its config, environment or accelerator changed, under the
    folder and name its run id needs (the copy is a test input, never a result)."""
    import json

    import pyarrow.parquet as pq

    src = (
        Path(__file__).resolve().parents[2]
        / "data"
        / "h100"
        / "20261130T171703Z-train-gpt-1.27b-1gpu-mb8-mlx-fp32-c92a08.parquet"
    )
    table = pq.read_table(src)
    config = json.loads(table.column("config")[0].as_py())
    environment = json.loads(table.column("environment")[0].as_py())
    accelerator = table.column("accelerator")[0].as_py()
    config, environment, accelerator = change(config, environment, accelerator)
    for name, value in (("config", json.dumps(config)), ("environment", json.dumps(environment)),
                        ("accelerator", accelerator)):  # fmt: skip
        at = table.column_names.index(name)
        table = table.set_column(
            at, table.schema.field(at), pa.array([value] * table.num_rows, table.schema.field(at).type)
        )
    out = tmp_path / "h100" / src.name
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, out)
    return out


@pytest.mark.parametrize(
    "why",
    ["MLX_ENABLE_TF32 set by the run", "an Apple GPU (no TF32 before the M5)", "another engine's record"],
)
def test_schema_2_leaves_every_other_record_as_it_was(tmp_path: Path, why: str) -> None:
    def change(config, environment, accelerator):
        if why.startswith("MLX_ENABLE_TF32"):
            environment["MLX_ENABLE_TF32"] = "0"
        elif why.startswith("an Apple"):
            accelerator = "Apple M2 Max GPU"
        else:
            config["variant"]["engine"] = "torch"
        return config, environment, accelerator

    path = _doctored(tmp_path, change)
    upgraded = schema.upgrade(pq_read(path))
    import json

    config = json.loads(upgraded.column("config")[0].as_py())
    assert "migrated" not in config and "tf32" not in config["variant"]["settings"], why
    assert (
        config["compute_precision"] == "fp32" and upgraded.column("schema_version")[0].as_py() == schema.SCHEMA_VERSION
    )


@pytest.mark.parametrize("forged", [["schema 2: trust me"], 5, "text", {"a": 1}])
def test_a_file_may_not_claim_a_migration_itself(tmp_path: Path, forged) -> None:
    """config.migrated is the loader's to set: a file carrying one, of any type, is rejected by name (and a value a
    migration trips over never stops the rest of the load)."""

    def change(config, environment, accelerator):
        config["migrated"] = forged
        return config, environment, accelerator

    _doctored(tmp_path, change)
    loaded = load.load(tmp_path)
    assert loaded.runs.height == 0
    assert any("config.migrated" in p for r in loaded.rejected for p in r.problems), loaded.rejected


def pq_read(path: Path) -> pa.Table:
    import pyarrow.parquet as pq

    return pq.read_table(path)


def test_schema_2_migrates_a_record_whose_json_escapes_the_device_name(tmp_path: Path) -> None:
    """The migration skips the JSON of a config whose text cannot name a GPU device (most records); a config that
    spells it with JSON escapes (`Device\\u0028gpu`, ASCII-only JSON) names one all the same, and is migrated."""
    import json

    def change(config, environment, accelerator):
        return config, environment, accelerator

    path = _doctored(tmp_path, change)
    table = pq_read(path)
    at = table.column_names.index("config")
    escaped = table.column("config")[0].as_py().replace("Device(gpu", "Device\\u0028gpu")
    assert "Device(gpu" not in escaped and json.loads(escaped)["mlx_device"].startswith("Device(gpu")
    table = table.set_column(
        at, table.schema.field(at), pa.array([escaped] * table.num_rows, table.schema.field(at).type)
    )
    config = json.loads(schema.upgrade(table).column("config")[0].as_py())
    assert config["migrated"] == [schema.MLX_TF32_NOTE] and config["variant"]["settings"]["tf32"] is True
