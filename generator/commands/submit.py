"""`fairfight submit FILES`: make the pull request of new result files, without a network.

    fairfight submit data/cpu-smoke/2026-12/RUN.parquet ... [--data-dir data] [--out build/submission]

Validates the files as `fairfight validate FILES` does (generator/commands/validate.py, its report kept as
`validate.txt`), finds the board each run joins once it is merged and compares each run with the configuration it
reproduces on the committed data (generator/commands/compare/: the same ratio, interval, A/A floor and verdict as
`fairfight compare`), then writes the pull request's folder: `data/<suite>/<YYYY-MM>/<run>.parquet`, byte-identical
copies where the bench writes them, and `SUMMARY.md` (what is submitted, the comparison, the checklist of Submitting's
section 5), the pull request's description. The figures come from the site's own derivation of the committed data with
the new files added (`derive.results`), as the site will show them once merged; nothing here computes a figure.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

import generator.commands.compare as compare
import generator.commands.validate as validate
import generator.derive.checks as checks
import generator.load.editions as editions
import generator.load.slugs as slugs
import generator.store.runcache as runcache
from generator import derive, load
from runners import arguments, formats, store

SUMMARY = "SUMMARY.md"
REPORT = "validate.txt"
MARK = "Made by `fairfight submit`"
"""What the summary of a submission's folder says, and what tells a previous submission's folder."""
MADE_HERE = {SUMMARY, REPORT, "data"}
"""What a submission's folder holds: one that holds only these is a previous submission, written over."""


class Refused(Exception):
    """A user's mistake, refused before anything is written (exit status 2)."""


class Rejected(Exception):
    """A file validate rejects by itself, so that it cannot even be placed: nothing is written (exit status 1)."""

    def __init__(self, path: Path, problems: list[str]) -> None:
        super().__init__(path, problems)
        self.path, self.problems = path, problems


def add_cli_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", type=Path, metavar="FILE",
                   help="the new result files, or folders of them (as the bench wrote them)")  # fmt: skip
    p.add_argument("--data-dir", "--data", dest="data", type=Path, default=Path("data"), metavar="DIR",
                   help="the committed result files they join (default: data/ in the current directory); files "
                   "under it that are named are the new ones")  # fmt: skip
    p.add_argument("--out", type=Path, default=Path("build") / "submission", metavar="DIR",
                   help="the pull request's folder (default: build/submission/): empty, new, or a previous "
                   "submission's, which is replaced")  # fmt: skip
    p.add_argument(
        "--threshold",
        type=compare.threshold,
        default="5%",
        metavar="CHANGE",
        help="a change beyond this is named in the comparison, as `fairfight compare` does (default: 5%%)",
    )


@dataclass(frozen=True, slots=True)
class New:
    """A new result file: where it is, its run, and where the pull request puts it."""

    path: Path
    run_id: str
    suite: str
    sha256: str
    place: str
    """Its path in the repository: data/<suite>/<YYYY-MM>/<run_id>.parquet."""


def run(args: argparse.Namespace) -> int:
    try:
        out = _out_folder(args.out)
        new = _new_files(args.files, args.data)
    except Refused as e:
        print(f"submit: {e}", file=sys.stderr)
        return 2
    except Rejected as e:
        for problem in e.problems:
            print(f"submit: {e.path}: rejected, as `fairfight validate` rejects it: {problem}", file=sys.stderr)
        print("submit: nothing written: a rejected file is not submitted", file=sys.stderr)
        return 1
    outcome = validate.check([(n.path, False) for n in new])
    with tempfile.TemporaryDirectory(prefix="fairfight-submit-") as work:
        merged = _merged(args.data, new, Path(work))
        runcache.use(None)  # the merged folder is this command's alone: nothing of it belongs in the build's cache
        loaded = load.load(merged, None, lean=True)
        results = derive.results(*checks.checked(editions.audited(loaded, merged)[0]))
        ds = compare.dataset(Path(args.data), results)
        summary = _summary(new, outcome, results, ds, loaded, args)
        # validate checks the files as they lie; beside the committed ones a file may still be rejected (a name
        # that becomes another run's page): the summary names it, and the submission fails as validate would
        merged_out = [r for r in loaded.rejected if Path(r.path).name in {n.path.name for n in new}]
    try:
        _write(out, new, summary, outcome.text() + "\n")
    except OSError as e:  # a full or read-only disk, or a file changed while it was copied: the old folder stands
        print(f"submit: --out {out}: not written: {e}", file=sys.stderr)
        return 1
    print(f"wrote {out}/: {len(new)} file(s) under data/, {SUMMARY} (the pull request's description) and {REPORT}")
    print(f"validate: {outcome.line}")
    for r in merged_out:
        print(f"submit: {r.path}: rejected beside the committed files: {'; '.join(r.problems)}", file=sys.stderr)
    return outcome.status or (1 if merged_out else 0)


def _new_files(named: list[Path], data_dir: Path) -> list[New]:
    """The files named (a folder: every result file under it), each read far enough to place it; a Refused that
    names the first that is missing, not a result file, or committed already."""
    if not data_dir.is_dir():
        raise Refused(f"--data-dir {data_dir}: no such folder (the committed data/ the files join; run from the "
                      "repository root, or pass it)")  # fmt: skip
    paths: list[Path] = []
    folders: set[Path] = set()
    for target in named:
        if not target.exists():
            raise Refused(f"{target}: no such file or folder (name the result files the bench wrote)")
        found = load.result_files(target) if target.is_dir() and not target.is_symlink() else [target]
        if target.is_file() and target.suffix != ".parquet":
            raise Refused(f"{target}: not a result file (the bench writes data/<suite>/<YYYY-MM>/<run_id>.parquet)")
        if not found:
            raise Refused(f"{target}: a folder without result files (*.parquet)")
        paths += found
        if target.is_dir():
            folders.update(found)
    new: dict[str, New] = {}
    for path in paths:
        irregular = load.not_regular(path)
        if irregular:
            raise Refused(f"{path}: {irregular}")
        content = load.read_bounded(path)
        table, problems = load.read_one(path, content)  # the reading and checks the site makes of one file
        if table is None:
            raise Rejected(path, problems)
        first = table.select(["run_id", "suite", "started_at"]).slice(0, 1).to_pylist()[0]
        run_id, suite = first["run_id"], first["suite"]
        place = store.run_path(Path("data"), suite, run_id, first["started_at"])  # names checked by read_one
        committed = store.find(data_dir, suite, run_id)
        if committed is not None and load.canonical(committed) != load.canonical(path):
            raise Refused(f"{path}: run {run_id} is committed already, as {committed}: nothing to submit")
        if committed is not None and _tracked(committed):
            # the bench writes into the committed folder: its new files are those git does not track; a folder named
            # (a month's) may hold committed ones too, which are not the submission's
            if path in folders:
                continue
            raise Refused(f"{path}: run {run_id} is committed already: nothing to submit")
        if run_id in new:
            raise Refused(f"{path}: row 0, field 'run_id': {run_id!r} is also in {new[run_id].path}")
        new[run_id] = New(path, run_id, suite, hashlib.sha256(content).hexdigest(), place.as_posix())
    if not new:
        raise Refused(f"{', '.join(map(str, named))}: every result file there is committed already: nothing to submit")
    return list(new.values())


def _tracked(path: Path) -> bool:
    """Whether git tracks `path` (False outside a checkout, or where git is missing)."""
    try:
        proc = subprocess.run(["git", "ls-files", "--error-unmatch", path.name], cwd=path.parent,
                              capture_output=True, timeout=60, check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


def _out_folder(out: Path) -> Path:
    """The pull request's folder: new, empty, or a previous submission's (only what this command writes)."""
    if out.exists() and not out.is_dir():
        raise Refused(f"--out {out}: a file, not a folder")
    if out.is_dir():
        others = sorted(e.name for e in out.iterdir() if e.name not in MADE_HERE)
        if others:
            raise Refused(f"--out {out}: holds {', '.join(others[:3])}, which no submission wrote: name an empty or "
                          "new folder")  # fmt: skip
        summary = out / SUMMARY
        # replaced whole: only a folder this command wrote (its summary says so), never one that merely holds data/
        if any(out.iterdir()) and not (summary.is_file() and MARK in summary.read_text(errors="replace")):
            raise Refused(f"--out {out}: not empty and not a previous submission (no {SUMMARY} of `fairfight "
                          "submit`): name an empty or new folder")  # fmt: skip
    return out


def _merged(data_dir: Path, new: list[New], work: Path) -> Path:
    """A data folder of the committed files and editions with the new files in their places, as the repository's
    will be once the pull request is merged: each committed file linked (copied where it cannot be), never moved or
    written, so the site's own load and derivation run on it unchanged."""
    merged = work / "data"
    root = load.canonical(data_dir)
    new_paths = {load.canonical(n.path) for n in new}
    for path in load.result_files(root):
        if path.is_symlink() or not path.is_file() or load.canonical(path) in new_paths:
            continue  # what the site refuses unread stays out; the new files go in at their places below
        target = merged / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, target)
        except OSError:
            shutil.copy2(path, target)
    if (root / "editions").is_dir():
        shutil.copytree(root / "editions", merged / "editions", symlinks=True)
    for n in new:
        target = work / n.place
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(n.path, target)
    merged.mkdir(exist_ok=True)
    return merged


def _write(out: Path, new: list[New], summary: str, report: str) -> None:
    """The folder, made beside `out` and put in its place at the end: a failure leaves the previous one whole."""
    out.parent.mkdir(parents=True, exist_ok=True)
    made = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        for n in new:
            target = made / n.place
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(n.path, target)
            copied = hashlib.sha256(target.read_bytes()).hexdigest()
            if copied != n.sha256:  # the file changed while it was read, or the disk did not keep it
                raise OSError(f"{target}: its sha256 {copied} is not the file's {n.sha256}")
        (made / SUMMARY).write_text(summary, encoding="utf-8")
        (made / REPORT).write_text(report, encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        os.replace(made, out)
    finally:
        if made.exists():
            shutil.rmtree(made)


# --- the summary ----------------------------------------------------------------------------------------------------


def _md(text: object) -> str:
    """A value from a record, as Markdown text: escaped, since every value that came from a result file is hostile
    until checked (a pull request's description is rendered)."""
    return formats.md_escape(str(text))


def _summary(
    new: list[New],
    outcome: validate.Outcome,
    results: derive.Results,
    ds: compare.Dataset,
    loaded: load.Loaded,
    args: argparse.Namespace,
) -> str:
    ids = [n.run_id for n in new]
    passed = outcome.status == 0
    lines = [
        f"# Results: {len(new)} run(s) of {', '.join(sorted({n.suite for n in new}))}",
        "",
        f"{MARK} against `{args.data}` (the committed data these runs join). `fairfight validate` "
        f"on these files: **{'passed' if passed else 'failed'}** ({outcome.line}).",
        "",
    ]
    records = {r["run_id"]: r for r in loaded.runs.filter(pl.col("run_id").is_in(ids)).iter_rows(named=True)}
    figures = {r["run_id"]: r for r in ds.runs.filter(pl.col("run_id").is_in(ids)).iter_rows(named=True)}
    for n in new:
        lines += _one(n, outcome, records.get(n.run_id), figures.get(n.run_id), results, ds, args.threshold, ids)
    lines += _checklist(new, outcome, records, figures, ds)
    return "\n".join(lines) + "\n"


def _one(
    n: New,
    outcome: validate.Outcome,
    record: dict[str, Any] | None,
    figure: dict[str, Any] | None,
    results: derive.Results,
    ds: compare.Dataset,
    threshold: float,
    new_ids: list[str],
) -> list[str]:
    """A file's section: what it is, the board it joins and its comparison with the configuration it reproduces."""
    own = [p for p in outcome.problems if Path(p["file"]).name == n.path.name]
    rejected = [p["problem"] for p in own if p["status"] == "rejected"]
    unverified = [p["problem"] for p in own if p["status"] == "unverified"]
    out = [f"## {_md(n.run_id)}", "", f"- file: `{n.place}`", f"- sha256: `{n.sha256}`"]
    if rejected or record is None or figure is None:
        why = rejected or [p for r in ds.rejected if Path(r.path).name == n.path.name for p in r.problems]
        out += ["- validate: **rejected**; the site would leave it out:", *(f"  - {_md(p)}" for p in why), ""]
        return out
    out.append("- validate: accepted" + (", unverified (not ranked):" if unverified else ""))
    out += [f"  - {_md(p)}" for p in unverified]
    what = f"{record['variant']} · {record['engine']} {record['engine_version']}"
    hardware = f"{figure['accelerator_count']} × {figure['accelerator']}"
    out.append(
        f"- run: {_md(what)} on {_md(hardware)}, {_md(record['status'])}, configuration `{figure['settings_hash']}`"
    )
    board = results.boards.get((n.suite, figure["workload"]))
    if board is None:
        out.append(
            f"- board: none (a {_md(figure['kind'])} run of {_md(n.suite)} · {_md(figure['workload'])} is on no board)"
        )
    else:
        href = f"leaderboards/{slugs.slug(board.suite, board.workload)}.html"  # the page the site writes
        title = f"{board.workload} · {board.ran_on or board.suite}"
        out.append(f"- board: joins **{_md(title)}** (`{href}`)")
        out += _standing(board, figure)
    if figure["excluded"]:
        out.append(f"- counts: no: {_md(figure['excluded'])}")
    elif figure["note"]:
        out.append(f"- counts: yes, not on the board: {_md(figure['note'])}")
    out += ["", *_comparison(figure, ds, threshold, new_ids), ""]
    return out


def _standing(board: Any, figure: dict[str, Any]) -> list[str]:
    """Where the run's configuration stands on its board once merged: its rank (the board's own, ties shared), or
    the board's reason the run does not rank."""
    ranked, unranked = board.ranked, board.unranked
    if {"settings_hash", "rank"} <= set(ranked.columns):
        mine = ranked.filter(pl.col("settings_hash") == figure["settings_hash"])
        if mine.height:
            return [f"- rank once merged: {mine['rank'][0]} of {ranked.height} ranked configurations (ties share one)"]
    if {"run_id", "unranked"} <= set(unranked.columns):
        why = unranked.filter(pl.col("run_id") == figure["run_id"])["unranked"].drop_nulls()
        if len(why):
            return [f"- not ranked: {_md(why[0])}"]
    return []


def _comparison(figure: dict[str, Any], ds: compare.Dataset, threshold: float, new_ids: list[str]) -> list[str]:
    """The run against the committed runs of its configuration on its hardware (`compare.compare_sides`), as the
    Markdown table `fairfight compare A B --format md` prints."""
    same = (
        (pl.col("settings_hash") == figure["settings_hash"])
        & (pl.col("suite") == figure["suite"])
        & (pl.col("workload") == figure["workload"])
        & (pl.col("accelerator") == figure["accelerator"])
        & (pl.col("accelerator_count") == figure["accelerator_count"])
        & (pl.col("origin") != "retraction")
        & ~pl.col("run_id").is_in(new_ids)
    )
    committed = ds.runs.filter(same)
    if not committed.height:
        return ["First run of this configuration: nothing to compare with."]
    settings = figure["settings_hash"]
    a = compare.Side(settings, "configuration", f"configuration {settings} (committed, {committed.height} run(s))",
                     committed)  # fmt: skip
    b = compare.Side(figure["run_id"], "run", f"run {figure['run_id']}", ds.runs.filter(pl.col("run_id") ==
                     figure["run_id"]))  # fmt: skip
    report = compare.compare_sides(a, b, ds, threshold)
    data = report.to_json()
    table = compare.output.md_table(data)
    head = f"Compared with the committed runs of its configuration ({committed.height}): A is they, B this run."
    return [head, "", formats.render("md", text=lambda: "", data=data, table=table).rstrip()]


def _checklist(
    new: list[New],
    outcome: validate.Outcome,
    records: dict[str, dict[str, Any]],
    figures: dict[str, dict[str, Any]],
    ds: compare.Dataset,
) -> list[str]:
    """Submitting's section 5, with what could be checked here ticked or said."""

    def box(done: bool) -> str:
        return "[x]" if done else "[ ]"

    commits = []
    for run_id, record in records.items():
        commit, dirty = record.get("harness_commit"), record.get("harness_dirty")
        if not commit:
            commits.append(f"{_md(run_id)}: no harness commit recorded")
            continue
        state = {True: "dirty (uncommitted changes outside data/)", False: "clean", None: "clean or dirty unknown"}
        known = _known_commit(commit, ds.data_dir)
        commits.append(f"{_md(run_id)}: {_md(commit[:12])}, {state[dirty]}" + ("" if known is None else
                       (", a commit of this checkout" if known else ", not a commit of this checkout")))  # fmt: skip
    clean = all(r.get("harness_commit") and r.get("harness_dirty") is False for r in records.values())
    hardware = sorted({_md(f"{f['accelerator_count']} × {f['accelerator']}") for f in figures.values()})
    return [
        "## Checklist (Submitting, section 5)",
        "",
        f"- {box(True)} **The files are untouched**: each copy's sha256 equals its file's (checked when written).",
        f"- {box(outcome.status == 0)} **`fairfight validate` passes**: {outcome.line}.",
        f"- {box(clean)} **The harness commit is a commit of this repository**: " + ("; ".join(commits) or "none"),
        "- [ ] **A note for anything unusual** (another job on the machine, a throttled GPU, a driver changed): "
        "say it here.",
        f"- [ ] **The hardware is named**: the records say {', '.join(hardware) or 'nothing'}; add the machine's "
        "model, its memory and the operating system.",
        "- [ ] **No secrets**: the environment enters a record only through an allowlist; check what you typed in "
        "`--note` and `--source`.",
    ]


def _known_commit(commit: str, data_dir: Path) -> bool | None:
    """Whether the checkout holding `data_dir` has `commit` (None where there is no git checkout to ask)."""
    try:
        proc = subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=load.canonical(data_dir),
                              capture_output=True, timeout=60, check=False)  # fmt: skip
        top = subprocess.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=load.canonical(data_dir),
                             capture_output=True, timeout=60, check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return None if top.returncode != 0 else proc.returncode == 0


def main(argv: list[str] | None = None) -> int:
    return arguments.command("python -m generator.commands.submit", __doc__, add_cli_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
