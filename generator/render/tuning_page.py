"""The "What tuning bought" page: the ladder from stock to the best tuned configuration (generator/derive/tuning.py) at
each micro-batch of the seed's fight, with what each rung adds in the suite's own words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import generator.derive.tuning as tuning
import generator.derive.verdict as verdict
import generator.render.pages as pages


def write(env: Any, docs: Path, figures: tuning.Tuning) -> None:
    """Render tuning.md from its figures (`tuning.tuning`, in `Results.tuning`); without the seed's fight, the page
    says there is nothing to climb yet."""
    fight = figures.fight
    pages.render(
        env,
        "tuning.md.j2",
        docs / "tuning.md",
        fight=fight,
        ladders=figures.ladders,
        best=figures.best,
        described=figures.described,
        singles=figures.singles,
        min_steps=verdict.SWEEP_MIN_STEPS,
        board=f"leaderboards/{pages.slug(fight.suite, fight.workload)}.md" if fight else None,
    )
