"""Read one result file and check it: refused unread by what it is (a link, a FIFO, too large) and by its Parquet
metadata (columns, row groups, declared sizes, foreign metadata), then read, upgraded and checked against the schema
and its own name and place. Each refusal names the field and says what to do.
"""

from __future__ import annotations

import base64
import binascii
import os
import stat
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import generator.load.places as places
from runners import bounds, footer, layout, schema, store

MAX_FILE_BYTES = 256 << 20
"""Largest result file read (the largest committed one is 0.6 MB; a 10⁵-step run about 2 MB)."""


MAX_COLUMNS = 64
"""Most columns a file may declare (the schema has 29): a file of tens of thousands stalls a reader."""


MAX_ROW_GROUPS = 4096


MAX_UNCOMPRESSED_BYTES = 512 << 20
"""Most bytes a file's pages may decompress to, as its Parquet metadata declares them (the largest committed file's
decompress to 0.8 MB): a small file of zeros compressed a thousandfold is refused before a page is read."""


def not_regular(path: Path, limit: int = MAX_FILE_BYTES) -> str | None:
    """Why a file under data/ is refused unread (None for a regular file within `limit` bytes): a symbolic link (to
    a record elsewhere, or to /dev/zero), a folder, a FIFO, a socket or a device is named, never followed or opened
    (lstat)."""
    try:
        st = os.lstat(path)
    except OSError as e:
        return f"cannot be examined: {e.strerror}"
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return f"a symbolic link (to {target[:200]!r}), not a regular file: refused unread (copy the file itself in)"
    if not stat.S_ISREG(st.st_mode):
        kind = next(
            (name for test, name in ((stat.S_ISDIR, "folder"), (stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"),
                                     (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"))
             if test(st.st_mode)),
            "special file",
        )  # fmt: skip
        return f"a {kind}, not a regular file: refused unread"
    if st.st_size > limit:
        return f"{st.st_size:,} bytes, more than the {limit:,} a file here may be: refused unread"
    return None


def read_bounded(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """A regular file's bytes (`not_regular` first; ValueError with its reason otherwise), read through a descriptor
    that does not follow a link and never more than `limit` bytes, whatever the file became meanwhile."""
    problem = not_regular(path, limit)
    if problem:
        raise ValueError(problem)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file: refused unread")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"more than the {limit:,} bytes a file here may be: refused")
    return data


def metadata_problem(meta: pq.FileMetaData) -> str | None:
    """Why a file's Parquet metadata alone refuses it, before any page is read: too many columns or row groups,
    pages that decompress to more than `MAX_UNCOMPRESSED_BYTES`, or foreign schema metadata (an Arrow extension type
    on the schema or a column, which the reader would otherwise interpret: a file our store writes has none)."""
    if meta.num_columns > MAX_COLUMNS:
        return (
            f"{meta.num_columns:,} columns, more than the {MAX_COLUMNS} a result file may declare (schema 3's have 7, "
            "older ones 29)"
        )
    if meta.num_row_groups > MAX_ROW_GROUPS:
        return f"{meta.num_row_groups:,} row groups, more than the {MAX_ROW_GROUPS:,} a result file may have"
    declared = 0
    for i in range(meta.num_row_groups):
        group = meta.row_group(i)
        declared += max(
            group.total_byte_size, sum(group.column(j).total_uncompressed_size for j in range(group.num_columns))
        )
        if declared > MAX_UNCOMPRESSED_BYTES:
            return (
                f"its pages decompress to more than {MAX_UNCOMPRESSED_BYTES:,} bytes (Parquet metadata, row group "
                f"{i}): refused before reading"
            )
    for key, value in (meta.metadata or {}).items():
        blob = value
        if key == b"ARROW:schema":
            try:
                blob = base64.b64decode(value, validate=False)
            except (ValueError, binascii.Error):
                blob = value
        if b"ARROW:extension" in key or b"ARROW:extension" in blob:
            return (
                "foreign schema metadata: an Arrow extension type on the schema or a column (key "
                f"{key[:60].decode('utf-8', 'replace')!r}), which is refused, never interpreted"
            )
    return None


_DICT_COLUMNS = [f.name for f in schema.SCHEMA if f.name in schema.RUN_COLUMNS and pa.types.is_string(f.type)]


def read_one(path: Path, content: bytes | None = None) -> tuple[pa.Table | None, list[str]]:
    """Read (or parse `content` of), upgrade and check one file: (table, []) when good, (None, problems) when not."""
    table, _, problems = read_checked(path, content)
    return table, problems


def read_checked(path: Path, content: bytes | None) -> tuple[pa.Table | None, dict[str, Any] | None, list[str]]:
    """`read_one`, also returning the good table's row 0 as a dict (its run-level values)."""
    for part in places.placed(Path(path)):  # the names a checkout holds: refused before a byte is read
        unportable = bounds.portable_name_problem(part)
        if unportable:
            return None, None, [f"file or folder name {unportable}: rename it (a run's file is named after its run id)"]
    try:
        if content is None:
            content = read_bounded(Path(path))
        source = pa.BufferReader(content)
        meta = pq.ParquetFile(source).metadata
        if meta.num_rows > bounds.MAX_ROWS:
            return None, None, [f"{meta.num_rows:,} rows, more than the {bounds.MAX_ROWS:,} one run may hold"]
        problem = metadata_problem(meta)
        if problem:
            return None, None, [problem]
        # the key-value entries as the footer holds them: the run entry is read from this list, one way, and a
        # file that another reader would read otherwise is refused (runners/layout.py footer_problem)
        entries = footer.key_values(content, meta.metadata or {})
        problem = layout.footer_problem(entries)
        if problem:
            return None, None, [problem]
        table = read_record(source, meta, dict(entries))
    except layout.LayoutError as e:  # read, but its layout does not give a record: the message names the field
        return None, None, [str(e)]
    except Exception as e:  # any unreadable file: truncated, not Parquet, wrong encoding, not a regular file
        return None, None, [f"not a readable Parquet file: {type(e).__name__}: {e}"]
    try:
        table = schema.upgrade(table)
    except ValueError as e:
        return None, None, [str(e)]
    except Exception as e:  # a hostile value a migration trips over: the file is rejected, the build goes on
        return None, None, [f"could not be upgraded to schema {schema.SCHEMA_VERSION}: {type(e).__name__}: {e}"]
    first, problems = schema.check_run(table)
    if first is None:
        return None, None, [str(p) for p in problems]
    if first["run_id"] != path.stem:
        return None, None, [f"field 'run_id': {first['run_id']!r} does not match the file name"]
    misplaced = store.placement_problem(places.placed(Path(path)), first["suite"], first["started_at"])
    if misplaced:
        return None, None, [misplaced]
    return table, first, []


def read_record(source: pa.BufferReader, meta: pq.FileMetaData, kv: dict[bytes, bytes | None]) -> pa.Table:
    """One file's table in the record's columns, whatever its layout (runners/layout.py): a schema-3 file's rows with
    its run-level fields from its metadata, an older file's columns as they are. Strings that repeat on every row stay
    dictionary-encoded (the old layout's run-level columns: a file of 4,000 rows would otherwise expand its config
    JSON 4,000 times; the new one's run id)."""
    names = set(meta.schema.to_arrow_schema().names)  # a missing column is named by the schema check
    wanted = ["run_id"] if layout.RUN_KEY in kv else _DICT_COLUMNS
    dictionary = [c for c in wanted if c in names]
    # ParquetFile.read: no dataset layer and no thread pool, about half read_table's cost on small files
    # no pre-buffering: the whole file is in memory already
    # the footer parsed once: `meta` is these bytes' own (parsed again, it was a fifth of a file's read)
    table = pq.ParquetFile(source, metadata=meta, read_dictionary=dictionary, pre_buffer=False).read(use_threads=False)
    # whatever other metadata the file carries is dropped, never passed on (polars reads field metadata)
    table = pa.Table.from_arrays(
        table.columns, schema=pa.schema([f.remove_metadata() for f in table.schema]).remove_metadata()
    )
    return layout.record(table, kv)
