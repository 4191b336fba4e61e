"""Every kind of run gets a page that leads with its result: the figure with its unit, and links to its rows (the
part of its suite's samples that holds them; a charted run's also as gzipped CSV beside its page), rendered from
committed H200 records: a training run, a generation test and its own tool's record, a served point and an offline
throughput test; its provenance shows each GPU's state and the installed packages where the record holds them."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from generator import derive, load, render
from generator.derive import copy_bound, evidence, inference, serving
from generator.render import pages
from runners import engines, provenance
from tests.conftest import write_as_submitted

ROOT = Path(__file__).resolve().parents[2]
REPO = "https://example.org/fairfight.git"
RUNS = {
    "20261129T200656Z-train-gpt-1.27b-mb4-fsdp2-compile-19b4d3": "steps/s",
    "20261201T055847Z-llama-8b-pp512-d0-mlx-f16-d1e193": "tokens/s",
    "20261201T055847Z-llama-8b-pp512-d0-mlx-f16-mlx-lm-benchmark-d1e193": "tokens/s",
    "20261130T225839Z-llama-8b-serve-c32-i512-o128-vllm-tp1-36240e": "output tokens/s",
    "20261130T053546Z-llama-8b-throughput-i512-o128-vllm-tp1-38a16c": "output tokens/s",
    "20261130T171703Z-train-gpt-1.27b-1gpu-mb8-mlx-fp32-c92a08": "steps/s",  # read through schema 2's migration
}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    loaded = load.load(ROOT / "data", files=[ROOT / "data" / "h100" / f"{r}.parquet" for r in RUNS])
    summary = derive.run_summary(loaded.runs, loaded.rows)
    bandwidths = copy_bound.copy_bandwidths(summary)
    figures = derive.with_test_figures(
        summary,
        inference.per_run_figures(summary, loaded.rows, bandwidths),
        serving.per_run_figures(summary, loaded.rows, bandwidths),
    )
    site = tmp_path_factory.mktemp("site")
    stage = site / "runs"
    render.runs.start_run_pages(stage, figures, loaded.rows, repo_url=REPO).finish(site)
    return stage


@pytest.mark.parametrize("run_id", sorted(RUNS))
def test_a_run_page_leads_with_its_result_and_links_its_rows(rendered: Path, run_id: str) -> None:
    page = (rendered / f"{pages.slug(run_id)}.html").read_text()
    lead = re.search(r'<p class="ff-result">(.*?)</p>', page, re.S)
    assert lead, run_id
    text = html.unescape(re.sub(r"<[^>]+>", "", lead.group(1)))
    assert re.search(r"\d[\d,.]* " + re.escape(RUNS[run_id]), text), text  # a number with its unit, first
    part = re.search(r'<p id="rows">Every row of this run is in <a href="\.\./(downloads/samples/h100/[^"]+)"', page)
    ours = pl.DataFrame({"run_id": sorted(RUNS), "suite": ["h100"] * len(RUNS)})
    assert part and part.group(1) == render.parts.samples_paths(ours)[run_id]  # the part of its suite that holds them
    assert "its suite's parts" in page and 'href="../downloads.html#samples-h100"' in page  # and where they are listed
    csv = f"{pages.slug(run_id)}.csv.gz"  # and beside the page where its chart reads them
    charted = 'id="samples"' in page
    assert (f'href="{csv}"' in page) == charted == (rendered / csv).exists(), run_id
    if charted:
        rows = pl.read_csv(rendered / csv)
        assert rows.columns == render.run_samples.CSV_COLUMNS and rows.height > 0
    assert "–</strong>" not in page  # no result shown as a dash
    # every one of these came from a bench session (the tool's record too): how to make it again, from the repository
    # and the full commit that ran it
    assert f"git clone {REPO} fairfight" in page and re.search(r"git checkout [0-9a-f]{40}", page), run_id
    # then its engine's set-up line on a GPU (the registry's; a tool's record, its engine's), and the command as many
    # times as one configuration needs to rank alone
    block = html.unescape(page.split('<h2 id="reproduce">')[1].split("</code></pre>")[0])
    engine = engines.ENGINES[next(name for name in ("mlx", "vllm", "torch") if name in run_id or name == "torch")]
    lines = block.split("<pre><code>", 1)[1].splitlines()
    assert lines[2] == (engine.setup_gpu or engine.setup), (run_id, lines)
    assert len(lines) == 3 + evidence.RUNS_TO_RANK and len(set(lines[3:])) == 1, lines
    assert lines[3].startswith("python -m runners bench --suite h100 "), lines


def test_old_records_show_no_gpu_table_and_no_package_list(rendered: Path) -> None:
    for run_id in RUNS:  # written before records held either: the page shows what they hold, nothing made up
        page = (rendered / f"{pages.slug(run_id)}.html").read_text()
        assert 'id="gpus"' not in page and 'id="packages"' not in page


def test_the_provenance_section_shows_each_gpu_and_the_installed_packages_collapsed(tmp_path: Path) -> None:
    run_id = "20261129T200656Z-train-gpt-1.27b-mb4-fsdp2-compile-19b4d3"
    table = pq.read_table(ROOT / "data" / "h100" / f"{run_id}.parquet")
    fields = [field for field, _, _ in provenance.GPU_QUERY]
    sample = (  # as nvidia-smi printed it on an H200 host (tests/runners/test_provenance.py), a second GPU edited
        "0, 345, 1980, 3201, 3201, 1980, 3201, 700.00, 700.00, 700.00, Enabled, Enabled, "
        "GPU-214b3d79-d2b7-03c3-b74d-d4403ef9dd6f, NVIDIA H200\n"
        "1, 1980, 1980, 3201, 3201, [N/A], [N/A], 650.50, 650.50, 700.00, [Not Supported], Disabled, [N/A], "
        "NVIDIA H200\n"
    )
    hardware = json.loads(table["hardware"][0].as_py()) | {"gpus": provenance.parse_gpu_csv(fields, sample)}
    in_run = [
        field for field, _, _ in provenance.RUN_GPU_QUERY
    ]  # GPU 0 only answered (tests/runners/test_provenance.py)
    hardware["gpus_in_run"] = {"at_step": 1010, "gpus": provenance.parse_gpu_csv(
        in_run, "0, 1980, 3201, 612.34, 57, 0x0000000000000004\n", provenance.RUN_GPU_QUERY)}  # fmt: skip
    software = json.loads(table["software"][0].as_py())
    software |= {"packages": ["numpy==2.5.2", "torch==2.11.0", "triton==3.6.0"], "packages_omitted": 2}
    for name, value in (("hardware", hardware), ("software", software)):
        column = pa.array([json.dumps(value)] * table.num_rows)
        table = table.set_column(table.column_names.index(name), table.schema.field(name), column)
    data = tmp_path / "data" / "h100"
    data.mkdir(parents=True)
    write_as_submitted(table, data / f"{run_id}.parquet")
    loaded = load.load(tmp_path / "data")
    assert loaded.rejected == []
    summary = derive.run_summary(loaded.runs, loaded.rows)
    bandwidths = copy_bound.copy_bandwidths(summary)
    figures = derive.with_test_figures(
        summary,
        inference.per_run_figures(summary, loaded.rows, bandwidths),
        serving.per_run_figures(summary, loaded.rows, bandwidths),
    )
    render.runs.start_run_pages(tmp_path / "site" / "runs", figures, loaded.rows).finish(tmp_path / "site")
    page = (tmp_path / "site" / "runs" / f"{pages.slug(run_id)}.html").read_text()
    gpus = re.search(r'<table class="ff-gpus">(.*?)</table>', page, re.S)
    assert gpus, "no GPU table"
    rows = {
        cells[0]: cells[1:]
        # a value cell names its GPU (data-label) for the phone's cards; cells and rows without their optional end tags
        for cells in (re.findall(r"<t[dh][^>]*>([^<]*)", row) for row in gpus[1].split("<tr>")[1:])
    }
    assert rows[""] == ["GPU 0", "GPU 1"]
    assert rows["SM clock (MHz)"] == ["345", "1980"] and rows["SM max (MHz)"] == ["1980", "1980"]
    assert rows["Power limit enforced (W)"] == ["700", "650.5"] and rows["Default power limit (W)"] == ["700", "700"]
    assert rows["Application graphics clock (MHz)"] == ["1980", "–"]  # [N/A]: a dash, not a number
    assert rows["ECC"] == ["Enabled", "–"] and rows["Persistence mode"] == ["Enabled", "Disabled"]
    assert rows["UUID (which physical GPU)"] == ["GPU-214b3d79-d2b7-03c3-b74d-d4403ef9dd6f", "–"]
    assert rows["SM clock during the run (MHz)"] == ["1980", "–"] and rows["Power draw during the run (W)"] == [
        "612.34",
        "–",
    ]
    assert rows["Clock event reasons during the run"] == ["0x0000000000000004", "–"] and "at step 1010" in page
    assert "<td>gpus_in_run" not in page  # in the GPU table, not repeated in the hardware table
    packages = re.search(r'<p id="packages">(.*?):\s*<a href="(packages-[0-9a-f]{16}\.txt)">', page, re.S)
    assert packages and packages.group(1) == "Installed packages (3, and 2 not listed)"
    listed = tmp_path / "site" / "runs" / packages.group(2)  # one file, shared by every run that lists the same
    assert listed.read_text() == "numpy==2.5.2\ntorch==2.11.0\ntriton==3.6.0\n"
    software_table = page[page.index("<h3>Software</h3>") : page.index('<p id="packages">')]
    assert "<td>torch<td>2.11.0<" in software_table and "packages" not in software_table
    assert "<td>gpus<" not in page  # not repeated as JSON in the hardware table


def test_a_record_read_through_a_migration_says_so(rendered: Path) -> None:
    page = (rendered / f"{pages.slug('20261130T171703Z-train-gpt-1.27b-1gpu-mb8-mlx-fp32-c92a08')}.html").read_text()
    assert "Read through a schema migration" in page and "MLX_ENABLE_TF32 unset" in page
    other = (rendered / f"{pages.slug('20261129T200656Z-train-gpt-1.27b-mb4-fsdp2-compile-19b4d3')}.html").read_text()
    assert "schema migration" not in other


def test_calibration_figures_read_in_units_that_fit_their_size() -> None:
    """An H200's and a CPU's calibration, as their records hold them: neither reads as zero."""
    assert render.run_provenance.in_units(
        [
            ("matmul_flops", "780136749025600.5"),
            ("reference_matmul_flops", "1232000000.0"),
            ("copy_bytes_per_s", "4230822109692.5166"),
            ("allreduce_busbw_bytes_per_s", "15600000.0"),
            ("allreduce_bytes", "1073741824"),
            ("copy_bytes", "16777216"),
            ("matmul_precision", "bf16"),
            ("matmul_s", "NaN"),
        ]
    ) == [
        ("matmul_flops", "780.1 TFLOP/s"),
        ("reference_matmul_flops", "1.232 GFLOP/s"),
        ("copy_bytes_per_s", "4,231 GB/s"),
        ("allreduce_busbw_bytes_per_s", "15.6 MB/s"),
        ("allreduce_bytes", "1 GiB"),
        ("copy_bytes", "16 MiB"),
        ("matmul_precision", "bf16"),
        ("matmul_s", "–"),
    ]


def test_a_tool_output_shows_its_lists_cut_and_says_where_the_whole_is() -> None:
    output = {"ttfts": list(range(100)), "itls": [[0.1] * 20] * 3, "mean_ttft_ms": 12.5, "label": "x" * 400}
    shown, cut = render.run_provenance.shown_output(output)
    assert cut and shown["mean_ttft_ms"] == 12.5  # every single value whole
    assert shown["ttfts"] == [*range(8), "... 92 more"]
    assert shown["itls"] == [[0.1] * 8 + ["... 12 more"]] * 3
    assert shown["label"].startswith("x" * 300) and "100 more characters" in shown["label"]
    assert render.run_provenance.shown_output({"a": [1, 2], "b": "short"}) == ({"a": [1, 2], "b": "short"}, False)


def _figures(run_ids: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    loaded = load.load(ROOT / "data", files=[ROOT / "data" / "h100" / f"{r}.parquet" for r in run_ids])
    summary = derive.run_summary(loaded.runs, loaded.rows)
    bandwidths = copy_bound.copy_bandwidths(summary)
    tests = inference.per_run_figures(summary, loaded.rows, bandwidths)
    served = serving.per_run_figures(summary, loaded.rows, bandwidths)
    return derive.with_test_figures(summary, tests, served), loaded.rows


def test_a_new_run_renders_its_own_page_and_keeps_the_others_byte_for_byte(tmp_path: Path) -> None:
    """The build's incremental path (generator/build.py): last build's pages in the stage, the manifest saying what
    each was made from. One run more renders one page; the others, and the CSV of the charted run, are not written
    again; the result is what a full render gives."""
    new = "20261129T200656Z-train-gpt-1.27b-mb4-fsdp2-compile-19b4d3"  # charted; no other run's page names it
    first = sorted(set(RUNS) - {new})
    site, manifest = tmp_path / "site", tmp_path / "run-pages.json"
    figures, rows = _figures(first)
    assert render.runs.start_run_pages(site / "runs", figures, rows, manifest).finish(site) == len(first)
    before = {p.name: p.stat().st_mtime_ns for p in (site / "runs").iterdir()}
    figures, rows = _figures([*first, new])
    assert render.runs.start_run_pages(site / "runs", figures, rows, manifest).finish(site) == 1
    after = {p.name: p.stat().st_mtime_ns for p in (site / "runs").iterdir()}
    assert {name for name in after if before.get(name) != after[name]} <= {
        f"{pages.slug(new)}{suffix}" for suffix in (".html", ".svg", ".csv.gz")
    }
    fresh = tmp_path / "fresh"
    render.runs.start_run_pages(fresh / "runs", figures, rows).finish(fresh)
    assert {p.name: p.read_bytes() for p in (fresh / "runs").iterdir()} == {
        p.name: p.read_bytes() for p in (site / "runs").iterdir()
    }
    # every page again (another repository address), but a charted run's rows come from the same file: kept
    csvs = {p.name: p.stat().st_mtime_ns for p in (site / "runs").glob("*.csv.gz")}
    assert csvs and render.runs.start_run_pages(site / "runs", figures, rows, manifest, repo_url=REPO).finish(site)
    assert {p.name: p.stat().st_mtime_ns for p in (site / "runs").glob("*.csv.gz")} == csvs


def test_a_commit_with_many_runs_of_the_configuration_links_its_latest_and_this_run(tmp_path: Path) -> None:
    """The 'Across harness commits' table names each commit's runs of this configuration: at most the latest
    `PAGE_RUN_LINKS`, and this run when it is an earlier one, then how many are left and where every run is listed (a
    page linking them all grew with the runs: at 20,000 copies these tables were 49 of the run pages' 229 MB).
    Two commits of one committed CPU configuration, copied as the many-run benchmark copies them
    (tests/replicate.py)."""
    from generator.derive import checks
    from generator.render import commit_history_page
    from tests import replicate

    data = tmp_path / "data" / "cpu-smoke"
    data.mkdir(parents=True)
    sources = {
        "20261129T174009Z-train-gpt-tiny-mb4-ddp-fp32-stock-2f85f7": 14,
        "20261129T182224Z-train-gpt-tiny-mb4-ddp-fp32-stock-a6fd5f": 3,
    }
    ids: dict[str, list[str]] = {}
    for source, copies in sources.items():
        table = pq.read_table(ROOT / "data" / "cpu-smoke" / f"{source}.parquet")
        for k in range(copies):
            copy = replicate.copy_table(table, k)
            ids.setdefault(source, []).append(copy.column("run_id")[0].as_py())
            replicate._write(copy, data / f"{replicate.copy_id(source, k)}.parquet")
    loaded, summary = checks.checked(load.load(tmp_path / "data"))
    results = derive.results(loaded, summary)
    page_runs = commit_history_page.with_history(results.page_runs, results.history)
    site = tmp_path / "site"
    render.runs.start_run_pages(site / "runs", page_runs, results.samples).finish(site)
    links = render.lists.PAGE_RUN_LINKS
    many, few = (sorted(v) for v in ids.values())  # copies of one record share its start: ordered by run id
    for run_id, listed in ((many[0], [many[0], *many[-(links - 1) :]]), (many[-1], many[-links:])):
        page = (site / "runs" / f"{pages.slug(run_id)}.html").read_text()
        table = page[page.index('<details class="ff-history">') :]
        row = next(r for r in table.split("<tr>") if r.startswith("<td><code>6246a6fb6e92"))
        # this run is named where it stands, not linked: the link led to the page it is on
        assert re.findall(r'<a href="([^"]+)\.html">', row) == [pages.slug(r) for r in listed if r != run_id], run_id
        assert "this run" in row
        assert f"and {len(many) - len(listed)} earlier" in row and 'href="../downloads/runs.csv.gz"' in row
        latest = next(r for r in table.split("<tr>") if r.startswith("<td><code>56489c6d541d"))
        assert re.findall(r'<a href="([^"]+)\.html">', latest) == [pages.slug(r) for r in few]
        assert "earlier" not in latest


def drawn(path: str) -> list[tuple[float, float]]:
    """The points a static chart's path draws, each to a tenth of a pixel: `M x,y`, then `l` and each point's move from
    the one before."""
    start, _, moves = path.removeprefix("M").partition("l")
    points = [tuple(map(float, start.split(",")))]
    numbers = [float(n) for n in re.findall(r"-?\d*\.?\d+", moves)]
    for dx, dy in zip(numbers[::2], numbers[1::2], strict=True):
        points.append((round(points[-1][0] + dx, 1), round(points[-1][1] + dy, 1)))
    return points


def test_a_one_step_spike_is_drawn_on_the_static_chart() -> None:
    """A 2,000-step run at 10 ms a step but one 100 ms step at step 1,001: the static SVG draws each bucket of steps
    by its lowest and highest value, so the spike is drawn and labels the axis (before: every other step was drawn,
    the spike fell between two, and the axis read 10 ms at the top)."""
    steps = 2000
    rows = pl.DataFrame(
        {
            "run_id": ["r"] * steps,
            "trial": [0] * steps,
            "step": list(range(steps)),
            "phase": ["warmup"] * 10 + ["steady"] * (steps - 10),
            "metric": ["step_time_s"] * steps,
            "value": [0.1 if i == 1001 else 0.01 for i in range(steps)],
        },
        schema_overrides={"trial": pl.Int32, "step": pl.Int32},
    )
    texts = render.run_samples.sample_texts(rows).row(0, named=True)
    points = drawn(texts["time_path"])
    assert texts["time_hi"] == pytest.approx(2.0) and texts["time_lo"] == pytest.approx(1.0)  # log10 of 100, 10 ms
    drawing = render.run_samples
    assert len(points) <= 2 * drawing.SVG_BUCKETS and sum(y == 10.0 for _, y in points) == 1  # the spike, once
    assert all(drawing.PLOT_X <= x <= drawing.PLOT_X + drawing.PLOT_W for x, _ in points)
    assert [x for x, _ in points] == sorted(x for x, _ in points)  # drawn left to right


def test_a_run_page_leaves_out_only_the_end_tags_html_lets_it() -> None:
    """`lean`: a table's cells and rows lose their end tags (and the line breaks between rows); every escape stays
    (a JSON script may hold a record's literal `&#34;`), and a table's last row and cell end where the table does."""
    page = (
        "<table>\n<thead><tr><th>a</th><th>b</th></tr>\n</thead>\n<tbody>\n"
        '<tr><td title="&#34;x&#39;">&#34;q&#34; it&#39;s</td><td></td></tr>\n'
        '<tr><td><a href="r.html">r</a></td></tr>\n</tbody>\n</table>\n<p>&amp;#34;</p>'
    )
    assert render.runs.lean(page) == (
        '<table>\n<thead><tr><th>a<th>b</thead>\n<tbody>\n<tr><td title="&#34;x&#39;">&#34;q&#34; it&#39;s'
        '<td><tr><td><a href="r.html">r</a></tbody>\n</table>\n<p>&amp;#34;</p>'
    )


def test_static_chart_paths_are_the_same_worked_out_a_few_runs_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cold build works out the static charts' paths `TEXT_BLOCK` runs at a time (to bound its memory): five runs of
    differing lengths and values, two at a time, give each run the texts all five at once give it."""
    frames = []
    for k in range(5):
        steps = 40 + 17 * k
        frames.append(
            pl.DataFrame(
                {
                    "run_id": [f"r{k}"] * 2 * steps,
                    "trial": [0] * 2 * steps,
                    "step": [*range(steps), *range(steps)],
                    "phase": (["warmup"] * 5 + ["steady"] * (steps - 5)) * 2,
                    "metric": ["step_time_s"] * steps + ["loss"] * steps,
                    "value": [0.01 * (1 + k) + 0.001 * (i % 7) for i in range(steps)]
                    + [10.0 - 0.01 * i * (k + 1) for i in range(steps)],
                },
                schema_overrides={"trial": pl.Int32, "step": pl.Int32},
            )
        )
    rows = pl.concat(frames)
    block = [f"r{k}" for k in range(5)]
    whole = {row["run_id"]: row for row in render.run_samples.sample_texts(rows).iter_rows(named=True)}
    monkeypatch.setattr(render.runs, "TEXT_BLOCK", 2)
    assert render.runs._texts_of(block, rows) == whole and len(whole) == 5
    assert len({t["time_path"] for t in whole.values()}) == 5  # each run its own line
