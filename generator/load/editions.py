"""Editions: frozen snapshots of the dataset, each a manifest of run ids and the sha256 of their files.

    python -m generator.load.editions release NAME [--data data]

writes `data/editions/NAME.json` once (an existing edition is never rewritten), from a committed `data/` only. The
site shows every edition with its own leaderboards (generator/render/editions.py), and the changelog between
consecutive editions.

Editions are evidence, checked wherever files are loaded (the site, `validate`, `compare`; `audited`):
- every result file an edition lists must still have the bytes it froze: a changed file is rejected, named with
  the edition, and a missing one named; the edition's own board shows the frozen bytes (from git, at the commit the
  manifest records, when they still hash to the frozen sha256) or says which runs it cannot show;
- manifests form a hash chain: each records the sha256 of the one before it (`previous`), so rewriting any edition
  but the latest breaks the next one's link. The chain is followed by its links, each to an edition dated before
  it, never by the dates alone: an edition off it (a forged one, back-dated before the first) is the one rejected.
  Where two editions claim the same place, the one whose manifest git added first stands; outside git (or where git
  added both at once), the one that begins the longer chain, and where they are as long, neither;
- in a git checkout (generator/load/history.py), a committed manifest or result file that git shows modified or moved
  after it was committed (in a later commit, or in the work tree) is rejected where it is now; one deleted or moved
  away (the latest manifest too, which no chain can anchor) is named where it was, with the commit that did it (or
  "in the work tree"): `validate` lists it as missing and exits 1, and the site names it on the home page, on
  Rejected files, on the editions page and on every board of its suite, and the editions that froze its run say
  so on their pages (tests/test_hostile_history.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import itertools
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import generator.load.history as history
import generator.load.slugs as slugs
from generator import load
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
    data_dir = load.canonical(data_dir)  # the paths it freezes are those the site loads
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
    # which manifest git added first settles a tie between two chains (a forger's is added later)
    added = (history.added_order(data_dir, "editions") or {}) if len(kept) > 1 else {}
    return _chained(kept, bad, added), bad


def _chained(kept: list[tuple[str, Edition]], bad: list[load.Rejected], added: dict[str, int]) -> list[Edition]:
    """The editions of the chain, oldest first; each edition off it, and each link of it that does not hold, is added
    to `bad`. The chain follows the links, never the dates alone (a back-dated edition must not displace a genuine
    one): each `previous` names an edition dated before it. It begins at a first edition (`previous` null; or, where
    the one it follows was removed, the first left, which is rejected itself) and goes on through the editions that
    follow: of two first editions, or two that follow one, the one whose manifest git added first (`added`), then the
    one that begins the longer chain, then a true first edition; where none of these tells, neither. On the chain, a
    link whose sha256 is not its predecessor's means that manifest was rewritten after the next was made: it is
    rejected, and the chain goes on."""
    by_name = {edition.name: (rel, edition) for rel, edition in kept}
    refused = {Path(r.path).stem for r in bad}  # manifests rejected already (unreadable, or rewritten as git shows)
    children, starts = _links(kept, by_name, refused)
    depth: dict[str, int] = {}
    for _, edition in reversed(kept):  # newest first: every link goes forward in time, so children come first
        depth[edition.name] = 1 + max((depth[c] for c in children.get(edition.name, [])), default=0)

    def rank(name: str) -> tuple[int, int, bool]:
        # git's word first: a forger may write a longer chain, but cannot add it before the genuine one was added
        return -added.get(by_name[name][0], len(added)), depth[name], starts.get(name, "") is None

    problems: dict[str, str] = {}
    chain = _walked(starts, children, depth, rank, problems)
    _off_chain(chain, starts, children, problems)
    _rewritten_links(chain, by_name, problems)
    bad += [load.Rejected(rel, (problems[edition.name],)) for rel, edition in kept if edition.name in problems]
    return [by_name[name][1] for name in chain if name not in problems]


def _links(
    kept: list[tuple[str, Edition]], by_name: dict[str, tuple[str, Edition]], refused: set[str]
) -> tuple[dict[str, list[str]], dict[str, str | None]]:
    """Each edition's place: the editions that follow each (`children`), and the chain's possible first editions
    (`starts`: each with why it is rejected itself, None for a true first edition): one whose `previous` is null,
    names an edition not here (removed, or `refused`), or one dated not before it."""
    when = {edition.name: datetime.fromisoformat(edition.created_at) for _, edition in kept}
    children: dict[str, list[str]] = {}
    starts: dict[str, str | None] = {}
    for _, edition in kept:
        link = edition.previous
        if link is None:
            starts[edition.name] = None
        elif link["name"] not in by_name:
            starts[edition.name] = f"field 'previous': follows edition {link['name']!r}, which is " + (
                "rejected (see its own line)" if link["name"] in refused else "not here: an edition was removed"
            )
        elif when[link["name"]] >= when[edition.name]:
            starts[edition.name] = (
                f"field 'previous': follows edition {link['name']!r}, dated {by_name[link['name']][1].created_at}, not "
                f"before this one ({edition.created_at}): one of them was re-dated"
            )
        else:
            children.setdefault(link["name"], []).append(edition.name)
    return children, starts


def _walked(
    starts: dict[str, str | None],
    children: dict[str, list[str]],
    depth: dict[str, int],
    rank: Callable[[str], tuple[int, int, bool]],
    problems: dict[str, str],
) -> list[str]:
    """The chain, from the best of `starts` through the best follower of each (by `rank`); where several are as good,
    it ends there and each of them is added to `problems`."""

    def pick(names: list[str]) -> tuple[str | None, list[str]]:
        """The best of `names` and those as good (every one of them, when none is best)."""
        best = max(map(rank, names), default=None)
        tied = [n for n in names if rank(n) == best]
        return (tied[0], []) if len(tied) == 1 else (None, tied)

    chain: list[str] = []
    first, tied = pick(list(starts))
    while True:
        if tied:
            names = ", ".join(repr(n) for n in tied)
            place = f"follow {chain[-1]!r} with" if chain else "begin"
            for name in tied:
                problems.setdefault(name, (
                    f"field 'previous': editions {names} each {place} a chain of {depth[name]} edition(s), and git "
                    "cannot say which was made first: every one is rejected"))  # fmt: skip
        if first is None:
            break
        chain.append(first)
        first, tied = pick(children.get(first, []))
    return chain


def _off_chain(
    chain: list[str], starts: dict[str, str | None], children: dict[str, list[str]], problems: dict[str, str]
) -> None:
    """Adds to `problems` each edition off the chain: a first edition rejected itself or not the chain's, and each
    follower of an edition that the chain does not go on with."""
    on_chain = set(chain)
    for name, why in starts.items():
        if why is not None:
            problems.setdefault(name, why)
        elif name not in on_chain and chain:
            problems.setdefault(name, (
                f"field 'previous': null, but the editions' chain begins at {chain[0]!r} ({len(chain)} edition(s), "
                "each following the one before): this one was made outside the chain, or back-dated"))  # fmt: skip
    for parent, followers in children.items():
        for name in followers:
            if name in on_chain:
                continue
            if parent in on_chain:
                at = chain.index(parent) + 1
                then = f"the chain goes on with {chain[at]!r}" if at < len(chain) else "the chain ends there"
                problems.setdefault(name, f"field 'previous': follows edition {parent!r}, but {then}: this one was "
                                          "made outside the chain")  # fmt: skip
            else:
                problems.setdefault(name, f"field 'previous': follows edition {parent!r}, which is not on the chain "
                                          "of editions (rejected)")  # fmt: skip


def _rewritten_links(chain: list[str], by_name: dict[str, tuple[str, Edition]], problems: dict[str, str]) -> None:
    """Adds to `problems` each edition of the chain whose sha256 is not what the next one recorded of it: its manifest
    was rewritten after the next was made."""
    for before, after in itertools.pairwise(chain):
        link, edition = by_name[after][1].previous, by_name[before][1]
        if link is not None and link["sha256"] != edition.sha256:
            problems.setdefault(before, (
                f"this manifest's sha256 is {edition.sha256}, but edition {after!r}, made after it, recorded "
                f"{link['sha256']}: it was rewritten after that edition was made"))  # fmt: skip


def audited(loaded: load.Loaded, data_dir: Path) -> tuple[load.Loaded, list[tuple[str, str]]]:
    """The loaded files less those history says were rewritten: each file git shows changed or moved after it was
    committed, and each whose bytes differ from what an edition froze, is rejected by name. Returns them, and (file,
    problem) for what is gone: each committed result file or manifest that git shows deleted or moved away (with the
    commit, and the editions that froze it), and each run an edition froze whose file is missing otherwise (named,
    not rejected: there is no file to reject)."""
    import polars as pl

    rewritten = history.rewritten(data_dir) or {}
    found = read_editions(data_dir)
    bad: dict[str, list[str]] = {}
    for path in loaded.runs["path"].to_list():
        if path in rewritten:
            bad.setdefault(path, []).append(f"this result file was {rewritten[path]}")
    # a run whose file was moved here is not here for the editions: it is named where they froze it
    moved = {path for path, why in rewritten.items() if why.startswith("moved here from ")}
    current = {r: (s, p) for r, s, p in loaded.runs.select("run_id", "sha256", "path").iter_rows() if p not in moved}
    gone = dict(history.removed(data_dir, rewritten))
    froze: dict[str, list[str]] = {}  # a file git shows gone -> the editions that froze it
    missing: list[tuple[str, str]] = []
    data_name = Path(data_dir).name
    for edition in found:
        manifest = f"{data_name}/editions/{edition.name}.json"
        for run_id, frozen in edition.runs.items():
            where = f"{data_name}/{edition.paths.get(run_id, f'?/{run_id}.parquet')}"
            if run_id not in current and where in gone:
                froze.setdefault(where, []).append(repr(edition.name))
            elif run_id not in current:
                missing.append((manifest, f"{run_id}: frozen in edition {edition.name!r} ({where}), its result file "
                                          "is missing"))  # fmt: skip
            elif current[run_id][0] != frozen:
                sha, path = current[run_id]
                bad.setdefault(path, []).append(
                    f"field 'sha256': {sha}, but edition {edition.name!r} froze this run as {frozen}: the file was "
                    "changed after it was released (result files are never rewritten)"
                )
    for path, why in gone.items():
        editions_ = f" (frozen in edition {', '.join(froze[path])})" if path in froze else ""
        missing.append((path, f"{why.replace(' after it was committed', f' after it was committed{editions_}', 1)}"))
    if not bad:
        return loaded, missing
    rejected_paths = pl.Series(list(bad), dtype=pl.String).implode()
    ids = loaded.runs.filter(pl.col("path").is_in(rejected_paths))["run_id"].implode()
    rejected = [*loaded.rejected, *(load.Rejected(path, tuple(problems)) for path, problems in sorted(bad.items()))]
    runs = loaded.runs.filter(~pl.col("path").is_in(rejected_paths))
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
    p = argparse.ArgumentParser(
        prog="python -m generator.load.editions", description="Freeze the dataset into an edition."
    )
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
    changed = history.rewritten(data_dir) or {}
    out = []
    for edition in read_editions(data_dir):
        ids = list(edition.runs)
        same = [r for r in ids if current.get(r) == edition.runs[r]]
        recovered, problems = _frozen_elsewhere(edition, [r for r in ids if r not in same], data_dir, repo, changed)
        runs = pl.concat([loaded.runs.filter(pl.col("run_id").is_in(same)), recovered.runs], how="vertical_relaxed")
        rows = pl.concat([loaded.rows.filter(pl.col("run_id").is_in(same)), recovered.rows], how="vertical_relaxed")
        # the versions git gave are read whole (`load_contents`); the others' samples are read again from data/
        held = {r: n for r, n in loaded.held_out.items() if r in set(same)}
        records = load.Loaded(runs=runs, rows=rows, rejected=[], held_out=held, root=loaded.root)
        out.append(Frozen(edition, records, problems))
    return out


def _frozen_elsewhere(
    edition: Edition, ids: list[str], data_dir: Path, repo: history.Repo | None, changed: dict[str, str]
) -> tuple[load.Loaded, list[str]]:
    """The frozen bytes of runs whose files no longer hold them (changed, missing, or rejected now), from git at the
    edition's commit, where they hash to what the edition froze; and a line for each run, saying where its frozen
    figures came from or that they cannot be shown, and what git says became of its file (`changed`: the commit that
    deleted or moved it)."""
    contents: dict[str, bytes] = {}
    problems = []
    data_name = Path(data_dir).name
    for run_id in ids:
        where = edition.paths.get(run_id)
        state = _state(Path(data_dir) / where if where else None, edition.runs[run_id])
        if where and f"{data_name}/{where}" in changed and state == "missing":
            state = changed[f"{data_name}/{where}"].partition(":")[0]  # "moved to ... in commit ..."
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
