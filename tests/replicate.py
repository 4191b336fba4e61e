"""A many-run dataset made of the committed records, for the site's scale benchmark (never committed).

    python -m tests.replicate DEST --runs 20000 [--from data]

Copy k of a record is the same file under a new run id: the id's 6-hex tail is replaced by one derived from
(tail, k), so a tool's record (`...-vllm-bench-<tail>`) and the runner record it checks keep pairing, and every run id
that the record's config names (`pairs_with`, a retraction's runs) is rewritten the same way. Claims (ids without a
tail) are copied once. Every copy validates as the original does; the values are real measurements repeated, so a
board of copies says nothing new: the dataset exists to load, derive and render at scale.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from runners import layout, schema

TAIL = re.compile(r"^(?P<head>\d{8}T\d{6}Z-.+-)(?P<tail>[0-9a-f]{6})$")
QUOTED_ID = re.compile(r'"(\d{8}T\d{6}Z-[^"]+-[0-9a-f]{6})"')


def with_workload(source: Path, folder: Path, run_id: str, **fields: object) -> Path:
    """`source`'s record as run `run_id` in `folder`, its config's workload given `fields` (a field a runner writes
    now and an older record lacks, say): the same rows otherwise. For tests of how such records read."""
    table = pq.read_table(source)
    config = json.loads(table.column("config")[0].as_py())
    config["workload"].update(fields)
    n = table.num_rows
    table = table.set_column(table.schema.get_field_index("config"), "config", pa.array([json.dumps(config)] * n))
    table = table.set_column(table.schema.get_field_index("run_id"), "run_id", pa.array([run_id] * n))
    path = folder / f"{run_id}.parquet"
    pq.write_table(table, path)
    return path


def copy_id(run_id: str, k: int) -> str:
    """Run id `run_id` in copy k (copy 0 is the original)."""
    m = TAIL.match(run_id)
    if m is None or k == 0:
        return run_id
    return m["head"] + hashlib.sha256(f"{m['tail']}:{k}".encode()).hexdigest()[:6]


def copy_table(table: pa.Table, k: int) -> pa.Table:
    """`table` as copy k: its run id, and every run id its config names, rewritten."""
    run_id = table.column("run_id")[0].as_py()
    field = table.schema.field("run_id")  # each column keeps its type (a schema-3 record's are dictionaries)
    table = table.set_column(table.schema.get_field_index("run_id"), field,
                             pa.array([copy_id(run_id, k)] * table.num_rows, field.type))  # fmt: skip
    config = table.column("config")[0].as_py()
    if isinstance(config, str):
        new = QUOTED_ID.sub(lambda m: f'"{copy_id(m[1], k)}"', config)
        if new != config:
            i = table.schema.get_field_index("config")
            field = table.schema.field("config")  # a string column, or a dictionary one as a schema-3 record's
            table = table.set_column(i, field, pa.array([new] * table.num_rows, field.type))
    return table


def sources(data: Path) -> list[Path]:
    """The committed result files, flat in their suite's folder or in its month folders (editions and hidden files
    left out)."""
    found = [*data.glob("*/*.parquet"), *data.glob("*/[0-9][0-9][0-9][0-9]-[0-9][0-9]/*.parquet")]
    return sorted(p for p in found if not p.name.startswith("."))


def _write(table: pa.Table, path: Path) -> None:
    """A copy written in the layout of the version its record says (runners/layout.py)."""
    version = table.column("schema_version")[0].as_py()
    if version >= schema.LAYOUT_VERSION:
        layout.write(table, path)
    else:
        pq.write_table(table, path, compression="zstd")


def replicate(data: Path, dest: Path, runs: int, *, progress: bool = True) -> int:
    """Write at least `runs` result files under `dest` (whole copies of `data`); returns how many were written."""
    files = sources(data)
    replicable = [f for f in files if TAIL.match(f.stem)]
    copies = max(1, -(-(runs - (len(files) - len(replicable))) // max(1, len(replicable))))
    written = 0
    tty = progress and sys.stderr.isatty()
    for i, f in enumerate(files, 1):
        table = layout.read(f)  # read once, written `copies` times, each in its version's layout
        folder = dest / f.parent.relative_to(data)
        folder.mkdir(parents=True, exist_ok=True)
        for k in range(copies if f in replicable else 1):
            _write(copy_table(table, k), folder / f"{copy_id(f.stem, k)}.parquet")
            written += 1
        if tty:
            print(
                f"\r  {i}/{len(files)} records × {copies} copies: {written:,} files",
                end="",
                file=sys.stderr,
                flush=True,
            )
    if tty:
        print(file=sys.stderr)
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.replicate", description=(__doc__ or "").splitlines()[0])
    p.add_argument("dest", type=Path)
    p.add_argument("--runs", type=int, default=20_000, help="at least this many result files (default 20,000)")
    p.add_argument("--from", dest="data", type=Path, default=Path("data"), help="the records to copy (default data/)")
    args = p.parse_args(argv)
    if args.dest.exists() and any(args.dest.iterdir()):
        print(f"error: {args.dest}: not empty; name a new folder", file=sys.stderr)
        return 2
    n = replicate(args.data, args.dest, args.runs)
    print(f"{n:,} result files → {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
