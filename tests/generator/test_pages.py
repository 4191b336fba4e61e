"""The site's pages are declared in one table (generator/render/pages.py SITE) that the build and the navigation
read."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest
import yaml

from generator.render import pages

ROOT = Path(__file__).resolve().parents[2]


def test_every_page_is_declared_once_and_exists_as_a_template_or_a_written_page() -> None:
    files = [p.file for p in pages.SITE]
    assert len(files) == len(set(files)) and len({p.title for p in pages.SITE}) == len(pages.SITE)
    written = {p.name for p in (ROOT / "site_src" / "docs").glob("*.md")}
    for page in pages.SITE:
        if page.supplied:
            assert page.template is None and page.file not in written, page  # made by the build's caller
        elif page.template is None:
            assert page.file in written, page  # a page people write lives in site_src/docs
        else:
            assert (ROOT / "site_src" / "templates" / page.template).exists(), page
    # every page people write is in the navigation, and mkdocs.yml holds no navigation of its own
    assert written <= set(files)
    assert "nav" not in yaml.safe_load((ROOT / "site_src" / "mkdocs.yml").read_text())


def test_the_navigation_follows_the_table_and_an_undeclared_page_is_refused(tmp_path: Path) -> None:
    supplied = [p.file for p in pages.SITE if p.supplied]
    nav = pages.nav([{"cpu-smoke · w": "leaderboards/cpu-smoke-w.md"}], [], [{"m · s": "serving/s-m.md"}], supplied)
    # the table's order, a section's pages under its one entry
    assert [next(iter(entry)) for entry in nav] == list(dict.fromkeys(p.section or p.title for p in pages.SITE))
    guides = next(e["Guides"] for e in nav if "Guides" in e)
    assert [next(iter(g)) for g in guides] == [p.title for p in pages.SITE if p.section == "Guides"]
    # a section with no pages is left out (a site with no served model has no "Serving by model"), and a supplied
    # page (the command reference) is listed only when the build's caller supplied it
    bare = pages.nav([], [])
    assert "Serving by model" not in [next(iter(e)) for e in bare]
    assert "Command reference" not in [next(iter(g)) for e in bare if "Guides" in e for g in e["Guides"]]
    assert nav[1] == {"Leaderboards": [{"cpu-smoke · w": "leaderboards/cpu-smoke-w.md"}]}
    env = jinja2.Environment(loader=jinja2.DictLoader({"x.md.j2": "x"}))
    with pytest.raises(ValueError, match=r"not a page of generator/render/pages\.py SITE"):
        pages.render(env, "x.md.j2", tmp_path / "docs" / "surprise.md")
    assert pages.render(env, "x.md.j2", tmp_path / "docs" / "leaderboards" / "a.md").read_text() == "x"
