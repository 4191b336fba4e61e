"""Editions: frozen snapshots of the dataset, each a manifest of run ids and the sha256 of their files.

    python -m generator.editions release NAME [--data data]

writes `data/editions/NAME.json` once (an existing edition is never rewritten). The site shows every edition
with its own leaderboards, and the changelog between consecutive editions. Because result files are
append-only, an edition's runs stay on the site forever; a file whose bytes no longer match its edition's
sha256 is reported on the edition's page, never silently used.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from generator import load
from runners import shapes

if TYPE_CHECKING:
    import jinja2
    import polars as pl

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True, slots=True)
class Edition:
    name: str
    created_at: str
    runs: dict[str, str]
    """run_id -> sha256 of its result file when the edition was made."""


def editions_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "editions"


def release(name: str, data_dir: Path, now: datetime | None = None) -> Path:
    """Freeze every good result file under data_dir into a new edition manifest."""
    if not NAME.match(name):
        raise SystemExit(f"edition name {name!r}: use letters, digits, '.', '_' and '-' (at most 64)")
    path = editions_dir(data_dir) / f"{name}.json"
    if path.exists():
        raise SystemExit(f"edition {name!r} exists ({path}); editions are never rewritten: choose a new name")
    loaded = load.load(data_dir)
    if loaded.rejected:
        listed = "; ".join(f"{r.path}: {r.problems[0]}" for r in loaded.rejected)
        raise SystemExit(f"refusing to release with rejected files (fix or remove them first): {listed}")
    runs = dict(sorted(loaded.runs.select("run_id", "sha256").iter_rows()))
    manifest = {
        "name": name,
        "created_at": (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "runs": [{"run_id": r, "sha256": h} for r, h in runs.items()],
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
    if not isinstance(runs, list) or len(runs) > 1_000_000:
        return "field 'runs': not a list of runs"
    for i, run in enumerate(runs):
        ok = isinstance(run, dict) and isinstance(run.get("run_id"), str) and isinstance(run.get("sha256"), str)
        if not ok or not shapes.NAMES["run_id"].fullmatch(run["run_id"]) or not _SHA256.fullmatch(run["sha256"]):
            return f"runs[{i}]: needs a plain run_id and a sha256 of 64 hex digits"
    return None


def scan(data_dir: Path) -> tuple[list[Edition], list[load.Rejected]]:
    """Every edition, oldest first, and each manifest that could not be read, with why."""
    from generator import pages

    out: list[Edition] = []
    bad: list[load.Rejected] = []
    slugs: dict[str, str] = {}  # each edition's page, and the edition that has it
    for path in sorted(editions_dir(data_dir).glob("*.json")):
        rel = path.relative_to(Path(data_dir).parent).as_posix()
        try:
            raw = shapes.parse(path.read_text())
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
            bad.append(load.Rejected(rel, (f"not a readable edition manifest: {e}",)))
            continue
        problem = _manifest_problem(raw)
        if problem is None and raw["name"] != path.stem:
            problem = (
                f"field 'name': {raw['name']!r}, but the file is {path.name}: an edition is data/editions/NAME.json"
            )
        if problem is None and pages.slug(raw["name"]) in slugs:
            problem = f"field 'name': {raw['name']!r} would take the page of edition {slugs[pages.slug(raw['name'])]!r}"
        if problem is not None:
            bad.append(load.Rejected(rel, (problem,)))
            continue
        slugs[pages.slug(raw["name"])] = raw["name"]
        out.append(Edition(raw["name"], raw["created_at"], {r["run_id"]: r["sha256"] for r in raw["runs"]}))
    return sorted(out, key=lambda e: (datetime.fromisoformat(e.created_at), e.name)), bad


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


def write_pages(
    env: jinja2.Environment, docs: Path, loaded: load.Loaded, summary: pl.DataFrame, data_dir: Path
) -> list[dict[str, str]]:
    """The editions index (with changelogs) and one frozen page per edition; returns nav entries."""
    import polars as pl

    from generator import derive, pages

    editions = read_editions(data_dir)
    current = dict(summary.select("run_id", "sha256").iter_rows())
    entries, previous, nav = [], None, []
    for edition in editions:
        ids = list(edition.runs)
        runs = loaded.runs.filter(pl.col("run_id").is_in(ids))
        frozen = derive.run_summary(runs, loaded.rows.filter(pl.col("run_id").is_in(ids)))
        problems = [f"{r}: result file missing" for r in ids if r not in current]
        problems += [
            f"{r}: result file changed since the edition" for r in ids if r in current and current[r] != edition.runs[r]
        ]
        boards = [
            {"suite": s, "workload": w, "rows": b.to_dicts()}
            for (s, w), b in sorted(derive.leaderboards(frozen).items())
            if b.height
        ]
        href = f"editions/{pages.slug(edition.name)}.md"
        log = changelog(previous, edition.runs)
        pages.render(
            env,
            "edition.md.j2",
            docs / href,
            edition=edition,
            boards=boards,
            problems=problems,
            log=log,
            previous=previous,
        )
        entries.append({"edition": edition, "href": href, "log": log, "runs": len(ids), "problems": len(problems)})
        nav.append({pages.nav_title(edition.name): href})
        previous = edition
    pending = changelog(previous, current)
    pages.render(
        env, "editions.md.j2", docs / "editions.md", entries=list(reversed(entries)), pending=pending, latest=previous
    )
    return nav
