"""`fairfight validate [FILES]`: check result files the way the site build does, before submitting.

Every check the build makes: each file's schema and values (runners/schema.py), duplicate run ids, retractions
that name no loaded run, and derived figures that cannot be (generator/checks.py). Exit status 0 when every file
is good, 1 otherwise; each problem names the file, the row and the field.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import polars as pl

from generator import checks, load


def add_cli_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="*", type=Path, help="result files or folders (default: data/)")
    p.add_argument("--data-dir", "--data", dest="data", type=Path, default=None,
                   help="a folder of result files (the same as naming it)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    files: list[Path] = []
    targets = [*args.files, *([args.data] if getattr(args, "data", None) else [])]
    for target in targets or [Path("data")]:
        if not target.exists():
            print(f"error: {target}: no such file or folder (run from the folder that holds data/, or name files)",
                  file=sys.stderr)  # fmt: skip
            return 2
        files.extend(p.resolve() for p in (load.result_files(target) if target.is_dir() else [target]))
    if not files:
        print("0 file(s) checked")
        return 0
    # the files are named relative to the folder that holds them all
    base = Path(os.path.commonpath([f.parent for f in files]))
    loaded, summary = checks.checked(load.load(base / "_", files=sorted(set(files))))
    for rejected in loaded.rejected:
        for problem in rejected.problems:
            print(f"{base / rejected.path}: {problem}")
    unverified = summary.filter((pl.col("origin") == "measured") & pl.col("unverified").is_not_null())
    for path, reason in unverified.select("path", "unverified").iter_rows():
        print(f"{base / path}: accepted but unverified, so not ranked: {reason}")
    print(f"{len(set(files))} file(s) checked, {len(loaded.rejected)} with problems, {unverified.height} unverified")
    return 1 if loaded.rejected else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m generator.validate", description=(__doc__ or "").partition("\n")[0])
    add_cli_args(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
