"""The built site in a real headless Chromium: pages load cleanly, charts render, nothing is fetched from outside."""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin, urlparse

import pytest
from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def serve(directory: Path) -> Iterator[str]:
    """A static file server for a built site on 127.0.0.1 (a free port), for as long as the block runs."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()


pytestmark = pytest.mark.bench  # every page of a site built from real torch runs (built_site)


@pytest.fixture(scope="module")
def served_site(built_site: Path):
    with serve(built_site) as url:
        yield url


def test_every_page_loads_clean_with_charts_and_working_links(served_site: str, built_site: Path) -> None:
    assert Path(CHROMIUM).exists(), "install Debian's chromium: apt-get install -y chromium"
    pages = sorted(p.relative_to(built_site).as_posix() for p in built_site.rglob("*.html") if p.name != "404.html")
    assert "leaderboards/cpu-smoke-train-gpt-tiny-mb4.html" in pages
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        errors: list[str] = []
        external: list[str] = []
        page.on("console", lambda m: errors.append(f"{page.url}: {m.text} {m.location}") if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: external.append(r.url) if not r.url.startswith(served_site) else None)
        links: set[str] = set()
        for rel in pages:
            response = page.goto(served_site + rel, wait_until="networkidle")
            assert response is not None and response.ok, rel
            for chart in page.locator("div.ff-chart").all():
                chart.locator("svg").first.wait_for(timeout=15_000)  # vega rendered it from the local bundle
            for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))"):
                target = urljoin(served_site + rel, href)
                if target.startswith(served_site):
                    links.add(target.split("#")[0])
        for link in sorted(links):
            response = page.request.get(link)
            assert response.ok, f"broken internal link {link}"
        board = served_site + "leaderboards/cpu-smoke-train-gpt-tiny-mb4.html"
        page.goto(board, wait_until="networkidle")
        marks = page.locator("#chart-cpu-smoke-train-gpt-tiny-mb4_throughput svg path").count()
        assert marks > 0
        _check_sort_and_filter(page)
        browser.close()
    assert errors == []
    assert external == [], f"requests that left the site: {sorted({urlparse(u).netloc for u in external})}"


def _column(page, table, index: int) -> list[str]:
    return [c.strip() for c in table.locator(f"tbody tr:not([hidden]) td:nth-child({index})").all_inner_texts()]


def _check_sort_and_filter(page) -> None:
    """The ranking table sorts numerically by a clicked header and filters rows by typed text."""
    table = page.locator(".ff-table table").first
    headers = [h.strip() for h in table.locator("thead th").all_inner_texts()]
    steps_col = headers.index("Steps/s") + 1
    variant_col = headers.index("Variant") + 1
    header = table.locator("thead th").nth(steps_col - 1)
    header.click()
    ascending = [float(v.replace(",", "")) for v in _column(page, table, steps_col)]
    assert ascending == sorted(ascending) and len(ascending) == 4  # four variants: the stock repeat shares a row
    header.click()
    descending = [float(v.replace(",", "")) for v in _column(page, table, steps_col)]
    assert descending == sorted(ascending, reverse=True)
    page.locator(".ff-filter").first.fill("fsdp2")
    assert _column(page, table, variant_col) == ["fsdp2-compile"]
    page.locator(".ff-filter").first.fill("")
    assert len(_column(page, table, variant_col)) == 4


@pytest.mark.parametrize(("width", "height"), [(1400, 1000), (820, 1180), (390, 844)])
def test_every_section_is_reachable_from_the_home_page(
    served_site: str, built_site: Path, width: int, height: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """At desktop, tablet and phone widths: every page of the table (generator/pages.py SITE) has a link a reader
    can see from the home page, in the sidebar or, where the sidebar folds away, behind the drawer button. The
    screenshots stay as the test's artefacts."""
    from generator import pages

    shots = tmp_path_factory.mktemp(f"home-{width}")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": width, "height": height})
        page.goto(served_site + "index.html", wait_until="networkidle")
        page.screenshot(path=str(shots / "home.png"))
        drawer = page.locator("label.md-header__button[for='__drawer']")
        if drawer.is_visible():  # a narrow screen: the navigation is one tap away
            drawer.click()
            page.wait_for_timeout(400)
            page.screenshot(path=str(shots / "home-drawer.png"))
        nav = page.locator("nav.md-nav--primary")
        for entry in pages.SITE:
            if entry.file == "index.md":
                continue  # the page itself
            if entry.file in ("leaderboards/", "serving/"):
                if not (built_site / entry.file).exists():
                    continue  # a section this site has no page of (no served model) is not in its navigation
                target = nav.locator(f"a[href^='{entry.file}']").first
            elif entry.file == "editions/":
                target = nav.locator("a[href='editions.html']").first
            else:
                target = nav.locator(f"a[href='{entry.file.replace('.md', '.html')}']").first
            title = nav.get_by_text(entry.section or entry.title, exact=True).first
            if not target.is_visible() and title.is_visible():  # a folded section: its title opens it
                title.click()
                page.wait_for_timeout(300)
            # boards sit in a folded subsection by kind and model: its title opens it
            folded = target.locator("xpath=ancestor::li[contains(@class, 'md-nav__item--nested')][1]/label").first
            if not target.is_visible() and folded.is_visible():
                folded.click()
                page.wait_for_timeout(300)
            assert target.is_visible(), f"{entry.title} cannot be reached from the home page at {width} px"
        browser.close()


def test_vega_loads_only_where_a_chart_is_drawn_and_the_home_page_stays_light(
    served_site: str, built_site: Path
) -> None:
    """The Vega bundle (about 900 KB) is requested by a page only when the page draws a chart; the home page, with
    every file it loads (the search index included), weighs at most 500 KB; no source maps are shipped."""
    assert not list(built_site.rglob("*.map"))
    checked = ["index.html", "methodology.html", "downloads.html", "leaderboards/cpu-smoke-train-gpt-tiny-mb4.html"]
    checked += [p.relative_to(built_site).as_posix() for p in sorted((built_site / "runs").glob("*.html"))[:2]]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        for rel in checked:
            page = browser.new_page()
            sizes: dict[str, int] = {}
            page.on("response", lambda r, sizes=sizes: sizes.__setitem__(r.url, len(r.body()) if r.ok else 0))
            page.goto(served_site + rel, wait_until="networkidle")
            page.wait_for_timeout(500)
            charts = page.locator("div.ff-chart").count()
            vega = any(u.endswith("assets/js/vega.js") for u in sizes)
            assert vega == (charts > 0), (rel, charts, vega)
            if rel == "index.html":
                assert sum(sizes.values()) <= 500 * 1024, sorted(sizes.items(), key=lambda kv: -kv[1])[:5]
            page.close()
        browser.close()


def test_a_run_page_opened_from_disk_shows_its_static_chart_and_says_why(built_site: Path) -> None:
    """`open site/index.html`, as the README first suggests: a run page's chart reads its run's CSV, which a browser
    refuses to a page opened as a file; it shows the static SVG and a line saying why, instead of an empty chart.
    Charts whose data is inside their spec render from disk as they do when served."""
    run_page = next(p for p in sorted((built_site / "runs").glob("*.html")) if (p.with_suffix(".svg")).exists())
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        page.goto(run_page.as_uri(), wait_until="load")
        chart = page.locator("div.ff-chart[data-svg]").first  # the samples chart (a history chart has no SVG)
        chart.locator("p.ff-chart-note").wait_for(timeout=15_000)
        assert "opened from disk" in chart.inner_text()
        image = chart.locator("img").first
        assert image.get_attribute("src") == run_page.with_suffix(".svg").name
        assert page.evaluate("img => img.complete && img.naturalWidth > 0", image.element_handle())
        board = built_site / "leaderboards" / "cpu-smoke-train-gpt-tiny-mb4.html"
        page.goto(board.as_uri(), wait_until="load")
        page.locator("#chart-cpu-smoke-train-gpt-tiny-mb4_throughput svg path").first.wait_for(timeout=15_000)
        browser.close()


def test_search_finds_pages_without_the_other_languages_scripts_and_the_home_title_is_the_sites_name(
    served_site: str, built_site: Path
) -> None:
    """The theme's search scripts for other languages (about 1 MB) are not shipped for an English index, and search
    still answers; the home page's title is the site's name once ("Fair Fight - Fair Fight" before)."""
    assert not (built_site / "assets" / "javascripts" / "lunr").exists()
    failed: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
        page.goto(served_site + "index.html", wait_until="networkidle")
        assert page.title() == "Fair Fight"
        box = page.locator("input.md-search__input")  # in the header at this width
        box.click()
        box.press_sequentially("methodology", delay=20)  # the theme searches on keys typed: fill() types none
        results = page.locator(".md-search-result__item")
        results.first.wait_for(timeout=15_000)
        assert results.count() > 0
        browser.close()
    assert not failed, failed
