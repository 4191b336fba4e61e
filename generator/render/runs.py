"""One page per run: provenance, every setting and its difference from the engine's defaults, the command that
reproduces it, the result file's sha256, and the raw samples (a chart of its steps, which reads the run's rows as
gzipped CSV beside the page; every run's rows are in a part of its suite's samples download, `parts.samples_paths`).

Run pages are many (one per result file, thousands on a busy leaderboard), so they are rendered straight to
HTML with the site's own stylesheets, by worker processes while MkDocs builds the rest: the samples chart is
one shared spec with each run's CSV named in it, and its static SVG is drawn directly, so a page costs
milliseconds.

A site of tens of thousands of runs must fit where people publish it (GitHub Pages: 1 GB), so a run's rows are
shipped once: in its suite's Parquet download, and beside its page only where its chart reads them, gzipped
(a served run's rows, per request and per token, ran to megabytes of CSV a run).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import os
import re
import shutil
import threading
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import altair as alt
import jinja2
import polars as pl
from markupsafe import Markup

import generator.render.lists as lists  # not `from generator.render`: the package imports this module
import generator.render.parts as parts
from generator import load, store
from generator.derive import evidence, readable, reproduce
from generator.load import columns, repository
from generator.progress import Progress
from generator.render import charts, commits, pages, versions
from generator.store import fingerprint
from runners import bounds


def _flat(obj: Any, prefix: str = "") -> list[tuple[str, str]]:
    """A nested JSON object as (dotted key, value) pairs for a two-column table."""
    if isinstance(obj, dict):
        out: list[tuple[str, str]] = []
        for key, value in sorted(obj.items()):
            out += _flat(value, f"{prefix}{key}.")
        return out
    return [(prefix.rstrip("."), json.dumps(obj) if not isinstance(obj, str) else obj)]


def _readable(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Calibration figures as a reader takes them in, by their key's unit and their size (780.1 TFLOP/s, 1.232
    GFLOP/s on a CPU, 4,231 GB/s, 1 GiB); the record and the run's CSV keep the exact values."""
    out = []
    for key, text in pairs:
        try:
            value = float(text)
        except ValueError:
            out.append((key, text))
            continue
        if not math.isfinite(value):
            text = "–"
        elif key.endswith("_flops"):
            text = _scaled(value, ((1e12, "TFLOP/s"), (1e9, "GFLOP/s"), (1.0, "FLOP/s")))
        elif key.endswith("_bytes_per_s"):
            text = _scaled(value, ((1e9, "GB/s"), (1e6, "MB/s"), (1.0, "B/s")))
        elif key.endswith("_bytes"):
            text = _scaled(value, ((2**30, "GiB"), (2**20, "MiB"), (1.0, "B")))
        elif key.endswith("_s"):
            text = f"{pages.fmt(value, 4)} s"
        else:
            text = pages.fmt(value, 4)
        out.append((key, text))
    return out


def _scaled(value: float, units: tuple[tuple[float, str], ...]) -> str:
    """`value` in the largest of `units` it reaches (the last one otherwise), to four significant digits."""
    factor, unit = next(((f, u) for f, u in units if abs(value) >= f), units[-1])
    return f"{pages.fmt(value / factor, 4)} {unit}"


GPU_ROWS = (
    ("name", "Model"),
    ("sm_clock_mhz", "SM clock (MHz)"),
    ("max_sm_clock_mhz", "SM max (MHz)"),
    ("memory_clock_mhz", "Memory clock (MHz)"),
    ("max_memory_clock_mhz", "Memory max (MHz)"),
    ("applications_graphics_clock_mhz", "Application graphics clock (MHz)"),
    ("applications_memory_clock_mhz", "Application memory clock (MHz)"),
    ("power_limit_w", "Power limit set (W)"),
    ("enforced_power_limit_w", "Power limit enforced (W)"),
    ("default_power_limit_w", "Default power limit (W)"),
    ("ecc_mode", "ECC"),
    ("persistence_mode", "Persistence mode"),
    ("uuid", "UUID (which physical GPU)"),
)
"""The provenance section's GPU table (`hardware.gpus`, runners/bounds.py `GPU_FIELDS`), one column per GPU headed by
its index: each row's key and its label."""
IN_RUN_ROWS = (
    ("sm_clock_mhz", "SM clock during the run (MHz)"),
    ("memory_clock_mhz", "Memory clock during the run (MHz)"),
    ("power_draw_w", "Power draw during the run (W)"),
    ("temperature_c", "Temperature during the run (°C)"),
    ("clocks_event_reasons", "Clock event reasons during the run"),
)
"""The rows the GPU table adds from `hardware.gpus_in_run` (nvidia-smi asked during the steady steps)."""
LISTED_APART = {"hardware": ("gpus", "gpus_in_run"), "software": ("packages", "packages_omitted")}
"""Keys the provenance section shows in tables of their own, not in its two-column ones."""


def provenance_tables(hardware: dict[str, Any], software: dict[str, Any]) -> dict[str, Any]:
    """The provenance section's tables: hardware and software as (key, value) pairs, each GPU as nvidia-smi reported
    it (a column each, a dash where it reported nothing), and the installed packages with how many were left out."""
    gpus, packages = columns.array_at(hardware, "gpus"), columns.array_at(software, "packages")
    in_run = columns.object_at(hardware, "gpus_in_run")
    sampled = {g.get("index"): g for g in columns.array_at(in_run, "gpus") if isinstance(g, dict)}
    rows = [(title, [_reported(gpu.get(key)) for gpu in gpus]) for key, title in GPU_ROWS] if gpus else []
    if gpus and sampled:
        rows += [
            (title, [_reported(sampled.get(gpu.get("index"), {}).get(key)) for gpu in gpus])
            for key, title in IN_RUN_ROWS
        ]
    return {
        "hardware": _flat({k: v for k, v in hardware.items() if k not in LISTED_APART["hardware"]}),
        "software": _flat({k: v for k, v in software.items() if k not in LISTED_APART["software"]}),
        "gpu_heads": [f"GPU {_reported(gpu.get('index'))}" for gpu in gpus],
        "gpus": rows,
        "gpus_sampled_at": in_run.get("at_step") if sampled else None,
        "packages": packages,
        "packages_omitted": software.get("packages_omitted") or 0,
    }


PACKAGES_PREFIX = "packages-"
"""A shared list of installed packages beside the run pages (`packages-<sha256>.txt`): every run of one environment
recorded the same list, hundreds of names long."""


def packages_file(packages: list[Any]) -> tuple[str, str]:
    """(file name, text) of a list of installed packages, one a line, named by its content."""
    text = "".join(f"{bounds.neutral(str(p))}\n" for p in packages)
    return f"{PACKAGES_PREFIX}{hashlib.sha256(text.encode()).hexdigest()[:16]}.txt", text


TOOL_LIST_SHOWN = 8
"""How many values of a list in a tool's own output the run page shows: vllm bench serve prints every request's
input length, output length, TTFT and inter-token latencies (hundreds of KB a run)."""


def shown_output(value: Any) -> tuple[Any, bool]:
    """A tool's output as the run page shows it, and whether anything was cut: lists longer than `TOOL_LIST_SHOWN`
    cut to their first values and a `...` naming how many more there are, long text cut by `pages.short`."""
    if isinstance(value, dict):
        out, cut = {}, False
        for key, item in value.items():
            out[key], more = shown_output(item)
            cut |= more
        return out, cut
    if isinstance(value, list):
        items = [shown_output(v) for v in value[:TOOL_LIST_SHOWN]]
        shown = [v for v, _ in items]
        if len(value) > TOOL_LIST_SHOWN:
            shown.append(f"... {len(value) - TOOL_LIST_SHOWN:,} more")  # ASCII: the page's JSON escapes the rest
        return shown, len(value) > TOOL_LIST_SHOWN or any(c for _, c in items)
    if isinstance(value, str):
        text = pages.short(value)
        return text, text != value
    return value, False


def _reported(value: Any) -> str:
    """A value nvidia-smi reported, as it reported it (700.0 W as 700), or a dash where it reported none."""
    if value is None:
        return "–"
    return f"{value:g}" if isinstance(value, float) else str(value)


SVG_WIDTH, SVG_PANEL = 720, 150
PLOT_X, PLOT_W = 40, SVG_WIDTH - 50  # the plot area inside each panel
SVG_BUCKETS = PLOT_W // 2
"""Buckets of steps a static samples chart draws, two pixel columns each (`sample_texts`)."""


def _tenths(tenths: pl.Expr) -> pl.Expr:
    """A whole number of tenths as the shortest decimal an SVG path reads (20 as `2`, 21 as `2.1`, -3 as `-.3`)."""
    whole, tenth = tenths.abs() // 10, tenths.abs() % 10
    return pl.concat_str(
        pl.when(tenths < 0).then(pl.lit("-")).otherwise(pl.lit("")),
        pl.when((whole == 0) & (tenth != 0)).then(pl.lit("")).otherwise(whole.cast(pl.String)),
        pl.when(tenth == 0).then(pl.lit("")).otherwise(pl.lit(".") + tenth.cast(pl.String)),
    )


def sample_texts(rows: pl.DataFrame) -> pl.DataFrame:
    """Per run, in one vectorised pass over every row: the path of its static samples SVG, for step time (ms) and
    loss of trial 0 (the interactive chart reads the run's CSV instead). Each point is to a tenth of a pixel; after the
    first, each is written as its move from the one before (`l` in SVG's path data): fewer bytes than each point's two
    coordinates, for the same line.

    Steps are cut into at most `SVG_BUCKETS` buckets of equal length, two pixel columns each, and each bucket is drawn
    by its lowest and highest value in the order the steps ran (one point where they are one): a one-step spike in a
    2,000-step run is drawn, where every other step alone could skip it, and the axis labels are the run's true range.

    Columns: run_id, then for m in (time, loss): `{m}_path`, `{m}_lo`, `{m}_hi`, `{m}_warm_x` (where the
    warm-up shading ends)."""
    # each run's rows are contiguous (one file each): an integer id per block makes the windows cheap, and the
    # rows need sorting only if some file lists a metric's steps out of order
    base = (
        rows.lazy()
        .with_columns(_run=pl.col("run_id").rle_id())
        .filter(pl.col("step").is_not_null(), pl.col("trial") == 0)
    )
    out: pl.LazyFrame | None = None
    for name, metric, log in (("time", "step_time_s", True), ("loss", "loss", False)):
        value = pl.col("value") * 1e3 if log else pl.col("value")
        per = base.filter(pl.col("metric") == metric).with_columns(v=value)
        unordered = per.select(((pl.col("step").diff() < 0) & (pl.col("_run").diff() == 0)).any()).collect().item()
        per = (
            (per.sort("_run", "step", maintain_order=True) if unordered else per)
            .with_columns(
                i=pl.int_range(pl.len()).over("_run"),
                n=pl.len().over("_run"),
                warm=(pl.col("phase") == "warmup").sum().over("_run"),
            )
            .with_columns(size=(pl.col("n") + SVG_BUCKETS - 1) // SVG_BUCKETS)  # steps a bucket (at least 1)
            .with_columns(last=pl.max_horizontal((pl.col("n") + pl.col("size") - 1) // pl.col("size") - 1, pl.lit(1)))
        )
        # a bucket's lowest and highest value, in the order they ran; log scale for step times
        buckets = (
            per.filter((pl.col("v") > 0) if log else pl.lit(True))
            .with_columns(y=pl.col("v").log10() if log else pl.col("v"), bucket=pl.col("i") // pl.col("size"))
            .group_by("_run", "bucket", maintain_order=True)
            .agg(
                pl.col("run_id", "size", "last", "warm").first(),
                low=pl.col("y").min(),
                high=pl.col("y").max(),
                low_first=pl.col("y").arg_min() <= pl.col("y").arg_max(),
            )
            .with_columns(
                y=pl.when(pl.col("low") == pl.col("high"))
                .then(pl.concat_list("low"))
                .when(pl.col("low_first"))
                .then(pl.concat_list("low", "high"))
                .otherwise(pl.concat_list("high", "low"))
            )
            .explode("y")
            .with_columns(lo=pl.col("y").min().over("_run"), hi=pl.col("y").max().over("_run"))
            .with_columns(span=pl.when(pl.col("hi") > pl.col("lo")).then(pl.col("hi") - pl.col("lo")).otherwise(1.0))
        )
        # each point to a tenth of a pixel, the first one absolute and each next one as its move from the last
        x = (10 * (PLOT_X + PLOT_W * pl.col("bucket") / pl.col("last"))).round().cast(pl.Int64)
        y = (10 * (10 + (SVG_PANEL - 30) * (1 - (pl.col("y") - pl.col("lo")) / pl.col("span")))).round().cast(pl.Int64)
        moves = pl.concat_str(_tenths(x.diff()), pl.when(y.diff() < 0).then(pl.lit("")).otherwise(pl.lit(",")),
                              _tenths(y.diff())).slice(1).str.join(" ")  # fmt: skip
        start = pl.format("M{},{}", _tenths(x.first()), _tenths(y.first()))
        drawn = buckets.group_by("_run", maintain_order=True).agg(
            pl.col("run_id").first(),
            pl.when(pl.len() > 1).then(pl.format("{}l{}", start, moves)).otherwise(start).alias(f"{name}_path"),
            pl.col("lo").first().alias(f"{name}_lo"),
            pl.col("hi").first().alias(f"{name}_hi"),
            (
                PLOT_X
                + PLOT_W
                * pl.min_horizontal(pl.col("warm").first() // pl.col("size").first(), pl.col("last").first())
                / pl.col("last").first()
            ).alias(f"{name}_warm_x"),
        )
        drawn = drawn.drop("_run")
        out = drawn if out is None else out.join(drawn, on="run_id", how="full", coalesce=True)
    assert out is not None  # both metrics drawn
    return out.collect()


CSV_COLUMNS = ["trial", "step", "phase", "metric", "value", "unit"]
"""A run's CSV: every row as its file holds it, less the run id (the CSV and its page are named after it)."""


def csv_file(run_id: str) -> str:
    """A charted run's rows as gzipped CSV, beside its page under `runs/`."""
    return f"{pages.slug(run_id)}.csv.gz"


def _csv_field(expr: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """A CSV field (RFC 4180): quoted, with quotes doubled, when it holds a comma, a quote or a line break (only
    text can; a number is written as it is)."""
    text = expr.cast(pl.String).fill_null("")
    if dtype != pl.String:
        return text
    text = pages.csv_inert(text)
    quoted = pl.lit('"') + text.str.replace_all('"', '""', literal=True) + pl.lit('"')
    return pl.when(text.str.contains('[",\r\n]')).then(quoted).otherwise(text)


def csv_texts(rows: pl.DataFrame) -> dict[str, str]:
    """Every run's rows as CSV text (header included), built for all runs in one vectorised pass, rows in the
    order of the run's file."""
    header = ",".join(CSV_COLUMNS)
    schema = rows.schema
    lines = (
        rows.lazy()
        .select(
            pl.col("run_id").rle_id().alias("_run"),  # each run's rows are contiguous: group by an integer
            "run_id",
            pl.concat_str([_csv_field(pl.col(c), schema[c]) for c in CSV_COLUMNS], separator=",").alias("line"),
        )
        .group_by("_run", maintain_order=True)
        .agg(pl.col("run_id").first(), pl.col("line").str.join("\n"))
        .collect()
    )
    out: dict[str, str] = {}
    for _, run_id, text in lines.iter_rows():  # a run split in blocks (never written so) still gets every row
        out[run_id] = f"{out[run_id]}{text}\n" if run_id in out else f"{header}\n{text}\n"
    return out


def _label(value: Any) -> str:
    """An axis label: three significant digits, or a dash where the value is not a finite number."""
    return f"{value:.3g}" if isinstance(value, int | float) and math.isfinite(value) else "–"


def _log_label(exponent: Any) -> str:
    """The label of a log-scale axis at 10^exponent (a dash where that is not a finite number: never `inf`)."""
    if not (isinstance(exponent, int | float) and math.isfinite(exponent)) or abs(exponent) > 300:
        return "–"
    return _label(10.0**exponent)


def samples_svg(texts: dict[str, Any]) -> str:
    """A static SVG of step time (log scale) and loss per step, for readers without JavaScript, from the paths
    `sample_texts` computed."""

    def panel(name: str, top: int, log: bool, label: str) -> str:
        path = texts.get(f"{name}_path")
        if not path:
            return ""
        lo, hi, warm_x = texts[f"{name}_lo"], texts[f"{name}_hi"], texts[f"{name}_warm_x"]
        fmt = _log_label if log else _label
        return (
            f'<g transform="translate(0,{top})">'
            f'<rect x="{PLOT_X}" y="10" width="{warm_x - PLOT_X:.1f}" height="{SVG_PANEL - 30}" fill="#fdf3d8"/>'
            f'<path fill="none" stroke="#1f6feb" stroke-width="1" d="{path}"/>'
            f'<text x="0" y="14" font-size="10">{fmt(hi)}</text>'
            f'<text x="0" y="{SVG_PANEL - 20}" font-size="10">{fmt(lo)}</text>'
            f'<text x="{PLOT_X}" y="8" font-size="11">{label}</text></g>'
        )

    body = panel("time", 0, True, "step time (ms, log scale); warm-up shaded") + panel(
        "loss", SVG_PANEL, False, "loss (nats)"
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{SVG_WIDTH}" height="{2 * SVG_PANEL}" '
        f'font-family="sans-serif">{body}</svg>\n'
    )


def _visible(value: Any) -> Any:
    """A record's text with control and format characters made visible (`bounds.neutral`); markup the page builds
    itself (already `Markup`) and numbers pass as they are."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return bounds.neutral(value)
    return value


@functools.cache  # one per process: a worker compiles the page template once, not once per job (0.25 s each)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(pages.TEMPLATES),
        undefined=jinja2.StrictUndefined,
        autoescape=True,  # an HTML page: every record value is escaped
        finalize=_visible,  # ... and its control and bidi characters shown, not obeyed
        trim_blocks=True,
        lstrip_blocks=True,
    )
    # another run's page, beside this one: its file is named by its slug (`q4_k_m` becomes `q4-k-m`), not its id
    env.filters.update(fmt=pages.fmt, pct=pages.pct, page=lambda run_id: f"{pages.slug(run_id)}.html")
    # a commit's runs of this configuration: at most its latest `PAGE_RUN_LINKS` (and this run); all of them linked
    # from every page of the configuration made each page grow with the runs
    env.globals["run_links"] = lists.PAGE_RUN_LINKS
    return env


def theme_stylesheets() -> list[str]:
    """The theme's stylesheets as MkDocs will place them (`assets/stylesheets/*.min.css`), known before it runs."""
    import material

    theme = Path(material.__file__).parent / "templates" / "assets" / "stylesheets"
    return sorted(f"assets/stylesheets/{p.name}" for p in theme.glob("*.min.css"))


def _code_key(stylesheets: list[str]) -> str:
    """What every run page also depends on besides its own record: the code that makes output and the libraries that
    make its bytes (`fingerprint`: no hand list, which missed the formatter of every number), and the stylesheet
    names."""
    digest = hashlib.sha256(fingerprint.fingerprint().encode())
    digest.update("\n".join(stylesheets).encode())
    return digest.hexdigest()


CSV_PLACEHOLDER = "@csv@"
"""Stands for the run's CSV file name in the shared samples spec (charts.js puts the page's `data-csv` there)."""
HISTORY_SCRIPT = "assets/js/run-history.js"
"""The history charts' shared specs, by name (`commit_history_page.script`): loaded by a <script> tag, so a page
opened from disk, where a browser refuses to fetch a file, still draws its chart."""
SAMPLES_SPEC = "assets/js/run-samples.vl.json"
"""The samples chart's one spec, shared by every run page (3 KB a page when each page held its own copy)."""


def samples_spec_text() -> str:
    """The shared samples chart spec (`SAMPLES_SPEC`), its data's URL the placeholder, in the site's theme whichever
    theme is active (a build made it before enabling the theme, so a process's second build wrote another spec)."""
    with alt.theme.enable(charts.THEME):
        spec = charts.step_samples_spec(CSV_PLACEHOLDER)
    return json.dumps(spec, separators=(",", ":"), sort_keys=True) + "\n"


def with_titles(frame: pl.DataFrame, suite_titles: dict[str, str]) -> pl.DataFrame:
    """`frame` with `suite_title` beside its `suite` column (`Results.suite_titles`): a run page's row carries it,
    so a new title renders the page again."""
    titles = pl.col("suite").replace_strict(suite_titles, default=None, return_dtype=pl.String)
    return frame.with_columns(suite_title=titles)


RENDER_CHUNK = 250
"""Runs per rendering job: small enough to spread over workers, large enough that pickling stays cheap."""


@dataclass(frozen=True, slots=True)
class Pending:
    """Run pages being rendered into a staging directory (by worker processes, or already rendered here):
    `finish(site)` waits for them, moves the directory to `site/runs` and records what each page was made from."""

    stage: Path
    jobs: list[Future[int]]
    keys: dict[str, str]
    """Per run id, the digest of what its page is made from (the manifest's content)."""
    manifest: Path | Stored | None
    rendered: int
    progress: Progress | None = None
    """Pages written so far, shown on a terminal while the workers render them."""
    rows_keys: dict[str, str] | None = None
    """Per charted run id, the sha256 of the file its `<run>.csv.gz` was written from (a file's rows never change
    while its bytes do not: a page rendered again for a sibling's sake keeps its CSV)."""
    fed: Future[tuple[list[Future[int]], dict[str, str]]] | None = None
    """The thread handing the pages out to workers (`_feed`): its jobs and CSV keys, once it is done."""
    finished: dict[str, str] = dataclasses.field(default_factory=dict)
    """Every charted run's CSV key once `finish` has waited for them (what `record` writes)."""

    def finish(self, site: Path, record: bool = True) -> int:
        """Wait for every page; returns how many runs were rendered (the others kept their files). `record`: write the
        manifest now; a build that publishes the pages later (`generator/build.py`) calls `record()` once they are."""
        jobs, rows_keys = self.jobs, self.rows_keys or {}
        try:
            if self.fed is not None:
                fed_jobs, written = self.fed.result()  # a failed block raises here, before anything is moved
                jobs, rows_keys = [*jobs, *fed_jobs], rows_keys | written
            for job in jobs:
                job.result()  # a failed render raises here, before anything is moved or recorded
        finally:
            if self.progress is not None:
                self.progress.close()
        self.finished.update(rows_keys)
        target = site / "runs"
        if self.stage.resolve() != target.resolve():
            if target.exists():
                shutil.rmtree(target)
            os.replace(self.stage, target)
        if record:
            self.record()
        return self.rendered

    def record(self, site_runs: Path | None = None) -> None:
        """Write the manifest: what each page now published was made from (after `finish`). `site_runs`: the folder
        the pages were published in, whose files' stat keys the manifest then holds (`Stored`)."""
        if self.manifest is None:
            return
        manifest: dict[str, Any] = {"pages": self.keys, "rows": self.finished}
        if isinstance(self.manifest, Stored):
            manifest["files"] = published_files(site_runs) if site_runs is not None else {}
            self.manifest.write(manifest)
            return
        self.manifest.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.manifest.with_suffix(".tmp")
        tmp.write_text(json.dumps(manifest, sort_keys=True))
        tmp.replace(self.manifest)


@dataclass(frozen=True, slots=True)
class Stored:
    """The run pages' manifest as a blob of the build store (kind `run-pages`), one per published folder (`key`)."""

    store: store.Store
    key: str

    def read(self) -> dict[str, Any]:
        data = self.store.get("run-pages", self.key)
        try:
            found = json.loads(data) if data is not None else {}
        except ValueError:
            return {}
        return found if isinstance(found, dict) else {}

    def write(self, manifest: dict[str, Any]) -> None:
        self.store.put("run-pages", self.key, json.dumps(manifest, sort_keys=True).encode())


def published_files(folder: Path) -> dict[str, str]:
    """Each file of a published run pages' folder by its stat key (size, inode, times: `load.stat_key`): a file whose
    stat key is another when the next build links it was written to since, and is not kept."""
    if not folder.is_dir():
        return {}
    return {entry.name: load.stat_key(entry.path) for entry in os.scandir(folder)}  # str paths: half the time


def start_run_pages(
    stage: Path,
    summary: pl.DataFrame,
    rows: pl.DataFrame,
    manifest: Path | Stored | None = None,
    pool: Executor | None = None,
    repo_url: repository.Source | str | None = None,
    records: load.Loaded | None = None,
) -> Pending:
    """Begin rendering `<run>.html`, its samples SVG and its rows as CSV for every run into `stage` (which may
    hold the previous build's pages); `finish(site)` completes it. The data work (samples, CSV) happens here;
    the HTML is rendered on `pool` when given, so it can overlap the rest of the build.

    Incremental when `stage` holds the last build's pages and `manifest` says what each was made from: a run
    whose inputs are unchanged (its summary row, which carries its result file's sha256, and this code) keeps
    its files; new and changed runs are rendered, and the files of runs no longer present are removed. The
    bytes are the same as a full render's. `records`: the loaded records `rows` are (`Results.records`), whose files
    the CSVs are written from where `rows` leaves samples out (`load.full_rows`). `repo_url`: where the Reproduce
    blocks clone from (`repository.resolve`; a bare address is taken as given)."""
    source = repository.Source(repo_url) if isinstance(repo_url, str) else repo_url
    stylesheets = theme_stylesheets()
    stage.mkdir(parents=True, exist_ok=True)
    code = _code_key(stylesheets) + repr(source)  # not the generator's version: the footer reads it apart
    where = parts.samples_paths(summary)  # in the page, so in its key: a part split in two moves its runs' rows
    ids = summary["run_id"].to_list()
    keyed = summary.with_columns(pl.Series("samples_file", [where[i] for i in ids], dtype=pl.String))
    # a page's key: this code and the polars row hash of its run's row (vectorised: 50,000 rows of JSON text
    # made into dicts and dumped took seconds of a warm build)
    code_digest = hashlib.sha256(f"{code}{pl.__version__}{keyed.schema!r}".encode()).hexdigest()[:16]
    keys = {i: f"{code_digest}-{h:016x}" for i, h in zip(ids, keyed.hash_rows(seed=0).to_list(), strict=True)}
    if isinstance(manifest, Stored):
        recorded = manifest.read()
    else:
        recorded = json.loads(manifest.read_text()) if manifest is not None and manifest.exists() else {}
    before: dict[str, str] = recorded.get("pages", {}) if isinstance(recorded.get("pages"), dict) else {}
    rows_before: dict[str, str] = recorded.get("rows", {}) if isinstance(recorded.get("rows"), dict) else {}
    current = {pages.slug(i) for i in ids}
    present: set[str] = set()
    for path in stage.iterdir():  # runs no longer in data/ (a removed or now rejected file), and files of a
        # layout this build no longer writes (a run's plain CSV)
        if path.name.startswith(PACKAGES_PREFIX):
            continue  # shared by runs whose pages may be kept; a cold build (publish's) writes only those in use
        if _run_of(path.name) not in current or path.name.endswith(".csv"):
            path.unlink()
        elif path.name.endswith(".html"):
            present.add(path.name)
    changed = [i for i in ids if before.get(i) != keys[i] or f"{pages.slug(i)}.html" not in present]
    redone = set(changed)
    rows_keys = {i: rows_before[i] for i in ids if i not in redone and i in rows_before}  # kept pages keep their CSV
    progress = Progress("run pages", len(changed), unit="pages written")
    if len(changed) < POOL_FROM:
        pool = None  # a worker process (seconds to start and import) costs more than a few pages rendered here
    every = records if records is not None else load.Loaded(runs=summary, rows=rows)
    feed = functools.partial(
        _feed, stage, keyed, changed, rows, every, rows_before, pool, progress, stylesheets, source
    )
    if pool is None:
        jobs, written = feed()
        return Pending(stage, jobs, keys, manifest, len(changed), progress, rows_keys | written)
    # with workers, the pages' data is made and handed out a block at a time on a thread of its own, while this one
    # builds the rest of the site: never every run's page data at once
    feeder = ThreadPoolExecutor(1, thread_name_prefix="run-pages")
    fed = feeder.submit(feed)
    feeder.shutdown(wait=False)  # the thread ends with its work; `finish` waits for that
    return Pending(stage, [], keys, manifest, len(changed), progress, rows_keys, fed)


FEED_BLOCK = 2000
"""Runs whose page data (their rows as dicts, their samples' polylines) is made at once when workers render them."""
OUTSTANDING_JOBS = 8
"""Rendering jobs handed to the workers and not yet done, at most: what waits in the pool's queue is in memory."""


def _feed(
    stage: Path,
    keyed: pl.DataFrame,
    changed: list[str],
    rows: pl.DataFrame,
    records: load.Loaded,
    rows_before: dict[str, str],
    pool: Executor | None,
    progress: Progress,
    stylesheets: list[str],
    source: repository.Source | None,
) -> tuple[list[Future[int]], dict[str, str]]:
    """Render the `changed` runs' pages (on `pool`, or here) and write their CSVs, `FEED_BLOCK` runs at a time, with
    at most `OUTSTANDING_JOBS` jobs waiting: returns the jobs and each charted run's CSV key (`Pending.rows_keys`)."""
    jobs: list[Future[int]] = []
    written: dict[str, str] = {}
    whole = len(changed) == keyed.height
    for b in range(0, len(changed), FEED_BLOCK):
        block = changed[b : b + FEED_BLOCK]
        wanted = pl.Series(block, dtype=pl.String).implode()
        todo = keyed.filter(pl.col("run_id").is_in(wanted)).to_dicts()
        block_rows = rows if whole and len(block) == len(changed) else rows.filter(pl.col("run_id").is_in(wanted))
        texts = _texts_of(block, block_rows)
        with_rows = set(block_rows["run_id"].unique().to_list())  # the runs whose suite's samples file holds rows
        charted = {i for i in with_rows if texts.get(i) and (texts[i]["time_path"] or texts[i]["loss_path"])}
        for i in range(0, len(todo), RENDER_CHUNK):
            chunk = todo[i : i + RENDER_CHUNK]
            in_chunk = [r["run_id"] for r in chunk]
            args = (stage, chunk, {i: texts.get(i) for i in in_chunk}, with_rows.intersection(in_chunk),
                    charted.intersection(in_chunk), stylesheets, source)  # fmt: skip
            if pool is None:
                progress.advance(_render(*args))
                continue
            while sum(not job.done() for job in jobs) >= OUTSTANDING_JOBS:
                wait([job for job in jobs if not job.done()], return_when=FIRST_COMPLETED)
            jobs.append(job := pool.submit(_render, *args))
            job.add_done_callback(functools.partial(_count, progress))
        written |= _write_csvs(stage, todo, records, charted, rows_before)  # while the workers render the pages
    return jobs, written


TEXT_BLOCK = 250
"""Runs whose static charts' paths (`sample_texts`) are worked out at once: each run's are its own, and a feed block's
training runs at once (thousands of steps each) were the largest memory a cold build held."""


def _texts_of(block: list[str], rows: pl.DataFrame) -> dict[str, dict[str, Any]]:
    """`sample_texts` of the runs `block` (whose rows are `rows`) by run id, `TEXT_BLOCK` runs at a time."""
    texts: dict[str, dict[str, Any]] = {}
    for i in range(0, len(block), TEXT_BLOCK):
        part = rows
        if len(block) > TEXT_BLOCK:
            part = rows.filter(pl.col("run_id").is_in(pl.Series(block[i : i + TEXT_BLOCK], dtype=pl.String).implode()))
        texts |= {row["run_id"]: row for row in sample_texts(part).iter_rows(named=True)}
    return texts


POOL_FROM = 100
"""Pages to render from which they go to the worker pool (a warm build after one new run renders one here)."""


def _count(progress: Progress, done: Future[int]) -> None:
    """A finished rendering job's pages, counted (a failed job raises in `Pending.finish`)."""
    if not done.cancelled() and done.exception() is None:
        progress.advance(done.result())


def _run_of(name: str) -> str:
    """The run slug a file under `runs/` belongs to (`<slug>.html`, `.svg`, `.csv.gz`)."""
    for suffix in (".csv.gz", ".html", ".svg", ".csv"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


ROWS_GZIP_LEVEL = 6
"""gzip's level for a run's rows: 1.2% larger than -9 on the committed training runs' CSV, 2.6 times faster."""


CSV_BATCH = 256
"""Runs whose rows are read and written as CSV at once: memory for a batch's rows, never every run's."""


def _write_csvs(
    stage: Path, runs: list[dict[str, Any]], records: load.Loaded, charted: set[str], before: dict[str, str]
) -> dict[str, str]:
    """Each charted run's rows as `<run>.csv.gz` (its chart's data), unless `before` says the one there was written
    from the same file (its sha256) by the same code and libraries (`fingerprint`); another run has none beside its
    page. Returns run id → what each CSV was written from.
    Every row of the file, a batch of runs at a time (`load.full_rows`)."""
    written: dict[str, str] = {}
    wanted = []
    made_by = fingerprint.fingerprint()  # the code that writes a CSV and the libraries that make its bytes
    for run in runs:
        run_id, path = run["run_id"], stage / csv_file(run["run_id"])
        if run_id not in charted:
            path.unlink(missing_ok=True)
            continue
        written[run_id] = f"{run['sha256']}:{made_by}"
        if before.get(run_id) != written[run_id] or not path.exists():
            wanted.append(run_id)
    for i in range(0, len(wanted), CSV_BATCH):
        batch = wanted[i : i + CSV_BATCH]
        csvs = csv_texts(load.full_rows(records, batch))
        for run_id in batch:
            _put(stage / csv_file(run_id), parts.gzipped(csvs[run_id], level=ROWS_GZIP_LEVEL))
    return written


def _render(
    stage: Path,
    runs: list[dict[str, Any]],
    texts: dict[str, Any],
    with_rows: set[str],
    with_csv: set[str],
    stylesheets: list[str],
    source: repository.Source | None = None,
) -> int:
    """Write each run's page and samples SVG into `stage` (a worker's job: no polars here); `with_rows` names the
    runs with rows in their suite's samples file, `with_csv` those whose gzipped CSV is (being) written beside them."""
    template = _environment().get_template("run.html.j2")
    for run in runs:
        run_id = run["run_id"]
        slug = pages.slug(run_id)
        config = columns.parsed(run["config"])
        chart_json, svg_name = None, None
        csv_name = csv_file(run_id) if run_id in with_csv else None
        run_texts = texts.get(run_id)
        if csv_name and run_texts is not None and (run_texts.get("time_path") or run_texts.get("loss_path")):
            chart_json = SAMPLES_SPEC
            svg_name = f"{slug}.svg"
            _put(stage / svg_name, samples_svg(run_texts).encode())
        else:
            (stage / f"{slug}.svg").unlink(missing_ok=True)
        command, not_reproducible = reproduce.command(run, config if isinstance(config, dict) else {})
        provenance = provenance_tables(columns.parsed(run["hardware"]), columns.parsed(run["software"]))
        listed = None
        if provenance["packages"]:
            listed, text = packages_file(provenance["packages"])
            if not (stage / listed).exists():  # two workers may write one list: each writes its own, then renames
                _put(stage / listed, text.encode())
        imported = config.get("imported") if isinstance(config, dict) else None
        result = imported.get("result") if isinstance(imported, dict) else None
        tool_output, cut = shown_output(result)
        html = template.render(
            run=run,
            reproduce=command,
            not_reproducible=not_reproducible,
            csv_name=csv_name,
            samples_name=run["samples_file"].removeprefix("downloads/") if run_id in with_rows else None,
            samples_href=f"../{run['samples_file']}",
            config=config,
            settings=readable.beside_defaults(config),
            **provenance,
            packages_file=listed,
            tool_output=tool_output,
            tool_output_cut=TOOL_LIST_SHOWN if cut else 0,
            environment=_flat(columns.parsed(run["environment"])),
            calibration=_readable(_flat(columns.parsed(run["calibration"]))) if run["calibration"] else [],
            workload_href=f"../leaderboards/{pages.slug(run['suite'], run['workload'])}.html",
            repo=source,
            repo_from=repository.FROM[source.kind] if source else None,
            setup=reproduce.setup(run, config if isinstance(config, dict) else {}),
            runs_to_rank=evidence.RUNS_TO_RANK,
            built_with_script=f"../{versions.FOOTER_SCRIPT}",
            history_script=HISTORY_SCRIPT,
            checkout=commits.valid(run["harness_commit"]),  # a hostile value never reaches a shell block
            stylesheets=stylesheets,
            chart_json=chart_json,
            chart_id="chart-run",  # one run a page: its ids need not name it
            svg_name=svg_name,
        )
        _put(stage / f"{slug}.html", lean(html).encode())
    return len(runs)


OPTIONAL_END_TAGS = re.compile(r"</t[dh]>\s*(?=</tr>|<t[dh][\s>])|</tr>\s*(?=<tr[\s>]|</tbody>|</thead>|</table>)")
"""The end tags of table cells and rows where HTML lets a page leave them out (before the next cell or row, or where
their row or table ends: https://html.spec.whatwg.org/multipage/syntax.html#optional-tags), with the line breaks
between rows: tables are most of a run page, and the browser builds the same table without them."""


def lean(html: str) -> str:
    """A rendered run page in fewer bytes, read by a browser as the same document: no optional end tags in its tables
    (`OPTIONAL_END_TAGS`). Escaped quotes stay escaped: a page's JSON <script> may hold a record's literal `&#34;`,
    which a rewrite of text could not tell from an escape."""
    return OPTIONAL_END_TAGS.sub("", html)


def _put(path: Path, data: bytes) -> None:
    """`data` as the file at `path`, written aside and renamed over it: a new file, never the old one rewritten, as
    the stage's files may be hard links to the published site's (`generator/build.py`), which must not change."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
