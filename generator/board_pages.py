"""The leaderboard pages (one per suite and workload) and the home page, and the order every other generated
page is written in. Charts come from `charts`, numbers from `derive`; this module only arranges them."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from generator import catalog_pages, charts, derive, editions, load, pages
from runners import metrics


def _best(frame: pl.DataFrame, tier: str) -> dict | None:
    rows = frame.filter(pl.col("tier") == tier).sort("rank", "steps_per_s", descending=[False, True])
    return rows.row(0, named=True) if rows.height else None


def write_pages(
    loaded: load.Loaded, summary: pl.DataFrame, docs: Path, chart_sink: pages.Charts, data_dir: Path
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """Render every generated page into `docs`; returns the leaderboard and edition nav entries."""
    env = pages.environment()
    boards = derive.leaderboards(summary)
    index_rows, claim_rows, nav = [], [], []
    for suite, workload in boards:
        slug = pages.slug(suite, workload)
        href = f"leaderboards/{slug}.md"
        all_runs = summary.filter((pl.col("suite") == suite) & (pl.col("workload") == workload))
        board = boards[(suite, workload)]
        measured = all_runs.filter(pl.col("origin") == "measured")
        claims = all_runs.filter(pl.col("origin") == "claim").sort("run_id")
        flagged = measured.filter(pl.col("loss_parity_ok") == False)  # noqa: E712 (null means no baseline)
        failures = measured.filter(pl.col("steps_per_s_lo").is_null())
        config = json.loads(measured["config"][0]) if measured.height else None
        # One curve per variant (its latest run), as means over timing windows: the page stays light however
        # many runs a workload has; every run's own curve is on its run page.
        latest = measured.sort("started_at").group_by("variant", maintain_order=True).last()
        losses = (
            loaded.rows.filter(pl.col("metric") == "loss", pl.col("trial") == 0)
            .join(latest.select("run_id", "variant", "window_steps"), on="run_id")
            .with_columns(step=(pl.col("step") // pl.col("window_steps")) * pl.col("window_steps"))
            .group_by("run_id", "variant", "step")
            .agg(pl.col("value").mean())
            .sort("run_id", "step")
        )
        has_mfu = board.height > 0 and board.select(pl.col("mfu_calibrated").is_not_null().any()).item()
        pages.render(
            env,
            "leaderboard.md.j2",
            docs / href,
            suite=suite,
            workload=workload,
            config=config,
            rows=board.to_dicts(),
            claims=claims.to_dicts(),
            flagged=flagged.to_dicts(),
            failures=failures.to_dicts(),
            tolerance={"first": metrics.LOSS_PARITY_FIRST_STEP_NATS, "rel": metrics.LOSS_PARITY_REL_TOL},
            throughput_chart=chart_sink.html(f"chart-{slug}-throughput", charts.throughput(board), depth=1)
            + "\n\n"
            + chart_sink.html(f"chart-{slug}-speedup", charts.speedup(board), depth=1)
            + ("\n\n" + chart_sink.html(f"chart-{slug}-mfu", charts.mfu(board), depth=1) if has_mfu else "")
            + "\n\n"
            + chart_sink.html(f"chart-{slug}-step-times", charts.step_time_distribution(board), depth=1)
            if board.height
            else "",
            loss_chart=chart_sink.html(f"chart-{slug}-loss", charts.loss_curves(losses), depth=1)
            if losses.height
            else "",
        )
        best = board.row(0, named=True) if board.height else None
        index_rows.append(
            dict(
                suite=suite,
                workload=workload,
                href=href,
                runs=measured.height,
                claims=claims.height,
                best=best,
            )
        )
        for claim in claims.to_dicts():
            claim_rows.append(dict(claim=claim, href=href, stock=_best(board, "stock"), tuned=_best(board, "tuned")))
        nav.append({f"{suite} · {workload}": href})
    pages.render(
        env,
        "index.md.j2",
        docs / "index.md",
        boards=index_rows,
        claims=claim_rows,
        rejected=loaded.rejected,
        total_runs=summary.filter(pl.col("origin") == "measured").height,
        failed_runs=summary.filter(pl.col("status") != "ok").height,
    )
    pages.render(env, "rejected.md.j2", docs / "rejected.md", rejected=loaded.rejected)
    nav_editions = editions.write_pages(env, docs, loaded, summary, data_dir)
    catalog_pages.write_catalog_pages(env, docs, summary, loaded.rows, chart_sink)
    return nav, nav_editions
