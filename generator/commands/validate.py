"""`fairfight validate [FILES]`: check result files the way the site build does, before submitting.

Every check the build makes: each file's schema and values (runners/schema.py), duplicate run ids and names that
become one page, retractions that name no loaded run, derived figures that cannot be (generator/derive/checks.py), and
history (generator/load/editions.py `audited`): every file against every edition that froze it, the editions' hash
chain, and in a git checkout any committed file changed, moved or deleted since (named with the commit, when a whole
data folder is checked); and where each file lies (data/<suite>/ or data/<suite>/<YYYY-MM>/, nothing deeper: a folder
named is checked against its data folder). Exit status 0 when every file is good and nothing is missing, 1
otherwise; each problem names the file, the row and the field. `--format json|csv|md` prints the problems
as data (one row each: file, status, problem) for a program or a pull-request comment.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import polars as pl

import generator.derive.checks as checks
import generator.derive.counting as counting
import generator.derive.serving as serving
import generator.load.editions as editions
import generator.store.runcache as runcache
from generator import load, progress
from runners import arguments, formats, store


def add_cli_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="*", type=Path, help="result files or folders (default: data/)")
    p.add_argument("--data-dir", "--data", dest="data", type=Path, default=None,
                   help="a folder of result files (the same as naming it)")  # fmt: skip
    formats.add_format_arg(p, "the problems and the counts")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What validate found: one problem per line (file, status, problem), the counts, the exit status and the count
    line the text ends with (`fairfight submit` keeps it in its folder as the report)."""

    problems: list[dict[str, str]]
    counts: dict[str, int]
    status: int
    line: str

    def text(self) -> str:
        return _text(self.problems, self.line)


class NotFound(Exception):
    """A file or folder named that does not exist (exit status 2)."""


def run(args: argparse.Namespace) -> int:
    data = getattr(args, "data", None)
    # (target, whether it is a data folder by its naming: only the default is; `--data` is the same as naming it)
    targets = [(t, False) for t in [*args.files, *([data] if data else [])]] or [(Path("data"), True)]
    try:
        outcome = check(targets)
    except NotFound as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    fmt = getattr(args, "format", "text")
    table = formats.Table(columns=("file", "status", "problem"), rows=[tuple(p.values()) for p in outcome.problems],
                          notes=(outcome.line,))  # fmt: skip
    data_ = {**outcome.counts, "problems": outcome.problems, "exit_status": outcome.status}
    sys.stdout.write(formats.render(fmt, text=outcome.text, data=data_, table=table))
    return outcome.status


def check(targets: list[tuple[Path, bool]]) -> Outcome:
    """Every check of the site build on `targets` (a file or folder, and whether it is a data folder by its naming);
    NotFound for one that does not exist, before anything is read."""
    files: list[Path] = []
    groups: dict[Path, list[Path]] = {}
    for target, is_data in targets:
        if not target.exists():
            raise NotFound(f"{target}: no such file or folder (run from the folder that holds data/, or name files)")
        if target.is_dir() and not target.is_symlink():
            # every file under a folder is checked against its data folder: one deeper than a suite's month folder,
            # or elsewhere, is refused by name (load.misplaced), as the site refuses it
            named = load.canonical(target)
            data_dir = named if is_data else _data_folder(named)
            found = load.result_files(named)
            groups.setdefault(data_dir, []).extend(found)
            files.extend(found)
            continue
        # a file: its folders resolved, never the file itself (a link is refused by name, load.not_regular)
        path = load.canonical(target.parent) / target.name
        groups.setdefault(load.data_folder(path), []).append(path)
        files.append(path)
    problems: list[dict[str, str]] = []  # {file, status, problem}: what the text prints, one line each
    rejected = 0
    folder = runcache.command_folder()
    runcache.use(folder)
    for data_dir, listed in sorted(groups.items()):
        group = sorted(set(listed), key=lambda file: file.parts)
        whole_dir = set(load.result_files(data_dir)) <= set(group)
        # the load cache holds a whole folder's files: a few files named alone are read as they are (their figures
        # still come from the cache of per-run figures)
        cache = folder if whole_dir else None
        loaded = load.load(data_dir, cache, files=group, lean=True, per_file=serving.as_read())
        serving.remember(loaded.per_file)
        loaded, integrity = editions.audited(loaded, data_dir)
        progress.stage(f"checking the figures of {loaded.runs.height:,} run(s)")
        loaded, summary = checks.checked(loaded)
        loaded.rejected.extend(editions.scan(data_dir)[1])
        base = data_dir.parent
        rejected += len(loaded.rejected)
        for bad in loaded.rejected:
            problems += [{"file": str(base / bad.path), "status": "rejected", "problem": p} for p in bad.problems]
        # a missing file is named only when the whole folder was given (there are editions only in a data folder)
        whole = bool(integrity) and whole_dir
        for manifest, problem in integrity if whole else []:
            problems.append({"file": str(base / manifest), "status": "missing", "problem": problem})
        unverified = summary.filter(counting.MEASURED & pl.col("unverified").is_not_null())
        for path, reason in unverified.select("path", "unverified").iter_rows():
            problems.append({"file": str(base / path), "status": "unverified", "problem": reason})
    counts = {
        "checked": len(set(files)),
        "rejected": rejected,
        "missing": sum(p["status"] == "missing" for p in problems),
        "unverified": sum(p["status"] == "unverified" for p in problems),
    }
    status = 1 if counts["rejected"] or counts["missing"] else 0
    line = (
        f"{counts['checked']} file(s) checked, {counts['rejected']} with problems"
        + (
            f", {counts['missing']} missing (deleted or moved after they were committed, or frozen by an edition)"
            if counts["missing"]
            else ""
        )
        + f", {counts['unverified']} unverified"
    )
    return Outcome(problems, counts, status, line)


def _data_folder(folder: Path) -> Path:
    """The data folder a folder named on the command line belongs to (editions and git history are the data
    folder's): a month folder's suite's parent; a suite's folder's parent (it holds result files or month folders
    itself); else the folder itself (it holds suites' folders, or editions)."""
    if store.MONTH.fullmatch(folder.name):
        return folder.parent.parent
    if (folder / "editions").is_dir():
        return folder
    with os.scandir(folder) as entries:
        suite = any(
            e.name.endswith(".parquet") or (store.MONTH.fullmatch(e.name) and e.is_dir(follow_symlinks=False))
            for e in entries
        )
    return folder.parent if suite else folder


def _text(problems: list[dict[str, str]], line: str) -> str:
    said = {"rejected": "", "missing": "", "unverified": "accepted but unverified, so not ranked: "}
    return "\n".join([*(f"{p['file']}: {said[p['status']]}{p['problem']}" for p in problems), line])


def main(argv: list[str] | None = None) -> int:
    return arguments.command("python -m generator.commands.validate", __doc__, add_cli_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
