"""Schema 3's file layout (runners/layout.py): a run's run-level fields once per file, in its Parquet metadata, and
new files in month folders (runners/store.py); old files, flat and in columns, still load."""

from __future__ import annotations

import contextlib
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from generator import derive, load
from generator.commands import validate
from runners import layout, schema, store
from tests.conftest import ROOT, run_module, write_footer_once
from tests.runners.test_store import ROWS, _run

TUNED = ROOT / "data" / "cpu-smoke" / "20261129T182303Z-train-gpt-tiny-mb4-ddp-tuned-4c2956.parquet"
"""A committed schema-2 record (125 rows), flat in its suite's folder."""


def _old_layout(record: pa.Table, where: Path) -> Path:
    """A record (upgraded, as the loader gives it) written as schema 2 wrote files: every run-level column on every
    row. Only for comparing the layouts; the runners never write it."""
    at = record.column_names.index("schema_version")
    old = record.set_column(at, record.schema.field(at), pa.array([2] * record.num_rows, pa.int32()))
    where.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(old.cast(schema.SCHEMA), where, compression="zstd")
    return where


def _figures(loaded: load.Loaded) -> pl.DataFrame:
    """Every derived per-run figure, without what names the file (its path and bytes differ between layouts)."""
    return derive.run_summary(loaded.runs, loaded.rows).drop("path", "sha256").sort("run_id")


@pytest.mark.bench
def test_a_run_written_by_the_runner_lands_in_its_month_in_schema_3_and_reads_small(bench_data, tmp_path) -> None:
    """Real torch runs on CPU (bench_data, through `python -m runners bench`): each file lies in the month folder of
    its run's start, holds the rows alone with the run-level fields once in its metadata, derives the same figures as
    the same records written in the old layout, and a plain `pq.read_table` of it is a fraction of the old's."""
    data, _ = bench_data
    files = load.result_files(data)
    assert len(files) == 4
    new = load.load(data)
    assert new.rejected == [] and new.runs.height == 4
    old_dir = tmp_path / "data"
    for path in files:
        record = layout.record(pq.read_table(path), pq.read_metadata(path).metadata)
        started = record.column("started_at")[0].as_py()
        assert path.parent == data / "cpu-smoke" / f"{started:%Y-%m}"  # data/<suite>/<YYYY-MM>/<run_id>.parquet
        meta = pq.read_metadata(path).metadata
        assert json.loads(meta[layout.RUN_KEY])["schema_version"] == schema.SCHEMA_VERSION == 3
        assert pq.read_schema(path).names == layout.FILE_COLUMNS  # no run-level column on the rows
        upgraded, problems = load.read_one(path)
        assert problems == [] and upgraded is not None
        old = _old_layout(upgraded, old_dir / "cpu-smoke" / path.name)
        small, big = pq.read_table(path).nbytes, pq.read_table(old).nbytes
        # the old layout repeats config, hardware, software and environment on every row: here about 2.5 KB a row
        assert small * 20 < big, (path.name, small, big)
        assert small < upgraded.num_rows * 120  # the rows and their run id: about 50 bytes a row
    before = load.load(old_dir)
    assert before.rejected == [] and set(before.runs["path"].str.count_matches("/")) == {2}  # flat
    assert _figures(before).equals(_figures(new))
    assert before.rows.equals(new.rows)


def test_a_committed_old_file_loads_as_it_did_and_rewritten_in_schema_3_gives_the_same_figures(tmp_path) -> None:
    """The committed schema-2 file, read through the migrations, and its record written by the store in schema 3
    (in a temporary folder: files under data/ are never rewritten) load to the same runs, rows and figures; a plain
    reader's memory for it falls from the run-level JSON repeated 125 times to the rows alone."""
    old = load.load(ROOT / "data", files=[TUNED])
    assert old.rejected == [] and old.runs["path"].to_list() == [f"data/cpu-smoke/{TUNED.name}"]
    assert old.runs["schema_version"].to_list() == [schema.SCHEMA_VERSION]
    record, problems = load.read_one(TUNED)
    assert problems == [] and record is not None
    written = store.write_run(tmp_path / "data", record)
    assert written == tmp_path / "data" / "cpu-smoke" / "2026-11" / TUNED.name
    new = load.load(tmp_path / "data")
    assert new.rejected == []
    assert new.runs.drop("path", "sha256").equals(old.runs.drop("path", "sha256"))
    assert new.rows.equals(old.rows)
    assert _figures(new).equals(_figures(old))
    before, after = pq.read_table(TUNED).nbytes, pq.read_table(written).nbytes
    assert after * 20 < before, (before, after)  # measured: 429,061 bytes before, 12,513 after


def _hostile(data: Path, name: str, run: dict | None = None, text: bytes | None = None, rows: pa.Table | None = None,
             folder: str = "2026-11") -> Path:  # fmt: skip
    """A schema-3 file written as a hostile submitter would: its rows, and whatever metadata it likes."""
    record = schema.make_table(_run(run_id=name), ROWS)
    table = layout.to_file(record) if rows is None else rows
    if run is not None or text is not None:
        text = text if text is not None else json.dumps(run).encode()
        table = table.replace_schema_metadata({layout.RUN_KEY: text})
    path = data / "cpu-smoke" / folder / f"{name}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_footer_once(table, path)
    return path


def _run_json(name: str, **over: object) -> dict:
    return json.loads(layout.to_file(schema.make_table(_run(run_id=name), ROWS)).schema.metadata[layout.RUN_KEY]) | over


HOSTILE = {
    # name: (metadata as a JSON object, or raw bytes; the problem expected)
    "not-json": (b'{"run_id": "not-json", ', "field 'fairfight.run' (Parquet key-value metadata): not strict JSON"),
    "a-list": (b"[1, 2]", "field 'fairfight.run': a JSON list, expected an object"),
    "dup-key": (b'{"run_id": "dup-key", "run_id": "x"}', "field 'fairfight.run' (Parquet key-value metadata): not"),
    "no-suite": ({k: v for k, v in _run_json("no-suite").items() if k != "suite"},
                 "field 'fairfight.run.suite': missing from the file's run metadata"),
    "count-text": (_run_json("count-text", accelerator_count="2"),
                   "field 'fairfight.run.accelerator_count': '2' is not a 32-bit whole number"),
    "local-time": (_run_json("local-time", started_at="2026-11-29T00:00:00+02:00"),
                   "field 'fairfight.run.started_at': '2026-11-29T00:00:00+02:00' is not a UTC time"),
    "null-engine": (_run_json("null-engine", engine=None), "field 'fairfight.run.engine': null, but every run has one"),
    "extra-field": (_run_json("extra-field", token="hunter2"), "field 'fairfight.run.token': not a run-level field"),
    "says-v2": (_run_json("says-v2", schema_version=2), "field 'fairfight.run.schema_version': 2, but files of"),
    "from-v9": (_run_json("from-v9", schema_version=9), "written by schema version 9, newer than this Fair Fight (3)"),
    "bad-config": (_run_json("bad-config", config="{'a': 1}"), "row 0, field 'config': not valid JSON"),
}  # fmt: skip


def test_hostile_schema_3_files_are_reported_by_file_and_field_and_kept_out(tmp_path: Path) -> None:
    """Bad run metadata (not JSON, not an object, a repeated or missing key, a value of the wrong type, a field the
    schema does not have, another version's label), rows of another run, a misplaced file and a column-layout file
    labelled schema 3: each is rejected naming its file and field, by the loader and by validate, and the good file
    beside them loads."""
    data = tmp_path / "data"
    store.write_run(data, schema.make_table(_run(run_id="good"), ROWS))
    for name, (meta, _) in HOSTILE.items():
        _hostile(data, name, **({"text": meta} if isinstance(meta, bytes) else {"run": meta}))
    # rows of another run under this run's metadata
    rows = layout.to_file(schema.make_table(_run(run_id="elsewhere"), ROWS))
    _hostile(data, "other-rows", run=_run_json("other-rows"), rows=rows.replace_schema_metadata(None))
    # a column the rows do not have, and one missing
    wide = layout.to_file(schema.make_table(_run(run_id="extra-column"), ROWS)).append_column(
        "config", pa.array(["{}"] * 2)
    )
    _hostile(data, "extra-column", rows=wide)
    _hostile(data, "no-rows", rows=layout.to_file(schema.make_table(_run(run_id="no-rows"), ROWS)).slice(0, 0))
    numbered = layout.to_file(schema.make_table(_run(run_id="int-ids"), ROWS))
    numbered = numbered.set_column(0, "run_id", pa.array([7, 7], pa.int64()))
    _hostile(data, "int-ids", rows=numbered)
    _hostile(data, "wrong-month", folder="2026-10")
    _hostile(data, "too-deep", folder="2026-11/deeper")
    # schema 3's record written as its columns, as schema 2 wrote files (what write_as_submitted does for schema 2)
    pq.write_table(schema.make_table(_run(run_id="cols-v3"), ROWS), data / "cpu-smoke" / "2026-11" / "cols-v3.parquet")
    loaded = load.load(data)
    assert loaded.runs["run_id"].to_list() == ["good"] and set(loaded.rows["run_id"]) == {"good"}
    found = {Path(r.path).name: r.problems[0] for r in loaded.rejected}
    for name, (_, expected) in HOSTILE.items():
        assert expected in found.pop(f"{name}.parquet"), name
    assert found.pop("other-rows.parquet") == (
        "row 0, field 'run_id': 'elsewhere', but the file's run metadata says 'other-rows': one run per file"
    )
    assert found.pop("extra-column.parquet").startswith("field 'config': not a column of schema 3's rows")
    assert found.pop("no-rows.parquet") == "no rows: a run file holds at least its steps_completed row"
    assert found.pop("int-ids.parquet") == "field 'run_id': type int64, expected string"
    assert found.pop("wrong-month.parquet") == (
        "field 'started_at': 2026-11-29 00:00 UTC, but the file is in month folder '2026-10'/: a run's file lives in "
        "data/cpu-smoke/2026-11/"
    )
    # refused by its path alone, before it is read (generator/load/ `misplaced`)
    assert found.pop("too-deep.parquet").startswith("in folder 'cpu-smoke/2026-11/deeper'/ of the data folder: a")
    assert found.pop("cols-v3.parquet") == (
        "row 0, field 'schema_version': 3, but a file of schema 3 or later keeps its run-level fields in its "
        "metadata (fairfight.run), not as columns: write it through runners/store.py"
    )
    assert found == {}
    out = tmp_path / "validate.json"
    with open(out, "w") as f, contextlib.redirect_stdout(f):
        assert validate.main([str(data), "--format", "json"]) == 1
    problems = json.loads(out.read_text())["problems"]
    assert {Path(p["file"]).name for p in problems if p["status"] == "rejected"} == {
        f"{n}.parquet" for n in HOSTILE
    } | {"other-rows.parquet", "extra-column.parquet", "wrong-month.parquet", "too-deep.parquet", "cols-v3.parquet",
        "no-rows.parquet", "int-ids.parquet"}  # fmt: skip


@pytest.mark.bench
def test_the_site_builds_around_hostile_schema_3_files(bench_data, tmp_path: Path) -> None:
    """A build over real runs plus hostile schema-3 files lists each on the Rejected page and publishes the rest."""
    source, _ = bench_data
    data = tmp_path / "data"
    shutil.copytree(source, data)
    _hostile(data, "not-json", text=b"{")
    _hostile(data, "no-suite", run={k: v for k, v in _run_json("no-suite").items() if k != "suite"})
    site = tmp_path / "site"
    run_module("generator.build", "--data", str(data), "--out", str(site), "--work", str(tmp_path / "build"))
    rejected = (site / "rejected.html").read_text()
    assert "not-json.parquet" in rejected and "fairfight.run" in rejected
    assert "no-suite.parquet" in rejected and "fairfight.run.suite" in rejected
    assert len(list((site / "runs").glob("*-train-gpt-tiny-mb4-*.html"))) == 4


def test_store_find_and_placement() -> None:
    """Where a run's file goes and where a reader looks for it: flat (files before month folders) or by month."""
    when = datetime(2026, 12, 31, 23, 59, tzinfo=UTC)
    assert store.run_path(Path("data"), "h100", "r", when) == Path("data/h100/2026-12/r.parquet")
    assert store.placement_problem(("h100", "r.parquet"), "h100", when) is None
    assert store.placement_problem(("h100", "2026-12", "r.parquet"), "h100", when) is None
    assert "month folder '2027-01'" in str(store.placement_problem(("h100", "2027-01", "r.parquet"), "h100", when))
    assert "folder 'cpu-smoke'" in str(store.placement_problem(("cpu-smoke", "2026-12", "r.parquet"), "h100", when))
    with pytest.raises(ValueError, match="refusing to name a result file"):
        store.run_path(Path("data"), "../x", "r", when)


def test_edition_manifests_name_runs_flat_or_by_month() -> None:
    """An edition names each run's file under data/ (generator/load/editions.py): a committed file flat in its suite's
    folder and a new one in a month folder both resolve; a path that is neither is refused, naming the field."""
    from generator.load import editions

    def manifest(path: str) -> dict:
        run = {"run_id": "r", "sha256": "0" * 64, "path": path}
        return {"name": "e1", "created_at": "2026-12-02T06:00:00Z", "commit": None, "previous": None, "runs": [run]}

    assert editions._manifest_problem(manifest(f"cpu-smoke/{TUNED.name}")) is None
    assert editions._manifest_problem(manifest("cpu-smoke/2026-12/r.parquet")) is None
    bad_paths = ("cpu-smoke/2026-13/r.parquet", "cpu-smoke/x/r.parquet", "../r.parquet", "h100/2026-12/a/r.parquet")
    for bad in bad_paths:
        assert "field 'path': not SUITE/RUN.parquet nor SUITE/YYYY-MM/RUN.parquet" in str(
            editions._manifest_problem(manifest(bad))
        ), bad
