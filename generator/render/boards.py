"""The leaderboard pages (one per suite and workload) and the home page, and the order every other generated
page is written in. Charts come from `charts`, numbers from `derive`; this module only arranges them."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import polars as pl

import generator.derive.chart_rows as chart_rows
import generator.derive.configurations as configurations
import generator.derive.verdict as verdict
import generator.derive.verdict.draws as sweep_draws
import generator.render.catalog as catalog
import generator.render.charts as charts
import generator.render.commit_pairs_page as commit_pairs_page
import generator.render.commits as commits
import generator.render.editions as edition_pages
import generator.render.lists as lists
import generator.render.model_charts as model_charts
import generator.render.pages as pages
import generator.render.tuning_page as tuning_page
import generator.render.wanted_page as wanted_page
import generator.store.output_cache as output_cache
from generator import progress
from generator.derive.changelog import Changelog
from generator.derive.results import Board, Results
from runners import engines


def write_pages(
    results: Results,
    docs: Path,
    chart_sink: pages.Charts,
    changelog: Changelog,
    repo_url: str | None = None,
    built_with: list[dict[str, str]] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, str]], list[dict[str, str]]]:
    """Render every generated page into `docs` from `results` (`derive.results`), and each edition's page from its
    own (`changelog`: each edition's `derive.results`, oldest first, the changes between them, and what history lost,
    which the home page, Rejected files, the editions page and every board of the file's suite name); returns the
    leaderboard, edition and served-model nav entries. Each board is written by the writer of its kind (`_WRITERS`:
    training, inference or serving), which returns its home-page row and, for a board with claims, the claims' row.
    `repo_url` (the repository's address) links each row's harness commits; `built_with` (`packages.built_with`) goes
    on the downloads page."""
    titles = results.suite_titles | {s: n for e in changelog.editions for s, n in e.results.suite_titles.items()}
    env = pages.environment(titles)
    lost = changelog.gone
    env.globals["gone_by_suite"] = changelog.gone_by_suite
    repo = commits.repo_base(repo_url)
    # a row's harness commits (`commits.cell`) and a board's note when its ranked rows mix them (`_mixed_commits.md.j2`)
    env.filters.update(commits=functools.partial(commits.cell, repo=repo))
    env.globals["mixed_commits"] = functools.partial(_mixed_commits, repo=repo)
    index_rows, claim_rows = [], []
    grouped: dict[Section, list[tuple[tuple, dict[str, str]]]] = {}
    # the board templates title a board by the hardware its runs used
    env.globals["ran_on"] = {key: board.ran_on for key, board in results.boards.items()}
    env.globals["headings"] = {key: _heading(board, titles) for key, board in results.boards.items()}
    env.globals["run_links"] = lists.RUN_LINKS  # a ranked row links its latest runs; its board's JSON has them all
    # the fight's board says where its claims meet our figures: the verdict's matched shape (None: not answered)
    the_verdict = results.verdict
    env.globals["verdict_at"] = (
        {(the_verdict.fight.suite, the_verdict.fight.workload): the_verdict.said} if the_verdict else {}
    )
    bar = progress.Progress("leaderboard pages", len(results.boards), unit="pages written")
    for (suite, workload), board in results.boards.items():
        slug = pages.slug(suite, workload)
        href = f"leaderboards/{slug}.md"
        section, title, order = _nav_words(board)
        entry = {pages.nav_title(title, board.ran_on or titles.get(suite, suite)): href}
        grouped.setdefault(section, []).append((order, entry))
        row, claims_row = _WRITERS[board.kind](env, docs / href, board, chart_sink, slug)
        index_rows.append(row)
        if claims_row is not None:
            claim_rows.append(claims_row)
        bar.advance()
    bar.close()
    pages.render(
        env,
        "index.md.j2",
        docs / "index.md",
        verdict=_verdict(results.verdict, chart_sink),
        boards=index_rows,
        claims=claim_rows,
        rejected=results.rejected,
        gone=lost,
        total_runs=results.measured_count,
        failed_runs=results.failed_count,
    )
    pages.render(env, "rejected.md.j2", docs / "rejected.md", rejected=results.rejected, gone=lost)
    pages.render(env, "errata.md.j2", docs / "errata.md", errata=results.errata.to_dicts())
    _side_by_side(env, docs, results, chart_sink)
    tuning_page.write(env, docs, results.tuning)
    wanted_page.write(env, docs, results.wanted)
    commit_pairs_page.write(env, docs, results.comparable)
    nav = [  # the boards by kind, then by model, smallest first: sections a reader can scan (a flat list ran to 60)
        {pages.nav_title(name): [e for _, e in sorted(entries, key=lambda oe: oe[0])]}
        for (_, _, name), entries in sorted(grouped.items())
    ]
    nav_editions = edition_pages.write_pages(env, docs, results, changelog)
    nav_served = _served_models(env, docs, results, chart_sink)
    catalog.write_catalog_pages(env, docs, results, chart_sink, built_with or [])
    return nav, nav_editions, nav_served


def _side_by_side(env: Any, docs: Path, results: Results, chart_sink: pages.Charts) -> None:
    """The page that sets every engine side by side on one model and GPU (`side_by_side`), with its charts."""
    derived = results.side_by_side
    models: dict[tuple[str, str, str], dict[str, Any]] = {}
    cards = {(c.suite, c.model_name, c.accelerator): c for c in derived.cards}
    for board in derived.boards:
        key = (board["suite"], board["model_name"], board["accelerator"])
        title = (
            f"{board['model_name']} ({(board['total_params'] or 0) / 1e9:.1f}B parameters) · 1 × {board['accelerator']}"
        )
        model = models.setdefault(key, {"title": title, "boards": [], "card": cards.get(key)})
        slug = pages.slug("side-by-side", *key, f"{board['family_bits']}bit")
        chart = chart_sink.html_of(f"chart-{slug}", model_charts.side_by_side, pl.DataFrame(board["rows"]))
        model["boards"].append(board | {"chart": chart})
    depths = []
    for (suite, model_name, accelerator), group, caches in derived.depths:
        slug = pages.slug("kv-depth", suite, model_name, accelerator)
        depths.append(
            {
                "title": f"{model_name} · 1 × {accelerator}",
                "rows": group.to_dicts(),
                "caches": caches,
                "chart": chart_sink.html_of(f"chart-{slug}", model_charts.kv_depth, group),
            }
        )
    pages.render(
        env,
        "side_by_side.md.j2",
        docs / "side-by-side.md",
        models=list(models.values()),
        depths=depths,
        bandwidths=derived.bandwidths,
        colours=engines.colours(),
    )


Section = tuple[int, float, str]
"""A navigation section: its kind's place, its model's size and its name (what sections sort by)."""


def _nav_words(board: Board) -> tuple[Section, str, tuple]:
    """A board's navigation section (its kind, then its model for tests of a model, as (kind's place, the model's
    size, its name) to sort by), its title in words and its place in the section, from its newest measured run:
    "Inference · llama-14b", "generate 128 · 16,384 in cache"."""
    row, kind = board.newest, board.kind
    model, size = row.get("model_name") or board.suite, float(row.get("total_params") or 0)
    if kind == "inference" and row.get("n_tokens") is not None:
        verb = "prefill" if row.get("kind") == "pp" else "generate"
        depth = row.get("depth") or 0
        words = f"{verb} {row['n_tokens']} · {depth:,} in cache"
        return (1, size, f"Inference · {model}"), words, (depth, verb != "prefill")
    if kind == "serving":
        if row.get("kind") == "offline":
            words, order = f"offline, {row.get('requests') or '?'} requests at once", (0, 0.0)
        elif row.get("concurrency") is not None:
            words, order = f"served, {row['concurrency']} in flight", (1, float(row["concurrency"]))
        else:
            rate = float(row.get("request_rate") or 0)
            words, order = f"served, {rate:g} requests/s", (2, rate)
        return (2, size, f"Serving · {model}"), words, order
    return (0, 0.0, "Training"), board.workload, (board.suite, board.workload)


def _heading(board: Board, titles: dict[str, str]) -> str:
    """A board's title in the navigation's words, with what its runs ran on: a training board by its workload
    ("train-gpt-1.27b-mb4 · 2 × H200"), a test by its model and what it runs ("llama-8b · generate 128 · 4,096 in
    cache · 1 × H200"), not by its record name (which the page still gives, under What ran)."""
    _, words, _ = _nav_words(board)
    ran_on = board.ran_on or titles.get(board.suite, board.suite)
    if board.kind == "train":
        return f"{words} · {ran_on}"
    return f"{board.newest.get('model_name') or board.suite} · {words} · {ran_on}"


def _served_models(env: Any, docs: Path, results: Results, chart_sink: pages.Charts) -> list[dict[str, str]]:
    """A page per served model (`serving/<suite>-<model>.md`): latency against throughput per GPU, a line per
    GPU model, tensor-parallel size and weights; returns its navigation entries."""
    nav = []
    for (suite, model), group in results.latency.items():
        slug = pages.slug(suite, model)
        href = f"serving/{slug}.md"
        nav.append({pages.nav_title(model, results.suite_titles.get(suite, suite)): href})
        pages.render(
            env,
            "serving_model.md.j2",
            docs / href,
            suite=suite,
            model=model,
            points=group.to_dicts(),
            chart=chart_sink.html_of(pages.chart_id(slug, "latency"), model_charts.latency_throughput, group, depth=1),
        )
    return nav


def _mixed_commits(rows: list[dict[str, Any]], repo: str | None = None) -> dict[str, Any] | None:
    """The note of a board whose ranked rows come from more than one harness commit (`commits.mixed`), or None."""
    return commits.mixed((r["harness_commits"] for r in rows), repo)


def _training_board(
    env: Any, path: Path, board: Board, chart_sink: pages.Charts, slug: str
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A training workload's page (ranked configurations, unranked runs, claims, loss curves, repeats, scaling) and
    its board JSON; returns its home-page row and its claims' row (None without claims)."""
    suite, workload, ranked = board.suite, board.workload, board.ranked
    href = f"leaderboards/{slug}.md"
    config = pages.board_config(board.config) if board.config is not None else None
    if config is not None and board.defined_variants is not None:
        config["workload"]["variants"] = board.defined_variants  # the baseline as the suite file names it now
    if config is not None:
        config["workload"]["full_steps"] = board.full_steps  # a run's record says the steps it made, not the length
    pages.render(
        env,
        "leaderboard.md.j2",
        path,
        unit=board.unit,
        suite=suite,
        workload=workload,
        config=config,
        rows=ranked.to_dicts(),
        answer=board.answer,
        claims=board.claims.to_dicts(),
        retracted=board.retracted.to_dicts(),
        **_listed(path, slug, unranked=board.shown_unranked, failures=board.failures),
        rank_rule=configurations.RANK_RULE,
        json_name=_board_json(path, board),
        tolerance=board.loss_tolerance,
        throughput_chart=chart_sink.html_of(
            pages.chart_id(slug, "throughput"), charts.throughput, ranked, board.unit, depth=1
        )
        + "\n\n"
        + chart_sink.html_of(pages.chart_id(slug, "speedup"), charts.speedup, ranked, depth=1)
        + (
            "\n\n" + chart_sink.html_of(pages.chart_id(slug, "mfu"), charts.mfu, ranked, depth=1)
            if board.calibrated_mfu
            else ""
        )
        + "\n\n"
        + chart_sink.html_of(pages.chart_id(slug, "step-times"), charts.step_time_distribution, ranked, depth=1)
        if ranked.height
        else "",
        loss_chart=chart_sink.html_of(pages.chart_id(slug, "loss"), charts.loss_curves, board.losses, depth=1)
        if board.losses.height
        else "",
        repeats=board.repeats.to_dicts(),
        scaling=board.scaling.to_dicts(),
        scaling_chart=chart_sink.html_of(pages.chart_id(slug, "scaling"), charts.scaling, board.scaling, depth=1)
        if board.scaling_efficiencies
        else "",
    )
    row = dict(
        suite=suite,
        workload=workload,
        href=href,
        runs=board.measured_runs,
        claims=board.claims.height,
        best=board.best,
        top=_top(board),
    )
    claims_row = None
    if board.claims.height:
        (stock, stock_spread), (tuned, tuned_spread) = board.tier_best["stock"], board.tier_best["tuned"]
        claims_row = dict(
            workload=workload,
            claims=board.claims.to_dicts(),
            href=href,
            stock=stock,
            tuned=tuned,
            stock_spread=stock_spread,
            tuned_spread=tuned_spread,
            hardware_note=board.hardware_note,
        )
    return row, claims_row


def _board_json(page: Path, board: Board) -> str:
    """Write the board as data beside its page (`leaderboards/<board>.json`, format on the downloads page:
    `board_rows`) and return the file's name."""
    target = page.with_suffix(".json")
    target.parent.mkdir(parents=True, exist_ok=True)
    unit, figure = board.unit, board.figure
    # kept by exactly the columns `board_rows` reads: a board a new run did not join is not worked out again
    ranked = board.ranked.select(c for c in (*_RANKED_READS, *figure) if c in board.ranked.columns)
    others = board.unranked.select(c for c in (*_UNRANKED_READS, *figure) if c in board.unranked.columns)
    spans = board.unranked_spans

    def text() -> bytes:
        rows = board_rows(ranked, others, spans, unit, figure)
        return (json.dumps({"rows": rows}, indent=1, ensure_ascii=False) + "\n").encode()

    target.write_bytes(BOARD_JSON.made(text, ranked, others, spans, unit, figure))
    return target.name


_RANKED_READS = ("rank", "variant", "settings_hash", "status", "run_ids", "harness_commits", "accelerator_count",
                 "accelerator", "interval_basis")  # fmt: skip
_UNRANKED_READS = ("started_at", "run_id", "settings_hash", "status", "unranked", "harness_commit", "variant",
                   "accelerator_count", "accelerator")  # fmt: skip
"""The columns `board_rows` reads of a board's ranked rows and of its unranked runs, besides the figure's."""

BOARD_JSON = output_cache.Kind("board-json")
"""A board's JSON (`board_rows`), kept by the rows it is made from."""


def board_rows(
    board: pl.DataFrame, unranked: pl.DataFrame, spans: pl.DataFrame, unit: str, figure: tuple[str, str, str]
) -> list[dict[str, Any]]:
    """A board as data: one row per configuration, ranked ones first. Runs that do not rank join their
    configuration's row under `unranked_runs` (with their status, reason and harness commit); a configuration with no
    ranked run is one unranked row (its latest run's status and reason, and its figure and span as derived:
    `spans`, `Board.unranked_spans`). Each row names the harness commits of its `runs` (`commits.distinct`).
    `figure` names the value, interval-low and interval-high columns."""
    value, lo, hi = figure
    rows: dict[str, dict[str, Any]] = {}
    for r in board.to_dicts():
        rows[r["settings_hash"]] = {
            "rank": r["rank"],
            "variant": r["variant"],
            "settings_hash": r["settings_hash"],
            "status": r["status"],
            "verified": True,
            # a verified row without a rank says why: it has no interval (unreplicated, or one measurement)
            "reason": None if r["rank"] is not None else r.get("interval_basis"),
            "value": r[value],
            "interval_low": r[lo],
            "interval_high": r[hi],
            "unit": unit,
            "runs": r["run_ids"],
            "harness_commits": commits.distinct(r["harness_commits"]),
            "hardware": f"{r['accelerator_count']} × {r['accelerator']}",
            "unranked_runs": [],
        }
    columns = configurations.SPANS_SCHEMA
    spanned = {h: (v, low, high) for h, v, low, high in spans.select(*columns).iter_rows()}
    others: dict[str, list[dict[str, Any]]] = {}
    for r in unranked.sort("started_at", "run_id").to_dicts():
        others.setdefault(r["settings_hash"], []).append(r)
    for settings_hash, runs in others.items():
        entries = [
            {"run": r["run_id"], "status": r["status"], "reason": r["unranked"], "harness_commit": r["harness_commit"]}
            for r in runs
        ]
        if settings_hash in rows:
            rows[settings_hash]["unranked_runs"] = entries
            continue
        latest = runs[-1]
        median, low, high = spanned.get(settings_hash, (None, None, None))
        rows[settings_hash] = {
            "rank": None,
            "variant": latest["variant"],
            "settings_hash": settings_hash,
            "status": latest["status"],
            "verified": False,
            "reason": latest["unranked"],
            "value": median,
            "interval_low": low,
            "interval_high": high,
            "unit": unit,
            "runs": [r["run_id"] for r in runs],
            "harness_commits": commits.distinct(r["harness_commit"] for r in runs),
            "hardware": f"{latest['accelerator_count']} × {latest['accelerator']}",
            "unranked_runs": entries,
        }
    return list(rows.values())


def _verdict(the_verdict: verdict.Verdict | None, chart_sink: pages.Charts) -> dict[str, Any] | None:
    """The home page's answer to the seed's question (generator/derive/verdict/, with its resamples from
    generator/derive/verdict/draws.py), or None without the seed's claims."""
    if the_verdict is None:
        return None
    the_fight, points, said = the_verdict.fight, the_verdict.points, the_verdict.said
    return dict(
        fight=the_fight,
        said=said,
        points=points.drop("figures", "end_to_end_figures", "run_ids").to_dicts(),
        owed=the_verdict.owed,
        # a static image: the home page stays light (the board links the interactive charts)
        chart=chart_sink.picture(
            "chart-verdict-sweep",
            charts.sweep,
            points,
            the_verdict.claims,
            said.matched_tokens_per_step,
            the_verdict.crossings,
            alt_text=(
                "steps/s against tokens per step, with the claims as lines and the crossings of the matched shape "
                "marked"
            ),
        )
        if points.height
        else "",
        href=f"leaderboards/{pages.slug(the_fight.suite, the_fight.workload)}.md",
        stock=verdict.STOCK,
        min_steps=verdict.SWEEP_MIN_STEPS,
        full_steps=the_verdict.full_steps,
        gap_asked=verdict.GAP_ASKED,
        pooled=the_verdict.pooled,
        t975=the_verdict.t975,
        draws=sweep_draws.DRAWS,
        seed=sweep_draws.SEED,
        headline=verdict.HEADLINE,
        max_runs=verdict.MAX_FURTHER_RUNS,
        power=verdict.POWER,
    )


def _top(board: Board) -> dict[str, Any] | None:
    """The home page's line for a board: its best row (`Board.best`), as variant, figure, interval, unit and
    hardware."""
    row, (value, lo, hi) = board.best, board.figure
    if row is None:
        return None
    return dict(variant=row["variant"], value=row[value], lo=row[lo], hi=row[hi], unit=board.unit,
                hardware=f"{row['accelerator_count']} × {row['accelerator']}")  # fmt: skip


def _inference_board(
    env: Any, path: Path, board: Board, chart_sink: pages.Charts, slug: str
) -> tuple[dict[str, Any], None]:
    """An inference test's page (ranked configurations, unranked runs with their reasons, the own tools' figures,
    failures) and its board JSON; returns its home-page row."""
    config = pages.board_config(board.config or "")
    pages.render(
        env,
        "inference.md.j2",
        path,
        unit=board.unit,
        suite=board.suite,
        workload=board.workload,
        kind=config["workload"]["kind"],
        config=config,
        rows=board.ranked.to_dicts(),
        answer=board.answer,
        **_listed(path, slug, unranked=board.shown_unranked, imported=board.imported, failures=board.failures),
        quantized=board.quantized_weights,
        rank_rule=board.rank_rule,
        json_name=_board_json(path, board),
        chart=chart_sink.html_of(
            pages.chart_id(slug, "tokens"), charts.engine_throughput, board.drawn, board.unit, depth=1
        )
        if board.drawn.height
        else "",
        not_drawn=board.not_drawn,
        drawn_per=chart_rows.DRAWN_PER_CONFIGURATION,
    )
    return _test_row(board, path), None


def _test_row(board: Board, path: Path) -> dict[str, Any]:
    """A test board's home-page row."""
    return dict(
        suite=board.suite,
        workload=board.workload,
        href=str(path.relative_to(path.parent.parent)),
        runs=board.measured_runs,
        claims=0,
        best=None,
        top=_top(board),
    )


def _serving_board(
    env: Any, path: Path, board: Board, chart_sink: pages.Charts, slug: str
) -> tuple[dict[str, Any], None]:
    """A serving test's page (the runner's runs by throughput, the engine's own bench tool beside each,
    tensor-parallel scaling, and at one request in flight llama.cpp's generation on the same model); returns its
    home-page row."""
    config = pages.board_config(board.config or "")
    scaling = board.scaling
    pages.render(
        env,
        "serving.md.j2",
        path,
        unit=board.unit,
        suite=board.suite,
        workload=board.workload,
        config=config,
        work=config["workload"],
        rows=board.ranked.to_dicts(),
        answer=board.answer,
        rank_rule=board.rank_rule,
        json_name=_board_json(path, board),
        scaling=scaling.to_dicts(),
        scaling_chart=chart_sink.html_of(pages.chart_id(slug, "tp-scaling"), model_charts.tp_scaling, scaling, depth=1)
        if scaling.height > 1
        else "",
        **_listed(
            path,
            slug,
            unranked=board.shown_unranked,
            imported=board.imported,
            failures=board.failures,
            llama=board.beside,
            decoding=board.decoding,
        ),
        quantized=board.quantized_weights,
    )
    return _test_row(board, path), None


def _listed(page: Path, slug: str, **frames: pl.DataFrame) -> dict[str, Any]:
    """A board page's run lists, each bounded (`lists.bounded`): `<name>` its rows as the page lists them,
    `<name>_listed` what the page says of the rest; a list's full CSV is `downloads/lists/<board>-<name>.csv.gz`."""
    out: dict[str, Any] = {}
    for name, frame in frames.items():
        listed = lists.bounded(frame, page.parent.parent, page, f"{slug}-{name}")
        out[name], out[f"{name}_listed"] = listed.rows, listed
    return out


_WRITERS = {"train": _training_board, "inference": _inference_board, "serving": _serving_board}
"""One board writer per kind, each `(env, path, board, chart_sink, slug)` returning its home-page
row and its claims' row (None without claims)."""
