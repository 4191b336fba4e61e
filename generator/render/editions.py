"""The editions index (with the changelog between consecutive editions) and one frozen page per edition, each
from its own `derive.results` (generator/build.py `edition_results`)."""

from __future__ import annotations

from pathlib import Path

import jinja2
import polars as pl

import generator.load.editions as editions
import generator.load.history as history
import generator.render.lists as lists
import generator.render.pages as pages
from generator.derive.results import Results

BOARD_UNITS = {"training": "steps/s", "inference": "tokens/s", "serving": "output tokens/s"}
"""The figure each kind of board ranks by, as an edition's page heads its column."""


def write_pages(
    env: jinja2.Environment,
    docs: Path,
    results: Results,
    frozen: list[tuple[editions.Frozen, Results]],
    data_dir: Path,
    gone: list[dict[str, str]] | None = None,
) -> list[dict[str, str]]:
    """The editions index (with changelogs, and `gone`: what history lost, each line naming the commit) and one
    frozen page per edition, each with every board (of every kind) of its own `derive.results`; returns nav
    entries."""
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
            added=_added(edition_results.runs, log["added"], docs, docs / href, f"edition-{edition.name}-added"),
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
        added=_added(results.runs, pending["added"], docs, docs / "editions.md", "since-latest-edition"),
        latest=previous,
        git=git,
        gone=gone or [],
    )
    return nav


ADDED_COLUMNS = ("run_id", "suite", "workload", "variant", "status", "origin", "started_at", "sha256")
"""What a list of added runs holds of each (`lists.bounded` writes them to its CSV), with the run's page."""


def _added(runs: pl.DataFrame, added: list[str], docs: Path, page: Path, name: str) -> lists.Shown:
    """The runs an edition (or the changelog since the latest) adds, as `page` lists them: in id order when they
    are few, else the newest and a CSV of all (`lists.bounded`)."""
    held = runs.select(ADDED_COLUMNS).with_columns(page=pl.col("run_id").map_elements(pages.run_href, pl.String))
    frame = pl.DataFrame({"run_id": added}, schema={"run_id": pl.String}).join(
        held, on="run_id", how="left", maintain_order="left"
    )
    return lists.bounded(frame, docs, page, name)
