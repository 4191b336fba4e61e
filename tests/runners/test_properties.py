"""Property tests (hypothesis) of the record checks: the quick per-file screen never lets a bad row through, and
any table the store accepts loads back unchanged."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator import load
from runners import metrics, schema, spec
from runners.engines.llamacpp import importer as llama_importer
from tests.conftest import write_as_submitted
from tests.runners.test_store import _run

METRIC_NAMES = [*schema.METRIC_RULES, "custom_s", "custom_count"]
UNITS = sorted({rule.unit for rule in schema.METRIC_RULES.values()} | {"ms", ""})
VALUES = st.one_of(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
    st.integers(min_value=-3, max_value=5000).map(float),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e18, 1.0000001e18, -2e18, 1e308]),
)
ROWS = st.lists(
    st.fixed_dictionaries(
        {
            "trial": st.integers(min_value=-1, max_value=3),
            "step": st.one_of(st.none(), st.integers(min_value=-2, max_value=2000)),
            "phase": st.sampled_from([*schema.PHASES, "cooldown"]),
            "metric": st.sampled_from(METRIC_NAMES),
            "value": VALUES,
            "unit": st.sampled_from(UNITS),
        }
    ),
    min_size=1,
    max_size=40,
)


@st.composite
def good_row(draw: st.DrawFn) -> dict:
    """A row every check accepts: a known metric in its unit and range."""
    metric = draw(st.sampled_from(list(schema.METRIC_RULES)))
    rule = schema.METRIC_RULES[metric]
    if rule.whole:
        value = float(draw(st.integers(min_value=int(rule.low), max_value=10**6)))
    else:
        value = draw(st.floats(min_value=rule.low, max_value=1e6, exclude_min=rule.strict))
    step = draw(st.one_of(st.none(), st.integers(min_value=0, max_value=2000)))
    phase = draw(st.sampled_from(schema.PHASES))
    return dict(trial=draw(st.integers(0, 3)), step=step, phase=phase, metric=metric, value=value, unit=rule.unit)


GOOD_ROWS = st.lists(good_row(), min_size=1, max_size=40)
LOW = {name: rule.low for name, rule in schema.METRIC_RULES.items()}
SPOILERS = {
    "unit": lambda row, draw: {"unit": draw(st.sampled_from([u for u in UNITS if u != row["unit"]]))},
    "value": lambda row, draw: {"value": draw(VALUES)},
    "fraction": lambda row, draw: {"value": row["value"] + draw(st.sampled_from([0.5, 1e-9, -0.25]))},
    "below": lambda row, draw: {"value": LOW[row["metric"]] - draw(st.sampled_from([0.0, 1e-9, 7.0]))},
    "phase": lambda row, draw: {"phase": draw(st.sampled_from(["cooldown", "Steady", ""]))},
    "trial": lambda row, draw: {"trial": draw(st.integers(-5, -1))},
    "step": lambda row, draw: {"step": draw(st.integers(-5, -1))},
}


@st.composite
def spoiled_rows(draw: st.DrawFn) -> list[dict]:
    """Good rows with one of them changed in one field (which may or may not make it bad)."""
    rows = draw(GOOD_ROWS)
    i = draw(st.integers(0, len(rows) - 1))
    rows[i] = rows[i] | SPOILERS[draw(st.sampled_from(list(SPOILERS)))](rows[i], draw)
    return rows


TABLES = st.one_of(ROWS, GOOD_ROWS, spoiled_rows())
RUN = _run(run_id="prop", accelerator_count=1)


@given(TABLES)
@settings(max_examples=400, deadline=None)
def test_the_quick_screen_flags_every_table_with_a_bad_row(rows: list[dict]) -> None:
    table = schema.make_table(RUN, rows)
    problems = schema._row_problems(table)
    if problems:
        assert schema._rows_may_be_bad(table), problems
    else:
        assert not schema._rows_may_be_bad(table)  # values are bounded here: no sum overflows to infinity
    assert not problems or schema.check_table(table)  # and check_table reports them


def _good(row: dict) -> bool:
    rule = schema.METRIC_RULES.get(row["metric"])
    v = row["value"]
    ok = row["phase"] in schema.PHASES and math.isfinite(v) and row["trial"] >= 0 and (row["step"] or 0) >= 0
    ok = ok and not (row["metric"].endswith("_s") and v < 0) and not abs(v) > schema.MAX_ABS_VALUE
    if rule is not None:
        ok = ok and row["unit"] == rule.unit and (v > rule.low if rule.strict else v >= rule.low)
        ok = ok and (not rule.whole or v == math.floor(v))
    return ok


def _answered_have_tokens(rows: list[dict]) -> bool:
    """Each answered request (a `request_ok` row that is not 0) has an `output_tokens` row, by hand
    (`schema._answered_without_tokens`)."""
    counted = {r["trial"] for r in rows if r["metric"] == "output_tokens"}
    return all(r["trial"] in counted for r in rows if r["metric"] == "request_ok" and r["value"] != 0)


def _energy_rows_fit(rows: list[dict]) -> bool:
    """Each timed window's joules are one `energy_j` row at a window the run timed, and the idle power one run-level
    row, by hand (`schema._energy_row_problems`)."""
    idle = [r for r in rows if r["metric"] == "idle_power_w"]
    if len(idle) > 1 or any(r["phase"] != "run" or r["step"] is not None for r in idle):
        return False
    energy = [r for r in rows if r["metric"] == "energy_j"]
    if len({(r["trial"], r["step"]) for r in energy}) < len(energy):
        return False
    steps = {(r["trial"], r["step"]): r["phase"] for r in rows if r["metric"] == "step_time_s"}
    tests = {r["trial"] for r in rows if r["metric"] == "test_time_s"}
    for r in energy:
        window = (r["trial"], r["step"])
        if steps:  # a training run: at a step it timed, in that step's phase
            fits = r["step"] is not None and window in steps and steps[window] == r["phase"]
        else:  # a test's repetition, or a served point's one window
            fits = r["step"] is None and r["phase"] == "steady" and (r["trial"] in tests if tests else r["trial"] == 0)
        if not fits:
            return False
    return True


@given(rows=TABLES)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_table_is_accepted_exactly_when_every_row_is_good_and_loads_back_unchanged(
    rows: list[dict], tmp_path_factory
) -> None:
    """The rules written out once more by hand (`_good`, `_answered_have_tokens`, `_energy_rows_fit`): the checks
    accept a table exactly when each row passes them, each answered request counts its tokens and the energy rows fit
    the windows the run timed; an accepted table written to disk loads back row for row."""
    table = schema.make_table(RUN, rows)
    accepted = not schema.check_table(table)
    assert accepted == (all(_good(r) for r in rows) and _answered_have_tokens(rows) and _energy_rows_fit(rows))
    if accepted:
        data: Path = tmp_path_factory.mktemp("data")
        (data / "cpu-smoke").mkdir()
        write_as_submitted(table, data / "cpu-smoke" / "prop.parquet")
        loaded = load.load(data)
        assert loaded.rejected == [] and loaded.runs["run_id"].to_list() == ["prop"]
        back = loaded.rows.drop("run_id").to_dicts()
        assert back == [{k: r[k] for k in ("trial", "step", "phase", "metric", "value", "unit")} for r in rows]


FIXTURE_H100 = Path(__file__).resolve().parents[1] / "fixtures" / "schema-v1" / "data" / "h100"
LLAMA_BENCH_RECORD = next(FIXTURE_H100.glob("*-llamacpp-f16-llama-bench-*.parquet"))
BASE_RESULT = json.loads(pq.read_table(LLAMA_BENCH_RECORD).column("config")[0].as_py())["imported"]["result"]
H100 = spec.load_suite("h100")
ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(), st.text(max_size=12),
    st.lists(st.integers(-5, 10**9), max_size=4),
)  # fmt: skip


@given(st.dictionaries(st.sampled_from(sorted(BASE_RESULT)), ODD_VALUES, max_size=6))
@settings(max_examples=300, deadline=None)
def test_the_llama_bench_importer_names_every_problem_and_never_crashes(changes: dict) -> None:
    """Real llama-bench output (an H200 result kept in the fixtures) with fields changed to anything: the importer
    either accepts it or names each problem by result and field; it never fails another way."""
    entry = H100.inference_entry("llama-8b")
    model, variant = H100.models[entry.model], H100.variants["llamacpp-f16"]
    assert llama_importer.problems_of(BASE_RESULT, 1, model, variant, entry.tests()) == []
    problems = llama_importer.problems_of(BASE_RESULT | changes, 1, model, variant, entry.tests())
    assert all(p.startswith("result 1, field") for p in problems), problems
    if all(BASE_RESULT[k] == v and type(BASE_RESULT[k]) is type(v) for k, v in changes.items()):
        assert problems == []


TRIAL_FIELDS = ("prompt_tps", "generation_tps", "peak_memory", "total_time")
# text that stays one value on one line: no separators of the tool's format, no line breaks of any kind
ONE_VALUE = st.text(
    alphabet=st.characters(blacklist_characters=",=", blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=8
)


@given(
    st.lists(
        st.dictionaries(st.sampled_from(TRIAL_FIELDS), st.one_of(st.floats(), ONE_VALUE), max_size=4),
        max_size=4,
    ),
    ONE_VALUE,
)
@settings(max_examples=300, deadline=None)
def test_mlx_lm_benchmark_output_reads_or_names_the_line_and_field(trials: list[dict], noise: str) -> None:
    """mlx_lm.benchmark's printed output with trials of any fields and values, and any other text around them: the
    reader returns every trial's four numbers exactly, or a ValueError naming the line and field; nothing else."""
    from runners.engines.mlx import tool as mlx_lm_bench

    lines = [noise.replace("Trial", "trial"), "Running warmup.."]
    lines += [f"Trial {i + 1}:  " + ", ".join(f"{k}={v}" for k, v in t.items()) for i, t in enumerate(trials)]
    try:
        read = mlx_lm_bench.parse("\n".join(lines), "out.txt")
    except ValueError as e:
        assert str(e).startswith("out.txt"), e
        return
    assert len(read) == len(trials)
    for got, want in zip(read, trials, strict=True):
        assert set(got) == set(TRIAL_FIELDS)
        for key, value in want.items():
            assert got[key] == float(value) or (math.isnan(got[key]) and math.isnan(float(value)))


SERVED_ROWS = st.lists(
    st.fixed_dictionaries(
        {
            "trial": st.integers(min_value=0, max_value=2),  # few requests and steps: repeats are common
            "step": st.integers(min_value=0, max_value=2),
            "metric": st.sampled_from([*metrics.SERVED_SAMPLES, "loss", "itl_s", "itl_s", "request_ok", "ttft_s"]),
            "value": st.one_of(
                st.floats(min_value=-5.0, max_value=5.0, allow_nan=False),
                st.integers(min_value=-1, max_value=40).map(float),
                st.sampled_from([0.0, -0.0, 1.5, 2.999999, 1e18]),  # finite: the checks refuse a file with NaN
            ),
        }
    ),
    max_size=80,
)


@given(SERVED_ROWS, st.sampled_from([(1000.0, 50.0), (0.5, 0.5), (float("inf"), float("inf"))]))
@settings(max_examples=400, deadline=None)
def test_a_served_points_figures_from_its_columns_are_those_of_its_requests_to_the_bit(
    rows: list[dict], slos: tuple[float, float]
) -> None:
    """`metrics.served_figures` (numpy over a record's columns, what the loader uses) gives exactly what
    `serving_metrics(requests_from_rows(...))` gives for any rows: repeated metrics and steps, requests without a
    field, failed requests, rows out of order, other metrics, hostile counts."""
    requests, duration = metrics.requests_from_rows(rows)
    expected = metrics.serving_metrics(requests, duration, *slos) if duration > 0 else None
    code = {name: i for i, name in enumerate(metrics.SERVED_SAMPLES)}
    columns = (
        np.array([r["trial"] for r in rows], dtype=np.int32),
        np.array([r["step"] for r in rows], dtype=np.int32),
        np.array([code.get(r["metric"], -1) for r in rows], dtype=np.int8),
        np.array([r["value"] for r in rows], dtype=np.float64),
    )
    got = metrics.served_figures(*columns, *slos)
    assert (got is None) == (expected is None)
    if got is not None and expected is not None:
        assert got.keys() == expected.keys()
        for key, value in expected.items():  # the same float, bit for bit
            assert struct.pack("<d", got[key]) == struct.pack("<d", value), key
