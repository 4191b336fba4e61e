"""A run's settings beside its engine's defaults, as its page's Settings table shows them: each setting of its variant,
its value, the engine's default and whether the variant changed it (`beside_defaults`). Worked out once per run, as a
column of the run pages' rows (`Results.page_runs`, `COLUMN`), from its record's config alone: with a cache in use it
is kept by the file's sha256 (generator/store/runcache.py), so a warm build parses no run's config again for it."""

from __future__ import annotations

import json
from typing import Any

import polars as pl

import generator.load.columns as columns
import generator.load.fields as fields
import generator.store.runcache as runcache

COLUMN = fields.SETTINGS_BESIDE_DEFAULTS.name
"""The run pages' column (declared in generator/load/fields.py, with its type)."""
KEPT = runcache.Frames("beside-defaults")
"""Each run's `COLUMN`, by its file's sha256."""


def beside_defaults(config: dict[str, Any]) -> list[dict[str, Any]]:
    """A run's settings as its page's table shows them (`config`: its record's config): each setting of its variant,
    its value and the engine's default (canonical JSON; a dash where the engine names none), and whether the variant
    changed it (the engine has a default and the value is another)."""
    settings = config.get("variant", {}).get("settings", {})
    defaults = config.get("engine_defaults", {})
    return [
        {
            "key": key,
            "value": json.dumps(value),
            "default": json.dumps(defaults[key]) if key in defaults else "–",
            "changed": key in defaults and defaults[key] != value,
        }
        for key, value in sorted(settings.items())
    ]


def with_beside_defaults(runs: pl.DataFrame) -> pl.DataFrame:
    """`runs` with each one's `COLUMN` (`beside_defaults` of its config; null for a run without one)."""

    def compute(part: pl.DataFrame) -> pl.DataFrame:
        values = [None if text is None else beside_defaults(columns.parsed(text)) for text in part["config"]]
        return pl.DataFrame([part["run_id"], pl.Series(COLUMN, values, dtype=fields.SETTINGS_BESIDE_DEFAULTS.dtype)])

    found = KEPT.by_file(runs, [], compute)
    return runs.drop(COLUMN, strict=False).join(found, on="run_id", how="left", maintain_order="left")
