"""A run's settings beside its engine's defaults (generator/derive/defaults.py): its page's Settings table, derived once
per run as a column of the run pages' rows, and kept by its file's sha256 so a warm build parses no config for it."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from generator.derive import defaults
from generator.load import fields
from generator.store import runcache

CONFIG = {
    "variant": {"settings": {"compile": True, "bucket_cap_mb": 25, "param_dtype": "bf16"}},
    "engine_defaults": {"compile": False, "bucket_cap_mb": 25},
}


def _runs() -> pl.DataFrame:
    configs = [json.dumps(CONFIG), json.dumps({"variant": {}}), None]
    return pl.DataFrame(
        {"run_id": ["a", "b", "c"], "sha256": ["1" * 64, "2" * 64, "3" * 64], "config": configs},
        schema={"run_id": pl.String, "sha256": pl.String, "config": pl.String},
    )


def test_each_setting_beside_its_default_the_changed_ones_marked() -> None:
    runs = defaults.with_beside_defaults(_runs())
    assert runs.schema[defaults.COLUMN] == fields.SETTINGS_BESIDE_DEFAULTS.dtype
    assert runs[defaults.COLUMN].to_list() == [
        [
            {"key": "bucket_cap_mb", "value": "25", "default": "25", "changed": False},
            {"key": "compile", "value": "true", "default": "false", "changed": True},
            {"key": "param_dtype", "value": '"bf16"', "default": "–", "changed": False},  # no default: not a change
        ],
        [],  # a variant without settings: no table
        None,  # a run without a config
    ]


def test_a_warm_build_takes_them_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runcache.use(None)
    fresh = defaults.with_beside_defaults(_runs())
    try:
        runcache.use(tmp_path)
        first = defaults.with_beside_defaults(_runs())
        monkeypatch.setattr(defaults, "beside_defaults", lambda config: pytest.fail("worked out again"))
        again = defaults.with_beside_defaults(_runs())
    finally:
        runcache.use(None)
    assert fresh.equals(first) and fresh.equals(again)
