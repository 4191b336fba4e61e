"""Build the site: load + validate `data/` → derive → charts → Markdown pages → MkDocs Material → `site/`.

    python -m generator.build [--data data] [--out site] [--work build]

Everything written goes to the ignored `build/` and `site/` directories; `site_src/` is only read.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

import altair as alt
import polars as pl
import yaml

from generator import catalog_pages, charts, derive, editions, load, pages, run_pages
from runners import metrics

ROOT = Path(__file__).resolve().parent.parent
SITE_SRC = ROOT / "site_src"


def vega_bundle(cache_dir: Path) -> str:
    """Vega + Vega-Lite + vega-embed as one script, made offline by vl-convert and cached by version."""
    import vl_convert

    vl_version = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    key = f"vega-{vl_convert.get_vega_version()}-vl-{vl_version}-embed-{vl_convert.get_vega_embed_version()}.js"
    cached = cache_dir / key
    if not cached.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(".tmp")
        tmp.write_text(vl_convert.javascript_bundle(vl_version=vl_version))
        tmp.replace(cached)
    return cached.read_text()


def _best(frame: pl.DataFrame, tier: str) -> dict | None:
    if "rank" not in frame.columns:  # no ranked run on this workload (claims alone, say)
        return None
    rows = frame.filter(pl.col("tier") == tier).sort("rank", "steps_per_s", descending=[False, True])
    return rows.row(0, named=True) if rows.height else None


def write_pages(
    loaded: load.Loaded, summary: pl.DataFrame, docs: Path, chart_sink: pages.Charts, data_dir: Path
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """Render every generated page into `docs`; returns the leaderboard and edition nav entries."""
    env = pages.environment()
    boards = derive.leaderboards(summary)
    index_rows, claim_rows, nav = [], [], []
    workloads = summary.select("suite", "workload").unique().sort("suite", "workload").iter_rows()
    for suite, workload in workloads:
        slug = pages.slug(suite, workload)
        href = f"leaderboards/{slug}.md"
        all_runs = summary.filter((pl.col("suite") == suite) & (pl.col("workload") == workload))
        board = boards.get((suite, workload), all_runs.clear())
        measured = all_runs.filter(pl.col("origin") == "measured")
        claims = all_runs.filter(pl.col("origin") == "claim").sort("run_id")
        flagged = measured.filter(pl.col("loss_parity_ok") == False)  # noqa: E712 (null means no baseline)
        failures = measured.filter(pl.col("steps_per_s_lo").is_null()).with_columns(
            error_short=pl.col("error").fill_null("").str.strip_chars().str.split("\n").list.last().str.slice(0, 200)
        )
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


def build(data_dir: Path, out_dir: Path, work_dir: Path) -> load.Loaded:
    """Build the whole site from `data_dir` into `out_dir`, using `work_dir` for generated sources."""
    from mkdocs.commands.build import build as mkdocs_build
    from mkdocs.config import load_config

    loaded = load.load(data_dir)
    for r in loaded.rejected:
        print(f"rejected {r.path}: " + "; ".join(r.problems), file=sys.stderr)
    docs = work_dir / "docs"
    if docs.exists():
        shutil.rmtree(docs)
    shutil.copytree(SITE_SRC / "docs", docs)
    shutil.copytree(SITE_SRC / "assets", docs / "assets")
    (docs / "assets" / "js" / "vega.js").write_text(vega_bundle(work_dir / "cache"))
    alt.theme.enable(charts.THEME)
    alt.data_transformers.disable_max_rows()  # charts are sized by what they show, checked by the page-weight bench
    summary = derive.run_summary(loaded.runs, loaded.rows)
    chart_sink = pages.Charts(docs, work_dir / "cache" / "svg")
    nav, nav_editions = write_pages(loaded, summary, docs, chart_sink, data_dir)
    config = yaml.safe_load((SITE_SRC / "mkdocs.yml").read_text())
    if nav:
        config["nav"].insert(1, {"Leaderboards": nav})
    config["nav"].insert(-1, {"Editions": ["editions.md", *nav_editions]})
    config_path = work_dir / "mkdocs.yml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    # Deterministic output: MkDocs stamps pages and the sitemap with the build date unless SOURCE_DATE_EPOCH is
    # set, so the date is that of the newest record (the same data always gives the same bytes).
    newest = loaded.runs["ended_at"].max() if loaded.runs.height else None
    os.environ["SOURCE_DATE_EPOCH"] = str(int(newest.timestamp()) if newest else 0)
    mkdocs_build(load_config(str(config_path), docs_dir=str(docs.resolve()), site_dir=str(out_dir.resolve())))
    run_pages.write_run_pages(out_dir, summary, loaded.rows)
    return loaded


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m generator.build", description="Build the Fair Fight site.")
    p.add_argument("--data", type=Path, default=ROOT / "data", help="result files (default: data/)")
    p.add_argument("--out", type=Path, default=ROOT / "site", help="site output (default: site/)")
    p.add_argument("--work", type=Path, default=ROOT / "build", help="generated sources (default: build/)")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    loaded = build(args.data, args.out, args.work)
    print(
        f"site built in {time.perf_counter() - t0:.1f} s: {loaded.runs.height} run(s), "
        f"{len(loaded.rejected)} rejected file(s) → {args.out / 'index.html'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
