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

import generator.derive.evidence as evidence
import generator.derive.reproduce as reproduce
import generator.load.columns as columns
import generator.load.repository as repository
import generator.render.charts as charts
import generator.render.commits as commits
import generator.render.lists as lists  # not `from generator.render`: the package imports this module
import generator.render.pages as pages
import generator.render.parts as parts
import generator.render.run_provenance as run_provenance
import generator.render.run_samples as run_samples
import generator.render.versions as versions
import generator.store.fingerprint as fingerprint
from generator import load, store
from generator.progress import Progress
from runners import bounds

PACKAGES_PREFIX = "packages-"
"""A shared list of installed packages beside the run pages (`packages-<sha256>.txt`): every run of one environment
recorded the same list, hundreds of names long."""


def packages_file(packages: list[Any]) -> tuple[str, str]:
    """(file name, text) of a list of installed packages, one a line, named by its content."""
    text = "".join(f"{bounds.neutral(str(p))}\n" for p in packages)
    return f"{PACKAGES_PREFIX}{hashlib.sha256(text.encode()).hexdigest()[:16]}.txt", text


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
    # a page's key: this code and the polars row hash of its run's row (vectorised, where every row's JSON text
    # made into dicts and dumped again grew with the runs)
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
        texts |= {row["run_id"]: row for row in run_samples.sample_texts(part).iter_rows(named=True)}
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
        run_id, path = run["run_id"], stage / run_samples.csv_file(run["run_id"])
        if run_id not in charted:
            path.unlink(missing_ok=True)
            continue
        written[run_id] = f"{run['sha256']}:{made_by}"
        if before.get(run_id) != written[run_id] or not path.exists():
            wanted.append(run_id)
    for i in range(0, len(wanted), CSV_BATCH):
        batch = wanted[i : i + CSV_BATCH]
        csvs = run_samples.csv_texts(load.full_rows(records, batch))
        for run_id in batch:
            _put(stage / run_samples.csv_file(run_id), parts.gzipped(csvs[run_id], level=ROWS_GZIP_LEVEL))
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
        csv_name = run_samples.csv_file(run_id) if run_id in with_csv else None
        run_texts = texts.get(run_id)
        if csv_name and run_texts is not None and (run_texts.get("time_path") or run_texts.get("loss_path")):
            chart_json = SAMPLES_SPEC
            svg_name = f"{slug}.svg"
            _put(stage / svg_name, run_samples.samples_svg(run_texts).encode())
        else:
            (stage / f"{slug}.svg").unlink(missing_ok=True)
        command, not_reproducible = reproduce.command(run, config if isinstance(config, dict) else {})
        provenance = run_provenance.provenance_tables(columns.parsed(run["hardware"]), columns.parsed(run["software"]))
        listed = None
        if provenance["packages"]:
            listed, text = packages_file(provenance["packages"])
            if not (stage / listed).exists():  # two workers may write one list: each writes its own, then renames
                _put(stage / listed, text.encode())
        imported = config.get("imported") if isinstance(config, dict) else None
        result = imported.get("result") if isinstance(imported, dict) else None
        tool_output, cut = run_provenance.shown_output(result)
        html = template.render(
            run=run,
            reproduce=command,
            not_reproducible=not_reproducible,
            csv_name=csv_name,
            samples_name=run["samples_file"].removeprefix("downloads/") if run_id in with_rows else None,
            samples_href=f"../{run['samples_file']}",
            samples_listed=f"../{parts.listed_at(run['suite'])}",
            config=config,
            settings=run["settings_beside_defaults"],  # derived once per run (`derive.defaults`)
            **provenance,
            packages_file=listed,
            tool_output=tool_output,
            tool_output_cut=run_provenance.TOOL_LIST_SHOWN if cut else 0,
            environment=run_provenance.flat(columns.parsed(run["environment"])),
            calibration=run_provenance.calibration(run["calibration"]),
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
