"""Build the site: load + validate `data/` → derive → charts → Markdown pages → MkDocs Material → `site/`.

    fairfight site [--data data] [--out site] [--work build]     (or python -m generator.build)

Everything written goes to the ignored `build/` and `site/` directories; `site_src/` is only read.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gzip
import json
import multiprocessing
import os
import re
import shutil
import sys
import time
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import altair as alt
import polars as pl
import yaml

import generator.commands.compare as compare
import generator.derive.changelog as changelog
import generator.derive.checks as checks
import generator.derive.serving as serving
import generator.load.editions as editions
import generator.load.history as history
import generator.load.packages as packages
import generator.load.repository as repository
import generator.render.charts as charts
import generator.render.commit_history_page as commit_history_page
import generator.render.pages as pages
import generator.render.versions as versions
import generator.store.runcache as runcache
from generator import SITE_SRC, derive, load, progress, render, store
from runners import arguments, cache


def vega_bundle(cache_dir: Path | None = None) -> str:
    """Vega + Vega-Lite + vega-embed as one script, made offline by vl-convert and cached by version: by default in
    the user cache (runners/cache.py), so it is made once per machine, not once per build folder."""
    import vl_convert

    cache_dir = cache.root() / "vega" if cache_dir is None else cache_dir
    vl_version = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    key = f"vega-{vl_convert.get_vega_version()}-vl-{vl_version}-embed-{vl_convert.get_vega_embed_version()}.js"
    cached = cache_dir / key
    if not cached.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f".{key}.{os.getpid()}.tmp")  # two builds at once each write their own, then rename
        tmp.write_text(vl_convert.javascript_bundle(vl_version=vl_version))
        tmp.replace(cached)
    return cached.read_text()


def build(
    data_dir: Path,
    out_dir: Path,
    work_dir: Path,
    site_url: str | None = None,
    repo_url: str | None = None,
    supplied: Mapping[str, str] | None = None,
) -> load.Loaded:
    """Build the whole site from `data_dir` into `out_dir`, using `work_dir` for generated sources. `site_url` (where
    the site will be served) fills the sitemap and canonical links; `repo_url` goes into every reproduce block and
    links the boards' harness commits;
    `supplied` holds the Markdown of the pages the caller makes (`pages.SITE` entries marked supplied: the
    `fairfight` command supplies its reference)."""
    supplied = dict(supplied or {})
    data_dir = load.canonical(data_dir)  # however it is named, one folder, its files under the same paths
    # no --repo-url: the project's metadata, else this checkout's remote, else its path (the run pages say which)
    source = repository.resolve(repo_url)
    site_url = site_url or repository.documentation_url()  # none: an empty sitemap, a 404 page for the root's level
    declared = {p.file for p in pages.SITE if p.supplied}
    if set(supplied) - declared:
        raise ValueError(
            f"supplied pages {sorted(set(supplied) - declared)} are not declared in generator/render/pages.py"
        )
    # One build at a time per store: a second waits for the first, saying so (generator/store/).
    cache_dir = runcache.folder_for(work_dir)
    runcache.use(cache_dir)  # every cache of this build is an entry of the one store in there
    kept = store.active()
    assert kept is not None
    with kept.locked():
        # Nothing leaves `out_dir` until the new site is whole: it is built in a stage beside it (one file system, so
        # the swap is a rename), then swapped in; a build that raises leaves the previous site as it was.
        target = Path(os.path.realpath(out_dir))  # a link to the site's folder stays a link to the new one
        stage = _stage_for(target)
        try:
            with history.once():  # git asked once what was rewritten: every step of the build sees one answer
                loaded, pending = _build_staged(stage, data_dir, target, work_dir, site_url, source, supplied)
            _swap(stage / "site", target)
        except BaseException as error:
            error.add_note(
                f"the build failed and replaced nothing: {out_dir} is exactly as it was before the build began"
            )
            raise
        finally:
            # after the swap, the previous site; removed before the manifest is taken: the published run pages kept
            # from it are hard links to its files, and unlinking a name changes the file's change time, which the
            # manifest records (a removal beside it left the next build seeing every kept page as changed)
            shutil.rmtree(stage, ignore_errors=True)
        pending.record(target / "runs")  # what the published run pages were made from, once they are published
        kept.prune()  # the store keeps what this build used
        _drop_old_layouts(work_dir, cache_dir)
    return loaded


OLD_LAYOUTS = (
    "runs-kept", "cache/outputs", "cache/pages", "cache/svg", "cache/downloads", "cache/loaded", "cache/compare",
    "cache/jinja", "cache/run-pages.json",
)  # fmt: skip
"""What builds before the one store left in a work folder (`build/runs-kept` was never cleaned)."""


def _drop_old_layouts(work_dir: Path, cache_dir: Path) -> None:
    """Remove the caches of the layouts before the one store, and their tables (`figures-*`, `arrays-*`)."""
    for name in OLD_LAYOUTS:
        path = work_dir / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            path.unlink()
    for pattern in ("figures-*", "arrays-*"):
        for path in cache_dir.glob(pattern):
            if path.is_file() or path.is_symlink():
                path.unlink()


STAGE_INFIX = ".build-"
"""A build's stage is `.<out>.build-<pid>` beside the output folder (`_stage_for`)."""


def _stage_for(out_dir: Path) -> Path:
    """A new, empty stage for a build into `out_dir`, beside it; stages of builds no longer running (killed before
    they could remove theirs) are removed."""
    out_dir = Path(os.path.abspath(out_dir))
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    for old in out_dir.parent.glob(f".{out_dir.name}{STAGE_INFIX}*"):
        pid = old.name.rpartition(STAGE_INFIX)[2]
        if pid.isdigit() and int(pid) != os.getpid() and not _running(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    stage = out_dir.parent / f".{out_dir.name}{STAGE_INFIX}{os.getpid()}"
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir()
    return stage


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: running
        return True
    return True


def _swap(new: Path, out_dir: Path) -> None:
    """Put the whole site `new` at `out_dir`, the previous one (if any) taking `new`'s place: one atomic exchange
    where the system has one (Linux's renameat2), else two renames, the second undone by the first's if it fails."""
    if not out_dir.exists():
        os.replace(new, out_dir)
        return
    if _exchange(new, out_dir):
        return
    aside = new.with_name(f"{new.name}.previous")
    os.replace(out_dir, aside)
    try:
        os.replace(new, out_dir)
    except BaseException:
        os.replace(aside, out_dir)
        raise
    os.replace(aside, new)


def _exchange(a: Path, b: Path) -> bool:
    """Swap the paths `a` and `b` in one step (renameat2's RENAME_EXCHANGE); False where that is not available."""
    if sys.platform != "linux":
        return False
    import ctypes

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_cwd, exchange = -100, 2  # AT_FDCWD, RENAME_EXCHANGE
    return renameat2(at_cwd, os.fsencode(a), at_cwd, os.fsencode(b), exchange) == 0


def _build_staged(
    stage: Path,
    data_dir: Path,
    out_dir: Path,
    work_dir: Path,
    site_url: str | None,
    source: repository.Source | None,
    supplied: dict[str, str],
) -> tuple[load.Loaded, render.runs.Pending]:
    """`build`'s work: the whole site into `stage / "site"`, the run pages of `out_dir` (the previous build's)
    hard-linked into the stage as the pages to keep where their inputs did not change; returns the records and the
    run pages, whose manifest the caller writes once they are published."""
    site = stage / "site"
    cache_dir = runcache.folder_for(work_dir)
    # Run pages are many: the last build's are linked into the stage (the published ones stay where they are) and
    # kept where their inputs did not change; the rest are rendered by a worker process while this one writes the
    # other pages and runs MkDocs, then moved into the staged site.
    kept = stage / "runs"
    manifest = render.runs.Stored(store.at(cache_dir), f"run pages published at {out_dir}")
    loaded, data_key, bundle_text = _loaded(stage, data_dir, cache_dir, out_dir / "runs", kept, manifest)
    docs = _docs(work_dir, supplied, bundle_text)
    alt.theme.enable(charts.THEME)
    alt.data_transformers.disable_max_rows()  # charts are sized by what they show, checked by the page-weight bench
    loaded, summary, results, gone = _derived(loaded, data_dir, cache_dir, data_key)
    frozen = edition_results(loaded, data_dir)
    with (
        _render_pool(summary.height) as pool,
        render.catalog.samples_begun(results.runs, results.records, docs),  # the samples parts made meanwhile
    ):
        # each run page's configuration across harness commits (`Results.history`, drawn) and its suite's title
        page_runs = commit_history_page.with_history(results.page_runs, results.history)
        page_runs = render.runs.with_titles(page_runs, results.suite_titles)
        # the history charts' shared specs, one script for every run page (their data stays on each page)
        (docs / render.runs.HISTORY_SCRIPT).write_text(commit_history_page.script(page_runs["history_chart"].to_list()))
        pending = render.runs.start_run_pages(
            kept, page_runs, results.samples, manifest, pool, source, records=results.records
        )
        repo_url = source.address if source else None  # the boards link commits only to a web address
        _build_rest(results, frozen, docs, data_dir, site, work_dir, site_url, repo_url, sorted(supplied), gone)
        pending.finish(site, record=False)
    return loaded, pending


def _loaded(
    stage: Path, data_dir: Path, cache_dir: Path, published: Path, kept: Path, manifest: render.runs.Stored
) -> tuple[load.Loaded, str, str]:
    """The records of `data_dir`, the key of `compare`'s table of them and the script bundle; the run pages last
    `published` are linked into `kept` meanwhile (`_linked`)."""
    with ThreadPoolExecutor(1) as side:
        # the script bundle (seconds to make when not cached) is made while the data loads, and the last build's run
        # pages are linked meanwhile: a link per file, whose system calls leave this thread free to load
        bundle = side.submit(vega_bundle)
        files = load.result_files(data_dir)  # listed and examined once, for the key and the load
        stats = load.stat_keys(files)
        # linked after the data files are examined, not beside it: two loops of system calls on two threads take
        # turns at the GIL at every call, where the load leaves it free
        linked = side.submit(lambda: _linked(published, kept, manifest.read().get("files")))
        # the key before loading: a file changed meanwhile makes the next key differ
        data_key = compare.cache.key(data_dir, files, stats)
        # the rows a lean load holds out are put aside in the stage as the files are read: the downloads and the
        # run pages' CSVs take them from there (a file read and decoded again cost more than its first read)
        # each served point's figures worked out as its file is read, while its samples are in hand
        loaded = load.load(
            data_dir, cache_dir, files=files, lean=True, held=stage / "held", stats=stats, per_file=serving.as_read()
        )
        serving.remember(loaded.per_file)
        bundle_text = bundle.result()
        linked.result()
    return loaded, data_key, bundle_text


def _docs(work_dir: Path, supplied: dict[str, str], bundle_text: str) -> Path:
    """MkDocs' source folder, made afresh under `work_dir`: the hand-written pages and assets, the pages the command
    supplies, and the scripts every page shares. The generated pages are written into it later."""
    docs = work_dir / "docs"
    if docs.exists():
        shutil.rmtree(docs)
    shutil.copytree(SITE_SRC / "docs", docs)
    for page in docs.glob("*.md"):  # the hand-written pages' tables out of the search index, as generated pages'
        page.write_text(pages.tables_out_of_search(page.read_text()))
    shutil.copytree(SITE_SRC / "assets", docs / "assets")
    for name, text in sorted(supplied.items()):
        (docs / name).write_text(text)
    (docs / "assets" / "js" / "vega.js").write_text(bundle_text)
    (docs / render.runs.SAMPLES_SPEC).write_text(render.runs.samples_spec_text())  # the run pages' shared chart
    # the run pages' footer line, shared: a new version of the generator renders no run page again
    (docs / versions.FOOTER_SCRIPT).write_text(versions.footer_script(packages.built_with()))
    return docs


def _derived(
    loaded: load.Loaded, data_dir: Path, cache_dir: Path, data_key: str
) -> tuple[load.Loaded, pl.DataFrame, derive.Results, list[tuple[str, str]]]:
    """The records audited and checked, their run summary, every figure (`derive.results`) and what git shows
    deleted or moved away; `compare`'s table of them is kept for it under `data_key`."""
    # a file an edition froze, or git committed, never changes; `gone`: what git shows deleted or moved away
    loaded, gone = editions.audited(loaded, data_dir)
    progress.stage(f"checking and deriving the figures of {loaded.runs.height:,} run(s)")
    loaded, summary = checks.checked(loaded)
    loaded.rejected.extend(editions.scan(data_dir)[1])
    for r in loaded.rejected:
        print(f"rejected {r.path}: " + "; ".join(r.problems), file=sys.stderr)
    results = derive.results(loaded, summary)
    # what `compare` selects from, kept for it (its rejected files are the records', not the manifests')
    manifests = set(editions.scan(data_dir)[1])
    made = compare.dataset(data_dir, results)
    records_only = [r for r in made.rejected if r not in manifests]
    compare.keep(cache_dir, data_key, dataclasses.replace(made, rejected=records_only))
    return loaded, summary, results, gone


def _linked(previous: Path, into: Path, recorded: object) -> None:
    """The files of the folder `previous` (if any) hard-linked into the new folder `into` (copied where the file system
    cannot link), where each is the file the last build published (`recorded`: name → stat key, the manifest's): a
    file written since, and every other file of its run, is left out and made again; a changed shared file (a package
    list) leaves everything out. The stage replaces a file it changes (`render.runs._put`), never writes into it."""
    into.mkdir(parents=True)
    if not previous.is_dir() or not isinstance(recorded, dict):
        return
    # str paths and one run slug per entry: tens of thousands of entries, on a thread beside the load
    entries = [
        (e.name, e.path, render.runs._run_of(e.name)) for e in os.scandir(previous) if e.is_file(follow_symlinks=False)
    ]
    changed = [name for name, path, _ in entries if recorded.get(name) != load.stat_key(path)]
    if any(name.startswith(render.runs.PACKAGES_PREFIX) for name in changed):
        return
    stale = {render.runs._run_of(name) for name in changed}
    target = os.fspath(into)
    for name, path, run in entries:
        if run in stale:
            continue
        try:
            os.link(path, os.path.join(target, name))
        except OSError:
            shutil.copy2(path, os.path.join(target, name))


def _render_pool(runs: int) -> contextlib.AbstractContextManager[ProcessPoolExecutor | None]:
    """Worker processes for the run pages (spawned: this process runs polars' thread pool), or none for a small
    site, where starting one costs more than it saves."""
    if runs < RENDER_POOL_FROM:
        return contextlib.nullcontext()
    workers = max(1, min((os.cpu_count() or 1) - 1, 4))
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))


RENDER_POOL_FROM = 200
"""Runs from which run pages are rendered by worker processes."""


def edition_results(loaded: load.Loaded, data_dir: Path) -> list[tuple[editions.Frozen, derive.Results]]:
    """Each edition's records (`editions.frozen`), checked and derived as the site's are: an edition's pages show
    `derive.results` of its own records. A frozen file the checks reject is named among the edition's problems."""
    out = []
    for made in editions.frozen(loaded, data_dir):
        records, summary = checks.checked(made.records)
        rejected = [f"{r.path}: rejected ({'; '.join(r.problems)})" for r in records.rejected]
        out.append((dataclasses.replace(made, problems=[*made.problems, *rejected]), derive.results(records, summary)))
    return out


def _build_rest(
    results: derive.Results,
    frozen: list[tuple[editions.Frozen, derive.Results]],
    docs: Path,
    data_dir: Path,
    out_dir: Path,
    work_dir: Path,
    site_url: str | None = None,
    repo_url: str | None = None,
    supplied: list[str] | None = None,
    gone: list[tuple[str, str]] | None = None,
) -> None:
    """Every page but the run pages: Markdown from the templates, charts, then MkDocs into `out_dir`. `gone`: the
    committed files history lost, and what an edition froze that is missing (`editions.audited`)."""
    from mkdocs.commands.build import build as mkdocs_build
    from mkdocs.config import load_config

    import generator.store.page_cache as page_cache  # MkDocs' plugin: imported where MkDocs is

    chart_sink = pages.Charts(docs, store.active())
    built_with = packages.built_with()
    in_git = history.repo(data_dir) is not None  # else no committed file could be checked: the editions say so
    the_changelog = changelog.changelog(frozen, results, in_git, gone)
    nav, nav_editions, nav_served = render.boards.write_pages(
        results, docs, chart_sink, the_changelog, repo_url, built_with
    )
    chart_sink.finish()  # the static SVGs, drawn on threads meanwhile
    config = mkdocs_config(pages.nav(nav, nav_editions, nav_served, supplied or []), built_with, site_url)
    config_path = work_dir / "mkdocs.yml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    # Deterministic output: MkDocs stamps pages and the sitemap with the build date unless SOURCE_DATE_EPOCH is
    # set, so the date is that of the newest record (the same data always gives the same bytes).
    runs = results.records.runs
    newest = runs["ended_at"].max() if runs.height else None
    os.environ["SOURCE_DATE_EPOCH"] = str(int(newest.timestamp()) if isinstance(newest, datetime) else 0)
    loaded_config = load_config(str(config_path), docs_dir=str(docs.resolve()), site_dir=str(out_dir.resolve()))
    # pages whose Markdown did not change get last build's conversion back (most pages, after one new run)
    page_cache.add_to(loaded_config, store.at(runcache.folder_for(work_dir)))
    mkdocs_build(loaded_config)
    for source_map in out_dir.rglob("*.map"):  # the theme's source maps: 1.5 MB no reader needs
        source_map.unlink()
    _drop_unused_search_languages(out_dir)
    if not site_url:
        _relative_404(out_dir / "404.html")
    precompress(out_dir)
    for staged in sorted((work_dir / render.catalog.STAGED_DOWNLOADS).glob("*")):
        os.replace(staged, out_dir / "downloads" / staged.name)  # large files skip MkDocs' copy
    (out_dir / BUILT_MARKER).write_text("built by Fair Fight (`fairfight site`); the next build replaces this folder\n")


def _drop_unused_search_languages(site: Path) -> None:
    """The theme's search scripts for languages other than English (`assets/javascripts/lunr/`: Thai and Japanese
    word splitters and 30 stemmers, about 1 MB) leave the site when the search index is English alone: its worker
    loads one of them only for a language the index names (material/templates/assets/javascripts/workers)."""
    index = site / "search" / "search_index.json"
    try:
        languages = json.loads(index.read_text())["config"]["lang"]
    except (OSError, ValueError, KeyError, TypeError):
        return  # no index, or one this code does not know: the scripts stay
    if languages == ["en"]:
        shutil.rmtree(site / "assets" / "javascripts" / "lunr", ignore_errors=True)


PRECOMPRESSED = ("assets/**/*.js", "assets/**/*.css", "assets/**/*.json", "search/*.json")
"""The site's shared text files (scripts, style sheets, the search index), each served to every page that uses it:
`precompress` writes a gzipped copy beside each. Per-page files (pages, chart SVGs, run files) get none: a site of
50,000 runs must stay under its size bar."""


def precompress(site: Path) -> list[Path]:
    """`NAME.gz` beside each of the site's shared text files (`PRECOMPRESSED`), for a server that sends a stored
    gzip (nginx's gzip_static, GitHub Pages compresses on its own): the same bytes every build (no time stamp and
    no file name in the header, one level), written only where it is smaller. Returns the files written."""
    written = []
    for pattern in PRECOMPRESSED:
        for path in sorted(site.glob(pattern)):
            if not path.is_file() or path.is_symlink():
                continue
            raw = path.read_bytes()
            packed = gzip.compress(raw, compresslevel=GZIP_LEVEL, mtime=0)
            if len(packed) < len(raw):
                target = path.with_name(path.name + ".gz")
                target.write_bytes(packed)
                written.append(target)
    return written


GZIP_LEVEL = 9
"""The level of the precompressed copies: fixed, so the same file always gives the same bytes."""


def _relative_404(page: Path) -> None:
    """The 404 page, which MkDocs links root-absolutely ("/assets/...") when no site address is known, linked
    relatively to the site's own folder instead: it then works wherever the site is served from when the missing
    address is at the site's top level (`--site-url` makes it right everywhere, running.md says so)."""
    if not page.is_file():
        return
    text = re.sub(r'((?:href|src)=")/(?!/)', r"\1", page.read_text())
    page.write_text(text.replace('"base": "/"', '"base": "."'))


def mkdocs_config(
    nav: list[object], built_with: list[dict[str, str]], site_url: str | None = None
) -> dict[str, object]:
    """site_src/mkdocs.yml completed for this build: the navigation (from the one table of pages,
    generator/render/pages.py SITE), the footer's line naming the generator's versions (`versions.footer`, printed by
    the theme override in site_src/overrides) and, when given, the site's address."""
    config = yaml.safe_load((SITE_SRC / "mkdocs.yml").read_text())
    config["nav"] = nav
    config["theme"]["custom_dir"] = str(SITE_SRC / "overrides")
    config.setdefault("extra", {})["built_with"] = versions.footer(built_with)
    if site_url:  # fills the sitemap and every page's canonical link
        config["site_url"] = site_url
    return config


def add_cli_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", "--data", dest="data", type=Path, default=Path("data"),
                   help="result files (default: data/)")  # fmt: skip
    p.add_argument("--out", type=Path, default=Path("site"), help="site output (default: site/)")
    p.add_argument("--work", type=Path, default=Path("build"), help="generated sources and caches (default: build/)")
    p.add_argument(
        "--site-url", default=None, help="where the site will be served: fills the sitemap and canonical links"
    )
    p.add_argument(
        "--repo-url", default=None, help="the repository's address: reproduce blocks and the boards' commit links"
    )


BUILT_MARKER = ".fairfight-site"
"""Left in the output folder by a build: MkDocs empties the folder it builds into, so a build refuses a folder that
holds anything else (a mistyped --out must never cost anyone their files)."""


def refuse_output(out: Path) -> str | None:
    """Why `out` may not be built into (it holds files that no earlier build put there), or None."""
    if out.exists() and not out.is_dir():
        return f"--out {out}: exists and is not a folder"
    if out.is_dir() and any(out.iterdir()) and not (out / BUILT_MARKER).exists():
        return (
            f"--out {out}: not empty and not built by Fair Fight (no {BUILT_MARKER}); the build empties its output "
            "folder, so choose an empty or new one"
        )
    return None


def run(args: argparse.Namespace) -> int:
    if not args.data.is_dir():
        print(f"error: --data {args.data}: no such folder (result files live under data/<suite>/)", file=sys.stderr)
        return 2
    if why := refuse_output(args.out):
        print(f"error: {why}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    loaded = build(args.data, args.out, args.work, args.site_url, args.repo_url, getattr(args, "supplied", None))
    print(
        f"site built in {time.perf_counter() - t0:.1f} s: {loaded.runs.height} run(s), "
        f"{len(loaded.rejected)} rejected file(s) → {args.out / 'index.html'}"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    return arguments.command("python -m generator.build", "Build the Fair Fight site.", add_cli_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
