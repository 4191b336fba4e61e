"""Scan `data/`, upgrade and validate every result file; a bad file is reported by name and kept out.

Nothing is dropped silently: every file found is either loaded or listed in `Loaded.rejected` with the row and
field at fault, and the site's "Rejected files" page shows that list.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import multiprocessing
import os
import stat
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc
import pyarrow.parquet as pq

from generator import progress
from generator import store as build_store
from generator.load import columns, slugs
from runners import bounds, footer, layout, metrics, retract, schema, store


@dataclass(frozen=True, slots=True)
class Rejected:
    """A result file kept out of the leaderboard, and why."""

    path: str
    problems: tuple[str, ...]


@dataclass(slots=True)
class Loaded:
    runs: pl.DataFrame
    """One row per run: the run-level columns plus `path` and the file's `sha256`."""
    rows: pl.DataFrame
    """Every measurement: run_id, trial, step, phase, metric, value, unit; loaded `lean`, less the per-request
    samples (`HELD_OUT`) after each file's first row, which `held_out` counts and `full_rows` reads again."""
    rejected: list[Rejected] = field(default_factory=list)
    held_out: dict[str, int] = field(default_factory=dict)
    """Per run, how many of its file's rows `rows` leaves out (none: `rows` holds every row of the run)."""
    root: Path | None = None
    """What the runs' `path`s are relative to (the data folder's parent): where `full_rows` reads held-out rows."""
    held_in: dict[str, tuple[str, int, int]] = field(default_factory=dict)
    """Per run read by this load with a `held` folder, where its every row was put aside as it was read: (Arrow IPC
    file, first record batch, batches); `full_rows` takes them from there instead of reading the file again."""
    per_file: dict[str, Any] = field(default_factory=dict)
    """What the caller's `per_file` made of each file this load read (not those its cache gave, and rejected ones
    too, as they were read), by the keys it gave."""


PerFile = Callable[[str, dict[str, Any], pa.Table], tuple[str, Any] | None]
"""A caller's work on each good file while its every row is in hand (`load`'s `per_file`): given the file's sha256,
its row 0 (the run-level values) and its every row in `Loaded.rows`' columns less `run_id` (before a lean load sets
any aside), a (key, value) entry, or None. It runs in the reading processes, so it is a module-level function (a
spawned worker gets it by name)."""


HELD_OUT = tuple(m for m in metrics.SERVED_SAMPLES if m != "duration_s")
"""Per-request samples of a served point (one row per request and per generated token: the most of all rows). Only a
served point's own figures (worked out as its file is read, `PerFile`) and the downloads read them, so a lean load
leaves them in their files; `duration_s` is a run-level figure and stays."""


MAX_FILE_BYTES = 256 << 20
"""Largest result file read (the largest committed one is 0.6 MB; a 10⁵-step run about 2 MB)."""
MAX_COLUMNS = 64
"""Most columns a file may declare (the schema has 29): a file of tens of thousands stalls a reader."""
MAX_ROW_GROUPS = 4096
MAX_UNCOMPRESSED_BYTES = 512 << 20
"""Most bytes a file's pages may decompress to, as its Parquet metadata declares them (the largest committed file's
decompress to 0.8 MB): a small file of zeros compressed a thousandfold is refused before a page is read."""


def canonical(data_dir: Path) -> Path:
    """A data folder's one name: absolute, `..` and links resolved, so that every way of naming it (`--data
    data/cpu-smoke/..`, `--data ./data`, a link to it) loads the same files under the same paths (`data/<suite>/...`,
    relative to its parent) and builds the same site."""
    return Path(os.path.realpath(data_dir))


def misplaced(rel: str) -> str | None:
    """Why a file at `rel` (its path from the data folder's parent, `data/<suite>/<run>.parquet`) is not where a
    result file may lie, from its path alone: in its suite's folder or a month folder of it, and nowhere else (a
    folder deeper, a suite folder inside another, a file at the top); None where it may. That its folder is its own
    suite's and its month its run's is checked once it is read (runners/store.py `placement_problem`)."""
    under = rel.split("/")[1:]
    if len(under) == 2 or (len(under) == 3 and store.MONTH.fullmatch(under[1])):
        return None
    where = f"in folder {'/'.join(under[:-1])!r}/ of the data folder" if len(under) > 1 else "at its data folder's top"
    return (
        f"{where}: a result file lives in data/<suite>/ or data/<suite>/<YYYY-MM>/ and nowhere else (deeper, or in "
        "another folder): refused unread, never published (move it to its suite's folder)"
    )


def result_files(data_dir: Path) -> list[Path]:
    """Every `*.parquet` entry under data_dir (whatever it is: a link or a FIFO of that name is listed, to be refused
    by name, never opened) and every linked folder (never followed), sorted, skipping hidden names (the store's
    temporary files, a bench's quarantined ones)."""
    out = []
    for folder, dirs, files in os.walk(Path(data_dir)):
        linked = [d for d in dirs if os.path.islink(os.path.join(folder, d))]
        dirs[:] = [d for d in dirs if d not in linked and not d.startswith(".")]
        out += [Path(folder, name) for name in linked if not name.startswith(".")]
        out += [Path(folder, name) for name in files if name.endswith(".parquet") and not name.startswith(".")]
    return sorted(out, key=lambda path: path.parts)  # a path's order; its parts compared once (50,000 paths: 0.4 s)


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
    table, _, problems = _read_checked(path, content)
    return table, problems


def _read_checked(path: Path, content: bytes | None) -> tuple[pa.Table | None, dict[str, Any] | None, list[str]]:
    """`read_one`, also returning the good table's row 0 as a dict (its run-level values)."""
    for part in _placed(Path(path)):  # the names a checkout holds: refused before a byte is read
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
        table = _read_record(source, meta, dict(entries))
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
    misplaced = store.placement_problem(_placed(Path(path)), first["suite"], first["started_at"])
    if misplaced:
        return None, None, [misplaced]
    return table, first, []


def _placed(path: Path) -> tuple[str, ...]:
    """A file's folders and name as far up as its suite's folder: (suite, month, name) in a month folder, else
    (folder, name)."""
    parent = path.parent
    if store.MONTH.fullmatch(parent.name):
        return (parent.parent.name, parent.name, path.name)
    return (parent.name, path.name)


def data_folder(path: Path) -> Path:
    """The data folder a result file named on its own lies in: the nearest folder above it that shows itself one
    (`_is_data_folder`: it holds editions, it is a checkout's `data/`, or the `data/` of the folder the command runs
    in), so that a file deeper than its place is judged from that folder and refused by `misplaced` as the site
    refuses it; else, outside any, two folders up (data/<suite>/), three from a month folder (data/<suite>/<YYYY-MM>/).
    `path`'s folders resolved (`canonical`)."""
    default = canonical(Path("data"))
    for folder in path.parents:
        if folder == default or _is_data_folder(folder):
            return folder
    return path.parents[len(_placed(path)) - 1]


def _is_data_folder(folder: Path) -> bool:
    """A folder that shows itself a data folder: it holds `editions/` (only a data folder has them), or it is named
    `data` at the top of a git checkout (the project's layout)."""
    return (folder / "editions").is_dir() or (folder.name == "data" and (folder.parent / ".git").exists())


def _read_record(source: pa.BufferReader, meta: pq.FileMetaData, kv: dict[bytes, bytes | None]) -> pa.Table:
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


def _retraction_problem(config: str, loaded_ids: set[str]) -> str | None:
    """A retraction (given its config) must name a run that a loaded (good) file holds, not another retraction."""
    parsed = columns.parsed(config)
    target = ((parsed if isinstance(parsed, dict) else {}).get("retraction") or {}).get("retracts")
    if not isinstance(target, str) or not target:
        return "row 0, field 'config': a retraction must name the run it retracts (retraction.retracts)"
    if target not in loaded_ids:
        return f"row 0, field 'config': retracts {target!r}, which no loaded result file holds"
    if target.startswith(retract.PREFIX):
        return f"row 0, field 'config': retracts {target!r}, itself a retraction"
    return None


def collisions(good: list[_Read], heads: pl.DataFrame | None) -> dict[int, str]:
    """One name, one path: each name that becomes a page or a file of the site (a run's page, CSV and SVG; a board;
    a served model's page) is compared with every other of its kind after slugging and case-folding (a
    case-insensitive checkout or browser cannot tell `Run-A` from `run-a`). Two names that become one path reject
    every file of both, by name: neither may take the other's page. Returns each such file's problem by its index."""
    if heads is None or not good:
        return {}
    suspects = _may_collide(heads, [read.index for read in good])
    good = [read for read in good if read.index in suspects]  # the rest have a path to themselves: no problem
    if not good:
        return {}
    names = {
        index: (run_id, suite, workload, model)
        for index, run_id, suite, workload, model in heads.select(
            "_file", "run_id", "suite", "workload", pl.col(_MODEL).alias("model_name")
        ).iter_rows()
    }
    paths: dict[tuple[str, str], dict[str, list[_Read]]] = {}  # (field, path) -> name -> files
    for read in good:
        run_id, suite, workload, model = names[read.index]
        made = [("run_id", run_id, slugs.run_href(run_id)), ("workload", f"{suite}/{workload}",
                f"leaderboards/{slugs.slug(suite, workload)}.html")]  # fmt: skip
        if model is not None:
            made.append(("config.model.name", f"{suite}/{model}", f"serving/{slugs.slug(suite, model)}.html"))
        for field_name, name, path in made:
            paths.setdefault((field_name, path.casefold()), {}).setdefault(name, []).append(read)
    out: dict[int, str] = {}
    for (field_name, path), by_name in sorted(paths.items()):
        if len(by_name) < 2:
            continue
        for name, reads in by_name.items():
            others = ", ".join(repr(n) for n in sorted(by_name) if n != name)
            for read in reads:
                out.setdefault(
                    read.index,
                    f"row 0, field {field_name!r}: {name!r} and {others} become the same page ({path}, letters "
                    "compared without case), so every file of each is rejected: rename one",
                )
    return out


def _may_collide(heads: pl.DataFrame, indices: list[int]) -> set[int]:
    """The files (by index) whose run, board or served-model path is another name's too, worked out for every file at
    once in polars (`collisions` then words the problem for these few): the same slugs (`slugs.UNSAFE`, applied by
    polars' regex engine, which like Python's replaces one code point at a time), and the paths compared in lower case,
    which for their ASCII letters is `casefold`. A per-file Python loop took 1.6 s of a warm build at 50,000 runs."""
    unsafe = slugs.UNSAFE.pattern

    def slug(*parts: pl.Expr) -> pl.Expr:
        return pl.concat_str([p.str.replace_all(unsafe, "-") for p in parts], separator="-")

    files = heads.filter(pl.col("_file").is_in(pl.Series(indices, dtype=pl.Int32).implode())).select(
        "_file", "run_id", "suite", "workload", pl.col(_MODEL).alias("model_name")
    )
    made = pl.concat(
        [
            files.select("_file", field=pl.lit("run_id"), name=pl.col("run_id"),
                         path=pl.concat_str(pl.lit("runs/"), slug(pl.col("run_id")), pl.lit(".html"))),
            files.select("_file", field=pl.lit("workload"), name=pl.concat_str("suite", pl.lit("/"), "workload"),
                         path=pl.concat_str(pl.lit("leaderboards/"), slug(pl.col("suite"), pl.col("workload")),
                                            pl.lit(".html"))),
            files.filter(pl.col("model_name").is_not_null()).select(
                "_file", field=pl.lit("config.model.name"), name=pl.concat_str("suite", pl.lit("/"), "model_name"),
                path=pl.concat_str(pl.lit("serving/"), slug(pl.col("suite"), pl.col("model_name")), pl.lit(".html"))),
        ]
    )  # fmt: skip
    shared = made.with_columns(path=pl.col("path").str.to_lowercase()).filter(
        pl.col("name").n_unique().over("field", "path") > 1
    )
    return set(shared["_file"].to_list())


_ROW_COLUMNS = ["run_id", "trial", "step", "phase", "metric", "value", "unit"]
_SAMPLE_COLUMNS = _ROW_COLUMNS[1:]
"""What a row carries across processes and into the cache: its run id comes back from its file's head (a join
on `_file`), so millions of copies of the same id never get copied or pickled."""
_SAMPLE_SCHEMA = pa.schema([schema.SCHEMA.field(c) for c in _SAMPLE_COLUMNS])
_HEAD_SCHEMA = pa.schema(
    [
        *(schema.SCHEMA.field(c) for c in schema.RUN_COLUMNS),
        pa.field("_file", pa.int32()),
        pa.field("_held", pa.int64()),
    ]
)
PARALLEL_FROM = 200
"""Files below which loading stays in this process (a worker pool costs about a second to start)."""


@dataclass(frozen=True, slots=True)
class _Read:
    """One file's outcome: where it is, its digest, its run id (None when bad) and its problems."""

    index: int
    rel: str
    sha256: str
    run_id: str | None
    problems: tuple[str, ...]
    held: tuple[str, int, int] | None = None
    """Where a lean read put the file's every row aside (`Loaded.held_in`), if it did."""


def _read_files(
    indexed: list[tuple[int, Path]],
    root_parent: Path,
    contents: dict[int, bytes] | None = None,
    lean: bool = False,
    per_file: PerFile | None = None,
    held: Path | None = None,
) -> tuple[list[_Read], pa.Table | None, pa.Table | None, dict[str, Any]]:
    """Read and check files: the unit of work of one worker (or of this process, for a small data dir).

    Returns each file's outcome, and the heads (run-level columns, one row per good file) and rows of the good
    files, each concatenated once and tagged with the file's index in `_file` (tables cross processes far faster
    as two large tables than as thousands of small ones). `lean`: the rows less `HELD_OUT` samples (`_lean`), the
    heads counting them in `_held`. `per_file`: the caller's entries of each good file (`PerFile`), made while
    its every row is in hand (a lean load then sets some aside). `held`: a
    folder of this build's own where a lean read puts each file's every row aside when it holds samples out, in one
    Arrow IPC file per part (`Loaded.held_in`): taken back from there, a cold build's downloads and run pages do not
    read and decode those files a second time."""
    reads: list[_Read] = []
    heads: list[dict[str, Any]] = []
    rows: list[pa.Table] = []
    made: dict[str, Any] = {}
    aside = _Aside(held / f"{indexed[0][0]}-{os.getpid()}.arrow") if held is not None and lean and indexed else None
    try:
        _read_each(indexed, root_parent, contents, lean, per_file, aside, reads, heads, rows, made)
    finally:
        if aside is not None:
            aside.close()
    if not heads:
        return reads, None, None, made
    return reads, pa.Table.from_pylist(heads, schema=_HEAD_SCHEMA), pa.concat_tables(rows), made


class _Aside:
    """A part's rows put aside (`_read_files`' `held`): one Arrow IPC file, zstd-compressed, opened at its first
    table; `put` returns where a table's batches went."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.writer: pa.ipc.RecordBatchFileWriter | None = None
        self.batches = 0

    def put(self, table: pa.Table) -> tuple[str, int, int]:
        if self.writer is None:
            options = pa.ipc.IpcWriteOptions(compression="zstd")
            self.writer = pa.ipc.new_file(str(self.path), _SAMPLE_SCHEMA, options=options)
        batches = table.to_batches()
        for batch in batches:
            self.writer.write_batch(batch)
        first, self.batches = self.batches, self.batches + len(batches)
        return str(self.path), first, len(batches)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def _read_each(
    indexed: list[tuple[int, Path]],
    root_parent: Path,
    contents: dict[int, bytes] | None,
    lean: bool,
    per_file: PerFile | None,
    aside: _Aside | None,
    reads: list[_Read],
    heads: list[dict[str, Any]],
    rows: list[pa.Table],
    made: dict[str, Any],
) -> None:
    """`_read_files`' loop: each file's outcome, head, rows and `per_file` entry added to those given."""
    for index, path in indexed:
        rel = path.relative_to(root_parent).as_posix()
        # by its path alone: whatever it holds, it is not published from there (a linked folder is named as a link)
        if rel.endswith(".parquet") and (where := misplaced(rel)):
            reads.append(_Read(index, rel, "", None, (where,)))
            continue
        try:
            content = contents[index] if contents is not None else read_bounded(path)
        except (OSError, ValueError) as e:
            reads.append(_Read(index, rel, "", None, (str(e) if isinstance(e, ValueError) else f"unreadable: {e}",)))
            continue
        table, first, problems = _read_checked(path, content)
        digest = hashlib.sha256(content).hexdigest()
        if table is None or first is None:  # both or neither
            reads.append(_Read(index, rel, digest, None, tuple(problems)))
            continue
        tag = pa.repeat(pa.scalar(index, pa.int32()), table.num_rows)
        # the head as one row of plain values (the file's dictionaries differ, so dictionary columns would not
        # concatenate); the rows as read, cast only where a migration left another type
        head = {key: first[key] for key in schema.RUN_COLUMNS}
        head["_file"] = index
        samples = table.select(_SAMPLE_COLUMNS)
        if not samples.schema.equals(_SAMPLE_SCHEMA):
            samples = samples.cast(_SAMPLE_SCHEMA)
        every = samples
        samples = samples.append_column("_file", tag)
        kept = _lean(samples) if lean else samples
        head["_held"] = samples.num_rows - kept.num_rows
        put = aside.put(every) if aside is not None and head["_held"] else None
        if per_file is not None and (entry := per_file(digest, first, every)) is not None:
            made[entry[0]] = entry[1]
        heads.append(head)
        rows.append(kept)
        reads.append(_Read(index, rel, digest, head["run_id"], (), put))


def _lean(rows: pa.Table) -> pa.Table:
    """A file's rows less its `HELD_OUT` samples, its first row always kept: every run keeps rows, in file order, so
    whatever orders or counts runs by their rows (the samples download's parts, the run pages) sees each one."""
    held = pc.is_in(rows.column("metric"), pa.array(HELD_OUT, pa.string()))
    if not pc.any(held).as_py():
        return rows
    first = pa.array([i == 0 for i in range(rows.num_rows)], pa.bool_())
    return rows.filter(pc.or_(pc.invert(held), first))


def _relative(path: Path, root_parent: Path) -> str:
    """`path.relative_to(root_parent).as_posix()`, by its text where it starts with the folder's (0.3 s less of a warm
    build at 50,000 runs than pathlib's)."""
    text, folder = str(path), str(root_parent)
    if folder == "." and not path.is_absolute() and path.parts[:1] != ("..",):
        rel: str | None = text  # a path below the current folder (`--data data`)
    else:
        prefix = folder.rstrip(os.sep) + os.sep
        rel = text[len(prefix) :] if prefix != os.sep and text.startswith(prefix) else None
    if rel is None:
        return path.relative_to(root_parent).as_posix()
    return rel if os.sep == "/" else rel.replace(os.sep, "/")


def _digest(path: Path) -> str:
    """A file's sha256, or "" when it is not a regular file one may read (it is then read, and refused, anew)."""
    try:
        return hashlib.sha256(read_bounded(path)).hexdigest()
    except (OSError, ValueError):
        return ""


def stat_keys(paths: Sequence[Path]) -> list[str]:
    """`stat_key` of each path, in order: taken once by a build for both the compare key and the load."""
    return [stat_key(path) for path in paths]


def stat_key(path: str | os.PathLike[str]) -> str:
    """What says, without reading it, that a file is the one hashed before: its size, inode, and modification and
    change times in nanoseconds (git's index uses the same). Writing a file, replacing it or renaming another over it
    changes its change time, which no program can set back; "" for an entry that cannot be a result file."""
    try:
        st = os.lstat(path)
    except OSError:
        return ""
    if not stat.S_ISREG(st.st_mode):
        return ""
    return f"{st.st_size}:{st.st_ino}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _frame(table: pa.Table) -> pl.DataFrame:
    """`pl.from_arrow` of a table, which gives a DataFrame (it is typed to give a Series too, for arrays)."""
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame


CACHE_FILES = ("heads", "rows")


def _cached(cache_dir: Path | None, lean: bool = False) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """Heads and rows of files checked by an earlier build with the same code, or None: two entries of the build store
    in `cache_dir` (kind `loaded`), each read only once its bytes hash to the sha256 noted beside them (the store's
    key holds the code and the libraries)."""
    if cache_dir is None:
        return None
    kept = build_store.at(cache_dir)
    found = [kept.file(LOADED, f"{name} lean={lean}") for name in CACHE_FILES]
    if any(f is None for f in found):
        return None
    try:
        return tuple(pl.read_ipc(f[0]) for f in found if f is not None)  # type: ignore[return-value]
    except Exception:  # whole bytes that are not a table: only a slower build
        return None


LOADED = "loaded"
"""The store's kind for the load's cache."""


def _read_all(
    files: list[Path],
    root_parent: Path,
    cache_dir: Path | None = None,
    lean: bool = False,
    held: Path | None = None,
    stats: Sequence[str] | None = None,
    per_file: PerFile | None = None,
) -> tuple[list[_Read], pl.DataFrame | None, pl.DataFrame | None, dict[str, Any]]:
    """Every file read and checked, in `files` order; spread over the machine's cores when there are many.

    With a cache dir, a file whose path and sha256 match one an earlier build checked (with the same code) is
    taken from the cache instead of being read and checked again; the cache is then rewritten. `stats`: the files'
    `stat_key`s, taken by the caller before this reads any of them (else taken here). Last, the `per_file` entries
    of the files read."""
    if stats is not None and len(stats) != len(files):
        raise ValueError(f"{len(stats):,} stat keys for {len(files):,} files")
    cached = _cached(cache_dir, lean)
    known: dict[tuple[str, str], tuple[int, str]] = {}
    hashed: dict[tuple[str, str], str] = {}  # (path, stat_key) -> the sha256 it had when cached
    if cached is not None:
        columns_ = ("_file", "path", "sha256", "run_id", "stat")
        for f, p, d, r, key in cached[0].select(columns_).iter_rows():
            known[(p, d)] = (f, r)
            if key:
                hashed[(p, key)] = d
    read_at: dict[int, _Read] = {}  # by index in `files`
    todo: list[tuple[int, Path]] = []
    reuse: dict[int, int] = {}  # a file's index in the cache: its index now
    stats_at: dict[int, str] = {}
    with progress.Progress("checking the cache of result files", len(files) if known else 0) as bar:
        for index, path in enumerate(files):
            rel = _relative(path, root_parent)
            stats_at[index] = stat_key(path) if stats is None else stats[index]
            # a file whose size, inode and times are those it had when cached is not read again to be hashed
            digest = (hashed.get((rel, stats_at[index])) or _digest(path)) if known else ""
            if (rel, digest) in known:
                old, run_id = known[(rel, digest)]
                reuse[old] = index
                read_at[index] = _Read(index, rel, digest, run_id, ())
            else:
                todo.append((index, path))
            bar.advance()
    workers = min(os.cpu_count() or 1, 8)
    parts = []
    with progress.Progress("reading result files", len(todo)) as bar:
        if len(todo) < PARALLEL_FROM or workers < 2:
            size = max(1, len(todo) // 20)
            for i in range(0, len(todo), size):
                parts.append(_as_frames(_read_files(todo[i : i + size], root_parent, None, lean, per_file, held)))
                bar.advance(len(todo[i : i + size]))
        else:
            size = -(-len(todo) // (workers * 16))
            chunks = [todo[i : i + size] for i in range(0, len(todo), size)]  # in order: no sort afterwards
            # spawn, not fork: this process may already run polars' and arrow's thread pools
            with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
                args = (root_parent, None, lean, per_file, held)
                work = pool.map(_read_part, chunks, *([arg] * len(chunks) for arg in args))
                for chunk, part in zip(chunks, work, strict=True):
                    parts.append(part)
                    bar.advance(len(chunk))
    for part in parts:
        for read in part[0]:
            read_at[read.index] = read
    made = {key: value for part in parts for key, value in part[3].items()}
    reads = [read_at[index] for index in range(len(files))]
    heads = [p[1] for p in parts if p[1] is not None]
    rows = [p[2] for p in parts if p[2] is not None]
    if cached is not None and reuse:
        whole = len(reuse) == cached[0].height  # every cached file reused (a head per file): no rows to drop
        identity = whole and all(k == v for k, v in reuse.items())
        for frames, earlier in ((heads, cached[0].drop("path", "sha256", "stat")), (rows, cached[1])):
            frames.insert(0, earlier if identity else _renumbered(earlier, reuse, whole))
    # one chunk: the parts' (and the cache's) heads concatenated would stay as many chunks, into the cache and back,
    # and every query over the runs that follow would walk them (iterating the heads of 50,000 runs read from a cold
    # build's cache: 0.69 s against 0.007 s)
    head = pl.concat(heads, rechunk=True) if heads else None
    row: pl.DataFrame | None = None
    for frame in rows:  # every file's rows in file order, files in path order: each frame is, so they merge
        row = frame if row is None else _merged(row, frame)
    if row is not None and not row["_file"].is_sorted():  # never (each part is in order): rather sort than mix
        row = row.sort("_file", maintain_order=True)
    if cache_dir is not None and todo and head is not None and row is not None:
        good = [r for r in reads if r.run_id is not None]
        where = pl.DataFrame(
            {"_file": [r.index for r in good], "path": [r.rel for r in good], "sha256": [r.sha256 for r in good],
             "stat": [stats_at[r.index] for r in good]},
            schema={"_file": pl.Int32, "path": pl.String, "sha256": pl.String, "stat": pl.String},
        )  # fmt: skip
        kept = build_store.at(cache_dir)
        written, rows_written = head.join(where, on="_file"), row

        def write() -> None:
            with contextlib.suppress(OSError):  # a read-only or full disk: the files were read anyway
                kept.put_file(LOADED, f"heads lean={lean}", lambda tmp: written.write_ipc(tmp, compression="zstd"))
                kept.put_file(LOADED, f"rows lean={lean}", lambda tmp: rows_written.write_ipc(tmp, compression="zstd"))

        kept.later(write)  # a build goes on meanwhile: nothing reads these entries before the next load
    elif cache_dir is not None:
        kept = build_store.at(cache_dir)  # nothing new: the entries read are this build's
        for name in CACHE_FILES:
            kept.has(LOADED, f"{name} lean={lean}")
    return reads, head, row, made


def _as_frames(
    part: tuple[list[_Read], pa.Table | None, pa.Table | None, dict[str, Any]],
) -> tuple[list[_Read], pl.DataFrame | None, pl.DataFrame | None, dict[str, Any]]:
    """A part read (`_read_files`) with its heads and rows as polars frames, the heads with each file's served model
    (`_MODEL`) for `collisions`."""
    reads, heads, rows, made = part
    head = None if heads is None else _frame(heads).with_columns(columns.column("model_name").alias(_MODEL))
    return reads, head, None if rows is None else _frame(rows), made


_MODEL = "_model"
"""A head's served model (config.model.name), taken from its config JSON once per file as it is read and kept in the
cache: taken from every head's JSON again, it was 0.7 s of a warm build at 50,000 runs."""


def _read_part(
    indexed: list[tuple[int, Path]],
    root_parent: Path,
    contents: None,
    lean: bool,
    per_file: PerFile | None,
    held: Path | None,
) -> tuple[list[_Read], pl.DataFrame | None, pl.DataFrame | None, dict[str, Any]]:
    """A worker's part (`_read_files`), its tables made polars frames there: a frame crosses to this process as
    polars' own buffers, while an Arrow table arrives as views of its pickle, which a zero-copy conversion then kept
    whole (the text of every part, read or not: 1.1 GB more for the rest of a cold build at 50,000 runs), and its
    text is converted on the workers' cores."""
    return _as_frames(_read_files(indexed, root_parent, contents, lean, per_file, held))


def _renumbered(earlier: pl.DataFrame, reuse: dict[int, int], whole: bool = False) -> pl.DataFrame:
    """The cached rows (or heads) of the files reused, each `_file` its index now (`reuse`: cached index → index now),
    in their order: a gather through a lookup list, not a join (a join of millions of rows took 1.2 s of a warm build
    at 50,000 runs, and need not keep their order). `whole`: every cached file is reused, so no row is dropped (the
    filter would copy millions of rows to drop none: a new file among cached ones renumbers those after it)."""
    top = earlier["_file"].max()
    size = max(top if isinstance(top, int) else 0, max(reuse, default=0)) + 1
    lookup = [-1] * size
    for old, new in reuse.items():
        lookup[old] = new
    table = pl.Series(lookup, dtype=pl.Int32)
    # gathered chunk by chunk of the rows: the new column chunked as the others are (one chunked unlike them is split
    # to match later, a copy of every row)
    chunks = earlier["_file"].get_chunks() or [earlier["_file"]]
    now = pl.concat([table.gather(chunk) for chunk in chunks], rechunk=False)
    if whole:
        return earlier.with_columns(_file=now)
    return earlier.with_columns(_file=now).filter(pl.col("_file") >= 0)  # a file gone or changed: its rows go


def _merged(a: pl.DataFrame, b: pl.DataFrame) -> pl.DataFrame:
    """Two tables of rows, each in `_file` order with no file in both, as one in `_file` order. Where `b` goes into `a`
    in a few places (a few new files among the cached ones), slices of both, put together without a copy; else a merge
    (a merge of every row took 0.8 s of a warm build at 50,000 runs, sorting the whole table again more)."""
    if not a.height or not b.height or a["_file"][-1] < b["_file"][0]:
        return pl.concat([a, b])
    # where each row of `b` goes in `a`: a file's rows all go to one place (no file is in both)
    at = a["_file"].search_sorted(b["_file"], side="left")
    places = at.rle()
    if places.len() > MERGE_SLICES:
        return a.merge_sorted(b, key="_file")
    pieces, taken, start = [], 0, 0
    for length, place in places.struct.unnest().iter_rows():
        pieces += [a.slice(taken, place - taken), b.slice(start, length)]
        taken, start = place, start + length
    pieces.append(a.slice(taken))
    return pl.concat([p for p in pieces if p.height], rechunk=False)


MERGE_SLICES = 64
"""Places where new files' rows go among the cached ones, at most, for `_merged` to put slices together."""


def load_contents(data_dir: Path, contents: dict[str, bytes]) -> Loaded:
    """Files given by their bytes (by path relative to data_dir's parent, as `Loaded.runs.path` names them), checked
    as `load` checks files on disk: an edition's frozen versions, read back from git (generator/load/editions.py)."""
    root = Path(data_dir).parent
    indexed = list(enumerate(root / rel for rel in sorted(contents)))
    reads, heads, rows, _ = _read_files(
        indexed, root, {i: contents[p.relative_to(root).as_posix()] for i, p in indexed}
    )
    rejected = [Rejected(r.rel, r.problems) for r in reads if r.run_id is None]
    good = [r for r in reads if r.run_id is not None]
    empty = _frame(schema.SCHEMA.empty_table())
    if not good or heads is None or rows is None:
        runs = empty.select(schema.RUN_COLUMNS).with_columns(
            path=pl.lit(None, dtype=pl.String), sha256=pl.lit(None, dtype=pl.String)
        )
        return Loaded(runs=runs, rows=empty.select(_ROW_COLUMNS), rejected=rejected)
    files = pl.DataFrame(
        {"_file": [r.index for r in good], "path": [r.rel for r in good], "sha256": [r.sha256 for r in good]},
        schema={"_file": pl.Int32, "path": pl.String, "sha256": pl.String},
    )
    runs = _frame(heads).join(files, on="_file")
    return Loaded(runs=runs.drop("_file", "_held"), rows=_with_run_ids(_frame(rows), runs), rejected=rejected)


def load(
    data_dir: Path,
    cache_dir: Path | None = None,
    files: list[Path] | None = None,
    lean: bool = False,
    held: Path | None = None,
    stats: Sequence[str] | None = None,
    per_file: PerFile | None = None,
) -> Loaded:
    """Load every good result file under data_dir (or just `files`, named relative to data_dir's parent); report
    the others. `cache_dir` (the site build's) keeps the checked contents of files by path and sha256, so an
    unchanged file is not read and checked again. `lean`: the rows less the per-request samples (`HELD_OUT`), which
    stay in their files until `full_rows` reads them (the site build, `validate` and `compare`: memory for what the
    figures need, not for every token's time). `held`: an empty folder of the caller's, kept while it uses the
    records, where the files read (not those taken from the cache) put their every row aside (`Loaded.held_in`).
    `stats`: the `stat_key` of each of `files`, taken before any was read (`stat_keys`). `per_file`: the caller's
    work on each file read while its every row is in hand (`PerFile`), its entries in `Loaded.per_file`."""
    root = Path(data_dir) if files is not None else canonical(data_dir)  # named files: relative to it as named
    if held is not None:
        held.mkdir(parents=True, exist_ok=True)
    listed = result_files(root) if files is None else files
    reads, heads, rows, made = _read_all(
        listed, root.parent, cache_dir, lean, held, None if files is None else stats, per_file
    )
    rejected: list[Rejected] = []
    copies: dict[str, list[_Read]] = {}
    for read in reads:
        if read.run_id is None:
            rejected.append(Rejected(read.rel, read.problems))
        else:
            copies.setdefault(read.run_id, []).append(read)
    seen: dict[str, str] = {}
    good: list[_Read] = []
    for read in reads:
        run_id = read.run_id
        if run_id is None:
            continue
        same = copies[run_id]
        if len(same) > 1 and len({r.sha256 for r in same}) > 1:
            # no file wins: a doctored copy must not displace the genuine run, nor the other way round
            others = ", ".join(r.rel for r in same if r is not read)
            problem = f"row 0, field 'run_id': {run_id!r} is also in {others}, with other contents"
            rejected.append(Rejected(read.rel, (problem,)))
        elif run_id in seen:
            problem = f"row 0, field 'run_id': a byte-identical copy of {seen[run_id]}, loaded once from there"
            rejected.append(Rejected(read.rel, (problem,)))
        else:
            seen[run_id] = read.rel
            good.append(read)
    collided = collisions(good, heads)
    rejected += [Rejected(read.rel, (collided[read.index],)) for read in good if read.index in collided]
    good = [read for read in good if read.index not in collided]
    loaded_ids = {read.run_id for read in good if read.run_id is not None}
    retracting = (
        {}
        if heads is None
        else dict(heads.filter(pl.col("origin") == "retraction").select("_file", "config").iter_rows())
    )
    kept = []
    for read in good:
        bad_retraction = _retraction_problem(retracting[read.index], loaded_ids) if read.index in retracting else None
        if bad_retraction:
            rejected.append(Rejected(read.rel, (bad_retraction,)))
        else:
            kept.append(read)
    if not kept or heads is None or rows is None:  # kept files brought their heads and rows
        empty = _frame(schema.SCHEMA.empty_table())
        runs = empty.select(schema.RUN_COLUMNS).with_columns(
            path=pl.lit(None, dtype=pl.String), sha256=pl.lit(None, dtype=pl.String)
        )
        return Loaded(runs=runs, rows=empty.select(_ROW_COLUMNS), rejected=rejected, per_file=made)
    kept_files = pl.DataFrame(
        {"_file": [r.index for r in kept], "path": [r.rel for r in kept], "sha256": [r.sha256 for r in kept]},
        schema={"_file": pl.Int32, "path": pl.String, "sha256": pl.String},
    )
    runs = heads.join(kept_files, on="_file")
    if len(kept) < len(reads):  # a duplicate or a bad retraction: drop its rows (bad files brought none)
        rows = rows.filter(pl.col("_file").is_in(kept_files["_file"].implode()))
    held_out = {run_id: n for run_id, n in runs.select("run_id", "_held").iter_rows() if n}
    held_in = {r.run_id: r.held for r in kept if r.held is not None and r.run_id is not None and r.run_id in held_out}
    return Loaded(runs=runs.drop("_file", "_held", _MODEL).sort("started_at", "run_id"), rows=_with_run_ids(rows, runs),
                  rejected=rejected, held_out=held_out, root=root.parent, held_in=held_in, per_file=made)  # fmt: skip


def _with_run_ids(rows: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """The rows (tagged by `_file`) with their run ids back from their files' heads, in their order. Gathered, not
    joined: each row's id is a view of the one copy of its run's id, never a copy of the text (16 bytes a row instead
    of about 65: on a site of 5,000 runs, 0.5 GB of the rows' 0.75 GB was their ids)."""
    files = runs["_file"].to_list()
    position = [-1] * (max(files, default=-1) + 1)  # a file's index: its head's row
    for row, index in enumerate(files):
        position[index] = row
    where = pl.Series(position, dtype=pl.Int64)
    ids = runs["run_id"]
    parts = []
    # gathered from the heads' own column, chunk by chunk of the rows: each id is a view of the heads' one copy (a
    # scattered copy of the column is gathered as copies, and a column chunked unlike the others is split to match,
    # which copies the text too: each about 0.5 GB more at 5,293 runs)
    for chunk in rows["_file"].get_chunks():
        at = where.gather(chunk)
        if (at < 0).any():  # never (the rows are the heads' files'): fail rather than give a row another's id
            raise ValueError("rows of a file without a head")
        parts.append(ids.gather(at))
    # the ids chunked as the other columns are (a part read per chunk), and not rechunked: one chunk per column was a
    # copy of every row while the rows it was copied from were still held (0.9 GB more at 50,000 runs); a run's rows
    # are taken as a slice of one chunk each (`run_slices`), so the downloads' bytes are as before
    return rows.with_columns(run_id=pl.concat(parts, rechunk=False)).select(_ROW_COLUMNS)


def full_rows(loaded: Loaded, run_ids: Sequence[str]) -> pl.DataFrame:
    """Every row of these runs' files, as `Loaded.rows` holds them (columns, types, each file's order, runs in the
    order of `rows`): from `rows` where it holds all of a run's rows, else read again from the run's file, which must
    still hash to the sha256 it was checked with (the same bytes, so the same checks pass). Callers take runs a part
    at a time: memory for a part's rows, not the data's."""
    held = {r for r in run_ids if loaded.held_out.get(r)}
    root = loaded.root
    if held and root is None:
        raise ValueError("rows were held out of a load with no folder to read them again from")
    where = {
        run_id: (path, digest)
        for run_id, path, digest in loaded.runs.filter(pl.col("run_id").is_in(list(held)))
        .select("run_id", "path", "sha256")
        .iter_rows()
    }
    frames = [
        (_put_aside(run_id, loaded.held_in[run_id]) if run_id in loaded.held_in else _read_again(root, *where[run_id]))
        if root is not None and run_id in held
        else frame
        for run_id, frame in run_slices(loaded.rows, run_ids)
    ]  # a run held out kept its file's first row, so it is in `rows`, in its place
    # one chunk per run, as slices of the rows were (Parquet's row groups follow chunks: the same bytes as before)
    return pl.concat(frames, rechunk=False) if frames else loaded.rows.clear()


def run_slices(rows: pl.DataFrame, run_ids: Sequence[str]) -> list[tuple[str, pl.DataFrame]]:
    """The rows of each of `run_ids` that `rows` holds, one frame of one chunk per run, in the order of `rows`: a
    slice where each run's rows are contiguous (as a load leaves them, `_spans`), found once per frame instead of
    filtering every row for each batch of runs (28 s of a cold build at 50,000 runs); else filtered."""
    spans = _spans(rows)
    if spans is None:
        wanted = pl.Series(list(run_ids), dtype=pl.String).implode()
        grouped = rows.filter(pl.col("run_id").is_in(wanted)).partition_by("run_id", as_dict=True, maintain_order=True)
        return [(str(run_id), frame) for (run_id,), frame in grouped.items()]
    at = sorted((spans[r], r) for r in set(run_ids) if r in spans)
    return [(run_id, rows.slice(start, length).rechunk()) for (start, length), run_id in at]


def subset(loaded: Loaded, run_ids: Sequence[str]) -> Loaded:
    """These runs' records alone, enough for `full_rows` of them elsewhere (a worker process writing a download): their
    rows (slices of `rows`, copied only when pickled), which of them were held out, and `runs` with only their ids,
    paths and sha256s (where `full_rows` reads a held-out run's file again)."""
    slices = run_slices(loaded.rows, run_ids)
    ids = [run_id for run_id, _ in slices]
    return Loaded(
        runs=loaded.runs.filter(pl.col("run_id").is_in(ids)).select("run_id", "path", "sha256"),
        rows=pl.concat([frame for _, frame in slices], rechunk=False) if slices else loaded.rows.clear(),
        held_out={run_id: loaded.held_out[run_id] for run_id in ids if loaded.held_out.get(run_id)},
        root=loaded.root,
        held_in={run_id: loaded.held_in[run_id] for run_id in ids if run_id in loaded.held_in},
    )


_SPANS: dict[int, tuple[weakref.ref[pl.DataFrame], dict[str, tuple[int, int]] | None]] = {}
"""Per rows frame alive (by id, dropped with the frame), each run's (offset, length) in it (`_spans`)."""


def _spans(rows: pl.DataFrame) -> dict[str, tuple[int, int]] | None:
    """Each run's rows in `rows` as (offset, length), from the run-length encoding of `run_id`, worked out once per
    frame; None when a run's rows are not contiguous (a frame put together otherwise than by a load)."""
    known = _SPANS.get(id(rows))
    if known is not None and known[0]() is rows:
        return known[1]
    found: dict[str, tuple[int, int]] = {}
    start, stretches = 0, 0
    for length, run_id in rows.select(pl.col("run_id").rle()).unnest("run_id").iter_rows():
        found.setdefault(run_id, (start, length))
        start, stretches = start + length, stretches + 1
    spans = found if len(found) == stretches else None  # a run met twice: its rows are apart
    key = id(rows)

    def forget(_: object, key: int = key) -> None:
        _SPANS.pop(key, None)

    _SPANS[key] = (weakref.ref(rows, forget), spans)
    return spans


def _put_aside(run_id: str, where: tuple[str, int, int]) -> pl.DataFrame:
    """A run's every row as its load put them aside (`Loaded.held_in`: this build's own file, written by its read
    of the run's file, whose checks those rows passed), as `_read_again` gives them."""
    path, first, count = where
    with pa.OSFile(path) as source:
        reader = pa.ipc.open_file(source)
        table = pa.Table.from_batches([reader.get_batch(i) for i in range(first, first + count)], schema=_SAMPLE_SCHEMA)
    return _frame(table).with_columns(run_id=pl.lit(run_id, dtype=pl.String)).select(_ROW_COLUMNS)


def _read_again(root: Path, rel: str, sha256: str) -> pl.DataFrame:
    """One loaded file's every row, read again (`full_rows`); a ValueError naming the file when its bytes are no
    longer those it was loaded with. The same bytes passed every check when they were loaded, so they are read and
    upgraded as then (`_read_checked`), not checked again (a third of a cold build's downloads at 5k runs); the run
    id is the file's name, which the load checked the record's against."""
    path = root / rel
    content = read_bounded(path)
    if hashlib.sha256(content).hexdigest() != sha256:
        raise ValueError(f"{rel}: changed since this build loaded it (its sha256 is no longer {sha256}): build again")
    source = pa.BufferReader(content)
    meta = pq.ParquetFile(source).metadata
    table = schema.upgrade(_read_record(source, meta, dict(footer.key_values(content, meta.metadata or {}))))
    samples = table.select(_SAMPLE_COLUMNS)
    if not samples.schema.equals(_SAMPLE_SCHEMA):
        samples = samples.cast(_SAMPLE_SCHEMA)
    return _frame(samples).with_columns(run_id=pl.lit(path.stem, dtype=pl.String)).select(_ROW_COLUMNS)
