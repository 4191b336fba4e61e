"""`python -m generator.validate [FILES]`: check result files the way the site build does, before submitting.

Exit status 0 when every file is good, 1 otherwise; each problem names the file, the row and the field.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from generator import load

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m generator.validate", description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="*", type=Path, help="result files or folders (default: data/)")
    args = p.parse_args(argv)
    files: list[Path] = []
    for target in args.files or [ROOT / "data"]:
        files.extend(load.result_files(target) if target.is_dir() else [target])
    bad = 0
    for path in files:
        _, problems = load.read_one(path)
        for problem in problems:
            print(f"{path}: {problem}")
        bad += bool(problems)
    print(f"{len(files)} file(s) checked, {bad} with problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
