"""How a record is stored in its file, and read back from a file of any schema version (runners/schema.py says why
schema 3 stores the run-level fields once, in the file's key-value metadata).

`to_file` turns a record's table into the file's (schema 3); `record` turns a file's table, as read, back into the
record's, whatever version wrote it; `read` does both halves of reading one file for the runners' own uses (a bench's
summary of the file it wrote, a retraction's target). The loader (generator/load/) reads through `record` too.

One reading: both read the run entry from the footer's own list of key-value entries (runners/footer.py), after
`footer_problem` has refused a file that another reader would read otherwise (an entry twice, a near-miss or foreign
key, an `ARROW:schema` that re-adds a run or retypes a column); `utf8_problem` and `text_problem` refuse text that is
not text, by field.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from runners import bounds, footer, schema

RUN_KEY = b"fairfight.run"
"""The Parquet key-value metadata key whose value is the run-level fields, one JSON object."""
ARROW_SCHEMA_KEY = b"ARROW:schema"
"""pyarrow's serialized Arrow schema (base64), which Arrow readers take over the Parquet schema's own types and
whose metadata they show as the table's: files of schema 1 and 2 carry it (`pq.write_table` wrote them)."""
ALLOWED_KEYS = (RUN_KEY, ARROW_SCHEMA_KEY)
"""The only key-value metadata keys a result file may hold: any other is one that some reader interprets (pandas'
`pandas` index, Spark's row schema, a near miss of ours) while another ignores it, so it is refused, never passed
over."""
ROW_FIELDS = ["trial", "step", "phase", "metric", "value", "unit"]
FILE_COLUMNS = ["run_id", *ROW_FIELDS]
"""A schema-3 file's columns: the tidy rows, each with its run's id."""
FILE_SCHEMA = pa.schema([schema.SCHEMA.field(name) for name in FILE_COLUMNS])
MAX_RUN_BYTES = 16 << 20
"""Most bytes of the run-level JSON (a run's software list, the largest part, is about 30 KB)."""


class LayoutError(ValueError):
    """A file whose layout cannot give a record: the message names the field (and the row, where one is at fault)."""


def _json_value(name: str, value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return value


def to_file(table: pa.Table) -> pa.Table:
    """The file's table of a record (`schema.SCHEMA`, one run, checked): the rows' columns, and the run-level fields
    of row 0 once, under `RUN_KEY`, with `schema_version` the current one."""
    first = table.slice(0, 1).to_pylist()[0]
    if first["schema_version"] != schema.SCHEMA_VERSION:
        raise ValueError(
            f"row 0, field 'schema_version': {first['schema_version']}, but files are written at schema "
            f"{schema.SCHEMA_VERSION} only (an older record is read through runners/schema.py's migrations, never "
            "written again)"
        )
    run = {name: _json_value(name, first[name]) for name in schema.RUN_COLUMNS}
    run["schema_version"] = schema.SCHEMA_VERSION
    rows = table.select(FILE_COLUMNS).cast(FILE_SCHEMA)
    text = json.dumps(run, ensure_ascii=False, sort_keys=True, allow_nan=False)
    return rows.replace_schema_metadata({RUN_KEY: text.encode()})


def write(table: pa.Table, where: Path | str) -> None:
    """Write a record (`schema.SCHEMA`, checked) as its schema-3 file. Written without pyarrow's `ARROW:schema` (a
    serialized copy of the Arrow schema, whose metadata would hold the run-level JSON a second time, base64'd): the
    rows' Parquet types read back as the same Arrow types (string, int32, double), and the key-value metadata holds
    the run once."""
    rows = to_file(table)
    with pq.ParquetWriter(where, rows.schema.remove_metadata(), compression="zstd", store_schema=False) as writer:
        writer.write_table(rows.replace_schema_metadata(None))
        writer.add_key_value_metadata(rows.schema.metadata)


def _key(key: bytes) -> str:
    return repr(key[:60].decode("utf-8", "replace"))


def _folded(key: bytes) -> str:
    """A key as a reader that forgives case, spaces and punctuation would take it: `Fairfight.Run ` is fairfightrun."""
    return "".join(c for c in key.decode("utf-8", "replace").casefold() if c.isalnum())


def footer_problem(entries: list[tuple[bytes, bytes | None]]) -> str | None:
    """Why a file's key-value metadata (every entry as its footer holds it: `footer.key_values`) gives readers more
    than one reading, or None: a key written twice (pyarrow shows one, polars the other), a near miss of one of ours
    (`fairfight.run `, `Fairfight.Run`: one reader's key, not another's), a key outside `ALLOWED_KEYS`, an entry
    without its value, or an `ARROW:schema` that says anything the file's own columns and run entry do not
    (`_arrow_schema_problem`)."""
    seen: dict[bytes, int] = {}
    for key, _ in entries:
        seen[key] = seen.get(key, 0) + 1
    for key, count in seen.items():
        if count > 1:
            return (
                f"key {_key(key)} (Parquet key-value metadata): written {count} times in the footer, and readers "
                "disagree about which one they show (pyarrow one, polars another): refused, write the file through "
                "runners/store.py"
            )
    ours = {_folded(k): k for k in ALLOWED_KEYS}
    for key, value in entries:
        if key in ALLOWED_KEYS:
            if value is None:
                return f"key {_key(key)} (Parquet key-value metadata): an entry without its value"
            continue
        folded = _folded(key)
        near = ours.get(folded) or (RUN_KEY if folded.startswith("fairfight") else None)
        if near is not None:
            return (
                f"key {_key(key)} (Parquet key-value metadata): a near miss of {_key(near)} (case, spaces or "
                "punctuation), which one reader would take for it and another ignore: refused"
            )
        return (
            f"key {_key(key)} (Parquet key-value metadata): not a key Fair Fight writes (only "
            f"{RUN_KEY.decode()}, and {ARROW_SCHEMA_KEY.decode()} as pyarrow writes it), and another reader would "
            "interpret it: refused"
        )
    found = dict(entries)
    arrow = found.get(ARROW_SCHEMA_KEY)
    return None if arrow is None else _arrow_schema_problem(arrow, RUN_KEY in found)


def _arrow_schema_problem(value: bytes, run_entry: bool) -> str | None:
    """Why a file's `ARROW:schema` would make Arrow readers see another file than ours, or None: metadata on it or a
    field (where `pq.read_table` finds a second run entry, or anything else it would pass on), or a column typed unlike
    the declared schema's (`FILE_SCHEMA` beside a run entry, `schema.SCHEMA` for the column layouts; every committed
    file's holds exactly that)."""
    where = f"key {_key(ARROW_SCHEMA_KEY)} (Parquet key-value metadata)"
    try:
        embedded = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(value, validate=True)))
    except (ValueError, binascii.Error, pa.ArrowException) as e:
        return f"{where}: not a serialized Arrow schema ({str(e)[:120]}): refused"
    named = {_key(k) for k in (embedded.metadata or {})}
    if named:
        return (
            f"{where}: the embedded schema carries metadata ({', '.join(sorted(named))[:200]}), which Arrow readers "
            "show as the table's and Fair Fight never writes there: refused"
        )
    declared = FILE_SCHEMA if run_entry else schema.SCHEMA
    for field in embedded:
        if field.metadata:
            return f"{where}: the embedded schema's field {field.name[:60]!r} carries metadata: refused"
        if field.name not in declared.names:
            return f"{where}: the embedded schema declares a column {field.name[:60]!r} the record has not: refused"
        want = declared.field(field.name).type
        if not field.type.equals(want):
            return (
                f"{where}: field {field.name[:60]!r} typed {field.type} in the embedded schema, but {want} in the "
                "record's: Arrow readers would read another type than Fair Fight does, so the file is refused"
            )
    return None


def _field(name: str) -> str:
    return f"field '{RUN_KEY.decode()}.{name}'"


def text_problem(value: str) -> str | None:
    """Why a string is not text a page or a file can hold (a lone UTF-16 surrogate, which no UTF-8 writer encodes and
    strict JSON readers differ on), or None."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        return f"a lone surrogate ({value[e.start]!r}) at character {e.start:,}: not text"
    return None


def _checked_value(name: str, value: Any) -> Any:
    """A run-level value from the metadata, as its column's type holds it, or a LayoutError naming the field."""
    dtype = schema.schema_type(name)
    nullable = schema.SCHEMA.field(name).nullable
    if value is None:
        if not nullable:
            raise LayoutError(f"{_field(name)}: null, but every run has one")
        return None
    if pa.types.is_string(dtype):
        if not isinstance(value, str):
            raise LayoutError(f"{_field(name)}: a JSON {type(value).__name__}, expected a string")
        problem = text_problem(value)
        if problem:
            raise LayoutError(f"{_field(name)}: {problem}")
        return value
    if pa.types.is_integer(dtype):
        if isinstance(value, bool) or not isinstance(value, int) or not -(2**31) <= value < 2**31:
            raise LayoutError(f"{_field(name)}: {str(value)[:40]!r} is not a 32-bit whole number")
        return value
    if pa.types.is_boolean(dtype):
        if not isinstance(value, bool):
            raise LayoutError(f"{_field(name)}: {str(value)[:40]!r} is not true or false")
        return value
    if pa.types.is_timestamp(dtype):
        when = None
        if isinstance(value, str) and len(value) <= 40:
            try:
                when = datetime.fromisoformat(value)
            except ValueError:
                when = None
        offset = None if when is None else when.utcoffset()
        if when is None or offset is None or offset.total_seconds() != 0:
            raise LayoutError(f"{_field(name)}: {str(value)[:40]!r} is not a UTC time (2026-12-02T06:00:00Z)")
        return when
    raise LayoutError(f"{_field(name)}: no reading for type {dtype}")  # never: every run column's type is above


def _run_metadata(text: bytes) -> dict[str, Any]:
    """The run-level fields of a schema-3 file's metadata, parsed and each checked for its type."""
    if len(text) > MAX_RUN_BYTES:
        raise LayoutError(f"field '{RUN_KEY.decode()}': {len(text):,} bytes, more than the {MAX_RUN_BYTES:,} allowed")
    try:
        run = bounds.parse(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise LayoutError(f"field '{RUN_KEY.decode()}' (Parquet key-value metadata): not strict JSON: {e}") from None
    if not isinstance(run, dict):
        raise LayoutError(f"field '{RUN_KEY.decode()}': a JSON {type(run).__name__}, expected an object")
    version = run.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > schema.SCHEMA_VERSION:
        raise LayoutError(
            f"written by schema version {version}, newer than this Fair Fight ({schema.SCHEMA_VERSION}): update your "
            "checkout"
        )
    wanted = ["schema_version", *schema.RUN_COLUMNS]
    for name in wanted:
        if name not in run:
            raise LayoutError(f"{_field(name)}: missing from the file's run metadata")
    unknown = sorted(set(run) - set(wanted))
    if unknown:
        raise LayoutError(f"{_field(unknown[0][:60])}: not a run-level field of schema {schema.SCHEMA_VERSION}")
    return {name: _checked_value(name, run[name]) for name in wanted}


def _constant(value: Any, dtype: pa.DataType, n: int, zeros: pa.Array) -> pa.Array:
    """One value down `n` rows: a string as a dictionary of that one value (an index a row), the rest repeated."""
    if pa.types.is_string(dtype):
        if value is None:
            return pa.nulls(n, dtype)
        return pa.DictionaryArray.from_arrays(zeros, pa.array([value], dtype))
    return pa.repeat(pa.scalar(value, dtype), n)


def record(table: pa.Table, metadata: Mapping[bytes, bytes | None] | None) -> pa.Table:
    """A file's table as read (its Parquet key-value `metadata` beside it) as the record's table (`schema.SCHEMA`'s
    columns, at the version the file was written with: `schema.upgrade` goes on from there). A column-layout file
    (schema 1, 2) is returned as it is; a schema-3 file gets its run-level columns from its metadata. LayoutError
    names the field when the layout is broken, and a string column whose bytes are not text."""
    problem = utf8_problem(table)
    if problem:
        raise LayoutError(problem)
    text = (metadata or {}).get(RUN_KEY)
    if text is None:
        if "schema_version" in table.column_names and table.num_rows:
            version = table.column("schema_version")[0].as_py()
            # a newer version is refused by `schema.upgrade`, which says to update the checkout
            if isinstance(version, int) and schema.LAYOUT_VERSION <= version <= schema.SCHEMA_VERSION:
                raise LayoutError(
                    f"row 0, field 'schema_version': {version}, but a file of schema {schema.LAYOUT_VERSION} or later "
                    f"keeps its run-level fields in its metadata ({RUN_KEY.decode()}), not as columns: write it "
                    "through runners/store.py"
                )
        return table
    run = _run_metadata(text)
    version = run["schema_version"]
    if version < schema.LAYOUT_VERSION:
        raise LayoutError(
            f"{_field('schema_version')}: {version}, but files of schema {version} keep their run-level fields as "
            "columns; only schema 3 and later keep them in the metadata"
        )
    names = table.column_names
    if names != FILE_COLUMNS:
        extra = [n for n in names if n not in FILE_COLUMNS]
        missing = [n for n in FILE_COLUMNS if n not in names]
        which, what = (extra[0], "not a column of schema 3's rows") if extra else (missing[0], "missing column")
        if not extra and not missing:
            which, what = names[0], f"columns in the order {names}, expected {FILE_COLUMNS}"
        raise LayoutError(f"field {which[:60]!r}: {what} (a schema-3 file's columns: {', '.join(FILE_COLUMNS)})")
    ids = table.column("run_id")
    id_type = ids.type.value_type if pa.types.is_dictionary(ids.type) else ids.type
    if not pa.types.is_string(id_type):
        raise LayoutError(f"field 'run_id': type {ids.type}, expected string")
    if table.num_rows and (ids.null_count or _distinct(ids) != [run["run_id"]]):
        cast = ids.cast(pa.string())
        row = next((i for i, v in enumerate(cast.to_pylist()) if v != run["run_id"]), 0)
        raise LayoutError(
            f"row {row}, field 'run_id': {str(cast[row].as_py())[:80]!r}, but the file's run metadata says "
            f"{run['run_id']!r}: one run per file"
        )
    n = table.num_rows
    zeros = pa.repeat(pa.scalar(0, pa.int32()), n)  # one index array shared by every string column
    columns: dict[str, pa.Array | pa.ChunkedArray] = {}
    for field in schema.SCHEMA:
        if field.name in ROW_FIELDS:
            columns[field.name] = table.column(field.name)
        elif field.name == "schema_version":
            columns[field.name] = pa.repeat(pa.scalar(version, pa.int32()), n)
        else:
            columns[field.name] = _constant(run[field.name], field.type, n, zeros)
    return pa.table(columns)


def utf8_problem(table: pa.Table) -> str | None:
    """The first string column (row and field) whose bytes are not UTF-8 (a lone surrogate written as CESU-8 bytes,
    say), or None: Parquet readers do not all check, and Python's would fail later naming no field."""
    for name, column in zip(table.column_names, table.columns, strict=True):
        kind = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            continue
        try:
            column.validate(full=True)
        except pa.ArrowInvalid:
            plain = [c.dictionary_decode() if pa.types.is_dictionary(c.type) else c for c in column.chunks]
            values = pa.chunked_array(plain, kind).cast(pa.large_binary())
            row = 0
            for row, raw in enumerate(values.to_pylist()):  # noqa: B007  (the row at fault is what is named)
                try:
                    (raw or b"").decode("utf-8")
                except UnicodeDecodeError:
                    break
            return f"row {row}, field {name[:60]!r}: bytes that are not UTF-8 text (a string column holds text)"
    return None


def _distinct(col: pa.ChunkedArray) -> list[Any]:
    if pa.types.is_dictionary(col.type):
        return list({v for chunk in col.chunks for v in chunk.dictionary.to_pylist()})
    return pc.unique(col).to_pylist()


def read(path: Path) -> pa.Table:
    """One result file's record (any version, not upgraded nor checked): what a runner reads back of a file it
    wrote, or of a run it retracts. Its run entry is read as the loader reads it: from the footer's own list, a file
    that gives readers two readings refused (`footer_problem`)."""
    content = Path(path).read_bytes()
    source = pq.ParquetFile(pa.BufferReader(content))
    entries = footer.key_values(content, source.metadata.metadata or {})
    problem = footer_problem(entries)
    if problem:
        raise LayoutError(problem)
    return record(source.read(), dict(entries))
