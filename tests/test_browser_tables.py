"""The site built from the committed data/ in a real headless Chromium at 1400 and 390 px: on every board the columns
a reader came for (the figure, its interval, the own tool's figure and ratio, why a run does not rank; the serving
latencies) are in view without scrolling sideways, as are the home page's claims' hardware and failures.html's
errors; on a desktop a board's ranking and its Unranked table are whole (run links and commits too). Tables past
those columns keep the rest behind a closed <details>, and on a phone every row reads as a card."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from playwright.sync_api import sync_playwright

from tests.conftest import ROOT
from tests.test_browser import CHROMIUM, FLAGS, open_charts, serve

if TYPE_CHECKING:
    from generator import derive

FIGURES = {"Steps/s", "Tokens/s", "Output tokens/s"}
INTERVALS = {"95% interval", "Interval"}
KEY = (
    FIGURES
    | INTERVALS
    | {
        "Why not ranked",
        "Own tool",
        "Ratio",
        "vllm bench",
        "Ratio: tokens/s · TTFT · TPOT",
        "TTFT median / p99 (ms)",
        "TPOT median / p99 (ms)",
        "ITL median / p99 (ms)",
    }
)
"""Columns that must be in view wherever a board's table has them."""
ELSEWHERE = {"index.html": {"Hardware"}, "failures.html": {"Error"}}
"""Pages other than boards, and the column each must show in view."""

MEASURE = """() => {
  const vw = document.documentElement.clientWidth;
  return Array.from(document.querySelectorAll('article table')).map((t) => {
    const heads = Array.from(t.querySelectorAll('thead th')).map(h => h.textContent.trim());
    const wrap = (t.closest('.md-typeset__scrollwrap') || t).getBoundingClientRect();
    const left = Math.max(0, wrap.left) - 1, right = Math.min(vw, wrap.right) + 1;
    const rows = Array.from(t.tBodies[0] ? t.tBodies[0].rows : []).map(row => Array.from(row.cells).map(c => {
      const r = c.getBoundingClientRect();
      return r.width > 0 && r.left >= left && r.right <= right;
    }));
    let section = '';  // the id of the last h2 before the table: which part of the page it belongs to
    for (const h of document.querySelectorAll('article h2')) {
      if (h.compareDocumentPosition(t) & Node.DOCUMENT_POSITION_FOLLOWING) section = h.id;
    }
    return {heads: heads, rows: rows, disclosed: !!t.closest('details:not([open])'), section: section,
            cards: t.dataset.cards !== undefined, scrolls: document.documentElement.scrollWidth > vw + 1};
  });
}"""


def _out_of_view(tables: list[dict], wanted: set[str]) -> list[str]:
    """'column (table n, row m)' for every cell of a wanted column, in a table a reader sees, that is out of view."""
    missing = []
    for n, table in enumerate(tables):
        if table["disclosed"]:
            continue
        for col, head in enumerate(table["heads"]):
            if head in wanted:
                missing += [f"{head} (table {n}, row {m})" for m, row in enumerate(table["rows"]) if not row[col]]
    return missing


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("width", "height"), [(1400, 1000), (390, 844)])
def test_the_columns_a_reader_came_for_are_in_view(committed_site: Path, width: int, height: int) -> None:
    boards = sorted(p.relative_to(committed_site).as_posix() for p in (committed_site / "leaderboards").glob("*.html"))
    assert len(boards) > 20  # training, inference and serving boards of the committed runs
    with serve(committed_site) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": width, "height": height})
        problems: dict[str, list[str]] = {}
        for rel in [*boards, *ELSEWHERE]:
            page.goto(url + rel, wait_until="load")
            tables = page.evaluate(MEASURE)
            shown = [t for t in tables if not t["disclosed"]]
            heads = {h for t in shown for h in t["heads"]}
            wanted = ELSEWHERE.get(rel, KEY)
            if rel in ELSEWHERE:
                assert wanted <= heads, (rel, heads)
            else:  # a board leads with its figure and interval, and its Unranked table says why
                assert heads & FIGURES and heads & INTERVALS, (rel, heads)
                assert not page.locator("h2#unranked").count() or "Why not ranked" in heads, rel
                # a wide table keeps its full set of columns behind a disclosure, not past the right edge
                assert all(len(t["heads"]) <= 12 for t in shown if t["heads"] and t["heads"][0] == "Rank"), rel
            if width < 600:
                assert all(t["cards"] for t in shown if len(t["heads"]) >= 3), rel
                assert not any(t["scrolls"] for t in tables), f"{rel} scrolls sideways at {width} px"
            found = _out_of_view(tables, wanted)
            if width >= 1400 and rel not in ELSEWHERE:  # a ranking and the unranked runs are whole on a desktop
                whole = [t for t in shown if t["heads"] and (t["heads"][0] == "Rank" or t["section"] == "unranked")]
                assert not page.locator("h2#unranked").count() or any(t["section"] == "unranked" for t in whole)
                found += _out_of_view(whole, {h for t in whole for h in t["heads"]})
            if found:
                problems[rel] = found[:5]
        if width >= 1400:  # every column of What tuning bought, both its ladder and its single settings
            page.goto(url + "tuning.html", wait_until="load")
            tables = page.evaluate(MEASURE)
            assert len(tables) > 4
            if found := _out_of_view(tables, {h for t in tables for h in t["heads"]}):
                problems["tuning.html"] = found[:5]
        browser.close()
    assert problems == {}, f"columns out of view at {width} px: {problems}"


def test_every_page_pairing_a_claim_with_our_figure_names_the_shape_and_links_the_verdict(
    committed_site: Path, committed_results: derive.Results
) -> None:
    """The home page's claims table, the fight's board and the claims page: each says at which micro-batch our
    figure was measured (not the claims' shape, which states no batch) and links the verdict."""
    from generator.derive.verdict import draws as sweep_draws

    loaded, summary = committed_results.records, committed_results.runs
    fight = sweep_draws.compute(summary, loaded.rows).fight
    board = (committed_site / "leaderboards" / f"{fight.suite}-{fight.workload}.html").read_text()
    home = (committed_site / "index.html").read_text()
    claims = (committed_site / "claims.html").read_text()
    assert board.count('href="../index.html#the-verdict"') >= 2  # under its title and in its Claims section
    assert "not at the claims&#39; shape" in board or "not at the claims' shape" in board
    assert "not the claims&#39; shape" in home or "not the claims' shape" in home
    assert 'href="#the-verdict"' in home and 'href="index.html#the-verdict"' in claims


def test_every_reproduce_block_names_the_repository_or_the_checkout_it_was_built_from(committed_site: Path) -> None:
    """Built without --repo-url: each run page's Reproduce block clones the project's own address (pyproject's
    [project.urls]), else the building checkout's remote, else that checkout's path, and says which; it never
    invents an address."""
    from markupsafe import escape

    from generator.load import repository

    source = repository.resolve(None)
    assert source is not None  # the tests run from a checkout
    checked = 0
    for run_page in sorted((committed_site / "runs").glob("*.html"))[:40]:
        text = run_page.read_text()
        if "git clone" not in text:
            continue  # a claim or an imported record: nothing to reproduce
        checked += 1
        assert f"git clone {escape(source.shell)} fairfight" in text, run_page.name
        assert escape(repository.FROM[source.kind]) in text, run_page.name
        assert "REPOSITORY-URL" not in text, run_page.name
    assert checked > 10


def test_every_quantized_board_says_quality_was_not_measured(committed_site: Path) -> None:
    """A board with a quantized file's row (Q8_0, Q4_K_M) says that only speed was measured (random weights); a
    board of full-precision files alone does not."""
    from runners import llama_files

    quantized = plain = 0
    for board in sorted((committed_site / "leaderboards").glob("*.html")):
        text = board.read_text().replace("&#95;", "_")  # the page writes a name's underscores as entities
        has_quantized = any(f"llamacpp-{q}" in text for q in llama_files.QUANT_TYPES)
        said = "quality not measured (random weights)" in text
        assert said == has_quantized, board.name
        quantized, plain = quantized + has_quantized, plain + (not has_quantized)
    assert quantized > 5 and plain > 5


def test_what_tuning_bought_has_a_row_per_sweep_point_each_linking_its_runs(
    committed_site: Path, committed_results: derive.Results
) -> None:
    """tuning.html: one row per sweep point of the seed's fight, every row linking run pages that exist."""
    import html as html_lib

    from generator.derive.verdict import draws as sweep_draws

    loaded, summary = committed_results.records, committed_results.runs
    points = sweep_draws.compute(summary, loaded.rows).points
    page = (committed_site / "tuning.html").read_text()
    ladder, singles = page.split('id="one-setting-at-a-time"')
    tables = re.findall(r"<tbody>(.*?)</tbody>", ladder, re.S)
    body = [row for table in tables for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)]
    assert len(body) == points.height
    # one setting at a time: a row per changed run of the fight's suite, linking it and, where one ran, its base
    from generator.derive import single_settings

    fight = sweep_draws.compute(summary, loaded.rows).fight
    changed = [r for r in single_settings.rows(summary) if r["suite"] == fight.suite]
    tables = re.findall(r"<tbody>(.*?)</tbody>", singles, re.S)
    single_rows = [row for table in tables for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)]
    assert len(single_rows) == len(changed) > 10
    words = [html_lib.unescape(row) for row in single_rows]
    assert sum("bucket_cap_mb 400" in row for row in words) == 1  # the DDP bucket sweep, its setting readable
    assert sum("no base:" in row for row in words) == sum(r["base"] is None for r in changed)
    for row in body + single_rows:
        links = re.findall(r'href="(runs/[^"]+\.html)"', row)
        assert links and all((committed_site / html_lib.unescape(link)).exists() for link in links), row[:200]
    assert "What tuning bought" in (committed_site / "index.html").read_text()  # in the navigation


def test_a_configurations_history_across_harness_commits_renders_served_and_from_disk(committed_site: Path) -> None:
    """A run page whose configuration ran at several harness commits draws its figure at each commit with the A/A band
    around the latest, served and opened from disk (its data is on the page and its spec comes with a script tag, so it
    needs no fetch); every commit in its table links run pages that exist."""
    import html as html_lib

    pages = [p for p in sorted((committed_site / "runs").glob("*.html")) if "-history-data" in p.read_text()]
    assert len(pages) > 10  # configurations of the committed runs that ran at two or more harness commits
    banded = next(p for p in pages if "The shaded band around the latest" in p.read_text())
    text = banded.read_text()
    table = text[text.index('<details class="ff-history">') :]
    table = table[: table.index("</details>")]
    links = re.findall(r'href="([^"]+\.html)"', table)
    assert len(re.findall(r"<tr><td><code>", table)) >= 2 and links
    assert all((banded.parent / html_lib.unescape(link)).exists() for link in links)
    with serve(committed_site) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 390, "height": 844})
        for target in (url + "runs/" + banded.name, banded.as_uri()):
            page.goto(target, wait_until="load")
            chart = page.locator("div.ff-chart[id$='-history']")
            chart.locator("svg").first.wait_for(timeout=15_000)
            labels = chart.locator("svg text").all_text_contents()
            assert "A/A band" in labels, (target, labels)
            assert not chart.locator("p.ff-chart-note").count()  # rendered, not fallen back
            assert page.evaluate("() => document.documentElement.scrollWidth") <= 391
        browser.close()


def test_the_suite_of_h200_runs_is_shown_by_its_title_and_keeps_its_name(committed_site: Path) -> None:
    """The suite named "h100" holds H200 runs: the navigation, the served models' page titles, its boards' headings
    and its run pages' breadcrumbs say its title ("H200 bench", from its suite file); its name stays in paths and
    names it once, as what records and commands use."""
    from generator.load import suite_titles

    title = suite_titles.title("h100")
    assert title != "h100"
    home = (committed_site / "index.html").read_text()
    assert f"llama-8b · {title}" in home  # the navigation's served models
    assert "llama-8b · h100<" not in home
    served = (committed_site / "serving" / "h100-llama-8b.html").read_text()
    assert f"<title>llama-8b served · {title}" in served
    board = (committed_site / "leaderboards" / "h100-train-gpt-1.27b-mb4.html").read_text()
    assert f"Suite <strong>{title}</strong> (<code>h100</code> in records and commands" in board
    run_page = next((committed_site / "runs").glob("*-train-gpt-1.27b-mb4-*.html")).read_text()
    assert f">{title} · train-gpt-1.27b-mb4</a>" in run_page


def test_every_board_says_where_a_rows_history_across_commits_is(committed_site: Path) -> None:
    """History charts live on run pages: every board says so above its ranking, and the boards' rows link run pages
    that draw a configuration's history (at least one board row's run page does, on the committed data)."""
    import html as html_lib

    drawn = 0
    for board in sorted((committed_site / "leaderboards").glob("*.html")):
        text = board.read_text()
        assert "<em>Across harness commits</em> section shows its configuration" in text, board.name
        ranking = text[text.index('id="ranking"') :]
        for link in set(re.findall(r'href="\.\./(runs/[^"#]+\.html)"', ranking[: ranking.find("</table>")])):
            page = (committed_site / html_lib.unescape(link)).read_text()
            drawn += '<h2 id="history">' in page and "-history-data" in page
    assert drawn > 5


BARS = """() => {
  const ranked = new Set();  // what the page's ranking table names: its run links and its variants
  for (const t of document.querySelectorAll('article table')) {
    const first = t.querySelector('thead th');
    if (!first || first.textContent.trim() !== 'Rank') continue;
    for (const a of t.querySelectorAll('a[href*="runs/"]')) ranked.add(a.getAttribute('href').split('/').pop());
    const col = Array.from(t.querySelectorAll('thead th')).findIndex(h => h.textContent.trim() === 'Variant');
    if (col >= 0) for (const row of t.tBodies[0].rows) ranked.add(row.cells[col].textContent.trim());
  }
  const charts = Array.from(document.querySelectorAll('div.ff-chart')).map(el => ({
    id: el.dataset.spec, svg: !!el.querySelector('svg'),
    bars: Array.from(el.querySelectorAll('path[aria-roledescription="bar"]')).map(p => ({
      label: p.getAttribute('aria-label') || '', opacity: p.getAttribute('fill-opacity')}))
  }));
  return {ranked: Array.from(ranked), charts: charts};
}"""


def _drawn_run(label: str) -> tuple[str, str] | None:
    """(variant, run id's last part) of the run a bar's accessible label names ('run: VARIANT · … · abc123'); a
    training row's bar names its variant and, in words, what sets it apart ('run: VARIANT · compile_loss on'): its
    variant and no part."""
    found = re.search(r"run: (?:unranked: )?([^;]+)", label)
    if not found:
        return None
    parts = found[1].split(" · ")
    last = parts[-1] if len(parts) > 1 and re.fullmatch(r"[0-9a-f]{6}", parts[-1]) else ""
    return parts[0], last


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("width", "height"), [(1400, 1000), (390, 844)])
def test_every_chart_draws_unranked_runs_hollow_and_no_failed_run(
    committed_site: Path, width: int, height: int
) -> None:
    """On every board and the side-by-side page, as drawn in the browser: a bar of a run that does not rank is hollow
    (no fill) and named "unranked"; a bar on a chart that has no such marking is a run of the page's ranking; a
    not-cross-checked row of the side-by-side is pale; no bar is a failed run's."""
    from generator import load

    loaded = load.load(ROOT / "data")
    failed = {(v, r.rsplit("-", 1)[-1]) for r, v, s in loaded.runs.select("run_id", "variant", "status").rows()
              if s != "ok"}  # fmt: skip
    assert failed  # the committed data holds failure records, so the last check below can fail
    boards = sorted(p.relative_to(committed_site).as_posix() for p in (committed_site / "leaderboards").glob("*.html"))
    hollow = pale = 0
    problems: list[str] = []
    with serve(committed_site) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": width, "height": height})
        for rel in [*boards, "side-by-side.html"]:
            page.goto(url + rel, wait_until="load")
            open_charts(page)
            page.wait_for_function("() => Array.from(document.querySelectorAll('div.ff-chart'))"
                                   ".every(el => el.querySelector('svg') || el.textContent.trim())")  # fmt: skip
            seen = page.evaluate(BARS)
            variants = {r for r in seen["ranked"] if not r.endswith(".html")}
            ranked = {r.removesuffix(".html").rsplit("-", 1)[-1] for r in seen["ranked"]} | variants
            for chart in seen["charts"]:
                for bar in chart["bars"]:
                    label, opacity = bar["label"], float(bar["opacity"] or 1.0)
                    run = _drawn_run(label)
                    if run in failed:
                        problems.append(f"{rel} {chart['id']}: a failed run drawn: {label[:120]}")
                    if "ranked: false" in label:
                        hollow += 1
                        if opacity != 0.0 or "run: unranked: " not in label:
                            problems.append(f"{rel} {chart['id']}: an unranked bar not hollow: {label[:120]}")
                    elif "checked: not cross-checked" in label:
                        pale += 1
                        if opacity > 0.2:
                            problems.append(f"{rel} {chart['id']}: a not-cross-checked bar not pale: {label[:120]}")
                    elif "ranked: true" not in label and "checked: cross-checked" not in label and run is not None:
                        base = run[0].split("[")[0].rstrip("…")  # a training bar names its configuration
                        if run[1] not in ranked and not any(v.startswith(base) for v in variants):
                            problems.append(f"{rel} {chart['id']}: a bar of a run the ranking lacks: {label[:120]}")
        browser.close()
    assert problems == [], "\n".join(problems[:10])
    # the committed data has unranked runs drawn on boards, and engine rows not cross-checked (2026-12-06: 54, 2)
    assert hollow > 5 and pale >= 1
