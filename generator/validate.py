"""`fairfight validate [FILES]`: check result files the way the site build does, before submitting.

Every check the build makes: each file's schema and values (runners/schema.py), duplicate run ids and names that
become one page, retractions that name no loaded run, derived figures that cannot be (generator/checks.py), and
history (generator/editions.py `audited`): every file against every edition that froze it, the editions' hash chain,
and in a git checkout any committed file changed since. Exit status 0 when every file
is good, 1 otherwise; each problem names the file, the row and the field.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import polars as pl

from generator import checks, editions, load


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
        # absolute, never resolved: a link is refused by name (load.not_regular), not followed to what it names
        is_dir = target.is_dir() and not target.is_symlink()
        files.extend(Path(os.path.abspath(p)) for p in (load.result_files(target) if is_dir else [target]))
    if not files:
        print("0 file(s) checked")
        return 0
    # each file with its data folder (data/<suite>/<run>.parquet): editions and git history are the folder's
    groups: dict[Path, list[Path]] = {}
    for f in sorted(set(files)):
        groups.setdefault(f.parent.parent, []).append(f)
    rejected, unverified_count, broken = 0, 0, 0
    for data_dir, group in sorted(groups.items()):
        loaded, integrity = editions.audited(load.load(data_dir, files=group), data_dir)
        loaded, summary = checks.checked(loaded)
        loaded.rejected.extend(editions.scan(data_dir)[1])
        base = data_dir.parent
        for bad in loaded.rejected:
            for problem in bad.problems:
                print(f"{base / bad.path}: {problem}")
        # a missing file is named only when the whole folder was given (there are editions only in a data folder)
        whole = bool(integrity) and set(load.result_files(data_dir)) <= set(group)
        for manifest, problem in integrity if whole else []:
            print(f"{base / manifest}: {problem}")
            broken += 1
        unverified = summary.filter((pl.col("origin") == "measured") & pl.col("unverified").is_not_null())
        for path, reason in unverified.select("path", "unverified").iter_rows():
            print(f"{base / path}: accepted but unverified, so not ranked: {reason}")
        rejected += len(loaded.rejected)
        unverified_count += unverified.height
    problems = f"{rejected} with problems" + (f", {broken} missing file(s) an edition froze" if broken else "")
    print(f"{len(set(files))} file(s) checked, {problems}, {unverified_count} unverified")
    return 1 if rejected or broken else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m generator.validate", description=(__doc__ or "").partition("\n")[0])
    add_cli_args(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
