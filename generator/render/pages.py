"""Pages: Jinja templates (site_src/templates) rendered to Markdown in the build directory.

Every generated page is declared in one place (`build.py` calls these functions); templates hold the words.
"""

from __future__ import annotations

import functools
import hashlib
import html
import inspect
import json
import multiprocessing
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import altair as alt
import jinja2
import polars as pl
from markupsafe import Markup

import generator.derive.readable as readable
import generator.load.columns as columns
import generator.render.chart_names as chart_names
import generator.render.svg_draw as svg_draw
import generator.store.output_cache as output_cache
from generator import SITE_SRC, store
from generator.derive.words import counted as counted  # the templates' filters; derive-side code imports words
from generator.derive.words import fmt as fmt
from generator.load.slugs import run_href as run_href  # the loader's collision check names pages by them too
from generator.load.slugs import slug as slug  # the pages, charts and run files are named by it
from runners import bounds, engines

TEMPLATES = SITE_SRC / "templates"


def scaled(value: Any, factor: float) -> Any:
    """value × factor for display units (TFLOP/s from FLOP/s), None stays None."""
    return None if value is None else value * factor


def pct(value: Any, digits: int = 1) -> str:
    return "–" if value is None else f"{100 * value:.{digits}f}%"


_MD_SPECIAL = {ch: f"&#{ord(ch)};" for ch in "\\`*_[]|<>#!&\"'{}"}
_MD_SPECIAL["\r"] = " "
_MD_TABLE = str.maketrans(_MD_SPECIAL)


def md_text(value: Any) -> Markup:
    """Text from a record placed in Markdown or HTML: control and bidi characters made visible
    (`bounds.neutral`), every HTML and Markdown special character an entity, on one line; a missing value a dash."""
    if isinstance(value, Markup):
        return value
    if value is None:
        return Markup("–")
    text = bounds.neutral(str(value))
    return Markup(text.translate(_MD_TABLE).replace("\n", " "))


def csv_inert(text: pl.Expr) -> pl.Expr:
    """A text column for a CSV download: a cell that a spreadsheet would run as a formula (starting with = + - @,
    a tab or a carriage return; OWASP, "CSV Injection") gets a leading apostrophe, which spreadsheets show as text."""
    return text.str.replace(r"^([=+\-@\t\r])", "'$1")


def short(value: Any, limit: int = 300) -> Any:
    """Long record text cut visibly for a table or paragraph (the run's page and CSV keep it whole)."""
    if value is None:
        return value
    text = str(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def _finalize(value: Any) -> Any:
    """Every `{{ … }}` of a Markdown template: escaped unless a helper here made it markup on purpose, so a value
    from a result file can never become HTML, Markdown or script, whichever template prints it."""
    if isinstance(value, Markup) or value is None:
        return value
    if isinstance(value, bool | int | float):
        return value
    return md_text(value)


CHART_SPEC = output_cache.Kind("chart-spec")
"""A chart's Vega-Lite spec (`kept_spec`), kept by the function that draws it, its code and its inputs: a board
a new run did not change is not drawn by altair again (tens of milliseconds a chart)."""


def kept_spec(draw: Callable[..., alt.TopLevelMixin], *inputs: Any, **options: Any) -> dict[str, Any]:
    """`draw(*inputs, **options)`'s Vega-Lite spec, kept (`CHART_SPEC`) by `draw`'s name and module's code, the active
    theme and the inputs: altair builds it again only when one of them changed. The spec is read back from its JSON
    whether kept or just made, so both give the page the same bytes."""

    def spec() -> bytes:
        # charts come from the tested functions in `charts`; the browser test renders every one, so skipping
        # altair's JSON-schema validation here (seconds on a busy site) loses no check
        return json.dumps(draw(*inputs, **options).to_dict(validate=False)).encode()

    key = (draw.__module__, draw.__qualname__, _source_hash(draw), alt.theme.active, sorted(options.items()))
    return json.loads(CHART_SPEC.made(spec, *key, *inputs))


@functools.cache
def _source_hash(draw: Callable[..., Any]) -> str | None:
    """The sha256 of the file that defines `draw`: read once a process (a build's code does not change under it)."""
    source = inspect.getsourcefile(draw)
    return hashlib.sha256(Path(source).read_bytes()).hexdigest() if source else None


def script_safe(text: str) -> str:
    """JSON that a <script> block holds as it is: no `</script>` (nor `<!--`, nor an entity) can end or change it."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


class Charts:
    """Places charts on pages: an inert JSON spec rendered by the local vega bundle (assets/js/charts.js), plus a
    static SVG for readers without JavaScript, made offline by vl-convert and kept in the build store (kind `svg`) by
    the spec's hash (the store adds the code and libraries that draw it, `fingerprint`: vl-convert's version,
    `_fixed_width`).

    SVGs not in the store are drawn by worker processes while the pages are written (`svg_draw`: vl-convert holds
    the GIL); `finish()` waits for them and must be called before the docs directory is built. `cache`: the store (or
    a folder holding one of its own); None: the build's store, or none (every SVG drawn)."""

    def __init__(self, docs: Path, cache: store.Store | Path | None = None) -> None:
        self.out = docs / "assets" / "charts"
        self.store = cache if isinstance(cache, store.Store) else store.Store(cache) if cache else store.active()
        self.out.mkdir(parents=True, exist_ok=True)
        self._pool: ProcessPoolExecutor | None = None  # started at the first SVG the store lacks
        self._drawn: dict[str, Future[Path]] = {}  # spec hash → its SVG (in the store, or drawn aside), drawn once
        self._pending: list[tuple[str, Future[Path], Path]] = []
        self._aside = Path(tempfile.mkdtemp(prefix="fairfight-svg-"))

    def _draw(self, key: str, spec: dict[str, Any]) -> Future[Path]:
        found = self.store.file(SVG_KIND, key) if self.store is not None else None
        if found is not None:
            done: Future[Path] = Future()
            done.set_result(found[0])
            return done
        if self._pool is None:
            workers = max(1, min((os.cpu_count() or 1) - 1, SVG_WORKERS))
            self._pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
        # room on the left: a browser draws the labels in its own font, wider than vl-convert measured them,
        # and the left axis's labels were cut off at the image's edge
        static = _fixed_width(spec) | {"padding": {"left": 80, "top": 5, "right": 5, "bottom": 5}}
        return self._pool.submit(svg_draw.draw, self._aside / f"{key}.svg", static)

    def svg_to(self, spec: dict[str, Any], target: Path) -> None:
        """Have `target` hold the static SVG of `spec` once `finish()` returns."""
        key = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()  # the store adds the code
        if key not in self._drawn:
            self._drawn[key] = self._draw(key, spec)
        self._pending.append((key, self._drawn[key], target))

    def finish(self) -> None:
        """Wait for every SVG, keep the ones drawn in the store and put each in place (raising the first error, if
        any)."""
        try:
            kept: dict[str, bytes] = {}
            for key, drawn, target in self._pending:
                if key not in kept:
                    path = drawn.result()
                    kept[key] = path.read_bytes()
                    if path.parent == self._aside and self.store is not None:
                        self.store.put(SVG_KIND, key, kept[key])
                target.write_bytes(kept[key])
        finally:
            self._pending.clear()
            if self._pool is not None:
                self._pool.shutdown(cancel_futures=True)
                self._pool = None
            self._drawn.clear()  # what was drawn aside is in the store now, or gone
            shutil.rmtree(self._aside, ignore_errors=True)
            self._aside.mkdir()

    def image(self, chart_id: str, spec: dict[str, Any], alt_text: str, depth: int = 0) -> str:
        """The chart of `spec` as its static SVG only, for a page that must stay light (the home page): no Vega."""
        svg_name = f"{chart_id}.svg"
        self.svg_to(spec, self.out / svg_name)
        src = "../" * depth + f"assets/charts/{svg_name}"
        return Markup(f'<p class="ff-chart-static"><img src="{src}" alt="{html.escape(alt_text)}"></p>')

    def picture(
        self, chart_id: str, draw: Callable[..., alt.TopLevelMixin], *inputs: Any, alt_text: str, depth: int = 0
    ) -> str:
        """As `image` of `draw(*inputs)`, with a second drawing for a phone's width (`draw(*inputs, narrow=True)`),
        which a browser takes below 600 px; both specs kept as `html_of` keeps one."""
        wide = self.image(chart_id, kept_spec(draw, *inputs), alt_text, depth)
        small = f"{chart_id}-narrow.svg"
        self.svg_to(kept_spec(draw, *inputs, narrow=True), self.out / small)
        source = f'<source media="(max-width: 600px)" srcset="{"../" * depth}assets/charts/{small}">'
        return Markup(str(wide).replace("<img ", f"<picture>{source}<img ").replace("></p>", "></picture></p>"))

    def html(self, chart_id: str, chart: alt.TopLevelMixin, depth: int = 0, *, title: str, better: str = "max") -> str:
        """`chart` placed as `html_of` places one; `title` and `better` name it (`chart_names.accessible_name`)."""
        # charts come from the tested functions in `charts`; the browser test renders every one, so skipping
        # altair's JSON-schema validation here (seconds on a busy site) loses no check
        return self._placed(chart_id, chart.to_dict(validate=False), depth, (title, better))

    def html_of(self, chart_id: str, draw: Callable[..., alt.TopLevelMixin], *inputs: Any, depth: int = 0) -> str:
        """As `html(chart_id, draw(*inputs), depth)`, the spec kept by what it is drawn from (`kept_spec`) and named
        by `draw`'s entry in `chart_names.NAMES`."""
        return self._placed(chart_id, kept_spec(draw, *inputs), depth, chart_names.NAMES[draw.__name__])

    def _placed(self, chart_id: str, spec: dict[str, Any], depth: int, named: tuple[str, str]) -> str:
        """The static SVG, named by the chart's title and finding, with its spec beside it: charts.js offers the
        interactive chart (a button) and fetches the Vega bundle only when a reader presses it, so a page weighs its
        text and images until then. The spec's description is the same name: Vega-Lite makes it the interactive
        chart's aria-label, where Vega's own is "Vega visualization" for every chart."""
        svg_name = f"{chart_id}.svg"
        self.svg_to(spec, self.out / svg_name)  # drawn from the spec as made: the name changes no SVG
        name = chart_names.accessible_name(named[0], spec, named[1])
        text = script_safe(json.dumps(spec | {"description": name}, sort_keys=True, separators=(",", ":")))
        src = "../" * depth + f"assets/charts/{svg_name}"
        # a phone takes a drawing of the same spec made narrow, its type at full size (the wide one shrunk to a
        # phone's width had type too small to read)
        narrow_name = f"{chart_id}-narrow.svg"
        self.svg_to(_wrapped_titles(_fixed_width(spec, NARROW_WIDTH)), self.out / narrow_name)
        narrow = f'<source media="(max-width: 600px)" srcset="{"../" * depth}assets/charts/{narrow_name}">'
        label = html.escape(name)
        return Markup(
            f'<div class="ff-chart" id="{chart_id}" data-spec="{chart_id}-spec" data-svg="{src}" data-lazy="1" '
            f'role="figure" aria-label="{label}"><picture>{narrow}<img class="ff-chart-static" src="{src}" '
            f'alt="{label}"></picture></div>\n'
            f'<script type="application/json" id="{chart_id}-spec">{text}</script>\n'
            f'<p class="ff-chart-svg"><a href="{src}">Static SVG of this chart</a></p>'
        )


NARROW_WIDTH = 240
"""The plot's width (px) of a chart's static drawing for a phone (`Charts._placed`): with its labels and padding it
fits a 390 px screen at about three quarters of its size."""
SVG_KIND = "svg"
"""The store's kind for static SVGs."""
SVG_WORKERS = 2
"""Processes drawing static SVGs at most (one fewer than the cores, at least one)."""


def _fixed_width(spec: Any, width: int = 720) -> Any:
    """The spec with every `"width": "container"` made concrete, for rendering outside a page."""
    if isinstance(spec, dict):
        return {k: (width if k == "width" and v == "container" else _fixed_width(v, width)) for k, v in spec.items()}
    if isinstance(spec, list):
        return [_fixed_width(v, width) for v in spec]
    return spec


NARROW_TITLE = 34
"""The most characters an axis title keeps on one line of a phone's drawing: past it the title takes a second line
(drawn on one, the speedup axis's title ran past the drawing's right edge and was cut)."""


def _wrapped_titles(spec: Any) -> Any:
    """The spec with every encoding channel's title (a dict with a `field` or a `type`) longer than `NARROW_TITLE`
    split at its last space before it into two lines (Vega-Lite draws a list of strings as lines)."""
    if isinstance(spec, list):
        return [_wrapped_titles(v) for v in spec]
    if not isinstance(spec, dict):
        return spec
    out = {k: _wrapped_titles(v) for k, v in spec.items()}
    title = out.get("title")
    if ("field" in out or "type" in out) and isinstance(title, str) and len(title) > NARROW_TITLE:
        cut = title.rfind(" ", 0, NARROW_TITLE + 1)
        if cut > 0:
            out["title"] = [title[:cut], title[cut + 1 :]]
    return out


def pre(value: Any) -> Markup:
    """Text for a <pre> block in a raw HTML line: escaped, with newlines as entities so Markdown leaves it whole."""
    return Markup("".join(_MD_SPECIAL.get(ch, ch) for ch in bounds.neutral(str(value))).replace("\n", "&#10;"))


def chart_id(slug_text: str, kind: str) -> str:
    """A chart's id and its static SVG's name (`assets/charts/<id>.svg`): the page's slug, then `_` and the chart's
    kind. A slug never holds `_`, so the kind is what follows the last one: two charts share a name only if their
    pages share a slug, which the loader does not allow."""
    return f"chart-{slug_text}_{kind}"


def nav_title(*parts: str) -> str:
    """A navigation entry's title from record names ("suite · workload"): MkDocs Material prints titles as HTML,
    so they are built here, escaped and neutralised, and nowhere else."""
    return html.escape(" · ".join(bounds.neutral(p) for p in parts))


_HEADER = {
    "model": ("name", "family", "dim", "layers", "heads", "kv_heads", "ffn_dim", "vocab", "tied_embeddings"),
    "workload": ("kind", "micro_batch", "seq_len", "world_size", "warmup_steps", "window_steps", "n_tokens", "depth",
                 "repetitions", "concurrency", "request_rate", "input_len", "output_len", "requests"),
    "derived": ("total_params", "non_embedding_params", "flops_per_token"),
}  # fmt: skip


def board_config(text: str) -> dict[str, Any]:
    """The part of a run's config that a board's header describes, every key present (None where the record has
    none): the header is built here, from a config whose values `runners.bounds` already checked, and a record
    without a model or workload section gets dashes instead of taking the page down."""
    raw = columns.parsed(text)
    raw = raw if isinstance(raw, dict) else {}
    out: dict[str, Any] = {"suite_description": raw.get("suite_description")}
    for section, keys in _HEADER.items():
        values = columns.object_at(raw, section)
        out[section] = {key: values.get(key) for key in keys}
    work, raw_work = out["workload"], columns.object_at(raw, "workload")
    variants = raw_work.get("variants")
    work["variants"] = variants if isinstance(variants, list) and variants else [None]
    serving = columns.object_at(raw_work, "serving")
    work["serving"] = {key: serving.get(key) for key in ("slo_ttft_ms", "slo_tpot_ms")}
    return out


def claim_unknowns(config: str) -> str:
    """What a claim's source leaves unsaid, from its record's config."""
    return ", ".join(columns.parsed(config).get("claim", {}).get("unknown", [])) or "–"


class _Compiled(jinja2.BytecodeCache):
    """Jinja's compiled templates as blobs of the build store (kind `jinja`): a flipped byte in a compiled template
    changed words on pages, so they are read only when their bytes hash to the sha256 noted beside them, as every
    entry is. Jinja's own bucket key (the template's name and source checksum) is the store key."""

    def __init__(self, kept: store.Store) -> None:
        self.store = kept

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        data = self.store.get("jinja", f"{bucket.key} {bucket.checksum}")
        if data is not None:
            bucket.bytecode_from_string(data)

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self.store.put("jinja", f"{bucket.key} {bucket.checksum}", bucket.bytecode_to_string())


def environment(suite_titles: Mapping[str, str] | None = None) -> jinja2.Environment:
    """The pages' Jinja environment, with the filters their templates use; `suite_titles`: each suite's title by
    its name (`Results.suite_titles`), what the `suite_title` filter writes (a suite without one: its name)."""
    titles = dict(suite_titles or {})
    kept = store.active()  # a site build's store: the templates compiled once, not once a build
    compiled = None if kept is None else _Compiled(kept)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        bytecode_cache=compiled,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # output is Markdown: `_finalize` escapes for Markdown and HTML at once
        finalize=_finalize,
    )
    env.filters.update(
        scaled=scaled,
        counted=counted,
        fmt=fmt,
        pct=pct,
        text=md_text,
        short=short,
        pre=pre,
        claim_unknowns=claim_unknowns,
        slug=slug,
        run_href=run_href,
        readable=readable.settings,  # `key=json` settings as words (`compile_loss on`)
        changes=readable.changes,  # (name, before, after) triples as lines of words (`compile off → on`)
        suite_title=lambda suite: titles.get(suite, suite),  # `h100` holds H200 runs: "H200 bench"
        engine_title=engine_title,
    )
    # `{% if r.engine is device_shown %}`: the registry says whose rows name the device they ran on
    env.tests.update(device_shown=engines.shows_device)
    return env


def engine_title(name: str) -> str:
    """How the site names a record's engine (`engines.titles`: `llama.cpp`); a name the registry does not know (an
    outside engine's) as it is."""
    return engines.titles().get(name, name)


def tables_out_of_search(text: str) -> str:
    """Every Markdown table of a generated page marked for the search index to skip (Material's
    `data-search-exclude`): the index loads with every page, and rows of figures are what the pages are for, not what
    a reader searches for; headings and prose stay searchable. Tables already inside a block are left as they are.
    The hand-written docs get the same (`build`): their reference tables kept the home page, which loads the index,
    over its weight budget (tests/test_browser.py)."""
    out: list[str] = []
    depth, in_table = 0, False
    for line in text.split("\n"):
        table_line = line.startswith("|") and depth == 0
        if table_line and not in_table:
            out += ["<div markdown data-search-exclude>", ""]
        elif in_table and not table_line:
            out += ["", "</div>"]
        in_table = table_line
        depth += line.count("<div") - line.count("</div>")
        out.append(line)
    if in_table:
        out += ["", "</div>"]
    return "\n".join(out)


@dataclass(frozen=True, slots=True)
class Page:
    """One entry of the site's navigation."""

    title: str
    file: str
    """Under the docs folder: a page (`claims.md`), or a section's folder (`leaderboards/`) of pages written per
    board or edition."""
    template: str | None
    """The template that writes it (`site_src/templates/`), or None for a page people write (`site_src/docs/`), a
    section, or a page supplied by the caller of the build."""
    supplied: bool = False
    """Made by whoever calls the build (the command reference, from the `fairfight` parser: fairfight/cli.py) and
    listed only when supplied; the generator cannot make it without importing the commands above it."""
    section: str | None = None
    """A navigation section that groups it with the pages next to it (the guides)."""


SITE: tuple[Page, ...] = (
    Page("Home", "index.md", "index.md.j2"),
    Page("Leaderboards", "leaderboards/", "leaderboard.md.j2"),  # a page per board (inference.md.j2, serving.md.j2)
    Page("Serving by model", "serving/", "serving_model.md.j2"),  # a page per served model
    Page("One GPU, every engine", "side-by-side.md", "side_by_side.md.j2"),
    Page("What tuning bought", "tuning.md", "tuning.md.j2"),
    Page("Wanted runs", "wanted.md", "wanted.md.j2"),
    Page("Comparable commits", "commits.md", "commits.md.j2"),
    Page("Claims", "claims.md", "claims.md.j2"),
    Page("Failures", "failures.md", "failures.md.j2"),
    Page("Errata", "errata.md", "errata.md.j2"),
    Page("Hardware and calibration", "hardware.md", "hardware.md.j2"),
    Page("Engines", "engines.md", "engines.md.j2"),
    Page("Methodology", "methodology.md", None),
    Page("Running suites", "running.md", None, section="Guides"),
    Page("Command reference", "cli.md", None, supplied=True, section="Guides"),
    Page("Submitting results", "submitting.md", None, section="Guides"),
    Page("Hosts without a network", "offline-hosts.md", None, section="Guides"),
    Page("Configuration", "configuration.md", None, section="Guides"),
    Page("Add an engine", "add-an-engine.md", None, section="Guides"),
    Page("Downloads", "downloads.md", "downloads.md.j2"),
    Page("Editions", "editions/", "edition.md.j2"),  # editions.md, then a page per edition
    Page("Rejected files", "rejected.md", "rejected.md.j2"),
)
"""Every page of the site, in navigation order: the build writes the generated ones, copies the written ones, and
makes the navigation from this table (site_src/mkdocs.yml has none). A run's page (`runs/`) is reached from its
boards, not from the navigation."""


def nav(
    boards: list[dict[str, Any]],
    editions: list[dict[str, str]],
    served: list[dict[str, str]] | None = None,
    supplied: Iterable[str] = (),
) -> list[Any]:
    """MkDocs' navigation from `SITE`: a section lists its boards', served models' or editions' pages (a section
    with none is left out, but for the editions' index); a supplied page is listed when it was."""
    out: list[Any] = []
    for page in SITE:
        if page.supplied and page.file not in supplied:
            continue
        if page.file in ("leaderboards/", "serving/"):
            entries = boards if page.file == "leaderboards/" else served or []
            if entries:
                out.append({page.title: entries})
        elif page.file == "editions/":
            out.append({page.title: ["editions.md", *editions]})
        elif page.section:  # consecutive pages of one section share its entry
            if not (out and isinstance(out[-1], dict) and isinstance(out[-1].get(page.section), list)):
                out.append({page.section: []})
            out[-1][page.section].append({page.title: page.file})
        else:
            out.append({page.title: page.file})
    return out


def render(env: jinja2.Environment, template: str, out: Path, **context: Any) -> Path:
    """Render a template into the docs folder: a page at the top must be one the `SITE` table declares."""
    sections = {p.file.rstrip("/") for p in SITE if p.file.endswith("/")}
    declared = {p.file for p in SITE} | {f"{s}.md" for s in sections}  # a section's own index page (editions.md)
    if out.parent.name not in sections and out.name not in declared:
        raise ValueError(f"{out.name}: not a page of generator/render/pages.py SITE; declare it there")
    out.parent.mkdir(parents=True, exist_ok=True)
    text = tables_out_of_search(env.get_template(template).render(**context))
    if 'class="ff-chart"' in text:  # charts.js fetches the Vega bundle (about 900 KB) when a chart is opened
        up = "../" if out.parent.name in sections else ""
        text += f'\n\n<script src="{up}assets/js/charts.js"></script>\n'
    out.write_text(text)
    return out
