"""The catalogue pages around the leaderboards: claims (with a plausibility check), failures, hardware and
calibration, engines, and downloads of everything (Parquet and CSV)."""

from __future__ import annotations

import collections
import contextlib
import functools
import json
import multiprocessing
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import altair as alt
import jinja2
import polars as pl
import pyarrow.parquet as pq

import generator.load.fields as fields
import generator.render.chart_names as chart_names
import generator.render.lists as lists
import generator.render.pages as pages
import generator.render.parts as parts  # not `from generator.render`: the package imports this module
import generator.store.output_cache as output_cache
from generator import load, store
from generator.derive.results import Results
from runners import bounds
from runners.cache import file_sha256


def plausibility_chart(curves: pl.DataFrame, our_best: dict[str, float]) -> alt.LayerChart:
    """Implied MFU against tokens per step (log-log), with the physical limit and our best measured MFU at each
    precision (same colour as that precision's curve)."""
    base = alt.Chart(curves).encode(
        x=alt.X("tokens_per_step:Q", scale=alt.Scale(type="log", base=2), title="tokens per step (not stated)"),
        y=alt.Y("implied_mfu:Q", scale=alt.Scale(type="log"), title="implied MFU (fraction of datasheet peak)"),
        color=alt.Color("precision:N", title="if it ran in"),
        strokeDash=alt.StrokeDash("claim:N", title="claim"),
        tooltip=[
            alt.Tooltip("claim:N"),
            alt.Tooltip("precision:N"),
            alt.Tooltip("tokens_per_step:Q"),
            alt.Tooltip("implied_mfu:Q", format=".1%"),
        ],
    )
    lines = base.mark_line(point=True)
    limit = (
        alt.Chart(alt.Data(values=[{"label": "physical limit (100% of peak)", "mfu": 1.0}]))
        .mark_rule(color="black", strokeWidth=2)
        .encode(y="mfu:Q", tooltip=[alt.Tooltip("label:N"), alt.Tooltip("mfu:Q", format=".0%")])
    )
    best = pl.DataFrame(
        {"precision": list(our_best), "mfu": list(our_best.values())},
        schema={"precision": pl.String, "mfu": pl.Float64},
    )
    rules = (
        alt.Chart(best)
        .mark_rule(strokeDash=[4, 3])
        .encode(
            y="mfu:Q",
            color=alt.Color("precision:N"),
            tooltip=[alt.Tooltip("precision:N", title="our best measured, in"), alt.Tooltip("mfu:Q", format=".1%")],
        )
    )
    return (lines + limit + rules).properties(width="container", height=320)


def write_catalog_pages(
    env: jinja2.Environment,
    docs: Path,
    results: Results,
    chart_sink: pages.Charts,
    built_with: list[dict[str, str]] | None = None,
) -> None:
    claim_sections = []
    for check in results.claim_checks:
        at_our_shape = [
            r | {"our_best_href": pages.run_href(r["our_best_run"]) if r["our_best_run"] is not None else None}
            for r in check.at_our_shape.to_dicts()
        ]
        claim_sections.append(
            dict(
                claim=check.claim,
                flops_per_token=check.flops_per_token,
                our_tokens_per_step=check.our_tokens_per_step,
                matched_tokens_per_step=check.matched_tokens_per_step,
                at_our_shape=at_our_shape,
                accelerator=check.accelerator,
                chart=chart_sink.html(
                    pages.chart_id(pages.slug(check.claim["run_id"]), "plausibility"),
                    plausibility_chart(check.curves, check.our_best),
                    title=chart_names.NAMES["plausibility_chart"][0],
                ),
            )
        )
    pages.render(env, "claims.md.j2", docs / "claims.md", sections=claim_sections)
    catalog = results.catalog
    listed = lists.bounded(catalog.failures, docs, docs / "failures.md", "failures")
    failures = [r | {"href": pages.run_href(r["run_id"])} for r in listed.rows]
    pages.render(env, "failures.md.j2", docs / "failures.md", failures=failures, failures_listed=listed)
    pages.render(
        env,
        "hardware.md.j2",
        docs / "hardware.md",
        rows=catalog.hardware.to_dicts(),
        peaks=catalog.datasheet_peaks,
        used=catalog.calibrated_peaks.to_dicts(),
    )
    pages.render(
        env, "engines.md.j2", docs / "engines.md", sections=catalog.engine_sections, others=catalog.other_engines
    )
    write_downloads(env, docs, results.runs, results.samples, built_with or [], results.records)


STAGED_DOWNLOADS = "downloads-staged"


def write_downloads(
    env: jinja2.Environment,
    docs: Path,
    summary: pl.DataFrame,
    rows: pl.DataFrame,
    built_with: list[dict[str, str]] | None = None,
    records: load.Loaded | None = None,
) -> None:
    """Everything as files: per-run summary as Parquet and gzipped CSV, and every measurement row as Parquet in parts
    per suite (`samples/<suite>/samples-<suite>-001.parquet` on, `parts.samples_parts`, each listed with the runs it
    holds; a charted run's rows also come gzipped beside its page, written by `render.runs`); the page also lists the
    generator's versions that built the site (`built_with`, `packages.built_with`).

    Sized for tens of thousands of runs, as asv publishes compact data files for its one set of pages: the summary's
    CSV repeats each record's JSON columns and runs to hundreds of MB uncompressed, and one samples file of every
    run would pass the 100 MB a file that GitHub accepts. Both are made in parts (`parts`), cached by content, so a
    warm build compresses and writes only the parts a new run changed. The samples are staged next to `docs` (in
    `STAGED_DOWNLOADS`) and moved into the built site after MkDocs, instead of being copied by it. `records`: the
    loaded records `rows` are, whose files a part's samples are read from where `rows` leaves them out."""
    out = docs / "downloads"
    out.mkdir(parents=True, exist_ok=True)
    staged = docs.parent / STAGED_DOWNLOADS
    if staged.exists():
        shutil.rmtree(staged)
    staged.mkdir(parents=True)
    cache = _downloads_cache(docs)
    used: set[str] = set()
    every = records if records is not None else load.Loaded(runs=summary, rows=rows)
    begun = _BEGUN.pop(docs, None)
    with (
        contextlib.nullcontext(begun[2])
        if begun is not None and begun[0] is summary and begun[1] is every
        else _samples_writer(summary, every, cache)  # begun now: made while the runs' files are
    ) as samples:
        flat = summary.select(
            [c for c, t in summary.schema.items() if not isinstance(t, pl.List | pl.Struct | pl.Object)]
        ).sort("run_id")
        files = []
        path = out / "runs.parquet"
        flat.write_parquet(path, compression="zstd", statistics=False)
        files.append(_listed(path, "runs.parquet", flat.height))
        path = out / "runs.csv.gz"
        used |= _runs_csv(flat.drop(PARQUET_ONLY, strict=False), path, cache)
        files.append(_listed(path, "runs.csv.gz", flat.height))
        kinds = {} if not samples.listed else {r: _kind_word(k, o) for r, k, o in summary.select(KIND_OF).iter_rows()}
        suites: dict[str, list[dict[str, object]]] = {}
        for part, key, frame_rows, held, make in samples.listed:
            name = part.path.removeprefix("downloads/")
            path = staged / name
            digest = parts.placed(path, cache, key, make)
            used.add(key)
            suites.setdefault(part.suite, []).append(
                _listed(path, name, frame_rows, digest) | _held(part, sorted(held), kinds)
            )
        samples.close()  # the worker's memory (a batch of served points' every row, kept by its allocator) back now
    # what each column holds, as generator/load/fields.py declares it: the record's own columns (runners/schema.py), the
    # config flattened (generator/load/columns.py) and every derived figure
    what = {f.name: f.what for f in fields.RUN}
    columns = {
        name: (json.dumps(str(dtype)), what.get(name, "") + (" (runs.parquet only)" if name in PARQUET_ONLY else ""))
        for name, dtype in flat.schema.items()
    }
    pages.render(
        env,
        "downloads.md.j2",
        docs / "downloads.md",
        files=files,
        samples=[
            dict(suite=suite, anchor=parts.listed_at(suite).partition("#")[2], parts=listed)
            for suite, listed in suites.items()
        ],
        runs_per_part=parts.RUNS_PER_PART,
        columns=columns,
        built_with=built_with or [],
    )


PARQUET_ONLY = tuple(bounds.JSON_LIMITS)
"""The record's JSON columns (config, hardware, software, environment, calibration), whole in runs.parquet and left
out of runs.csv.gz, which has their fields as columns: they were three quarters of the CSV's text (a package list is
up to 40,000 characters, past what a spreadsheet cell holds)."""


def _listed(path: Path, name: str, rows: int, sha256: str | None = None) -> dict[str, object]:
    """A download's line on the downloads page: its name (under downloads/), rows, bytes and sha256 (given where the
    caller has it)."""
    return dict(name=name, rows=rows, size=path.stat().st_size, sha256=sha256 or file_sha256(path))


KIND_WORDS = {
    "train": "training",
    "pp": "prompt processing",
    "tg": "generation",
    "offline": "offline throughput",
    "serve": "served latency",
    "claim": "claim",
}
"""What the samples parts' listing calls each `kind` of run (generator/load/columns.py), in the order it lists them; a
claim has none (it ran nowhere we saw), and is called by its origin."""
KIND_OF = ("run_id", "kind", "origin")
"""The summary's columns that say a run's kind (`_kind_word`)."""


def _kind_word(kind: str | None, origin: str | None) -> str:
    """A run's kind as the samples parts' listing names it (`KIND_WORDS`): one it does not know, as it is."""
    if kind is None:
        return KIND_WORDS.get(origin or "", "no kind recorded")
    return KIND_WORDS.get(kind, kind)


def _held(part: parts.SamplesPart, held: list[str], kinds: dict[str, str]) -> dict[str, object]:
    """A samples part's line on the downloads page, beside `_listed`'s: its file's own name, the runs whose rows it
    holds (`held`, in id order) as their count, first and last, and how many of each kind (`kinds`: each run's, by
    `_kind_word`), in `KIND_WORDS`' order and any other after."""
    counts = collections.Counter(kinds[run_id] for run_id in held)
    order = list(KIND_WORDS.values())
    named = sorted(counts, key=lambda w: (order.index(w) if w in order else len(order), w))
    return dict(
        file=Path(part.path).name, runs=len(held), first=held[0], last=held[-1], kinds=[(w, counts[w]) for w in named]
    )


def _runs_csv(flat: pl.DataFrame, path: Path, cache: store.Store) -> set[str]:
    """`flat` as one gzipped CSV at `path`, made of a gzip member per part of its runs; each member is cached by
    the rows it holds (polars' row hashes), so only the parts whose rows changed are written and compressed again.
    Returns the cache keys it used. A part is keyed by its rows as they are and the code that makes them CSV text
    (`_RUNS_CSV`), and made CSV text only when it is not cached, a part at a time (`lists.csv_ready` is row by row):
    the whole summary as CSV text at once was the largest memory a cold build held, and making every part's text
    only to key it was a warm build's work for nothing."""
    ids = flat["run_id"].to_list()
    cut = parts.cut(ids)
    if sum(len(members) for members in cut) != len(ids):
        raise ValueError("runs.csv: run ids repeat; each run's row must be one")
    schema = repr(flat.schema)
    hashes = flat.hash_rows(seed=0).to_list()
    keys, start, members_at = [], 0, []
    for first, members in enumerate(cut):
        key = _RUNS_CSV.key(schema, first == 0, hashes[start : start + len(members)])
        members_at.append(
            parts.kept(cache, key, functools.partial(_csv_part, flat.slice(start, len(members)), first == 0))[0]
        )
        keys.append(key)
        start += len(members)
    if not keys:  # no runs: the header alone
        path.write_bytes(parts.gzipped(lists.csv_ready(flat).write_csv()))
    with open(path, "ab" if not keys else "wb") as out:
        for member_path in members_at:
            with open(member_path, "rb") as member:
                shutil.copyfileobj(member, out)
    return set(keys)


def _csv_part(rows: pl.DataFrame, header: bool, tmp: Path) -> None:
    """A runs.csv part (`_runs_csv`): these summary rows as gzipped CSV text at `tmp`."""
    tmp.write_bytes(parts.gzipped(lists.csv_ready(rows).write_csv(include_header=header), level=6))


_RUNS_CSV = output_cache.Kind("runs")
"""A runs.csv part's cache key (`_runs_csv`): its rows, and the code and library versions that make them CSV text (a
change to them makes every part again)."""


def _sample_parts(
    summary: pl.DataFrame, records: load.Loaded
) -> Iterator[tuple[parts.SamplesPart, str, int, list[str]]]:
    """Each samples part that holds rows (`parts.samples_parts`) as (the part, its cache key, rows, its runs with rows
    in load order): keyed by its runs' ids and their files' sha256 (a file's rows never change while its bytes do
    not) and the order its rows are written in, not by its name (a part renumbered holds the same bytes); the store
    adds the code and the libraries that write it (a changed writer writes every part again)."""
    rows = records.rows
    cut = parts.samples_parts(summary)
    where = {run_id: part.path for part in cut for run_id in part.run_ids}
    sha = dict(zip(summary["run_id"].to_list(), summary["sha256"].to_list(), strict=True))
    # each file's rows are contiguous: a run's rows are a slice, found once from the run-length encoding
    lengths = rows.select(pl.col("run_id").rle()).unnest("run_id")
    slices: dict[str, list[tuple[str, int]]] = {}
    for length, run_id in lengths.iter_rows():
        slices.setdefault(where.get(run_id, ""), []).append((run_id, length + records.held_out.get(run_id, 0)))
    for part in cut:  # rows of a run the summary does not hold are in none (there are none: the checks keep them)
        spans = slices.get(part.path)
        if not spans:
            continue  # no run of this part recorded rows: no file
        # its runs' files, and the order their rows are written in (the load's: a file moved to its month folder
        # moves its rows, with the same bytes); the store adds the code
        order = [run_id for run_id, _ in spans]
        key = "samples-" + parts.key_of(sorted((r, sha[r]) for r in part.run_ids), order)
        yield part, key, sum(length for _, length in spans), order


@dataclass(frozen=True, slots=True)
class _Parts:
    """The samples parts being made (`_samples_writer`)."""

    listed: list[tuple[parts.SamplesPart, str, int, list[str], Callable[[Path], None]]]
    """Each part as `_sample_parts` gives it (the part, its key, rows, its runs with rows), with a function putting its
    bytes at a path (for `parts.placed`)."""
    close: Callable[[], None]
    """Ends the worker, if any, once every part is in (`_samples_writer`'s end does too)."""


def _downloads_cache(docs: Path) -> store.Store:
    """Where the downloads' parts are kept: the build's store, else one in the work folder of `docs`."""
    return store.active() or store.at(docs.parent / "cache")


_BEGUN: dict[Path, tuple[pl.DataFrame, load.Loaded, _Parts]] = {}
"""Samples parts begun by `samples_begun`, by the docs folder they are for, with the summary and records they are
made of: `write_downloads` takes them from here, as the page modules between the build and it need not carry them."""


@contextlib.contextmanager
def samples_begun(summary: pl.DataFrame, records: load.Loaded, docs: Path) -> Iterator[None]:
    """Within this block, the samples parts that `write_downloads(..., docs, summary, ..., records)` will list are
    written meanwhile (`_samples_writer`): the build begins them once it has its results, so the worker writes them
    while the other pages are made (begun in `write_downloads` itself, the downloads waited for the worker nearly as
    long as the main thread took to write them itself)."""
    cache = _downloads_cache(docs)
    with _samples_writer(summary, records, cache) as samples:
        _BEGUN[docs] = (summary, records, samples)
        try:
            yield
        finally:
            _BEGUN.pop(docs, None)


PARTS_POOL_FROM = 200
"""Runs in the samples parts to write from which a worker process writes them (it takes about a second to start)."""


@contextlib.contextmanager
def _samples_writer(summary: pl.DataFrame, records: load.Loaded, cache: store.Store) -> Iterator[_Parts]:
    """Each samples part (`_sample_parts`) with a function putting its bytes at a path (for `parts.placed`). Parts not
    in `cache` are written by a worker process, begun here, when they hold many runs (`PARTS_POOL_FROM`): each part's
    lean rows and its held-out runs' files go to the worker (`load.subset`), which reads those files again, joins and
    writes, off this process's interpreter lock (on the main thread, the largest part of a cold build's time, while
    the run pages' worker mostly waited); the function waits for its part. One worker: one part's rows in memory at a
    time."""
    listed = list(_sample_parts(summary, records))
    todo = {key: ids for _, key, _, ids in listed if not parts.noted(cache, key)}
    here: list[tuple[parts.SamplesPart, str, int, list[str], Callable[[Path], None]]] = [
        (part, key, rows, ids, functools.partial(_write_samples, records=records, ids=ids))
        for part, key, rows, ids in listed
    ]
    if sum(len(ids) for ids in todo.values()) < PARTS_POOL_FROM:
        yield _Parts(here, lambda: None)
        return
    cache.root.mkdir(parents=True, exist_ok=True)
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))  # this process runs polars' pool
    try:
        made = {}
        for key, ids in todo.items():  # submitted at once: the pool pickles a part's rows only as the worker is free
            written = cache.root / f".{key}.{os.getpid()}.made"
            job = pool.submit(_write_samples, written, load.subset(records, ids), ids)
            made[key] = functools.partial(_written, job, written)
        yield _Parts(
            [(part, key, rows, ids, made.get(key, make)) for part, key, rows, ids, make in here], pool.shutdown
        )
    finally:
        pool.shutdown(cancel_futures=True)


def _written(job: Future[None], written: Path, path: Path) -> None:
    """Wait for the worker's `job` to write a part at `written`, then move it to `path`."""
    job.result()
    written.replace(path)


SAMPLES_BATCH = 64
"""Runs whose every row is read and written at once into a samples part: a part of served points held 14.6 million
rows (1.4 GB) at 20,000 runs, the peak of a cold build when the part was made whole in memory."""


def _write_samples(path: Path, records: load.Loaded, ids: Sequence[str]) -> None:
    """Every row of the runs `ids` (in load order, as `_sample_parts` lists them: `load.full_rows`) in one Parquet
    file at `path`, a row group per `SAMPLES_BATCH` runs: the same rows and columns as the whole frame written at
    once, never all in memory."""
    writer: pq.ParquetWriter | None = None
    try:
        for i in range(0, len(ids), SAMPLES_BATCH):
            table = load.full_rows(records, ids[i : i + SAMPLES_BATCH]).to_arrow()
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema, compression="zstd", write_statistics=False)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
    if writer is None:  # no runs: the columns alone
        load.full_rows(records, ids).write_parquet(path, compression="zstd", statistics=False)
