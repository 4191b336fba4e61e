"""What `compare` selects from: one row per run with the figure its kind is ranked by (`derive.runs.every_run`), the
A/A floors and the boards' pooled spreads, taken from the site's own `derive.results` (or kept by the last build or
compare of the same data: `cache`). Nothing is derived here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

import generator.commands.compare.cache as cache
import generator.derive.checks as checks
import generator.derive.configurations as configurations
import generator.derive.evidence as evidence
import generator.derive.serving as serving
import generator.load.editions as editions
import generator.store.runcache as runcache
from generator import derive, load
from runners import metrics, schema

TEST_KEYS = configurations.KEYS
SIDE_KEYS = (*TEST_KEYS, *evidence.SPREAD_KEYS)
"""One side of a row is one configuration of one engine, kind of test and hardware: one spread widens it."""


@dataclass(frozen=True, slots=True)
class Dataset:
    data_dir: Path
    runs: pl.DataFrame
    """One row per loaded run (`derive.runs.COLUMNS`): `value`, `lo`, `hi` its figure; `excluded` why it does not
    count."""
    rejected: list[load.Rejected]
    run_floors: dict[str, float]
    """run_id -> the A/A spread of the repeats it belongs to."""
    kind_floors: dict[tuple[str, str, int, bool], float]
    """(kind, accelerator, count, shared host) -> the largest A/A spread of that kind on that hardware."""
    editions: list[editions.Edition]
    bad_editions: list[load.Rejected]
    spreads: dict[tuple[object, ...], metrics.PooledSpread] = field(default_factory=dict)
    """The boards' pooled between-run spreads, by (engine, kind, accelerator, count) (training's kind: "train"): a
    side's interval is its board row's (`evidence.interval`)."""


def load_dataset(data_dir: Path) -> Dataset:
    """Load and check as the site build does, and take the runs and floors from the same `derive.results`; with a
    cache folder (`runcache.command_folder`), the table the last build or compare of the same data kept
    (`cache`), when its key still holds."""
    folder = runcache.command_folder()
    shown, data_dir = Path(data_dir), load.canonical(data_dir)  # loaded as the site loads it, named as it was given
    found, bad = editions.scan(data_dir)
    data_key = cache.key(data_dir) if folder is not None else ""
    kept = cache.read(folder, data_key) if folder is not None else None
    # a file rejected for a start in the future may be accepted now: the table is derived again, as cold
    if kept is not None and any(schema.changes_with_time(p) for _, problems in kept[1]["rejected"] for p in problems):
        kept = None
    if kept is not None:
        runs, rest = kept
        return Dataset(
            shown, runs, [load.Rejected(p, tuple(problems)) for p, problems in rest["rejected"]],
            rest["run_floors"], {tuple(k): v for k, v in rest["kind_floors"]}, found, bad,
            {tuple(k): metrics.PooledSpread(*v) for k, v in rest.get("spreads", [])},
        )  # fmt: skip
    runcache.use(folder)
    loaded = load.load(data_dir, folder, lean=True, per_file=serving.as_read())
    serving.remember(loaded.per_file)
    results = derive.results(*checks.checked(editions.audited(loaded, data_dir)[0]))
    made = dataset(shown, results, found, bad)
    if folder is not None:
        keep(folder, data_key, made)
    return made


def keep(folder: Path, data_key: str, made: Dataset) -> None:
    """Keep `made` for the next `compare` of the same data (`cache`; the site build keeps its own too)."""
    rest = {
        "rejected": [[r.path, list(r.problems)] for r in made.rejected],
        "run_floors": made.run_floors,
        "kind_floors": [[list(k), v] for k, v in made.kind_floors.items()],
        "spreads": [[list(k), [s.sd, s.df, s.groups]] for k, s in made.spreads.items()],
    }
    cache.save(folder, data_key, made.runs, rest)


def dataset(
    data_dir: Path,
    results: derive.Results,
    found: list[editions.Edition] | None = None,
    bad: list[load.Rejected] | None = None,
) -> Dataset:
    """What compare selects from, out of a site's `Results`: nothing is derived here."""
    every = results.every_run
    spreads = evidence.spreads(results.test_spreads, results.training_spreads["steady"])
    return Dataset(
        data_dir, every.runs, results.rejected, every.run_floors, results.kind_floors, found or [], bad or [],
        spreads,
    )  # fmt: skip
