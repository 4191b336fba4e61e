"""MkDocs' Markdown conversion, kept per page for the next build: a page whose Markdown is the same as last time gets
last time's HTML, table of contents and title back instead of being converted again, and a page whose HTML is the
same gets last time's search-index entries back (Material's search plugin parses every page's HTML otherwise).

Converting the generated pages is most of MkDocs' time (a board of thousands of rows is a large table), and a new run
changes only the few pages that show it. Everything else MkDocs does to a page (the theme's template, the navigation,
the search index) still runs on every page, so the site is what a full conversion makes, byte for byte.

An entry is keyed by everything a conversion reads: the page's Markdown (as the plugins before this one left it), its
place in the site, the names of every file of the site (a link resolves to a page only where that page exists), the
Markdown settings of the configuration; the build store (`store`, kind `pages`) adds the code and libraries that make
output (`fingerprint`: this module, the versions of Markdown and its extensions, Pygments, MkDocs and MkDocs Material
among them), reads an entry only when its bytes hash to their noted sha256, and keeps only the entries a build used.
A missing, damaged or foreign entry is converted again.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from mkdocs.plugins import BasePlugin, event_priority
from mkdocs.structure.toc import AnchorLink, get_toc

from generator import progress, store

NAME = "fairfight/page-cache"
"""The plugin's name among the configuration's plugins (`add_to`)."""


class PageCache(BasePlugin):  # no plugin options: it is added in code (`add_to`), not by mkdocs.yml
    def __init__(self, kept: store.Store) -> None:
        super().__init__()
        self.store = kept
        self.site_key = ""
        self.hits = self.misses = 0
        self._wanted: dict[str, str] = {}  # page src_uri -> its entry's key, for pages converted afresh
        self._used: set[str] = set()
        self._sources: dict[str, str] = {}  # page src_uri -> its Markdown, for pages served from the cache
        self._search_config = ""
        self._pages = 0
        self._converting = self._writing = progress.Progress("site pages (MkDocs)", 0)

    @event_priority(-100)  # after the search plugin's, which makes its index there
    def on_config(self, config: Any) -> Any:
        search = next((p for name, p in config.plugins.items() if name.endswith("search")), None)
        index = getattr(search, "search_index", None)
        if index is not None and hasattr(index, "add_entry_from_context") and hasattr(index, "entries"):
            index.add_entry_from_context = functools.partial(self._index_page, index, index.add_entry_from_context)
            self._search_config = json.dumps(getattr(search, "config", {}), sort_keys=True, default=str)
        return config

    def _index_page(self, index: Any, add: Any, page: Any) -> None:
        """The search plugin's entries for `page` (what its HTML, table of contents, title and front matter give):
        last build's when all of those are the same, else made by the plugin (its HTML parser reads every page)."""
        text = json.dumps(
            [self._search_config, page.url, page.content, [_token(a) for a in page.toc], page.title, page.meta],
            sort_keys=True,
            default=str,
        )
        key = "search-" + hashlib.sha256(f"{self.site_key}\n{text}".encode()).hexdigest()
        entry = self._read(key)
        if entry is not None:
            index.entries.extend(entry["entries"])
            self._used.add(key)
            return
        before = len(index.entries)
        add(page)
        self._store(key, {"key": key, "entries": index.entries[before:]})

    def on_files(self, files: Any, *, config: Any) -> Any:
        settings = {
            "extensions": [str(e) for e in config["markdown_extensions"]],
            "configs": config["mdx_configs"],
            "directory_urls": config["use_directory_urls"],
            "validation": str(config["validation"]),
        }
        digest = hashlib.sha256()  # the store's key adds this module, Markdown's extensions, MkDocs (`fingerprint`)
        digest.update(json.dumps(settings, sort_keys=True, default=str).encode())
        digest.update("\n".join(sorted(f.src_uri for f in files)).encode())
        self.site_key = digest.hexdigest()
        self._pages = len(files.documentation_pages())
        self._converting = progress.Progress("site pages (MkDocs)", self._pages, unit="pages converted")
        return files

    def _key(self, page: Any, text: str) -> str:
        return hashlib.sha256(f"{self.site_key}\n{page.file.src_uri}\n{text}".encode()).hexdigest()

    @event_priority(-100)  # last: the Markdown as the other plugins leave it is what would be converted
    def on_page_markdown(self, text: str, *, page: Any, config: Any, files: Any) -> str:
        key = self._key(page, text)
        entry = self._read(key)
        if entry is None:
            self._wanted[page.file.src_uri] = key
            return text
        page.fairfight_cached = entry  # restored once MkDocs has "converted" the empty text
        self._sources[page.file.src_uri] = text
        self._used.add(key)
        self.hits += 1
        return ""

    @event_priority(100)  # first: every other plugin sees the page as a full conversion leaves it
    def on_page_content(self, html: str, *, page: Any, config: Any, files: Any) -> str:
        entry = getattr(page, "fairfight_cached", None)
        if entry is not None:
            del page.fairfight_cached
            page.markdown = self._sources.pop(page.file.src_uri)
            page.toc = get_toc(entry["toc"])
            page._title_from_render = entry["title"]
            page.present_anchor_ids = set(entry["anchors"])
            if page.links_to_anchors is not None:  # only kept when MkDocs logs above debug, as render() does
                page.links_to_anchors = {
                    target: links
                    for uri, links in entry["links"].items()
                    if (target := files.get_file_from_path(uri)) is not None
                }
            self._converting.advance()
            return str(entry["content"])
        key = self._wanted.pop(page.file.src_uri, None)
        if key is not None:
            self.misses += 1
            self._write(key, page, html)
        self._converting.advance()
        return html

    def on_env(self, env: Any, *, config: Any, files: Any) -> Any:
        self._converting.close()  # every page converted: MkDocs writes them next
        self._writing = progress.Progress("site pages (MkDocs)", self._pages, unit="pages written")
        return env

    def on_post_page(self, output: str, *, page: Any, config: Any) -> str:
        self._writing.advance()
        return output

    def on_post_build(self, *, config: Any) -> None:
        self._writing.close()

    def _read(self, key: str) -> dict[str, Any] | None:
        data = self.store.get(KIND, key)
        if data is None:
            return None
        try:
            entry = json.loads(data)
        except ValueError:  # whole bytes that are not an entry: converted again
            return None
        return entry if isinstance(entry, dict) and entry.get("key") == key else None

    def _write(self, key: str, page: Any, html: str) -> None:
        entry = {
            "key": key,
            "content": html,
            "toc": [_token(a) for a in page.toc],
            "title": page._title_from_render,
            "anchors": list(page.present_anchor_ids or ()),
            "links": {f.src_uri: links for f, links in (page.links_to_anchors or {}).items()},
        }
        self._store(key, entry)

    def _store(self, key: str, entry: dict[str, Any]) -> None:
        self.store.put(KIND, key, json.dumps(entry).encode())
        self._used.add(key)


KIND = "pages"
"""The store's kind for converted pages and their search entries."""


def _token(anchor: AnchorLink) -> dict[str, Any]:
    """A table-of-contents entry as the Markdown toc extension's token, which `get_toc` reads."""
    return {
        "level": anchor.level,
        "id": anchor.id,
        "name": anchor.title,
        "children": [_token(c) for c in anchor.children],
    }


def add_to(config: Any, kept: store.Store) -> PageCache:
    """Add the cache (entries in the build store `kept`) to a loaded MkDocs configuration's plugins."""
    plugin = PageCache(kept)
    config.plugins[NAME] = plugin
    return plugin
