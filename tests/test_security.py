"""Hostile data renders inert: records whose strings carry HTML, JavaScript, Markdown, template and Vega syntax
are built into a site and every page is opened in a real headless Chromium. Nothing runs, nothing is fetched from
outside, no link points at `javascript:`, and the strings show as the text they are."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pyarrow as pa
import pytest
from playwright.sync_api import sync_playwright

from runners import layout, store
from tests.conftest import TRAIN, run_module, write_as_submitted
from tests.test_browser import CHROMIUM, FLAGS, goto, open_charts, serve, walk

PAYLOAD = (
    '<img src="https://evil.invalid/i.png" onerror="window.__pwned=1">'
    "<script>window.__pwned=2</script>"
    "[click me](javascript:window.__pwned=3) "
    "{{ 7 * 7 }} {% raw %}${window.__pwned=4} "
    "'\"]; datum.x + (window.__pwned=5) //"
)
"""HTML with an event handler, a script element, a Markdown link to javascript:, Jinja and JavaScript template
syntax, and a quote-and-bracket break-out as a Vega expression would meet it."""
MARK = "window.__pwned"


def _poisoned(path: Path, run_id: str, status: str, **names: str) -> pa.Table:
    """A real run's record with every free-text field replaced by the payload (and any run-level `names`)."""
    table = layout.read(path)
    config = json.loads(table.column("config")[0].as_py())
    config["note"] = "operator note " + PAYLOAD[:1900]
    config["variant"]["name"] = "v " + PAYLOAD[:150]
    config["variant"]["description"] = "description " + PAYLOAD
    config["suite_description"] = "suite " + PAYLOAD
    values = {
        "run_id": run_id,
        "engine_version": "2.13.0 " + PAYLOAD[:150],
        "accelerator": "cpu " + PAYLOAD[:150],
        "source": "source " + PAYLOAD,
        "harness_commit": PAYLOAD[:64],  # the boards link a commit: only hex may become a link
        "config": json.dumps(config),
        "status": status,
        "error": None if status == "ok" else "Traceback (most recent call last):\nRuntimeError: " + PAYLOAD,
        **names,
    }
    for name, value in values.items():
        column = pa.array([value] * table.num_rows, table.schema.field(name).type)
        table = table.set_column(table.column_names.index(name), table.schema.field(name), column)
    return table


def _submitted(data: Path, table: pa.Table) -> None:
    """Written as a hostile submitter would: straight to Parquet, past every check of our store."""
    write_as_submitted(table, data / "cpu-smoke" / f"{table.column('run_id')[0].as_py()}.parquet")


@pytest.fixture(scope="module")
def hostile_site(bench_data, tmp_path_factory) -> Path:
    data, _ = bench_data
    work = tmp_path_factory.mktemp("hostile")
    hostile = work / "data"
    for path in data.rglob("*.parquet"):
        target = hostile / path.relative_to(data)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    source = next(p for p in (data / "cpu-smoke").rglob("*.parquet") if "ddp-fp32-stock" in p.name)
    store.write_run(hostile, _poisoned(source, "hostile-ok", "ok"))
    store.write_run(hostile, _poisoned(source, "hostile-failed", "failed"))
    # names that reach navigation, titles and file names (rejected, and listed on the Rejected page as text), and a
    # header number that is markup (rejected by its declared shape)
    _submitted(hostile, _poisoned(source, "hostile-workload", "ok", workload="w " + PAYLOAD))
    _submitted(hostile, _poisoned(source, "hostile-variant", "ok", variant="v " + PAYLOAD))
    table = _poisoned(source, "hostile-model", "ok")  # a served model's page is named after its model: a plain name
    config = json.loads(table.column("config")[0].as_py())
    config["model"]["name"] = PAYLOAD[:150]
    field = table.schema.field("config")
    _submitted(
        hostile,
        table.set_column(
            table.column_names.index("config"), field, pa.array([json.dumps(config)] * table.num_rows, field.type)
        ),
    )
    table = _poisoned(source, "hostile-dim", "ok")
    config = json.loads(table.column("config")[0].as_py())
    config["model"]["dim"] = PAYLOAD
    field = table.schema.field("config")
    _submitted(
        hostile,
        table.set_column(
            table.column_names.index("config"), field, pa.array([json.dumps(config)] * table.num_rows, field.type)
        ),
    )
    out, build = ("--out", str(work / "site")), ("--work", str(work / "build"))
    # with a repository address, so that the boards would link a commit (only a hex one may be)
    run_module("generator.build", "--data", str(hostile), *out, *build, "--repo-url", "https://example.org/ff")
    return work / "site"


@pytest.mark.bench
def test_hostile_strings_render_inert_on_every_page(hostile_site: Path) -> None:
    pages = sorted(p.relative_to(hostile_site).as_posix() for p in hostile_site.rglob("*.html") if p.name != "404.html")
    assert "runs/hostile-ok.html" in pages and "runs/hostile-failed.html" in pages
    rejected = (hostile_site / "rejected.html").read_text()
    assert all(f"hostile-{name}.parquet" in rejected for name in ("workload", "variant", "dim", "model"))
    fired: list[str] = []

    def watched(browser):
        """A page whose payload marker starts at 0 and whose dialogs, errors and outside requests are written down."""
        page = browser.new_page()
        page.add_init_script(f"{MARK} = 0")
        page.on("dialog", lambda d: (fired.append(f"dialog on {page.url}: {d.message}"), d.dismiss()))
        page.on("pageerror", lambda e: fired.append(f"{page.url}: {e}"))
        page.on("console", lambda m: fired.append(f"{page.url}: {m.text}") if m.type == "error" else None)
        page.on("request", lambda r: fired.append(f"request {r.url}") if not r.url.startswith(root) else None)
        return page

    def inert(page, url: str) -> None:
        rel = url.removeprefix(root)
        goto(page, url)
        open_charts(page)
        for chart in page.locator("div.ff-chart").all():
            chart.locator("svg").first.wait_for(timeout=15_000)  # drawn, with the payload as data
        assert page.evaluate(MARK) == 0, f"the payload ran on {rel}"
        live = page.evaluate(
            """() => [...document.querySelectorAll('a[href], img[src], [onerror], script')]
                .filter(e => {
                    if (e.tagName === 'SCRIPT' && e.type === 'application/json') {
                        try { JSON.parse(e.textContent); return false; } catch { return true; }  // broken out
                    }
                    const attrs = ['href', 'src', 'onerror'].map(a => e.getAttribute(a) || '').join(' ');
                    const code = e.tagName === 'SCRIPT' ? e.textContent : '';
                    return /javascript:|evil\\.invalid|__pwned/i.test(attrs + code);
                })
                .map(e => e.outerHTML.slice(0, 120))"""
        )
        assert live == [], f"{rel}: live elements from the payload: {live}"

    with serve(hostile_site) as root, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        for crash in walk(browser, watched, [root + rel for rel in pages], inert):
            warnings.warn(crash, stacklevel=1)
        page = watched(browser)
        # the strings are shown as the text they are
        for run in ("hostile-ok", "hostile-failed"):
            page.goto(root + f"runs/{run}.html", wait_until="networkidle")
            assert PAYLOAD.splitlines()[0][:60] in page.inner_text("body"), run
            # a harness commit that is no commit id never reaches the copy-and-paste reproduce block
            body = page.inner_text("body")
            assert "git checkout" not in body, run
        page.goto(root + f"leaderboards/cpu-smoke-{TRAIN}.html", wait_until="networkidle")
        assert "<script>window.__pwned=2</script>" in page.inner_text("body")
        browser.close()
    assert fired == []
