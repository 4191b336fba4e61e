"""Editions: frozen snapshots of the dataset, each a manifest of run ids and the sha256 of their files.

    python -m generator.editions release NAME [--data data]

writes `data/editions/NAME.json` once (an existing edition is never rewritten), from a committed `data/` only. The
site shows every edition with its own leaderboards (generator/render/editions.py), and the changelog between
consecutive editions.

Editions are evidence, checked wherever files are loaded (the site, `validate`, `compare`; `audited`):
- every result file an edition lists must still have the bytes it froze: a changed file is rejected, named with
  the edition, and a missing one named; the edition's own board shows the frozen bytes (from git, at the commit the
  manifest records, when they still hash to the frozen sha256) or says which runs it cannot show;
- manifests form a hash chain: each records the sha256 of the one before it (`previous`), so rewriting any edition
  but the latest breaks the next one's link, and the chain's order must agree with the editions' dates;
- in a git checkout, a committed manifest or result file that git shows changed after it was committed (a later
  commit, or the work tree) is rejected, which anchors the latest manifest too (generator/history.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import re
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from generator import history, load, slugs
from runners import bounds

if TYPE_CHECKING:
    pass

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MAX_MANIFEST_BYTES = 64 << 20
"""Largest manifest read (a million runs' entries, about 150 MB, would be refused: split the edition first)."""


@dataclass(frozen=True, slots=True)
class Edition:
    name: str
    created_at: str
    runs: dict[str, str]
    """run_id -> sha256 of its result file when the edition was made."""
    paths: dict[str, str] = field(default_factory=dict)
    """run_id -> where its file was, relative to the data folder (`cpu-smoke/RUN.parquet`)."""
    commit: str | None = None
    """The commit `data/` was at when the edition was made (clean: `release` refuses uncommitted changes)."""
    previous: dict[str, str] | None = None
    """The edition before it: its name and its manifest's sha256 (None for the first)."""
    sha256: str = ""
    """This manifest's own sha256 (the next edition records it)."""


def editions_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "editions"


def release(name: str, data_dir: Path, now: datetime | None = None) -> Path:
    """Freeze every good result file under data_dir into a new edition manifest, chained to the latest edition.
    Refused when data_dir has uncommitted changes (or is not in a git checkout: an edition freezes committed files),
    holds a rejected file, or an earlier edition's integrity is broken."""
    if not NAME.match(name):
        raise SystemExit(f"edition name {name!r}: use letters, digits, '.', '_' and '-' (at most 64)")
    path = editions_dir(data_dir) / f"{name}.json"
    if path.exists():
        raise SystemExit(f"edition {name!r} exists ({path}); editions are never rewritten: choose a new name")
    repo = history.repo(data_dir)
    if repo is None:
        raise SystemExit(
            f"{data_dir} is not in a git checkout: an edition freezes committed files (commit data/ first, in a clone)"
        )
    dirty = history.uncommitted(data_dir) or []
    if dirty:
        listed = ", ".join(dirty[:10]) + (f" (and {len(dirty) - 10} more)" if len(dirty) > 10 else "")
        raise SystemExit(
            f"refusing to release: {data_dir} has uncommitted changes ({listed}); commit them (or move them out) first"
        )
    loaded, integrity = audited(load.load(data_dir, lean=True), data_dir)
    if loaded.rejected or integrity:
        listed = "; ".join(
            [f"{r.path}: {r.problems[0]}" for r in loaded.rejected] + [f"{p}: {m}" for p, m in integrity]
        )
        raise SystemExit(f"refusing to release with rejected files or broken editions (fix them first): {listed}")
    found = read_editions(data_dir)
    latest = found[-1] if found else None
    runs = sorted(loaded.runs.select("run_id", "sha256", "path").iter_rows())
    when = (now or datetime.now(UTC)).replace(microsecond=0)
    if latest is not None and when <= datetime.fromisoformat(latest.created_at):
        raise SystemExit(
            f"refusing to release: the latest edition, {latest.name}, is dated {latest.created_at}, not earlier"
        )
    manifest = {
        "name": name,
        "created_at": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": repo.head,
        "previous": None if latest is None else {"name": latest.name, "sha256": latest.sha256},
        "runs": [{"run_id": r, "sha256": h, "path": p.split("/", 1)[1]} for r, h, p in runs],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, indent=1) + "\n")
    tmp.replace(path)
    return path


def read_editions(data_dir: Path) -> list[Edition]:
    """Every well-formed edition, oldest first (`scan` also reports the others)."""
    return scan(data_dir)[0]


_SHA256 = re.compile(r"[0-9a-f]{64}")
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_RUN_PATH = re.compile(
    r"[A-Za-z0-9][A-Za-z0-9._+-]{0,99}/([0-9]{4}-(0[1-9]|1[0-2])/)?[A-Za-z0-9][A-Za-z0-9._+-]{0,199}\.parquet"
)
"""Where an edition's run lies under data/: its suite's folder, or a month folder in it (runners/store.py)."""


def _manifest_problem(raw: object) -> str | None:
    """Why a manifest cannot be shown (a manifest is a file in data/ like any other: hostile until checked)."""
    if not isinstance(raw, dict):
        return "not a JSON object"
    name, created, runs = raw.get("name"), raw.get("created_at"), raw.get("runs")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        return "field 'name': not a plain edition name (letters, digits, . _ -; at most 64)"
    if not isinstance(created, str) or len(created) > 40:
        return "field 'created_at': not a timestamp"
    try:
        when = datetime.fromisoformat(created)
    except ValueError:
        return "field 'created_at': not a timestamp"
    if when.utcoffset() != timedelta(0):
        return "field 'created_at': not a UTC timestamp (editions are ordered by it: 2026-12-01T10:00:00Z)"
    commit, previous = raw.get("commit"), raw.get("previous", ...)
    if commit is not None and not (isinstance(commit, str) and _COMMIT.fullmatch(commit)):
        return "field 'commit': not a commit id (40 or 64 hex digits) or null"
    if previous is ...:
        return "field 'previous': missing (null for the first edition, else the name and sha256 of the one before)"
    if previous is not None and not (
        isinstance(previous, dict)
        and set(previous) == {"name", "sha256"}
        and isinstance(previous["name"], str)
        and NAME.fullmatch(previous["name"])
        and isinstance(previous["sha256"], str)
        and _SHA256.fullmatch(previous["sha256"])
    ):
        return 'field \'previous\': not null nor {"name": ..., "sha256": ...} of the edition before'
    if not isinstance(runs, list) or len(runs) > 1_000_000:
        return "field 'runs': not a list of runs"
    seen = set()
    for i, run in enumerate(runs):
        ok = isinstance(run, dict) and isinstance(run.get("run_id"), str) and isinstance(run.get("sha256"), str)
        if not ok or not bounds.NAMES["run_id"].fullmatch(run["run_id"]) or not _SHA256.fullmatch(run["sha256"]):
            return f"runs[{i}]: needs a plain run_id and a sha256 of 64 hex digits"
        where = run.get("path")
        if where is not None and not (isinstance(where, str) and _RUN_PATH.fullmatch(where)):
            return f"runs[{i}]: field 'path': not SUITE/RUN.parquet nor SUITE/YYYY-MM/RUN.parquet"
        if run["run_id"] in seen:
            return f"runs[{i}]: {run['run_id']!r} listed twice"
        seen.add(run["run_id"])
    return None


def scan(data_dir: Path) -> tuple[list[Edition], list[load.Rejected]]:
    """Every edition, oldest first, and each manifest that could not be read or does not hold, with why: unreadable
    or not a regular file, malformed, not named for its file, sharing a page with another (every manifest of such a
    name is rejected), or breaking the hash chain. In a git checkout, a manifest git shows changed after it was
    committed is rejected too."""
    bad: list[load.Rejected] = []
    candidates: list[tuple[str, Edition]] = []
    rewritten = history.rewritten(data_dir) or {}
    folder = editions_dir(data_dir)
    for path in sorted(folder.glob("*.json")) if folder.is_dir() and not folder.is_symlink() else []:
        rel = path.relative_to(Path(data_dir).parent).as_posix()
        try:
            content = load.read_bounded(path, MAX_MANIFEST_BYTES)
            raw = bounds.parse(content.decode())
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
            bad.append(load.Rejected(rel, (f"not a readable edition manifest: {e}",)))
            continue
        problem = _manifest_problem(raw)
        if problem is None and raw["name"] != path.stem:
            problem = (
                f"field 'name': {raw['name']!r}, but the file is {path.name}: an edition is data/editions/NAME.json"
            )
        if problem is None and rel in rewritten:
            problem = f"this manifest was {rewritten[rel]}"
        if problem is not None:
            bad.append(load.Rejected(rel, (problem,)))
            continue
        runs = raw["runs"]
        edition = Edition(
            name=raw["name"],
            created_at=raw["created_at"],
            runs={r["run_id"]: r["sha256"] for r in runs},
            paths={r["run_id"]: r["path"] for r in runs if r.get("path")},
            commit=raw.get("commit"),
            previous=raw["previous"],
            sha256=hashlib.sha256(content).hexdigest(),
        )
        candidates.append((rel, edition))
    by_page: dict[str, list[tuple[str, Edition]]] = {}
    for rel, edition in candidates:
        by_page.setdefault(slugs.slug(edition.name).casefold(), []).append((rel, edition))
    kept: list[tuple[str, Edition]] = []
    for same in by_page.values():
        if len(same) == 1:
            kept += same
            continue
        names = ", ".join(repr(e.name) for _, e in same)
        bad += [load.Rejected(rel, (f"field 'name': {names} would have the same page: every one is rejected",))
                for rel, _ in same]  # fmt: skip
    kept.sort(key=lambda item: (datetime.fromisoformat(item[1].created_at), item[1].name))
    return _chained(kept, bad), bad


def _chained(kept: list[tuple[str, Edition]], bad: list[load.Rejected]) -> list[Edition]:
    """The editions whose chain holds, oldest first; each link that does not hold is added to `bad`. An edition's
    `previous` must name the edition dated before it and that manifest's sha256: a mismatch means that manifest
    was rewritten after the next was made (it is rejected); a name that does not follow the order means one was
    removed, added or re-dated (the edition claiming it is rejected)."""
    out: list[Edition] = []
    for i, (rel, edition) in enumerate(kept):
        before = kept[i - 1][1] if i else None
        link = edition.previous
        if before is None and link is not None:
            bad.append(load.Rejected(rel, (
                f"field 'previous': follows edition {link['name']!r}, which is not here (or is dated after it): an "
                "edition was removed or re-dated",)))  # fmt: skip
            continue
        if before is not None and link is None:
            bad.append(load.Rejected(rel, (
                f"field 'previous': null, but edition {before.name!r} is dated before it: it was made outside the "
                "chain, or re-dated",)))  # fmt: skip
            continue
        if before is not None and link is not None and link["name"] != before.name:
            bad.append(load.Rejected(rel, (
                f"field 'previous': follows edition {link['name']!r}, but the edition dated before it is "
                f"{before.name!r}: an edition was removed, added or re-dated",)))  # fmt: skip
            continue
        if before is not None and link is not None and link["sha256"] != before.sha256:
            before_rel = kept[i - 1][0]
            bad.append(load.Rejected(before_rel, (
                f"this manifest's sha256 is {before.sha256}, but edition {edition.name!r}, made after it, recorded "
                f"{link['sha256']}: it was rewritten after that edition was made",)))  # fmt: skip
            if out and out[-1] is before:
                out.pop()
        out.append(edition)
    return out


def audited(loaded: load.Loaded, data_dir: Path) -> tuple[load.Loaded, list[tuple[str, str]]]:
    """The loaded files less those history says were rewritten: each file git shows changed after it was committed,
    and each whose bytes differ from what an edition froze, is rejected by name. Returns them, and (manifest, problem)
    for each run an edition froze whose file is missing (named, not rejected: there is no file to reject)."""
    import polars as pl

    rewritten = history.rewritten(data_dir) or {}
    found = read_editions(data_dir)
    bad: dict[str, list[str]] = {}
    for path in loaded.runs["path"].to_list():
        if path in rewritten:
            bad.setdefault(path, []).append(f"this result file was {rewritten[path]}")
    current = {r: (s, p) for r, s, p in loaded.runs.select("run_id", "sha256", "path").iter_rows()}
    missing: list[tuple[str, str]] = []
    data_name = Path(data_dir).name
    for edition in found:
        manifest = f"{data_name}/editions/{edition.name}.json"
        for run_id, frozen in edition.runs.items():
            if run_id not in current:
                where = edition.paths.get(run_id, f"?/{run_id}.parquet")
                missing.append((manifest, f"{run_id}: frozen in edition {edition.name!r} ({data_name}/{where}), its "
                                          "result file is missing"))  # fmt: skip
            elif current[run_id][0] != frozen:
                sha, path = current[run_id]
                bad.setdefault(path, []).append(
                    f"field 'sha256': {sha}, but edition {edition.name!r} froze this run as {frozen}: the file was "
                    "changed after it was released (result files are never rewritten)"
                )
    if not bad:
        return loaded, missing
    gone = pl.Series(list(bad), dtype=pl.String).implode()
    ids = loaded.runs.filter(pl.col("path").is_in(gone))["run_id"].implode()
    rejected = [*loaded.rejected, *(load.Rejected(path, tuple(problems)) for path, problems in sorted(bad.items()))]
    runs = loaded.runs.filter(~pl.col("path").is_in(gone))
    rows = loaded.rows.filter(~pl.col("run_id").is_in(ids))
    return dataclasses.replace(loaded, runs=runs, rows=rows, rejected=rejected), missing


def changelog(previous: Edition | None, current: dict[str, str]) -> dict[str, list[str]]:
    """Runs added, removed and changed (different bytes) from `previous` to `current` (run_id -> sha256)."""
    before = previous.runs if previous else {}
    return {
        "added": sorted(set(current) - set(before)),
        "removed": sorted(set(before) - set(current)),
        "changed": sorted(r for r in set(before) & set(current) if before[r] != current[r]),
    }


def add_cli_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="the edition's name, e.g. 2026-12")
    p.add_argument("--data-dir", "--data", dest="data", type=Path, default=Path("data"),
                   help="result files (default: data/)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    path = release(args.name, args.data)
    print(f"edition {args.name}: {len(json.loads(path.read_text())['runs'])} run(s) frozen in {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m generator.editions", description="Freeze the dataset into an edition.")
    sub = p.add_subparsers(dest="command", required=True)
    add_cli_args(sub.add_parser("release", help="write data/editions/NAME.json from every good result file"))
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())


@dataclass(frozen=True, slots=True)
class Frozen:
    """An edition's records as it froze them (`frozen`)."""

    edition: Edition
    records: load.Loaded
    """Its runs' files where they still hash to what it froze, else the version git holds at its commit."""
    problems: list[str]
    """A line for each run whose file no longer holds its frozen bytes: where its figures came from, or that they
    cannot be shown."""


def frozen(loaded: load.Loaded, data_dir: Path) -> list[Frozen]:
    """Every edition's records, oldest first, from the bytes it froze: its runs' files where they still hash to them
    (`loaded`: the checked records the site shows), and otherwise the version git holds at the edition's commit, if
    that hashes to them; a run neither gives is named, not shown."""
    import polars as pl

    current = dict(loaded.runs.select("run_id", "sha256").iter_rows())
    repo = history.repo(data_dir)
    out = []
    for edition in read_editions(data_dir):
        ids = list(edition.runs)
        same = [r for r in ids if current.get(r) == edition.runs[r]]
        recovered, problems = _frozen_elsewhere(edition, [r for r in ids if r not in same], data_dir, repo)
        runs = pl.concat([loaded.runs.filter(pl.col("run_id").is_in(same)), recovered.runs], how="vertical_relaxed")
        rows = pl.concat([loaded.rows.filter(pl.col("run_id").is_in(same)), recovered.rows], how="vertical_relaxed")
        # the versions git gave are read whole (`load_contents`); the others' samples are read again from data/
        held = {r: n for r, n in loaded.held_out.items() if r in set(same)}
        records = load.Loaded(runs=runs, rows=rows, rejected=[], held_out=held, root=loaded.root)
        out.append(Frozen(edition, records, problems))
    return out


def _frozen_elsewhere(
    edition: Edition, ids: list[str], data_dir: Path, repo: history.Repo | None
) -> tuple[load.Loaded, list[str]]:
    """The frozen bytes of runs whose files no longer hold them (changed, missing, or rejected now), from git at the
    edition's commit, where they hash to what the edition froze; and a line for each run, saying where its frozen
    figures came from or that they cannot be shown."""
    contents: dict[str, bytes] = {}
    problems = []
    data_name = Path(data_dir).name
    for run_id in ids:
        where = edition.paths.get(run_id)
        state = _state(Path(data_dir) / where if where else None, edition.runs[run_id])
        blob = None
        if repo is not None and edition.commit and where:
            blob = history.show(data_dir, edition.commit, f"{data_name}/{where}", load.MAX_FILE_BYTES)
        if blob is not None and hashlib.sha256(blob).hexdigest() == edition.runs[run_id]:
            contents[f"{data_name}/{where}"] = blob
            problems.append(f"{run_id}: result file {state}; shown as frozen, from git at {str(edition.commit)[:12]}")
        else:
            why = "not a git checkout" if repo is None else "git does not hold the frozen bytes"
            problems.append(f"{run_id}: result file {state}, and its frozen bytes cannot be read ({why}): not shown")
    recovered = load.load_contents(data_dir, contents)
    return recovered, problems


def _state(path: Path | None, frozen: str) -> str:
    """What became of a frozen run's file that the site does not show as it is."""
    if path is None or not path.exists():
        return "missing"
    try:
        now = hashlib.sha256(load.read_bounded(path)).hexdigest()
    except (OSError, ValueError):
        return "not a readable file now"
    return "rejected now (see Rejected files)" if now == frozen else "changed since the edition"
