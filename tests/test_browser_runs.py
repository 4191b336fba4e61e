"""Run pages of the site built from the committed data/, in a real headless Chromium: the samples chart draws every
step from the run's gzipped rows through the one spec all run pages share (served plainly, and by a server that
sends the file with Content-Encoding: gzip, so the browser unpacks it first), falls back to its static SVG opened
from disk, and each run page links downloads that hold its rows."""

from __future__ import annotations

import contextlib
import functools
import gzip
import http.server
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from playwright.sync_api import sync_playwright

from tests.test_browser import CHROMIUM, FLAGS, serve

RUN = "20261201T090247Z-train-gpt-1.27b-1gpu-mb8-ddp-amp-stock-c19a1f"
"""A committed training run of 200 steps (20 warm-up)."""


class _Encoding(http.server.SimpleHTTPRequestHandler):
    """Sends a .gz file as Apache's `AddEncoding gzip .gz` does: the bytes as stored, marked Content-Encoding: gzip."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def end_headers(self) -> None:
        if self.path.endswith(".gz"):
            self.send_header("Content-Encoding", "gzip")
        super().end_headers()


@contextlib.contextmanager
def _serve_encoded(directory: Path) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Encoding, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()


def test_the_samples_chart_draws_every_step_from_the_gzipped_rows(committed_site: Path) -> None:
    page_file = committed_site / "runs" / f"{RUN}.html"
    text = page_file.read_text()
    assert "application/json" not in text.split('id="samples"')[1].split("</h2>", 2)[1]  # no spec of its own
    rows = pl.read_csv(gzip.decompress((committed_site / "runs" / f"{RUN}.csv.gz").read_bytes()))
    steps = rows.filter((pl.col("trial") == 0) & (pl.col("metric") == "step_time_s")).height
    assert steps == 200
    with contextlib.ExitStack() as stack, sync_playwright() as p:
        plain, encoded = stack.enter_context(serve(committed_site)), stack.enter_context(_serve_encoded(committed_site))
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 390, "height": 844})
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        for target in (plain + f"runs/{RUN}.html", encoded + f"runs/{RUN}.html"):
            page.goto(target, wait_until="networkidle")
            chart = page.locator("div.ff-chart[data-svg]")
            chart.locator("svg").first.wait_for(timeout=15_000)
            assert chart.locator("svg .mark-symbol.role-mark path").count() == steps, target  # a point per step
            assert "failed" not in chart.inner_text()
        page.goto(page_file.as_uri(), wait_until="load")  # from disk: no fetch, the static SVG and why
        assert "opened from disk" in page.locator("div.ff-chart[data-svg] p.ff-chart-note").inner_text()
        browser.close()
    assert errors == []


@pytest.mark.parametrize("run", [RUN, "20261130T165119Z-llama-14b-serve-c1-i512-o128-vllm-tp1-vllm-bench-d6c601"])
def test_a_run_page_links_the_samples_part_that_holds_its_rows(committed_site: Path, run: str) -> None:
    text = (committed_site / "runs" / f"{run}.html").read_text()
    part = re.search(r'<p id="rows">Every row of this run is in <a href="\.\./(downloads/samples/[^"]+)"', text)
    assert part, run
    held = pl.read_parquet(committed_site / part.group(1)).filter(pl.col("run_id") == run)
    assert held.height > 0
