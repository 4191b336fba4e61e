"""The editions index (with the changelog between consecutive editions) and one frozen page per edition, each
from its own `derive.results` (`changelog.Changelog`)."""

from __future__ import annotations

from pathlib import Path

import jinja2
import polars as pl

import generator.render.lists as lists
import generator.render.pages as pages
from generator.derive.changelog import Changelog
from generator.derive.results import Results


def write_pages(
    env: jinja2.Environment,
    docs: Path,
    results: Results,
    changelog: Changelog,
) -> list[dict[str, str]]:
    """The editions index (with changelogs, and what history lost, each line naming the commit: `changelog.gone`)
    and one frozen page per edition, each with every board (of every kind) of its own `derive.results`; returns nav
    entries."""
    entries, nav = [], []
    for logged in changelog.editions:
        edition, log = logged.made.edition, logged.log
        boards = [
            {"suite": b.suite, "workload": b.workload, "kind": b.kind, "unit": b.unit,
             "rows": b.ranked.to_dicts()}
            for b in logged.boards
        ]  # fmt: skip
        href = f"editions/{pages.slug(edition.name)}.md"
        pages.render(
            env,
            "edition.md.j2",
            docs / href,
            edition=edition,
            boards=boards,
            problems=logged.made.problems,
            log=log,
            added=_added(logged.results.runs, log["added"], docs, docs / href, f"edition-{edition.name}-added"),
            previous=logged.previous,
            git=changelog.in_git,
        )
        entries.append(
            {"edition": edition, "href": href, "log": log, "runs": len(edition.runs),
             "problems": len(logged.made.problems)}
        )  # fmt: skip
        nav.append({pages.nav_title(edition.name): href})
    pending = changelog.pending
    pages.render(
        env,
        "editions.md.j2",
        docs / "editions.md",
        entries=list(reversed(entries)),
        pending=pending,
        added=_added(results.runs, pending["added"], docs, docs / "editions.md", "since-latest-edition"),
        latest=changelog.latest,
        git=changelog.in_git,
        gone=changelog.gone,
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
