"""The editions index (with the changelog between consecutive editions) and one frozen page per edition, each
from its own `derive.results` (generator/build.py `edition_results`)."""

from __future__ import annotations

from pathlib import Path

import jinja2

from generator import editions, history, pages
from generator.derive.results import Results

BOARD_UNITS = {"training": "steps/s", "inference": "tokens/s", "serving": "output tokens/s"}
"""The figure each kind of board ranks by, as an edition's page heads its column."""


def write_pages(
    env: jinja2.Environment,
    docs: Path,
    results: Results,
    frozen: list[tuple[editions.Frozen, Results]],
    data_dir: Path,
) -> list[dict[str, str]]:
    """The editions index (with changelogs) and one frozen page per edition, each with every board (of every kind)
    of its own `derive.results`; returns nav entries."""
    current = dict(results.runs.select("run_id", "sha256").iter_rows())
    git = history.repo(data_dir) is not None
    entries, previous, nav = [], None, []
    for made, edition_results in frozen:
        edition = made.edition
        boards = [
            {"suite": b.suite, "workload": b.workload, "kind": b.kind, "unit": BOARD_UNITS[b.kind],
             "rows": b.ranked.to_dicts()}
            for b in edition_results.boards.values()
            if b.ranked.height
        ]  # fmt: skip
        href = f"editions/{pages.slug(edition.name)}.md"
        log = editions.changelog(previous, edition.runs)
        pages.render(
            env,
            "edition.md.j2",
            docs / href,
            edition=edition,
            boards=boards,
            problems=made.problems,
            log=log,
            previous=previous,
            git=git,
        )
        entries.append(
            {"edition": edition, "href": href, "log": log, "runs": len(edition.runs), "problems": len(made.problems)}
        )
        nav.append({pages.nav_title(edition.name): href})
        previous = edition
    pending = editions.changelog(previous, current)
    pages.render(
        env,
        "editions.md.j2",
        docs / "editions.md",
        entries=list(reversed(entries)),
        pending=pending,
        latest=previous,
        git=git,
    )
    return nav
