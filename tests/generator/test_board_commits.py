"""Boards name the harness commit of every row's runs and warn when their ranked rows mix commits (issue 26); the
footer and the downloads page name the generator's versions. Record values are hostile: only hex is linked."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import numpy as np
import yaml

from generator import build, derive, load, render
from generator.derive import changelog, checks
from generator.load import history, packages
from generator.render import commits, pages
from runners import provenance, store
from tests.generator.test_claims_and_parity import _training_run

ROOT = Path(__file__).resolve().parents[2]
A, B = "a" * 7 + "1" * 33, "b" * 7 + "2" * 33
REPO = "https://example.org/fairfight"
HOSTILE = '<img src=x onerror=alert(1)>"|'


def test_only_hex_commits_are_linked_and_only_to_a_plain_repository_address() -> None:
    link = str(commits.link(A.upper(), REPO))
    assert link == f'<a href="{REPO}/commit/{A}" title="{A}"><code>{A[:7]}</code></a>'
    assert str(commits.link(A, None)) == f'<span title="{A}"><code>{A[:7]}</code></span>'  # no repository: no link
    assert commits.valid(f" {A}\n") == A
    for bad in (HOSTILE, "abc123", "g" * 40, "a" * 65, "javascript:alert(1)", f"{A[:7]} x"):
        shown = str(commits.link(bad, REPO))
        assert shown.startswith("<code title=") and "href" not in shown, shown
        assert "<img" not in shown and '"|' not in shown, shown  # escaped: no markup, no table cell boundary
    assert str(commits.link(HOSTILE, REPO)) == (
        '<code title="&#60;img src=x onerror=alert(1)&#62;&#34;&#124;">&#60;img src=x o…</code>'
    )
    assert str(commits.link(None, REPO)) == "<small>unknown</small>"
    for address in ("javascript:alert(1)", 'https://x.org/"><script>', "ftp://x.org/r", "https://x.org/a b", None, ""):
        assert commits.repo_base(address) is None, address
    assert commits.repo_base("https://github.com/o/r.git/") == "https://github.com/o/r"


def test_a_row_shows_its_commits_once_and_many_as_a_count() -> None:
    # an abbreviated commit and the whole one it begins are one commit
    assert commits.distinct([A, A[:7], None, B, None]) == [A, None, B]
    cell = str(commits.cell([A, B], REPO))
    assert cell.count("<a href=") == 2 and f"/commit/{B}" in cell
    many = [f"{i:x}" * 7 for i in range(1, 6)]
    cell = str(commits.cell(many, REPO))
    assert cell == '<span title="1111111, 2222222, 3333333, 4444444, 5555555">5 commits</span>'
    assert str(commits.cell([], REPO)) == "–"
    assert commits.mixed([[A, A[:7]], [A]], REPO) is None  # one commit, however written
    note = commits.mixed([[A], [B, HOSTILE], [B]], REPO)
    assert note["count"] == 3 and [c["runs"] for c in note["commits"]] == [2, 1, 1]
    # most runs first, then in the order first seen; the hostile value is never a link
    assert [str(c["commit"]) for c in note["commits"]] == [str(commits.link(v, REPO)) for v in (B, A, HOSTILE)]


def _site_pages(tmp_path: Path) -> Path:
    """The generated pages (Markdown and board JSON) of two training boards: `w` ranks runs of two harness commits
    and one hostile value, `w1` runs of one commit."""
    t0 = datetime(2026, 11, 29, tzinfo=UTC)
    losses = list(np.linspace(6.2, 4.0, 26))
    data = tmp_path / "data"
    for run_id, variant, workload, commit in (
        ("base-1", "base", "w", A),
        ("fast-1", "fast", "w", B),
        ("fast-2", "fast", "w", HOSTILE),  # a repeat of fast-1's configuration: one row of two runs
        ("base-2", "base", "w1", A[:7]),
        ("fast-3", "fast", "w1", A),  # the same commit, abbreviated on the other run
    ):
        store.write_run(data, _training_run(run_id, variant, losses, t0, workload=workload, commit=commit))
    loaded, summary = checks.checked(load.load(data))
    docs = tmp_path / "docs"
    sink = pages.Charts(docs, tmp_path / "svg")
    results = derive.results(loaded, summary)
    in_git = history.repo(data) is not None
    render.boards.write_pages(
        results, docs, sink, changelog.changelog([], results, in_git), repo_url=REPO, built_with=packages.built_with()
    )
    sink.finish()
    return docs


def test_a_board_mixing_commits_says_so_and_every_row_names_its_commits(tmp_path: Path) -> None:
    docs = _site_pages(tmp_path)
    mixed = (docs / "leaderboards" / "cpu-smoke-w.md").read_text()
    assert "This board mixes 3 harness commits: " in mixed and "may not be comparable" in mixed
    assert mixed.index("This board mixes") < mixed.index("## Ranking")  # near the top, above the ranking
    assert f'<a href="{REPO}/commit/{A}" title="{A}"><code>{A[:7]}</code></a> (1 ranked run)' in mixed
    assert f'<a href="{REPO}/commit/{B}"' in mixed
    # the hostile value: shown as escaped text in its row and in the note, never as markup or a link
    assert "<img src=x" not in mixed and mixed.count(str(commits.link(HOSTILE, REPO))) == 2
    rows = {line.split(" | ")[1]: line for line in mixed.splitlines() if line.startswith("| 1 | ")}
    assert f"| {commits.link(B, REPO)} {commits.link(HOSTILE, REPO)} | <code>" in rows["fast"]
    assert f"| {commits.link(A, REPO)} | <code>" in rows["base"]
    one = (docs / "leaderboards" / "cpu-smoke-w1.md").read_text()
    assert "This board mixes" not in one and "Mixed harness commits" not in one
    # each row links its own commit as its run recorded it, whole or abbreviated (7 digits shown either way)
    assert one.count(f'<a href="{REPO}/commit/{A}"') == 1 and one.count(f'<a href="{REPO}/commit/{A[:7]}"') == 1
    rows = json.loads((docs / "leaderboards" / "cpu-smoke-w.json").read_text())["rows"]
    by_variant = {r["variant"]: r for r in rows}
    assert by_variant["base"]["harness_commits"] == [A]
    assert by_variant["fast"]["harness_commits"] == [B, HOSTILE]  # as recorded, in run order
    rows = json.loads((docs / "leaderboards" / "cpu-smoke-w1.json").read_text())["rows"]
    assert {r["variant"]: r["harness_commits"] for r in rows} == {"base": [A[:7]], "fast": [A]}  # as recorded
    downloads = (docs / "downloads.md").read_text()
    assert "| `harness_commits` |" in downloads


def _installed() -> dict[str, str]:
    own = provenance.project_version()  # from git in a checkout (runners/version.py)
    return {"fairfight": own} | {p: metadata.version(p) for p in packages.PACKAGES if p != "fairfight"}


def test_the_versions_are_the_installed_ones_on_the_downloads_page(tmp_path: Path) -> None:
    installed = _installed()
    built_with = packages.built_with()
    assert {v["package"]: v["version"] for v in built_with} == installed
    assert list(installed) == list(packages.PACKAGES)
    env = pages.environment()
    empty = load.load(tmp_path / "nothing")
    render.catalog.write_downloads(env, tmp_path / "docs", empty.runs, empty.rows, built_with)
    text = (tmp_path / "docs" / "downloads.md").read_text()
    for package, version in installed.items():
        assert f"| <code>{package}</code> | {version} |" in text


def test_the_footer_names_the_generator_on_every_page(tmp_path: Path) -> None:
    """A real MkDocs build with the build's configuration: the footer's line (the theme override) and its link."""
    from mkdocs.commands.build import build as mkdocs_build
    from mkdocs.config import load_config

    installed = _installed()
    docs = tmp_path / "docs"
    (docs / "section").mkdir(parents=True)
    (docs / "index.md").write_text("# Home\n")
    (docs / "downloads.md").write_text("# Downloads\n")
    (docs / "section" / "page.md").write_text("# Page\n")
    config = build.mkdocs_config(
        [{"Home": "index.md"}, {"Section": [{"Page": "section/page.md"}]}, {"Downloads": "downloads.md"}],
        packages.built_with(),
    )
    config["extra_css"], config["extra_javascript"] = [], []
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    site = tmp_path / "site"
    mkdocs_build(load_config(str(tmp_path / "mkdocs.yml"), docs_dir=str(docs), site_dir=str(site)))
    line = (
        f"Built by Fair Fight {installed['fairfight']} with polars {installed['polars']}, "
        f"altair {installed['altair']}, MkDocs Material {installed['mkdocs-material']}"
    )
    assert line in (site / "index.html").read_text()
    assert f'{line} · <a href="downloads.html#built-with">every version</a>' in (site / "index.html").read_text()
    assert f'{line} · <a href="../downloads.html#built-with">' in (site / "section" / "page.html").read_text()
    assert not (site / "partials").exists()  # the override is a template, not a file of the site
