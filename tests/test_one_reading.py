"""One file, one reading (issue 57, class 1): a result file whose footer gives another reader another run (its run
entry written twice, a near-miss key, a key some reader interprets, an `ARROW:schema` that re-adds a run or retypes a
column) is refused by name, and every committed file reads the same through pyarrow, polars and the loader. Each
hostile file is written as a submitter would, with pyarrow's own writer and, where it cannot write a thing (a key
twice), by editing the footer's bytes; each test but the committed files' failed on the code before."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from generator import load
from generator.derive import checks
from generator.load import one_file
from runners import footer, layout, schema, store
from tests.conftest import ROOT, run_module
from tests.test_hostile_files import GENUINE, TUNED, genuine_copy

RUN_ID = "20261129T182303Z-train-gpt-tiny-mb4-ddp-tuned-57a57a"
"""The hostile file's run: TUNED's record under an id of its own, so the genuine board is untouched."""


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return genuine_copy(tmp_path)


def _record() -> pa.Table:
    """TUNED's record (schema 3 once upgraded) under `RUN_ID`."""
    record, problems = load.read_one(TUNED)
    assert record is not None, problems
    return record.set_column(
        record.column_names.index("run_id"), "run_id", pa.array([RUN_ID] * record.num_rows, pa.string())
    ).cast(schema.SCHEMA)


def _run_entry(**changes: object) -> bytes:
    rows = layout.to_file(_record())
    run = json.loads(rows.schema.metadata[layout.RUN_KEY])
    return json.dumps({**run, **changes}, sort_keys=True).encode()


def _target(data: Path) -> Path:
    record = _record()
    path = store.run_path(data, "cpu-smoke", RUN_ID, record.column("started_at")[0].as_py())
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def write_footer(
    path: Path, entries: list[tuple[bytes, bytes]], rows: pa.Table | None = None, store_schema: bool = False
) -> Path:
    """The record's rows (or `rows`) with exactly these key-value `entries` in the footer, in order, a key given twice
    written twice: pyarrow's writer keeps one entry a key, so a repeat is written under a stand-in of the same length
    and the footer's bytes then edited to the key (every length in the footer stays as it was)."""
    rows = layout.to_file(_record()).replace_schema_metadata(None) if rows is None else rows
    seen: Counter[bytes] = Counter()
    written: dict[bytes, bytes] = {}
    stand_ins: list[tuple[bytes, bytes]] = []
    for key, value in entries:
        stand_in = key if not seen[key] else bytes([seen[key]]) + key[1:]
        seen[key] += 1
        written[stand_in] = value
        if stand_in != key:
            stand_ins.append((stand_in, key))
    with pq.ParquetWriter(path, rows.schema, store_schema=store_schema) as writer:
        writer.write_table(rows)
        writer.add_key_value_metadata(written)
    content = path.read_bytes()
    start = len(content) - 8 - int.from_bytes(content[-8:-4], "little")
    tail = content[start:-8]
    for stand_in, key in stand_ins:
        assert tail.count(stand_in) == 1
        tail = tail.replace(stand_in, key)
    path.write_bytes(content[:start] + tail + content[-8:])
    return path


def refused(data: Path, path: Path) -> str:
    """The file's problems as the loader words them (it must be refused, and the genuine board loads as before)."""
    loaded, _ = checks.checked(load.load(data))
    by_name = {Path(r.path).name: " ".join(r.problems) for r in loaded.rejected}
    assert path.name in by_name, f"accepted: {path.name}"
    assert sorted(loaded.runs["run_id"].to_list()) == sorted(p.stem for p in GENUINE)
    return by_name[path.name]


def test_the_fixture_file_is_good_so_each_refusal_below_is_its_footers(data: Path) -> None:
    """The hostile files below differ from this one only in their footer."""
    write_footer(_target(data), [(layout.RUN_KEY, _run_entry())])
    loaded = load.load(data)
    assert loaded.rejected == [] and RUN_ID in loaded.runs["run_id"].to_list()


def test_a_run_entry_written_twice_is_refused_naming_the_file_and_key(data: Path) -> None:
    """Before: accepted, the site showing one entry (status ok) and polars' `read_parquet_metadata` another (status
    failed). Now the footer's own list is read, and two entries of one key are refused by `validate`, by the loader
    and by the runners' own reading (`layout.read`)."""
    path = write_footer(
        _target(data), [(layout.RUN_KEY, _run_entry()), (layout.RUN_KEY, _run_entry(status="failed", error="x"))]
    )
    assert [k for k, _ in footer.key_values(path.read_bytes())] == [layout.RUN_KEY, layout.RUN_KEY]
    shown = {
        json.loads(pq.read_metadata(path).metadata[layout.RUN_KEY])["status"],
        json.loads(pl.read_parquet_metadata(path)[layout.RUN_KEY.decode()])["status"],
    }
    assert shown <= {"ok", "failed"}  # one entry each reader shows, which one depending on the reader
    problem = refused(data, path)
    assert "key 'fairfight.run'" in problem and "written 2 times" in problem, problem
    with pytest.raises(layout.LayoutError, match="written 2 times"):
        layout.read(path)
    proc = run_module("generator.commands.validate", str(data), check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    line = next(line for line in proc.stdout.splitlines() if path.name in line)
    assert "key 'fairfight.run'" in line and "written 2 times" in line, proc.stdout


@pytest.mark.parametrize(
    ("key", "why"),
    [(b"fairfight.run ", "near miss"), (b"Fairfight.Run", "near miss"), (b"FAIRFIGHT.RUN", "near miss"),
     (b"fairfight.runs", "near miss"), (b" arrow:schema", "near miss"), (b"pandas", "not a key Fair Fight writes"),
     (b"org.apache.spark.sql.parquet.row.metadata", "not a key Fair Fight writes")],
)  # fmt: skip
def test_a_near_miss_key_or_one_another_reader_interprets_is_refused_by_name(data: Path, key: bytes, why: str) -> None:
    """Before: a second key `fairfight.run ` or `Fairfight.Run` that disagrees with the first, or a `pandas` index
    that pandas would apply, was ignored without a word. Now only `fairfight.run` and `ARROW:schema` may be keys."""
    path = write_footer(_target(data), [(layout.RUN_KEY, _run_entry()), (key, _run_entry(status="failed"))])
    problem = refused(data, path)
    assert f"key {key.decode()!r}" in problem and why in problem, problem


def test_an_arrow_schema_that_carries_another_run_entry_is_refused(data: Path) -> None:
    """Before: a re-added `ARROW:schema` whose schema metadata held another `fairfight.run` made `pq.read_table` show
    that run while the site showed the footer's. Now metadata in the embedded schema is refused."""
    other = _run_entry(status="failed", engine_version="0.0.1")
    rows = layout.to_file(_record()).replace_schema_metadata({layout.RUN_KEY: other})
    path = write_footer(_target(data), [(layout.RUN_KEY, _run_entry())], rows=rows, store_schema=True)
    assert pq.read_metadata(path).metadata[layout.RUN_KEY] != pq.read_table(path).schema.metadata[layout.RUN_KEY]
    problem = refused(data, path)
    assert "key 'ARROW:schema'" in problem and "'fairfight.run'" in problem, problem


@pytest.mark.parametrize(("column", "dtype"), [("run_id", pa.large_string()), ("step", pa.int16())])
def test_an_arrow_schema_that_retypes_a_column_is_refused_naming_it(
    data: Path, column: str, dtype: pa.DataType
) -> None:
    """Before: a re-added `ARROW:schema` typing `run_id` large_string or `step` int16 was accepted (Arrow readers read
    those types, polars others). Now the embedded schema must type every column as the record's schema does."""
    rows = layout.to_file(_record()).replace_schema_metadata(None)
    at = rows.column_names.index(column)
    rows = rows.set_column(at, pa.field(column, dtype), rows.column(column).cast(dtype))
    path = write_footer(_target(data), [(layout.RUN_KEY, _run_entry())], rows=rows, store_schema=True)
    problem = refused(data, path)
    assert "key 'ARROW:schema'" in problem and f"field {column!r} typed {dtype}" in problem, problem


def test_a_lone_surrogate_in_a_run_field_is_refused_naming_the_field(data: Path) -> None:
    """Before: `"\\ud800"` in the run entry's JSON ended as a raw `UnicodeEncodeError` naming no field. Now every
    text field of the run entry is checked as text, by name."""
    text = _run_entry().replace(b'"engine_version": "', b'"engine_version": "\\ud800', 1)
    assert b"\\ud800" in text
    path = write_footer(_target(data), [(layout.RUN_KEY, text)])
    problem = refused(data, path)
    assert "field 'fairfight.run.engine_version'" in problem and "lone surrogate" in problem, problem
    assert "UnicodeEncodeError" not in problem


def test_a_lone_surrogate_inside_a_json_field_is_refused_naming_its_path(data: Path) -> None:
    """The config's JSON text may escape half a UTF-16 pair (`"note": "\\ud800"`: ASCII, so the run entry is text),
    which parses to a string no page can hold. Now the field and its path are named."""
    run = json.loads(_run_entry())
    config = json.loads(run["config"])
    config["note"] = "\ud800"
    run["config"] = json.dumps(config, sort_keys=True)
    assert "\\ud800" in run["config"]
    path = write_footer(_target(data), [(layout.RUN_KEY, json.dumps(run).encode())])
    problem = refused(data, path)
    assert "field 'config.note'" in problem and "lone surrogate" in problem, problem


def test_bytes_that_are_not_utf8_in_a_string_column_are_refused_naming_the_field(data: Path) -> None:
    """A lone surrogate written as bytes (CESU-8's ED A0 80) in an old-layout file's `engine_version` column: before,
    a raw `UnicodeDecodeError`; now the row and field, as text is checked before any value is taken from it."""
    table = pq.read_table(TUNED)
    marker = "\x01\x02\x03"
    for name, value in (("run_id", RUN_ID), ("engine_version", f"2.11.0{marker}")):
        at = table.column_names.index(name)
        table = table.set_column(at, table.schema.field(at), pa.array([value] * table.num_rows, pa.string()))
    path = data / "cpu-smoke" / f"{RUN_ID}.parquet"
    pq.write_table(table, path, compression="NONE", use_dictionary=False)
    content = path.read_bytes()
    assert marker.encode() in content
    path.write_bytes(content.replace(marker.encode(), b"\xed\xa0\x80"))
    problem = refused(data, path)
    assert "row 0, field 'engine_version'" in problem and "not UTF-8" in problem, problem


def _plain(value: object) -> object:
    return value.isoformat().replace("+00:00", "Z") if isinstance(value, datetime) else value


def test_every_committed_file_reads_the_same_through_pyarrow_polars_and_the_loader() -> None:
    """Each file under data/: one entry per key in its footer, the same entries to pyarrow and polars, the same run
    fields from pyarrow, polars and the loader, and the same column types to pyarrow and polars, each the declared
    schema's (the rows' alone beside a run entry, every column in the older layouts)."""
    files = load.result_files(ROOT / "data")
    loaded = load.load(ROOT / "data")
    assert loaded.rejected == []
    runs = {Path(row["path"]).name: row for row in loaded.runs.to_dicts()}
    assert len(runs) == len(files) > 500
    as_polars = pl.from_arrow(schema.SCHEMA.empty_table()).schema
    for path in files:
        entries = footer.key_values(path.read_bytes())
        assert layout.footer_problem(entries) is None, path
        by_pyarrow = pq.read_metadata(path).metadata
        assert sorted(footer.key_values(path.read_bytes(), by_pyarrow)) == sorted(entries), path  # the loader's way
        by_polars = {k.encode(): v.encode() for k, v in pl.read_parquet_metadata(path).items()}
        assert dict(entries) == by_pyarrow == by_polars and len(entries) == len(by_pyarrow), path
        declared = layout.FILE_SCHEMA if layout.RUN_KEY in by_pyarrow else schema.SCHEMA
        arrow_types = pq.read_schema(path)
        polars_types = pl.read_parquet_schema(path)
        assert [(f.name, f.type) for f in arrow_types] == [(f.name, f.type) for f in declared], path
        assert dict(polars_types) == {name: as_polars[name] for name in declared.names}, path
        content = path.read_bytes()
        # the loader's reading of the file, as stored (`load.load` reads through it, then upgrades): a migration may
        # edit an old record's config (`config.migrated` says so), which no other reader does
        as_read = one_file.read_record(pa.BufferReader(content), pq.ParquetFile(pa.BufferReader(content)).metadata,
                                    dict(entries)).slice(0, 1).to_pylist()[0]  # fmt: skip
        upgraded = runs[path.name]
        if layout.RUN_KEY in by_pyarrow:
            from_pyarrow = json.loads(by_pyarrow[layout.RUN_KEY])
            from_polars = json.loads(by_polars[layout.RUN_KEY])
        else:  # the older layouts: the run fields are columns, each constant down the file (row 0's)
            from_pyarrow = next(pq.ParquetFile(path).iter_batches(batch_size=1, columns=schema.RUN_COLUMNS))
            from_pyarrow = {k: _plain(v[0]) for k, v in from_pyarrow.to_pydict().items()}
            first = pl.scan_parquet(path).select(schema.RUN_COLUMNS).head(1).collect().to_dicts()[0]
            from_polars = {k: _plain(v) for k, v in first.items()}
        for name in schema.RUN_COLUMNS:
            if name == "schema_version":
                continue  # the loader's is the version it upgraded to
            assert from_pyarrow[name] == from_polars[name] == _plain(as_read[name]), (path, name)
            if '"migrated"' not in upgraded["config"]:
                assert _plain(upgraded[name]) == from_pyarrow[name], (path, name)
