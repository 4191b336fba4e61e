"""A figure at or below zero (review: "a counted figure ≤ 0 crashes `compare` and the history across commits"): the
intervals of the boards, of `compare` and of the history are taken in logarithms (`metrics.repeat_interval`), so
every figure that counts must be above zero once its file is checked. Training's step times, an inference test's
tokens/s and an offline test's output tokens/s are rows the loader holds above zero (`schema.METRIC_RULES`); a served
point's output tokens/s is its answered requests' token counts over its duration, so each answered request must count
a token. Each file is a committed record doctored as a submitter would write it (tests/test_hostile.py `doctored`)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from generator import derive, load
from generator.derive import checks
from runners import layout
from tests.conftest import ROOT, run_module
from tests.test_hostile import doctored, problems_of, submit

SERVED = sorted(
    (ROOT / "data" / "h100" / "2026-12").glob("20261206T04*-llama-8b-serve-c1-i512-o128-vllm-tp1-*.parquet")
)
"""Three served points of one configuration at one harness commit on an H200, each beside `vllm bench serve`'s record
of it: repeats, so served points on that hardware have a pooled between-run spread, which widens every interval of
them in logarithms."""
POINT, OTHER = (
    next(p for p in SERVED if stamp in p.name and "vllm-bench" not in p.name) for stamp in ("041406", "040838")
)
SPREAD = ("vllm", "serve", "NVIDIA H200", 1)


def _no_output_tokens(how: str) -> Callable[[pa.Table], pa.Table]:
    """A served point's rows with every answered request's output token count 0 (`zero`) or left out (`absent`)."""

    def edit(table: pa.Table) -> pa.Table:
        counts = pc.equal(table.column("metric"), "output_tokens")
        if how == "absent":
            return table.filter(pc.invert(counts))
        value = pc.if_else(counts, 0.0, table.column("value"))
        return table.set_column(table.column_names.index("value"), "value", value)

    return edit


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        ("zero", "field 'value': output_tokens = 0.0: must be at least 1"),
        ("absent", "field 'metric': request 0 is answered (request_ok = 1) but has no output_tokens row"),
    ],
)
def test_a_served_point_whose_answered_requests_count_no_token_is_refused(
    tmp_path: Path, how: str, expected: str
) -> None:
    """Before: the point loaded with 0 output tokens/s and counted, and the site's derivation (`derive.results`, the
    history across commits) and `fairfight compare` of any two runs of the folder stopped with a traceback ("math
    domain error": the log of 0, where the pooled spread of served points on the H200 widened its commit's interval).
    Now the file is rejected, naming the row and the field, and both run."""
    data = tmp_path / "data"
    (data / "h100").mkdir(parents=True)
    for path in SERVED:
        shutil.copy(path, data / "h100")
    assert SPREAD in derive.results(*checks.checked(load.load(data))).test_spreads  # what widened the zero in logs
    bad = layout.read(POINT).column("run_id")[0].as_py()[:-6] + "0bad00"
    submit(data, doctored(POINT, bad, rows=_no_output_tokens(how)), folder="h100")
    results = derive.results(*checks.checked(load.load(data)))  # before: ValueError, math domain error
    assert expected in problems_of(data)[f"{bad}.parquet"]
    assert bad not in results.every_run.runs["run_id"].to_list()
    counted = results.every_run.runs.filter(pl.col("excluded").is_null() & pl.col("value").is_not_null())
    assert counted.height == len(SERVED) - 1 and (counted["value"] > 0).all()  # one's TTFT disagrees with its tool's
    ids = [layout.read(p).column("run_id")[0].as_py() for p in (OTHER, POINT)]
    compare = ("generator.commands.compare", "--data", str(data))
    both = run_module(*compare, *ids, check=False, FAIRFIGHT_SITE_CACHE="")  # no cache: derived as cold
    assert both.returncode == 0 and "Traceback" not in both.stderr, both.stderr
    assert "same" in both.stdout
    named = run_module(*compare, ids[0], bad, check=False, FAIRFIGHT_SITE_CACHE="")
    said = named.stdout + named.stderr
    assert named.returncode == 2 and "Traceback" not in said
    assert f"{bad}.parquet was rejected" in said and expected in said


def _rows_set(metric: str, value: float) -> Callable[[pa.Table], pa.Table]:
    """A record's rows with every steady row of `metric` set to `value`."""

    def edit(table: pa.Table) -> pa.Table:
        hit = pc.and_(pc.equal(table.column("metric"), metric), pc.equal(table.column("phase"), "steady"))
        return table.set_column(
            table.column_names.index("value"), "value", pc.if_else(hit, value, table.column("value"))
        )

    return edit


OTHER_KINDS = {
    "training": ("cpu-smoke", "20261129T182303Z-train-gpt-tiny-mb4-ddp-tuned-4c2956.parquet", "step_time_s"),
    "inference": ("h100", "20261201T201051Z-llama-70b-tg128-d0-llamacpp-q4_k_m-4d1ad7.parquet", "tokens_per_s"),
    "offline": ("h100", "20261202T023736Z-llama-32b-throughput-i512-o128-vllm-tp1-fp8-d27b57.parquet",
                "output_tokens_per_s"),
}  # fmt: skip


@pytest.mark.parametrize("value", [0.0, -1.0])
@pytest.mark.parametrize("kind", list(OTHER_KINDS))
def test_a_figure_of_the_other_kinds_at_or_below_zero_is_refused_by_its_rows(
    tmp_path: Path, kind: str, value: float
) -> None:
    """A training run's steady step times, an inference test's tokens/s and an offline test's output tokens/s at 0
    or below (its figure 0, infinite or negative) are refused by row and field: no such figure reaches a board,
    `compare` or the history."""
    folder, name, metric = OTHER_KINDS[kind]
    source = ROOT / "data" / folder / name
    data = tmp_path / "data"
    (data / folder).mkdir(parents=True)
    shutil.copy(source, data / folder)
    bad = layout.read(source).column("run_id")[0].as_py()[:-6] + "0bad00"
    submit(data, doctored(source, bad, rows=_rows_set(metric, value)), folder=folder)
    found = problems_of(data)
    assert set(found) == {f"{bad}.parquet"}
    assert "field 'value'" in found[f"{bad}.parquet"] and metric in found[f"{bad}.parquet"]
    if value < 0:  # named for what it is: a rate's tokens/s is not "a negative time"
        said = "a rate is never negative" if "_per_" in metric else "a time is never negative"
        assert f"{metric} = -1.0: {said}" in found[f"{bad}.parquet"]
    runs = derive.results(*checks.checked(load.load(data))).every_run.runs
    assert runs["run_id"].to_list() == [source.stem]
