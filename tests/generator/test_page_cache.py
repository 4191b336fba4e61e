"""The MkDocs page cache (generator/store/page_cache.py): a real MkDocs Material build of a few pages, built without the
cache, then twice with it. Every byte of the output is the uncached build's, the second build converts nothing it
converted before, and a changed page (or a page whose link target appears) is converted again."""

from __future__ import annotations

import logging
from pathlib import Path

import yaml
from mkdocs.commands.build import build as mkdocs_build
from mkdocs.config import load_config

from generator import store
from generator.store import page_cache


def _site(root: Path, pages: dict[str, str]) -> Path:
    docs = root / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    for name, text in pages.items():
        (docs / name).write_text(text)
    config = {
        "site_name": "cache test",
        "use_directory_urls": False,
        "theme": {"name": "material"},
        "markdown_extensions": ["tables", "attr_list", "md_in_html", {"toc": {"permalink": True}}],
        "plugins": ["search"],
        "nav": [{"Home": "index.md"}, {"Board": "board.md"}],
    }
    (root / "mkdocs.yml").write_text(yaml.safe_dump(config))
    return root


def _build(root: Path, out: Path, cache: Path | None) -> page_cache.PageCache | None:
    config = load_config(str(root / "mkdocs.yml"), site_dir=str(out))
    plugin = page_cache.add_to(config, store.Store(cache)) if cache is not None else None
    mkdocs_build(config)
    return plugin


def _files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


PAGES = {
    "index.md": "# Home\n\nSee [the board](board.md#ranking) and [a later page](later.md).\n\n## Notes\n\ntext\n",
    "board.md": "---\ntitle: The board\n---\n# Board\n\n## Ranking\n\n| a | b |\n|---|---|\n| 1 | *2* |\n\n"
    '<div markdown="1">\n**inside**\n</div>\n\n### Deeper {#deep}\n\nmore\n',
}


def test_cached_builds_are_the_uncached_build_byte_for_byte(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    logging.getLogger("mkdocs").setLevel(logging.WARNING)
    root = _site(tmp_path / "src", PAGES)
    cache = tmp_path / "cache"
    _build(root, tmp_path / "plain", None)
    first = _build(root, tmp_path / "first", cache)
    second = _build(root, tmp_path / "second", cache)
    assert first is not None and second is not None
    assert (first.hits, first.misses) == (0, 2)
    assert (second.hits, second.misses) == (2, 0)  # nothing converted again
    plain = _files(tmp_path / "plain")
    assert "search/search_index.json" in plain and "board.html" in plain
    assert _files(tmp_path / "first") == plain
    assert _files(tmp_path / "second") == plain

    # one page changed: it alone is converted again, and the output is still what an uncached build makes
    (root / "docs" / "board.md").write_text(PAGES["board.md"].replace("| 1 |", "| 3 |"))
    third = _build(root, tmp_path / "third", cache)
    assert third is not None and (third.hits, third.misses) == (1, 1)
    _build(root, tmp_path / "plain-changed", None)
    assert _files(tmp_path / "third") == _files(tmp_path / "plain-changed")
    assert b"<td>3</td>" in (tmp_path / "third" / "board.html").read_bytes()

    # a page appears that another page links to: the link resolves differently, so every page is converted again
    (root / "docs" / "later.md").write_text("# Later\n")
    fourth = _build(root, tmp_path / "fourth", cache)
    assert fourth is not None and fourth.hits == 0
    _build(root, tmp_path / "plain-later", None)
    assert _files(tmp_path / "fourth") == _files(tmp_path / "plain-later")
    assert b'href="later.html"' in (tmp_path / "fourth" / "index.html").read_bytes()


def test_a_damaged_entry_is_converted_again(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    root = _site(tmp_path / "src", PAGES)
    cache = tmp_path / "cache"
    _build(root, tmp_path / "first", cache)
    entries = sorted(p for p in (cache / page_cache.KIND).iterdir() if not p.name.endswith(store.NOTE))
    assert entries  # the pages' conversions and their search entries
    for entry in entries:
        entry.write_bytes(entry.read_bytes()[:40])  # cut short, as a full disk would leave it
    again = _build(root, tmp_path / "again", cache)
    assert again is not None and (again.hits, again.misses) == (0, 2)
    assert _files(tmp_path / "again") == _files(tmp_path / "first")
