"""Every kind of run gets a page that leads with its result: the figure with its unit, and a link to its rows as CSV
(rendered from committed H200 records: a training run, a generation test and its own tool's record, a served point
and an offline throughput test)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from generator import derive, inference, load, pages, run_pages, serving

ROOT = Path(__file__).resolve().parents[2]
REPO = "https://example.org/fairfight.git"
RUNS = {
    "20261129T200656Z-train-gpt-1.27b-mb4-fsdp2-compile-19b4d3": "steps/s",
    "20261201T055847Z-llama-8b-pp512-d0-mlx-f16-d1e193": "tokens/s",
    "20261201T055847Z-llama-8b-pp512-d0-mlx-f16-mlx-lm-benchmark-d1e193": "tokens/s",
    "20261130T225839Z-llama-8b-serve-c32-i512-o128-vllm-tp1-36240e": "output tokens/s",
    "20261130T053546Z-llama-8b-throughput-i512-o128-vllm-tp1-38a16c": "output tokens/s",
}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    loaded = load.load(ROOT / "data", files=[ROOT / "data" / "h100" / f"{r}.parquet" for r in RUNS])
    summary = derive.run_summary(loaded.runs, loaded.rows)
    figures = run_pages.with_test_figures(
        summary, inference.test_summary(summary, loaded.rows), serving.test_summary(summary, loaded.rows)
    )
    site = tmp_path_factory.mktemp("site")
    stage = site / "runs"
    run_pages.start_run_pages(stage, figures, loaded.rows, repo_url=REPO).finish(site)
    return stage


@pytest.mark.parametrize("run_id", sorted(RUNS))
def test_a_run_page_leads_with_its_result_and_links_its_rows(rendered: Path, run_id: str) -> None:
    page = (rendered / f"{pages.slug(run_id)}.html").read_text()
    lead = re.search(r'<p class="ff-result">(.*?)</p>', page, re.S)
    assert lead, run_id
    text = html.unescape(re.sub(r"<[^>]+>", "", lead.group(1)))
    assert re.search(r"\d[\d,.]* " + re.escape(RUNS[run_id]), text), text  # a number with its unit, first
    csv = f"{pages.slug(run_id)}.csv"
    assert f'href="{csv}"' in page and (rendered / csv).exists()
    assert "–</strong>" not in page  # no result shown as a dash
    # every one of these came from a bench session (the tool's record too): how to make it again, from the repository
    # and the full commit that ran it
    assert f"git clone {REPO} fairfight" in page and re.search(r"git checkout [0-9a-f]{40}", page), run_id
