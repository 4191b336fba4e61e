"""The leaderboard pages (one per suite and workload) and the home page, and the order every other generated
page is written in. Charts come from `charts`, numbers from `derive`; this module only arranges them."""

from __future__ import annotations

import dataclasses
import functools
import json
import statistics
from pathlib import Path
from typing import Any

import polars as pl

from generator import (
    catalog_pages,
    chart_rows,
    charts,
    commits,
    configurations,
    derive,
    editions,
    inference,
    load,
    pages,
    serving,
    side_by_side,
    suite_names,
    sweep_draws,
    test_boards,
    tuning_page,
    verdict,
)
from runners import llama_files, metrics, schema


def _best(frame: pl.DataFrame, tier: str | None = None) -> dict | None:
    """The fastest ranked run (of a tier) among headline runs: a configuration as the suite pins it, run to the end
    (derive's `headline`). Sweep points and short exploratory runs are shown as what they are, never as the best."""
    rows = frame.filter(pl.col("headline") & (pl.col("tier") == tier if tier else pl.lit(True)))
    rows = rows.sort("steps_per_s", "run_id", descending=[True, False])
    return rows.row(0, named=True) if rows.height else None


def _spread_of(repeats: pl.DataFrame, run: dict | None) -> dict | None:
    """The A/A figures of a run's configuration, if it was repeated."""
    if run is None:
        return None
    hit = repeats.filter(pl.col("run_id").list.contains(run["run_id"]))
    return hit.row(0, named=True) if hit.height else None


def _hardware_note(claim: dict, ours: dict | None) -> str | None:
    """One plain sentence on how the claim's GPUs and ours differ, from the datasheets in `metrics`."""
    if ours is None:
        return None
    theirs_mem, ours_mem = metrics.datasheet_memory(claim["accelerator"]), metrics.datasheet_memory(ours["accelerator"])
    theirs_bf16 = metrics.datasheet_peak_flops(claim["accelerator"], "bf16")
    ours_bf16 = metrics.datasheet_peak_flops(ours["accelerator"], "bf16")
    if not (theirs_mem and ours_mem and theirs_bf16 and ours_bf16):
        return None
    same = "the same" if theirs_bf16 == ours_bf16 else "a different"
    return (
        f"{claim['accelerator']} and {ours['accelerator']} have {same} dense bf16 peak by their datasheets "
        f"({theirs_bf16 / 1e12:.0f} and {ours_bf16 / 1e12:.0f} TFLOP/s), but {theirs_mem[0]:.0f} GB at "
        f"{theirs_mem[1] / 1e12:.2f} TB/s against {ours_mem[0]:.0f} GB at {ours_mem[1] / 1e12:.2f} TB/s of memory: "
        "compute-bound steps should run alike, memory-bound parts faster on the latter."
    )


@dataclasses.dataclass(frozen=True, slots=True)
class _Derived:
    """Everything the boards are made from, derived once for all of them."""

    summary: pl.DataFrame
    boards: dict[tuple[str, str], pl.DataFrame]
    repeats: pl.DataFrame
    window_losses: pl.DataFrame
    scaling: pl.DataFrame
    tests: pl.DataFrame
    served: pl.DataFrame
    tp: pl.DataFrame
    test_spreads: dict[tuple[str, str, int], metrics.PooledSpread]
    """The pooled between-run spreads of inference and serving tests (`inference.pooled_spreads`,
    `serving.pooled_spreads`)."""


def write_pages(
    loaded: load.Loaded,
    summary: pl.DataFrame,
    docs: Path,
    chart_sink: pages.Charts,
    data_dir: Path,
    tests: pl.DataFrame | None = None,
    served: pl.DataFrame | None = None,
    repo_url: str | None = None,
    built_with: list[dict[str, str]] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, str]], list[dict[str, str]]]:
    """Render every generated page into `docs`; returns the leaderboard, edition and served-model nav entries. Each
    board is written by the writer of its kind (`_WRITERS`: training, inference or serving), which returns its
    home-page row and, for a board with claims, the claims' row. `repo_url` (the repository's address) links each
    row's harness commits; `built_with` (`versions.generator`) goes on the downloads page."""
    env = pages.environment()
    repo = commits.repo_base(repo_url)
    # a row's harness commits (`commits.cell`) and a board's note when its ranked rows mix them (`_mixed_commits.md.j2`)
    env.filters.update(commits=functools.partial(commits.cell, repo=repo))
    env.globals["mixed_commits"] = functools.partial(_mixed_commits, repo=repo)
    served = serving.test_summary(summary, loaded.rows) if served is None else served
    tests = inference.test_summary(summary, loaded.rows) if tests is None else tests
    derived = _Derived(
        summary=summary,
        boards=derive.leaderboards(summary),
        repeats=derive.repeats(summary),
        window_losses=derive.loss_windows(summary, loaded.rows),
        scaling=derive.scaling(summary),
        tests=tests,
        served=served,
        tp=serving.tp_scaling(served),
        test_spreads=inference.pooled_spreads(tests) | serving.pooled_spreads(served),
    )
    the_verdict = sweep_draws.compute(summary, loaded.rows)
    index_rows, claim_rows = [], []
    grouped: dict[Section, list[tuple[tuple, dict[str, str]]]] = {}
    ran_on = _hardware_of_boards(summary)
    env.globals["ran_on"] = ran_on  # the board templates title a board by the hardware its runs used
    env.globals["quantized_weights"] = frozenset(llama_files.QUANT_TYPES)  # such boards say quality is not measured
    # the fight's board says where its claims meet our figures: the verdict's matched shape (None: not answered)
    env.globals["verdict_at"] = (
        {(the_verdict["fight"].suite, the_verdict["fight"].workload): the_verdict["said"]} if the_verdict else {}
    )
    for suite, workload in derived.boards:
        slug = pages.slug(suite, workload)
        href = f"leaderboards/{slug}.md"
        section, title, order = _nav_words(summary, suite, workload, _kind(derived, suite, workload))
        entry = {pages.nav_title(title, ran_on.get((suite, workload), suite_names.title(suite))): href}
        grouped.setdefault(section, []).append((order, entry))
        row, claims_row = _WRITERS[_kind(derived, suite, workload)](
            env, docs / href, suite, workload, derived, chart_sink, slug
        )
        index_rows.append(row)
        if claims_row is not None:
            claim_rows.append(claims_row)
    pages.render(
        env,
        "index.md.j2",
        docs / "index.md",
        verdict=_verdict(summary, the_verdict, chart_sink),
        boards=index_rows,
        claims=claim_rows,
        rejected=loaded.rejected,
        total_runs=summary.filter(pl.col("origin") == "measured").height,
        failed_runs=summary.filter(pl.col("status") != "ok").height,
    )
    pages.render(env, "rejected.md.j2", docs / "rejected.md", rejected=loaded.rejected)
    errata = summary.filter(pl.col("retracted_by").is_not_null()).sort(
        "retracted_at", "run_id", descending=[True, False]
    )
    pages.render(env, "errata.md.j2", docs / "errata.md", errata=errata.to_dicts())
    _side_by_side(env, docs, derived, chart_sink)
    tuning_page.write(env, docs, the_verdict, summary)
    nav = [  # the boards by kind, then by model, smallest first: sections a reader can scan (a flat list ran to 60)
        {pages.nav_title(name): [e for _, e in sorted(entries, key=lambda oe: oe[0])]}
        for (_, _, name), entries in sorted(grouped.items())
    ]
    nav_editions = editions.write_pages(env, docs, loaded, summary, data_dir)
    nav_served = _served_models(env, docs, derived.served, chart_sink)
    said = the_verdict["said"] if the_verdict else {}
    matched = (
        {(the_verdict["fight"].suite, the_verdict["fight"].workload): said["matched_tokens_per_step"]}
        if the_verdict and said.get("matched_tokens_per_step") is not None
        else {}
    )
    catalog_pages.write_catalog_pages(env, docs, summary, loaded.rows, chart_sink, built_with or [], matched)
    return nav, nav_editions, nav_served


def _side_by_side(env: Any, docs: Path, derived: _Derived, chart_sink: pages.Charts) -> None:
    """The page that sets every engine side by side on one model and GPU (`side_by_side`), with its charts."""
    rows = side_by_side.engine_rows(derived.tests, derived.served, derived.summary, derived.test_spreads)
    models: dict[tuple[str, str, str], dict[str, Any]] = {}
    for b in side_by_side.boards(rows):
        key = (b["suite"], b["model_name"], b["accelerator"])
        title = f"{b['model_name']} ({(b['total_params'] or 0) / 1e9:.1f}B parameters) · 1 × {b['accelerator']}"
        model = models.setdefault(key, {"title": title, "boards": []})
        slug = pages.slug("side-by-side", *key, f"{b['family_bits']}bit")
        b["chart"] = chart_sink.html(f"chart-{slug}", charts.side_by_side(pl.DataFrame(b["rows"])))
        model["boards"].append(b)
    depth_rows = side_by_side.kv_depth_rows(derived.tests, derived.summary, derived.test_spreads)
    depths = []
    by_model = depth_rows.partition_by("suite", "model_name", "accelerator", as_dict=True)
    for suite, model_name, accelerator in side_by_side.depth_order(depth_rows):
        group = by_model[(suite, model_name, accelerator)]
        if group["depth"].n_unique() < 2:
            continue
        slug = pages.slug("kv-depth", suite, model_name, accelerator)
        depths.append(
            {
                "title": f"{model_name} · 1 × {accelerator}",
                "rows": group.to_dicts(),
                "caches": side_by_side.cache_ratios(group),
                "chart": chart_sink.html(f"chart-{slug}", charts.kv_depth(group)),
            }
        )
    pages.render(
        env,
        "side_by_side.md.j2",
        docs / "side-by-side.md",
        models=list(models.values()),
        depths=depths,
        bandwidths={
            acc: bw
            for acc, bw in side_by_side.copy_bandwidths(derived.summary).items()
            if acc in set(rows["accelerator"].to_list())
        },
    )


Section = tuple[int, float, str]
"""A navigation section: its kind's place, its model's size and its name (what sections sort by)."""


def _nav_words(summary: pl.DataFrame, suite: str, workload: str, kind: str) -> tuple[Section, str, tuple]:
    """A board's navigation section (its kind, then its model for tests of a model, as (kind's place, the model's
    size, its name) to sort by), its title in words and its place in the section, from its newest measured run:
    "Inference · llama-14b", "generate 128 · 16,384 in cache"."""
    runs = summary.filter((pl.col("suite") == suite) & (pl.col("workload") == workload)).sort("started_at")
    measured = runs.filter(pl.col("origin") == "measured")
    row = (measured if measured.height else runs).row(-1, named=True)
    model, size = row.get("model_name") or suite, float(row.get("total_params") or 0)
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
    return (0, 0.0, "Training"), workload, (suite, workload)


def _hardware_of_boards(summary: pl.DataFrame) -> dict[tuple[str, str], str]:
    """What each board's runs ran on, as a reader names it ("2 × H200", "1–2 × H200", "CPU"): its measured
    runs' hardware, or its claims' where nothing was measured. A suite's name (`h100`) says what it was written for,
    not what ran."""
    out: dict[tuple[str, str], str] = {}
    for (suite, workload), group in summary.partition_by("suite", "workload", as_dict=True).items():
        measured = group.filter(pl.col("origin") == "measured")
        rows = measured if measured.height else group
        labels = []
        for accelerator, counts in (
            rows.group_by("accelerator")
            .agg(pl.col("accelerator_count").unique().sort())
            .sort("accelerator")
            .iter_rows()
        ):
            if rows.filter(pl.col("accelerator") == accelerator)["device"].eq("cpu").any():
                labels.append("CPU")
                continue
            # a name the datasheet table knows, and nothing else: a record's accelerator is free text
            known = metrics.datasheet_memory(str(accelerator)) is not None
            name = str(accelerator).removeprefix("NVIDIA ") if known else "other hardware"
            counts = [c for c in counts if c is not None]
            many = f"{counts[0]}–{counts[-1]}" if len(counts) > 1 else f"{counts[0]}" if counts else "?"
            labels.append(f"{many} × {name}")
        out[(suite, workload)] = " + ".join(labels) or suite
    return out


def _served_models(env: Any, docs: Path, served: pl.DataFrame, chart_sink: pages.Charts) -> list[dict[str, str]]:
    """A page per served model (`serving/<suite>-<model>.md`): latency against throughput per GPU, a line per
    tensor-parallel size; returns its navigation entries."""
    points = serving.latency_points(served)
    nav = []
    for (suite, model), group in sorted(points.partition_by("suite", "model_name", as_dict=True).items()):
        slug = pages.slug(suite, model)
        href = f"serving/{slug}.md"
        nav.append({pages.nav_title(model, suite_names.title(suite)): href})
        pages.render(
            env,
            "serving_model.md.j2",
            docs / href,
            suite=suite,
            model=model,
            points=group.to_dicts(),
            chart=chart_sink.html(pages.chart_id(slug, "latency"), charts.latency_throughput(group), depth=1),
        )
    return nav


def _mixed_commits(rows: list[dict[str, Any]], repo: str | None = None) -> dict[str, Any] | None:
    """The note of a board whose ranked rows come from more than one harness commit (`commits.mixed`), or None."""
    return commits.mixed((r["harness_commits"] for r in rows), repo)


def _kind(derived: _Derived, suite: str, workload: str) -> str:
    """Which writer a board takes: its records' kind (inference and serving tests), training otherwise."""
    for kind, frame in (("inference", derived.tests), ("serving", derived.served)):
        if frame.filter((pl.col("suite") == suite) & (pl.col("workload") == workload)).height:
            return kind
    return "training"


def _training_board(
    env: Any, path: Path, suite: str, workload: str, derived: _Derived, chart_sink: pages.Charts, slug: str
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A training workload's page (ranked configurations, unranked runs, claims, loss curves, repeats, scaling) and
    its board JSON; returns its home-page row and its claims' row (None without claims)."""
    summary, repeats, window_losses, scaling = derived.summary, derived.repeats, derived.window_losses, derived.scaling
    href = f"leaderboards/{slug}.md"
    all_runs = summary.filter((pl.col("suite") == suite) & (pl.col("workload") == workload))
    board = derived.boards[(suite, workload)]
    measured = all_runs.filter(pl.col("origin") == "measured")
    claims = all_runs.filter((pl.col("origin") == "claim") & pl.col("retracted_by").is_null()).sort("run_id")
    retracted = all_runs.filter(pl.col("retracted_by").is_not_null()).sort("retracted_at", "run_id")
    counted = measured.filter(pl.col("retracted_by").is_null())
    failures = counted.filter(pl.col("steps_per_s_lo").is_null()).sort("started_at", "run_id")
    unranked = (
        derive.candidates(all_runs)
        .filter(pl.col("unranked").is_not_null())
        .sort("steps_per_s", "run_id", descending=[True, False], nulls_last=True)
    )
    oldest = measured.sort("started_at", "run_id")
    config = pages.board_config(oldest["config"][0]) if measured.height else None
    defined = schema.suite_workloads(suite).get(workload)
    if config is not None and defined is not None:
        config["workload"]["variants"] = defined["variants"]  # the baseline as the suite file names it now
    if config is not None:
        steps = (defined or {}).get("steps")  # a run's own record says how many steps it made, not the full length
        config["workload"]["full_steps"] = steps if isinstance(steps, int) and not isinstance(steps, bool) else None
    # One curve per variant (its latest run at the workload's shape, full-length where there is one), as means over
    # timing windows: the page stays light however many runs a workload has; every run's own curve is on its run
    # page. Sweep points (another micro-batch) train on other batches, so their curves are not this workload's.
    latest = (
        counted.filter(pl.col("suite_scale") & ~pl.col("sweep_point"))
        .sort("full_length", "started_at")
        .group_by("variant", maintain_order=True)
        .last()
    )
    work_repeats = repeats.filter((pl.col("suite") == suite) & (pl.col("workload") == workload))
    work_scaling = scaling.filter((pl.col("suite") == suite) & (pl.col("workload") == workload))
    losses = window_losses.join(latest.select("run_id", "variant"), on="run_id", maintain_order="left").select(
        "run_id", "variant", "step", "value"
    )
    shown = board  # one row per configuration already
    has_mfu = shown.height > 0 and shown.select(pl.col("mfu_calibrated").is_not_null().any()).item()
    pages.render(
        env,
        "leaderboard.md.j2",
        path,
        suite=suite,
        workload=workload,
        config=config,
        rows=board.to_dicts(),
        claims=claims.to_dicts(),
        retracted=retracted.to_dicts(),
        unranked=unranked.to_dicts(),
        failures=failures.to_dicts(),
        rank_rule=configurations.RANK_RULE,
        json_name=_board_json(path, board, unranked, "steps/s", ("steps_per_s", "steps_per_s_lo", "steps_per_s_hi")),
        tolerance={
            "first": metrics.LOSS_PARITY_FIRST_STEP_NATS,
            "rel": metrics.LOSS_PARITY_REL_TOL,
            "fp32": metrics.LOSS_PARITY_REL_TOL_FP32,
            "mean": metrics.LOSS_PARITY_MEAN_REL_TOL,
        },
        throughput_chart=chart_sink.html(pages.chart_id(slug, "throughput"), charts.throughput(shown), depth=1)
        + "\n\n"
        + chart_sink.html(pages.chart_id(slug, "speedup"), charts.speedup(shown), depth=1)
        + ("\n\n" + chart_sink.html(pages.chart_id(slug, "mfu"), charts.mfu(shown), depth=1) if has_mfu else "")
        + "\n\n"
        + chart_sink.html(pages.chart_id(slug, "step-times"), charts.step_time_distribution(shown), depth=1)
        if shown.height
        else "",
        loss_chart=chart_sink.html(pages.chart_id(slug, "loss"), charts.loss_curves(losses), depth=1)
        if losses.height
        else "",
        repeats=work_repeats.to_dicts(),
        scaling=work_scaling.to_dicts(),
        scaling_chart=chart_sink.html(pages.chart_id(slug, "scaling"), charts.scaling(work_scaling), depth=1)
        if work_scaling.filter(pl.col("efficiency").is_not_null()).height
        else "",
    )
    best = _best(board)
    row = dict(
        suite=suite,
        workload=workload,
        href=href,
        runs=measured.height,
        claims=claims.height,
        best=best,
        top=_top(best, "steps_per_s", "steps_per_s_lo", "steps_per_s_hi", "steps/s"),
    )
    claims_row = None
    if claims.height:
        stock, tuned = _best(board, "stock"), _best(board, "tuned")
        claims_row = dict(
            workload=workload,
            claims=claims.to_dicts(),
            href=href,
            stock=stock,
            tuned=tuned,
            stock_spread=_spread_of(work_repeats, stock),
            tuned_spread=_spread_of(work_repeats, tuned),
            hardware_note=_hardware_note(claims.row(0, named=True), tuned or stock),
        )
    return row, claims_row


def _board_json(
    page: Path, board: pl.DataFrame, unranked: pl.DataFrame, unit: str, figure: tuple[str, str, str]
) -> str:
    """Write the board as data beside its page (`leaderboards/<board>.json`, format on the downloads page:
    `board_rows`) and return the file's name."""
    target = page.with_suffix(".json")
    target.parent.mkdir(parents=True, exist_ok=True)
    rows = board_rows(board, unranked, unit, figure)
    target.write_text(json.dumps({"rows": rows}, indent=1, ensure_ascii=False) + "\n")
    return target.name


def board_rows(
    board: pl.DataFrame, unranked: pl.DataFrame, unit: str, figure: tuple[str, str, str]
) -> list[dict[str, Any]]:
    """A board as data: one row per configuration, ranked ones first. Runs that do not rank join their
    configuration's row under `unranked_runs` (with their status, reason and harness commit); a configuration with no
    ranked run is one unranked row (its latest run's status and reason, the median of its runs' figures, the span of
    their intervals). Each row names the harness commits of its `runs` (`commits.distinct`). `figure` names the value,
    interval-low and interval-high columns."""
    value, lo, hi = figure
    rows: dict[str, dict[str, Any]] = {}
    for r in board.to_dicts():
        rows[r["settings_hash"]] = {
            "rank": r["rank"],
            "variant": r["variant"],
            "settings_hash": r["settings_hash"],
            "status": r["status"],
            "verified": True,
            "reason": None,
            "value": r[value],
            "interval_low": r[lo],
            "interval_high": r[hi],
            "unit": unit,
            "runs": r["run_ids"],
            "harness_commits": commits.distinct(r["harness_commits"]),
            "hardware": f"{r['accelerator_count']} × {r['accelerator']}",
            "unranked_runs": [],
        }
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
        values = sorted(r[value] for r in runs if r[value] is not None)
        lows = [x for r in runs for x in (r[lo], r[value]) if x is not None]
        highs = [x for r in runs for x in (r[hi], r[value]) if x is not None]
        rows[settings_hash] = {
            "rank": None,
            "variant": latest["variant"],
            "settings_hash": settings_hash,
            "status": latest["status"],
            "verified": False,
            "reason": latest["unranked"],
            "value": statistics.median(values) if values else None,
            "interval_low": min(lows) if lows else None,
            "interval_high": max(highs) if highs else None,
            "unit": unit,
            "runs": [r["run_id"] for r in runs],
            "harness_commits": commits.distinct(r["harness_commit"] for r in runs),
            "hardware": f"{latest['accelerator_count']} × {latest['accelerator']}",
            "unranked_runs": entries,
        }
    return list(rows.values())


def _verdict(
    summary: pl.DataFrame, the_verdict: dict[str, Any] | None, chart_sink: pages.Charts
) -> dict[str, Any] | None:
    """The home page's answer to the seed's question (generator/verdict.py, with its resamples from
    generator/sweep_draws.py), or None without the seed's claims."""
    if the_verdict is None:
        return None
    the_fight, points, said = the_verdict["fight"], the_verdict["points"], the_verdict["said"]
    claims = pl.DataFrame(
        {
            "label": [f"{c['variant']} (claim)" for c in (the_fight.challenger, the_fight.stock)],
            "steps_per_s": [c["steps_per_s"] for c in (the_fight.challenger, the_fight.stock)],
        }
    )
    matched, crossed = said.get("matched_tokens_per_step"), chart_rows.crossings(said)
    chart = charts.sweep(points, claims, matched, crossed)
    pooled = the_verdict["pooled"]
    return dict(
        fight=the_fight,
        said=said,
        points=points.drop("figures", "end_to_end_figures", "run_ids").to_dicts(),
        owed=verdict.owed(summary, the_fight, said),
        # a static image: the home page stays light (the board links the interactive charts)
        chart=chart_sink.picture(
            "chart-verdict-sweep",
            chart,
            charts.sweep(points, claims, matched, crossed, narrow=True),
            "steps/s against tokens per step, with the claims as lines and the crossings of the matched shape marked",
        )
        if points.height
        else "",
        href=f"leaderboards/{pages.slug(the_fight.suite, the_fight.workload)}.md",
        stock=verdict.STOCK,
        min_steps=verdict.SWEEP_MIN_STEPS,
        full_steps=(schema.suite_workloads(the_fight.suite).get(the_fight.workload) or {}).get("steps"),
        gap_asked=verdict.GAP_ASKED,
        pooled=pooled,
        t975=metrics.student_t_quantile(0.975, pooled.df) if pooled else None,
        draws=sweep_draws.DRAWS,
        seed=sweep_draws.SEED,
        headline=verdict.HEADLINE,
        max_runs=verdict.MAX_FURTHER_RUNS,
    )


def _top(row: dict | None, value: str, lo: str, hi: str, unit: str) -> dict[str, Any] | None:
    """The home page's line for a board: its first ranked row, as variant, figure, interval, unit and hardware."""
    if row is None:
        return None
    return dict(variant=row["variant"], value=row[value], lo=row[lo], hi=row[hi], unit=unit,
                hardware=f"{row['accelerator_count']} × {row['accelerator']}")  # fmt: skip


def _inference_board(
    env: Any, path: Path, suite: str, workload: str, derived: _Derived, chart_sink: pages.Charts, slug: str
) -> tuple[dict[str, Any], None]:
    """An inference test's page (ranked configurations, unranked runs with their reasons, the own tools' figures,
    failures) and its board JSON; returns its home-page row."""
    tests = derived.tests.filter((pl.col("suite") == suite) & (pl.col("workload") == workload))
    ranked, unranked = inference.board(tests, derived.test_spreads)
    current = tests.filter(pl.col("retracted_by").is_null())
    status = dict(current.select("run_id", "status").iter_rows())
    imported = (
        current.filter(pl.col("origin") == "imported")
        .with_columns(paired_status=pl.col("paired_run").replace_strict(status, default=None, return_dtype=pl.String))
        .sort("workload", "variant", "started_at")
    )
    failures = current.filter((pl.col("origin") == "measured") & (pl.col("status") != "ok")).sort("started_at")
    measured = current.filter(pl.col("origin") == "measured")
    config = pages.board_config((measured if measured.height else current)["config"][0])
    kind = config["workload"]["kind"]
    drawn = chart_rows.test_runs(current, ranked)  # unranked runs hollow; no failed run's tool figure
    pages.render(
        env,
        "inference.md.j2",
        path,
        suite=suite,
        workload=workload,
        kind=kind,
        config=config,
        rows=ranked.to_dicts(),
        unranked=unranked.filter(pl.col("status") == "ok").to_dicts(),
        imported=imported.to_dicts(),
        failures=failures.to_dicts(),
        rank_rule=test_boards.RANK_RULE,
        json_name=_board_json(path, ranked, unranked, "tokens/s", ("value", "lo", "hi")),
        chart=chart_sink.html(pages.chart_id(slug, "tokens"), charts.test_throughput(drawn, "tokens/s"), depth=1)
        if drawn.height
        else "",
    )
    best = ranked.row(0, named=True) if ranked.height else None
    return dict(
        suite=suite,
        workload=workload,
        href=str(path.relative_to(path.parent.parent)),
        runs=measured.height,
        claims=0,
        best=None,
        top=_top(best, "value", "lo", "hi", "tokens/s"),
    ), None


def _serving_board(
    env: Any, path: Path, suite: str, workload: str, derived: _Derived, chart_sink: pages.Charts, slug: str
) -> tuple[dict[str, Any], None]:
    """A serving test's page (the runner's runs by throughput, vLLM's bench tool beside each, tensor-parallel
    scaling, and at one request in flight llama.cpp's generation on the same model); returns its home-page row."""
    tests = derived.served.filter((pl.col("suite") == suite) & (pl.col("workload") == workload))
    tp, llama = derived.tp, derived.tests
    current = tests.filter(pl.col("retracted_by").is_null())
    measured = current.filter(pl.col("origin") == "measured")
    ranked, unranked = serving.board(tests, derived.test_spreads)
    # the test as its newest run ran it (a served point's request count has changed; each run's row says its own)
    config = pages.board_config((measured if measured.height else current).sort("started_at")["config"][-1])
    model = config["model"]["name"]
    scaling = tp.filter((pl.col("suite") == suite) & (pl.col("workload") == workload))
    beside = llama.filter(
        (pl.col("suite") == suite)
        & (pl.col("model_name") == model)
        & (pl.col("kind") == "tg")
        & (pl.col("depth") == 0)
        & (pl.col("origin") == "measured")
        & (pl.col("status") == "ok")
        & pl.col("retracted_by").is_null()
    ).sort("weights", "started_at")
    pages.render(
        env,
        "serving.md.j2",
        path,
        suite=suite,
        workload=workload,
        config=config,
        work=config["workload"],
        rows=ranked.to_dicts(),
        unranked=unranked.filter(pl.col("status") == "ok").to_dicts(),
        rank_rule=test_boards.RANK_RULE,
        json_name=_board_json(path, ranked, unranked, "output tokens/s", ("value", "lo", "hi")),
        imported=current.filter(pl.col("origin") == "imported").sort("variant", "started_at").to_dicts(),
        failures=measured.filter(pl.col("status") != "ok").sort("started_at").to_dicts(),
        scaling=scaling.to_dicts(),
        scaling_chart=chart_sink.html(pages.chart_id(slug, "tp-scaling"), charts.tp_scaling(scaling), depth=1)
        if scaling.height > 1
        else "",
        llama=beside.to_dicts() if config["workload"].get("concurrency") == 1 else [],
        decoding=measured.filter(pl.col("status") == "ok").sort("started_at", "run_id").to_dicts(),
    )
    best = ranked.row(0, named=True) if ranked.height else None
    return dict(
        suite=suite,
        workload=workload,
        href=str(path.relative_to(path.parent.parent)),
        runs=measured.height,
        claims=0,
        best=None,
        top=_top(best, "value", "lo", "hi", "output tokens/s"),
    ), None


_WRITERS = {"training": _training_board, "inference": _inference_board, "serving": _serving_board}
"""One board writer per kind, each `(env, path, suite, workload, derived, chart_sink, slug)` returning its home-page
row and its claims' row (None without claims)."""
