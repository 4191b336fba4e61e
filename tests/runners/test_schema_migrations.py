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
