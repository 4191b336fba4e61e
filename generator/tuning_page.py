"""The "What tuning bought" page: the ladder from stock to the best tuned configuration (generator/tuning.py) at each
micro-batch of the seed's fight, with what each rung adds in the suite's own words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from generator import pages, single_settings, tuning
from runners import schema


def write(env: Any, docs: Path, the_verdict: dict[str, Any] | None, summary: pl.DataFrame) -> None:
    """Render tuning.md from the sweep of the seed's fight (`sweep_draws.compute`); without the fight, the page says
    there is nothing to climb yet."""
    rungs: list[dict[str, Any]] = []
    fight, order, described = None, [], {}
    if the_verdict is not None:
        fight = the_verdict["fight"]
        order = list((schema.suite_workloads(fight.suite).get(fight.workload) or {}).get("variants") or [])
        rungs = tuning.ladder(the_verdict["points"], order)
        named = summary.filter((pl.col("suite") == fight.suite) & pl.col("variant_description").is_not_null())
        described = dict(named.sort("started_at").select("variant", "variant_description").iter_rows())
    singles = [r for r in single_settings.rows(summary) if fight and r["suite"] == fight.suite]
    by_mb: dict[int, list[dict[str, Any]]] = {}
    for rung in rungs:
        by_mb.setdefault(rung["micro_batch"], []).append(rung)
    pages.render(
        env,
        "tuning.md.j2",
        docs / "tuning.md",
        fight=fight,
        ladders=by_mb,
        best=tuning.best_per_micro_batch(rungs),
        described=described,
        singles=singles,
        board=f"leaderboards/{pages.slug(fight.suite, fight.workload)}.md" if fight else None,
    )
