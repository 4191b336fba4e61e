"""The built site in a real headless Chromium: pages load cleanly, charts render, nothing is fetched from outside."""

from __future__ import annotations

import contextlib
import functools
import gzip
import http.server
import re
import shutil
import tempfile
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin, urlparse

import pytest
from playwright.sync_api import Error as PlaywrightError
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


def _host_state() -> str:
    """What the machine had left, for a renderer crash's message: memory, /dev/shm and the temporary folder's disk."""
    meminfo = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines() if ":" in line)
    free = {where: shutil.disk_usage(where).free // 2**20 for where in ("/dev/shm", tempfile.gettempdir())}
    return f"MemAvailable {meminfo.get('MemAvailable', '?').strip()}, free MiB {free}"


def goto(page, url: str):
    """`page.goto(url)` until the network is idle, in a page that `walk` may replace. Where Chromium's renderer
    crashes, the error names the page and what the machine had left (a crash that a page's content causes fails again
    on the same page; see `walk`)."""
    try:
        return page.goto(url, wait_until="networkidle")
    except PlaywrightError as e:
        if "crash" not in str(e).lower():
            raise
        raise RendererCrash(f"Chromium's renderer crashed on {url} ({_host_state()})") from e


class RendererCrash(AssertionError):
    pass


def walk(browser, make_page, urls: list[str], visit) -> list[str]:
    """Open every url in turn in one page (`make_page(browser)` makes it, with its listeners) and call `visit(page,
    url)` on it. A renderer crash on a page is retried once in a fresh page, and returned as a line to warn of: two
    full test runs' renderers crashed in the hostile walk, each on a different small page (hardware.html on a CPU
    machine, leaving no kernel OOM kill; downloads.html on CI), and the test passed when run again; a crash that the
    page's content causes crashes the second time too and fails."""
    page, crashes = make_page(browser), []
    for url in urls:
        try:
            visit(page, url)
        except RendererCrash as first:
            crashes.append(str(first))
        except PlaywrightError as first:  # the renderer crashed after the page loaded ("Target crashed")
            if "crash" not in str(first).lower():
                raise
            crashes.append(f"Chromium's renderer crashed on {url} ({_host_state()}): {str(first)[:200]}")
        else:
            continue
        page = make_page(browser)
        visit(page, url)  # a second crash on the same page fails the test
    return crashes


pytestmark = pytest.mark.bench  # every page of a site built from real torch runs (built_site)


def open_charts(page) -> None:
    """Press every chart's "Interactive chart" button on `page` (a chart shows its static SVG until then, and the
    Vega bundle is fetched at the first press) and wait until each chart is drawn by Vega or says why not."""
    page.evaluate("() => document.querySelectorAll('button.ff-chart-open').forEach(b => b.click())")
    page.wait_for_function(
        "() => Array.from(document.querySelectorAll('div.ff-chart'))"
        ".every(el => el.querySelector('svg') || el.querySelector('p.ff-chart-note') || "
        "(el.textContent.trim() && !el.querySelector('img.ff-chart-static')))",
        timeout=15_000,
    )


@pytest.fixture(scope="module")
def served_site(built_site: Path):
    with serve(built_site) as url:
        yield url


def test_every_page_loads_clean_with_charts_and_working_links(served_site: str, built_site: Path) -> None:
    assert Path(CHROMIUM).exists(), "install Debian's chromium: apt-get install -y chromium"
    pages = sorted(p.relative_to(built_site).as_posix() for p in built_site.rglob("*.html") if p.name != "404.html")
    assert "leaderboards/cpu-smoke-train-gpt-tiny-mb4.html" in pages
    errors: list[str] = []
    external: list[str] = []
    links: set[str] = set()

    def watched(browser):
        page = browser.new_page()
        page.on("console", lambda m: errors.append(f"{page.url}: {m.text} {m.location}") if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: external.append(r.url) if not r.url.startswith(served_site) else None)
        return page

    def clean(page, url: str) -> None:
        response = goto(page, url)
        assert response is not None and response.ok, url
        open_charts(page)
        for chart in page.locator("div.ff-chart").all():
            chart.locator("svg").first.wait_for(timeout=15_000)  # vega rendered it from the local bundle
        for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))"):
            target = urljoin(url, href)
            if target.startswith(served_site):
                links.add(target.split("#")[0])

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        for crash in walk(browser, watched, [served_site + rel for rel in pages], clean):
            warnings.warn(crash, stacklevel=1)
        page = watched(browser)
        for link in sorted(links):
            response = page.request.get(link)
            assert response.ok, f"broken internal link {link}"
        board = served_site + "leaderboards/cpu-smoke-train-gpt-tiny-mb4.html"
        page.goto(board, wait_until="networkidle")
        open_charts(page)
        marks = page.locator("#chart-cpu-smoke-train-gpt-tiny-mb4_throughput svg path").count()
        assert marks > 0
        _check_sort_and_filter(page)
        browser.close()
    assert errors == []
    assert external == [], f"requests that left the site: {sorted({urlparse(u).netloc for u in external})}"


def test_a_renderer_crash_is_retried_once_in_a_fresh_page_and_a_second_fails() -> None:
    """`walk` against real renderer crashes (Chromium's own chrome://crash, which kills the page's renderer): a crash
    on a page, in `goto` or after it, is retried once in a fresh page, said as a line naming the page and the
    machine's state, and the walk goes on; the same page crashing again fails."""
    urls = ["about:blank#a", "about:blank#b", "about:blank#c"]
    visits: list[str] = []

    def once(page, url: str) -> None:  # #b crashes in goto, #c after it: each the first time only
        visits.append(url)
        first = visits.count(url) == 1
        goto(page, "chrome://crash" if url.endswith("#b") and first else url)
        if url.endswith("#c") and first:
            page.goto("chrome://crash")  # Playwright's own error, not goto's

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        crashes = walk(browser, lambda b: b.new_page(), urls, once)
        assert visits == [urls[0], urls[1], urls[1], urls[2], urls[2]]
        assert len(crashes) == 2, crashes
        assert "renderer crashed on chrome://crash" in crashes[0] and "renderer crashed on about:blank#c" in crashes[1]
        assert all("MemAvailable" in c and "free MiB" in c for c in crashes)
        with pytest.raises(RendererCrash, match="crashed on chrome://crash"):
            walk(browser, lambda b: b.new_page(), urls[:1], lambda page, url: goto(page, "chrome://crash"))
        browser.close()


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
    """At desktop, tablet and phone widths: every page of the table (generator/render/pages.py SITE) has a link a reader
    can see from the home page, in the sidebar or, where the sidebar folds away, behind the drawer button. The
    screenshots stay as the test's artefacts."""
    from generator.render import pages

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
    """The Vega bundle (about 900 KB) is requested by a page only when the page draws a chart as it loads (a run
    page's); a board's charts show their static SVGs and fetch it only when opened (`test_a_board_page_*`); the home
    page, with every file it loads, weighs at most 500 KB; no source maps are shipped."""
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
            charts = page.locator("div.ff-chart:not([data-lazy])").count()
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
        page.locator("#chart-cpu-smoke-train-gpt-tiny-mb4_throughput + button.ff-chart-open").click()
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


BOARD_BYTES = 700 * 1024
"""What a board page may load, every response counted, before a reader opens a chart (issue 59)."""


def test_a_board_page_weighs_at_most_700_kb_until_a_chart_is_opened_which_then_draws(
    served_site: str, built_site: Path
) -> None:
    """The heaviest board page shows its charts as static SVGs, named, and loads at most `BOARD_BYTES` (every
    response, the images below the first screen included) with no Vega bundle and no search index; pressing a
    chart's "Interactive chart" fetches the bundle and draws it under the same name, with no console error."""
    heaviest = max((built_site / "leaderboards").glob("*.html"), key=lambda p: p.stat().st_size)
    rel = heaviest.relative_to(built_site).as_posix()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        sizes: dict[str, int] = {}
        errors: list[str] = []
        page.on("response", lambda r: sizes.__setitem__(r.url, len(r.body()) if r.ok else 0))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(served_site + rel, wait_until="networkidle")
        page.evaluate("window.scrollTo(0, document.body.scrollHeight)")  # every image a reader scrolls to
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(500)
        before = sum(sizes.values())
        assert before <= BOARD_BYTES, (rel, before, sorted(sizes.items(), key=lambda kv: -kv[1])[:5])
        assert not any(u.endswith("assets/js/vega.js") or "search_index" in u for u in sizes), sorted(sizes)
        chart = page.locator("div.ff-chart[data-lazy]").first
        name = chart.get_attribute("aria-label")
        image = chart.locator("img.ff-chart-static")
        assert image.get_attribute("alt") == name
        assert page.evaluate("img => img.complete && img.naturalWidth > 0", image.element_handle())
        chart.locator("xpath=following-sibling::button[1]").click()
        chart.locator("svg path").first.wait_for(timeout=15_000)
        assert any(u.endswith("assets/js/vega.js") for u in sizes)
        assert chart.get_attribute("aria-label") == name and not chart.locator("img.ff-chart-static").count()
        browser.close()
    assert errors == []


GENERIC_NAME = r"^\s*(chart|image|figure|vega visualization|.*static svg.*|the chart.*)?\s*$"
"""An accessible name that tells a reader nothing about the chart (Vega's own, the old alt texts, none)."""


def test_every_chart_has_a_specific_accessible_name(served_site: str, built_site: Path) -> None:
    """On every page but the run pages, each chart (its static image, its container, and the interactive chart once
    opened) is named by its title and finding: never empty, never generic, never the name of another chart of its
    page."""
    pages = sorted(p.relative_to(built_site).as_posix() for p in built_site.rglob("*.html")
                   if p.name != "404.html" and p.parent.name != "runs")  # fmt: skip
    problems: list[str] = []
    named = 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        for rel in pages:
            page.goto(served_site + rel, wait_until="networkidle")
            names = page.evaluate(
                """() => [
                    ...Array.from(document.querySelectorAll('div.ff-chart')).map(el => {
                        const img = el.querySelector('img');
                        return [el.id, el.getAttribute('aria-label') || '', img ? img.getAttribute('alt') || '' : null];
                    }),
                    ...Array.from(document.querySelectorAll('p.ff-chart-static img'))
                        .map(img => [img.getAttribute('src'), img.getAttribute('alt') || '', null]),
                ]"""
            )
            open_charts(page)
            drawn = page.evaluate(
                """() => Array.from(document.querySelectorAll('[aria-roledescription="visualization"]'))
                    .map(el => el.getAttribute('aria-label') || '')"""
            )
            seen: dict[str, str] = {}
            for what, name, alt in names:
                named += 1
                if re.match(GENERIC_NAME, name, re.IGNORECASE):
                    problems.append(f"{rel} {what}: generic name {name!r}")
                if alt is not None and alt != name:
                    problems.append(f"{rel} {what}: its image says {alt!r}, the chart {name!r}")
                if name in seen:
                    problems.append(f"{rel} {what}: named as {seen[name]}: {name!r}")
                seen[name] = what
            for name in drawn:
                if name not in seen:
                    problems.append(f"{rel}: an interactive chart named {name!r}, no chart's name")
    assert named > 0 and problems == []


def test_the_404_page_links_resolve_and_shared_assets_have_the_same_bytes_gzipped(built_site: Path) -> None:
    """Built without a site address: the 404 page links nothing from the server's root ("/assets/..." was broken
    under a subpath) and each of its links resolves to a file of the site; the shared scripts, style sheets and
    search index each have a gzipped copy holding their bytes, and the pages have none."""
    text = (built_site / "404.html").read_text()
    links = re.findall(r'(?:href|src)="([^"#?]*)', text)
    assert links and not [u for u in links if u.startswith("/")], [u for u in links if u.startswith("/")][:5]
    local = [u for u in links if u and "://" not in u and not u.startswith("mailto:")]
    assert [u for u in local if not (built_site / u).is_file()] == []
    assert '"base": "."' in text
    for name in ("assets/js/vega.js", "assets/js/charts.js", "search/search_index.json"):
        assert gzip.decompress((built_site / f"{name}.gz").read_bytes()) == (built_site / name).read_bytes(), name
    assert not list(built_site.glob("**/*.html.gz")) and not list((built_site / "assets" / "charts").glob("*.gz"))
