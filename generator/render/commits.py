"""The harness commits behind a board: which commit of Fair Fight measured each row's runs, shown short and linked
to the repository, and the note a board carries when its ranked rows come from more than one.

A record's commit is text from a result file. Only a value of 7 to 64 hexadecimal digits (a git object name, whole or
abbreviated, SHA-1 or SHA-256) is taken for a commit and linked; anything else is shown as escaped text, never as a
link, and so is every commit when the build has no repository address (`--repo-url`) or one that is not plain http(s).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from markupsafe import Markup

import generator.render.pages as pages

HEX = re.compile(r"[0-9a-f]{7,64}")
SHORT = 7
"""Digits a commit is shown with (git's default abbreviation)."""
SHOWN = 3
"""A cell lists up to this many commits as links; more are shown as "N commits", with a title listing them."""
_REPO = re.compile(r"https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~%+-]+)*/?")
UNKNOWN = "unknown"
"""How a run without a recorded commit is shown."""
MALFORMED_SHOWN = 12
"""Characters of a value that is not a commit shown in a cell (all of it in the title)."""


def valid(value: Any) -> str | None:
    """The commit as lowercase hex when `value` is one (7 to 64 hex digits), else None."""
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    return text if HEX.fullmatch(text) else None


def repo_base(repo_url: str | None) -> str | None:
    """The repository's web address that commit links start from (`<base>/commit/<hex>`, as GitHub, GitLab and
    Gitea have it), or None when `repo_url` is missing or not a plain http(s) address."""
    if not repo_url or not _REPO.fullmatch(repo_url):
        return None
    return repo_url.rstrip("/").removesuffix(".git")


def distinct(values: Iterable[str | None]) -> list[str | None]:
    """The commits of some runs, each once, in the order first seen: an abbreviated commit and a longer one that
    begins with it are one commit (shown as the longer); a run without a commit is one `None` entry; a malformed
    value stays as recorded."""
    return list(dict.fromkeys(_canonical(list(values)).values()))


def _canonical(values: Sequence[str | None]) -> dict[str | None, str | None]:
    """Each value mapped to the commit it names: the longest recorded value that begins with it (hex only)."""
    hexes = sorted({h for h in map(valid, values) if h}, key=len, reverse=True)
    out: dict[str | None, str | None] = {}
    for value in values:
        h = valid(value)
        out[value] = next((longer for longer in hexes if longer.startswith(h)), h) if h else value
    return out


def link(value: str | None, repo: str | None) -> Markup:
    """One commit for a table cell or a note: its first 7 digits, linked to the commit on the repository when it is
    hex and the build knows the repository (the whole commit in the link's title); otherwise escaped text."""
    h = valid(value)
    if value is None:
        return Markup(f"<small>{UNKNOWN}</small>")
    if h is None:
        return Markup(f'<code title="{pages.md_text(value)}">{pages.md_text(_cut(value))}</code>')
    code = f"<code>{h[:SHORT]}</code>"
    if repo is None:
        return Markup(f'<span title="{h}">{code}</span>')
    return Markup(f'<a href="{pages.md_text(repo)}/commit/{h}" title="{h}">{code}</a>')


def cell(values: Iterable[str | None] | None, repo: str | None = None) -> Markup:
    """A row's commits (its runs', `distinct`): each as `link`, or "N commits" with a title listing them when there
    are more than `SHOWN`."""
    shown = distinct(values or [])
    if not shown:
        return Markup("–")
    if len(shown) > SHOWN:
        listed = ", ".join(_title(v) for v in shown)
        return Markup(f'<span title="{pages.md_text(listed)}">{len(shown)} commits</span>')
    return Markup(" ".join(link(v, repo) for v in shown))


def _title(value: str | None) -> str:
    h = valid(value)
    return h[:SHORT] if h else UNKNOWN if value is None else _cut(value)


def _cut(value: str) -> str:
    return value if len(value) <= MALFORMED_SHOWN else value[:MALFORMED_SHOWN] + "…"


def mixed(run_commits: Iterable[Iterable[str | None]], repo: str | None = None) -> dict[str, Any] | None:
    """A board's note when its ranked rows (each given as its runs' commits) come from more than one harness commit:
    how many, and each commit as `link` with the number of ranked runs it measured (most first); None for a board of
    one commit, or of none."""
    values = [v for commits in run_commits for v in commits]
    canonical = _canonical(values)
    runs: dict[str | None, int] = {}
    for value in values:
        runs[canonical[value]] = runs.get(canonical[value], 0) + 1
    if len(runs) < 2:
        return None
    ordered = sorted(runs.items(), key=lambda item: -item[1])  # stable: equal counts keep the order first seen
    return dict(count=len(runs), commits=[dict(commit=link(c, repo), runs=n) for c, n in ordered])
