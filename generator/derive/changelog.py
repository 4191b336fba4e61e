"""The editions as their pages show them: each edition's own `derive.results` (generator/build.py
`edition_results`), the boards it ranks, and its changelog from the edition before (`editions.changelog`: runs
added, removed and changed); then what has changed since the latest edition."""

from __future__ import annotations

from dataclasses import dataclass, field

import generator.load.editions as editions
from generator.derive.results import Board, Results
from generator.load.editions import Edition, Frozen


@dataclass(frozen=True, slots=True, kw_only=True)
class EditionLog:
    """One edition as its page shows it."""

    made: Frozen
    """The edition, its records and a line for each run it cannot show from the bytes it froze."""
    results: Results
    """`derive.results` of its own records."""
    boards: list[Board]
    """Its boards that rank a row, in `results.boards`' order: what its page lists."""
    log: dict[str, list[str]]
    """The runs it added, removed and changed (other bytes) since the edition before (`editions.changelog`)."""
    previous: Edition | None
    """The edition before it (None for the first)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Changelog:
    """Every edition, oldest first, and what has changed since the latest."""

    editions: list[EditionLog]
    pending: dict[str, list[str]]
    """The runs added, removed and changed since the latest edition (all of them without one)."""
    latest: Edition | None
    in_git: bool
    """Whether the data folder is in a git checkout (`history.repo`): else no committed file could be checked."""
    gone: list[dict[str, str]] = field(default_factory=list)
    """Each committed file git shows deleted or moved away, and each run an edition froze whose file is missing
    (`editions.audited`), as `path` and `problem`."""
    gone_by_suite: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    """The lines of `gone` of files under a suite's folder (`data/<suite>/…`, not an edition's manifest), by suite:
    every board of the suite names them."""


def changelog(
    frozen: list[tuple[Frozen, Results]],
    results: Results,
    in_git: bool,
    gone: list[tuple[str, str]] | None = None,
) -> Changelog:
    """The editions (`frozen`: each edition's records and their `derive.results`, oldest first) with their changelogs,
    the changes since the latest to the records of `results`, and what history lost (`gone`: path and problem)."""
    lost = [{"path": path, "problem": problem} for path, problem in gone or []]
    by_suite: dict[str, list[dict[str, str]]] = {}
    for line in lost:
        parts = line["path"].split("/")
        if len(parts) >= 3 and parts[1] != "editions":  # data/<suite>/...: the suite's boards carry it
            by_suite.setdefault(parts[1], []).append(line)
    out, previous = [], None
    for made, of_edition in frozen:
        boards = [b for b in of_edition.boards.values() if b.ranked.height]
        log = editions.changelog(previous, made.edition.runs)
        out.append(EditionLog(made=made, results=of_edition, boards=boards, log=log, previous=previous))
        previous = made.edition
    current = dict(results.runs.select("run_id", "sha256").iter_rows())
    pending = editions.changelog(previous, current)
    return Changelog(editions=out, pending=pending, latest=previous, in_git=in_git, gone=lost, gone_by_suite=by_suite)
