"""The GPUs' energy as the site shows it (generator/derive/energy.py): the figure a page prints is the formula of
runners/metrics.py over the run's own rows, a run too short for the counter gets no figure and says why, and a run
without energy rows gets none. The records are real: the one-GPU training runs recorded on an H200 on 2026-12-05."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from generator import load
from generator.derive import checks
from runners import metrics
from tests.conftest import ROOT

METERED = sorted((ROOT / "data" / "h100" / "2026-12").glob("20261205T02*-train-gpt-1.27b-1gpu-mb8-*.parquet"))


def _summary(tmp_path: Path, files: list[Path]) -> tuple[pl.DataFrame, pl.DataFrame]:
    data = tmp_path / "data" / "h100"
    data.mkdir(parents=True)
    for f in files:
        shutil.copy(f, data / f.name)
    loaded, summary = checks.checked(load.load(tmp_path / "data"))
    return summary, loaded.rows


def test_tokens_per_joule_is_the_formula_over_the_runs_own_rows(tmp_path: Path) -> None:
    assert len(METERED) >= 4, "the metered H200 runs are committed under data/h100/2026-12"
    unmetered = sorted((ROOT / "data" / "h100").glob("20261201T0321*-train-gpt-1.27b-1gpu-mb8-*.parquet"))[:1]
    assert len(unmetered) == 1
    summary, rows = _summary(tmp_path, METERED + unmetered)
    for run in summary.filter(pl.col("run_id").is_in([f.stem for f in METERED])).iter_rows(named=True):
        energy = rows.filter(pl.col("run_id") == run["run_id"], pl.col("metric") == "energy_j")
        steady = energy.filter(pl.col("phase") == "steady")
        steps = steady["step"].max() + 1 - run["warmup_steps"]
        tokens = steps * run["tokens_per_step"]
        assert run["energy_j"] == pytest.approx(steady["value"].sum())
        assert run["tokens_per_joule"] == pytest.approx(metrics.tokens_per_joule(steady["value"].sum(), tokens))
        assert run["mean_power_w"] == pytest.approx(steady["value"].sum() / (steps * run["steady_step_s"]))
        # an H200 at its 700 W cap under training, and at rest well below it
        assert 300 < run["mean_power_w"] <= 720 and 30 < run["idle_power_w"] < 300
        assert run["energy_method"] == "nvml-total-energy" and run["energy_note"] is None
    for run in summary.filter(pl.col("run_id").is_in([f.stem for f in unmetered])).iter_rows(named=True):
        assert run["tokens_per_joule"] is None and run["energy_j"] is None and run["energy_note"] is None


def test_a_window_shorter_than_the_counters_steps_gets_no_figure_and_says_why() -> None:
    frame = pl.DataFrame({"energy_j": [70.0, 1400.0], "tokens": [512.0, 512.0], "s": [0.065, 2.0], "u": [0.1, 0.1]})
    from generator.derive import energy

    out = frame.select(**energy.figures("tokens", "s", "u"))
    assert out["tokens_per_joule"].to_list() == [None, pytest.approx(512 / 1400)]
    assert "fewer than 20 updates" in out["energy_note"][0] and out["energy_note"][1] is None


def test_a_served_points_page_shows_its_boards_energy_figure(tmp_path: Path) -> None:
    """A served point's window is its requests, first sent to last answered: its tokens are its output tokens/s × its
    duration, known only from its figures (generator/derive/serving.py). Its run page printed the summary's figure
    instead, worked out as for a test with no test time: "no figure per token … over 0 s of timed windows" beside a
    board that showed 4.7 J a token. The records are real: vLLM's 32B FP8 served at one request in flight on an H200
    (2026-12-06), with `vllm bench serve` beside it."""
    from generator import derive, render
    from generator.render import commit_history_page, pages

    point = sorted((ROOT / "data" / "h100" / "2026-12").glob("20261206T065049Z-llama-32b-serve-c1-*.parquet"))
    assert len(point) == 2, "the served point and its tool's record are committed under data/h100/2026-12"
    summary, rows = _summary(tmp_path, point)
    run_id = next(f.stem for f in point if "vllm-bench" not in f.name)
    own = summary.row(by_predicate=pl.col("run_id") == run_id, named=True)
    assert own["energy_j"] == pytest.approx(
        rows.filter(pl.col("run_id") == run_id, pl.col("metric") == "energy_j")["value"].sum()
    )
    assert own["tokens_per_joule"] is None and own["energy_s"] is None  # not a 0 s window: serving.py's to work out

    loaded, checked = checks.checked(load.load(tmp_path / "data"))
    results = derive.results(loaded, checked)
    page_run = results.page_runs.row(by_predicate=pl.col("run_id") == run_id, named=True)
    tokens = page_run["output_tokens_per_s"] * page_run["duration_s"]
    assert tokens == pytest.approx(16 * 128)  # its 16 requests of 128 output tokens each
    assert page_run["energy_s"] == page_run["duration_s"] > 20
    assert page_run["tokens_per_joule"] == pytest.approx(metrics.tokens_per_joule(own["energy_j"], tokens))
    board_row = results.served.row(by_predicate=pl.col("run_id") == run_id, named=True)
    assert board_row["tokens_per_joule"] == page_run["tokens_per_joule"]  # one figure, the board's and the page's

    page_runs = commit_history_page.with_history(results.page_runs, results.history)
    site = tmp_path / "site"
    render.runs.start_run_pages(site / "runs", page_runs, results.samples).finish(site)
    page = (site / "runs" / f"{pages.slug(run_id)}.html").read_text()
    row = page[page.index("GPU energy") :].split("</tr>")[0]
    assert (
        "output tokens per joule" in row and "no figure per token" not in row
    )  # its output tokens, prompts' energy in
    assert "4.665 J a token" in row and "over 23 s of timed windows" in row, row  # its duration, not 0 s
    # recorded before runs said when they read the idle power (`hardware.energy.idle_read`): the page says how vLLM's
    # runner read it then, and that the record does not say
    assert "W at rest before the run opened its GPU, as this engine's runner has always read it (the record" in row, row


SERVED_POINT = next(
    f
    for f in sorted((ROOT / "data" / "h100" / "2026-12").glob("20261206T065049Z-llama-32b-serve-c1-*.parquet"))
    if "vllm-bench" not in f.name
)
"""vLLM's 32B FP8 served point on an H200 (2026-12-06): a real metered record."""


def _with_idle_read(tmp_path: Path, value: object) -> Path:
    """`SERVED_POINT` under tmp_path/data/h100 with its `hardware.energy.idle_read` set to `value`, the rest as it is;
    returns the copy's path."""
    import json

    import pyarrow.parquet as pq

    from runners import layout
    from tests.conftest import write_footer_once

    data = tmp_path / "data" / "h100"
    data.mkdir(parents=True)
    table = pq.read_table(SERVED_POINT)
    run = json.loads(table.schema.metadata[layout.RUN_KEY])
    hardware = json.loads(run["hardware"])
    hardware["energy"] |= {"idle_read": value}
    run["hardware"] = json.dumps(hardware)
    path = data / SERVED_POINT.name
    write_footer_once(table.replace_schema_metadata({layout.RUN_KEY: json.dumps(run).encode()}), path)
    return path


def _energy_row(tmp_path: Path, own: Path) -> str:
    """The "GPU energy" row of `own`'s run page, the site's pages derived and rendered from tmp_path/data as a build
    does: its text up to the row's small print's end."""
    from generator import derive, render
    from generator.render import commit_history_page, pages

    loaded, checked = checks.checked(load.load(tmp_path / "data"))
    results = derive.results(loaded, checked)
    site = tmp_path / "site"
    page_runs = commit_history_page.with_history(results.page_runs, results.history)
    render.runs.start_run_pages(site / "runs", page_runs, results.samples).finish(site)
    page = (site / "runs" / f"{pages.slug(own.stem)}.html").read_text()
    return page[page.index("GPU energy") :].split("</small>")[0]


@pytest.mark.parametrize(
    ("idle_read", "said"),
    [
        ("before-gpu-use", "W at rest before the run opened its GPUs."),
        ("gpu-contexts-open", "W at rest before the work, its GPU contexts already open"),
        ("<b>later</b>", "W at rest before the work (the record does not say whether its GPU contexts were open yet)"),
    ],
)
def test_a_run_page_says_when_its_idle_power_was_read(tmp_path: Path, idle_read: str, said: str) -> None:
    """The idle power with the run's CUDA contexts open reads tens of watts above the same GPU before them (an H100:
    72 W, 117 W with one context, runners/sweeps/idle_power_cause.py on 2026-12-07), so a run page says which its
    record holds (`hardware.energy.idle_read`, runners/energy.py) and, for a value it does not know, that it does not
    say. The record is real (vLLM's 32B FP8 served point on an H200, 2026-12-06) with that one field set, as a runner
    from 2026-12-07 on writes it; the run's other figures are its own."""
    own = _with_idle_read(tmp_path, idle_read)
    _, checked = checks.checked(load.load(tmp_path / "data"))
    assert checked.row(by_predicate=pl.col("run_id") == own.stem, named=True)["energy_idle_read"] == idle_read
    row = _energy_row(tmp_path, own)
    assert said in row, row
    assert "<b>later</b>" not in row


@pytest.mark.parametrize("value", [5, True, None, {"x": "<script>alert(1)</script>"}, "x" * 41])
def test_an_idle_read_of_the_wrong_type_rejects_its_file_naming_the_field(tmp_path: Path, value: object) -> None:
    """`hardware.energy.idle_read` is a short string (runners/bounds.py): anything else rejects the file with its row
    and field named, and nothing of the run reaches a board or a page."""
    path = _with_idle_read(tmp_path, value)
    loaded = load.load(tmp_path / "data")
    assert loaded.runs.height == 0
    problems = [p for r in loaded.rejected for p in r.problems]
    assert [r.path for r in loaded.rejected] == [f"data/h100/{path.name}"]
    assert any("row 0, field 'hardware.energy.idle_read'" in p for p in problems), problems


def _with_hardware(tmp_path: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    """`SERVED_POINT` under tmp_path/data/h100 with `edit` applied to its footer's hardware document."""
    import json

    import pyarrow.parquet as pq

    from runners import layout
    from tests.conftest import write_footer_once

    data = tmp_path / "data" / "h100"
    data.mkdir(parents=True)
    table = pq.read_table(SERVED_POINT)
    run = json.loads(table.schema.metadata[layout.RUN_KEY])
    hardware = json.loads(run["hardware"])
    edit(hardware)
    run["hardware"] = json.dumps(hardware)
    path = data / SERVED_POINT.name
    write_footer_once(table.replace_schema_metadata({layout.RUN_KEY: json.dumps(run).encode()}), path)
    return path


@pytest.mark.parametrize(
    ("edit", "field", "said"),
    [
        (lambda h: h["energy"].update(method="made-up"), "hardware.energy.method", '"made-up" is not one of'),
        (lambda h: h["energy"].update(method="<script>x</script>"), "hardware.energy.method", "is not one of"),
        (lambda h: h["energy"].pop("method"), "hardware.energy.method", "absent"),
        (lambda h: h.update(device="cpu"), "hardware.energy", "NVML meters only 'cuda'"),
    ],
)
def test_an_energy_method_the_site_cannot_describe_rejects_its_file(tmp_path: Path, edit, field, said) -> None:  # type: ignore[no-untyped-def]
    """Before: any string of 1-40 characters passed as `hardware.energy.method`, and a run page described every method
    but `nvml-total-energy` as "NVML's power, sampled"; a record without one put its figure on the boards while its
    run page had no energy row; and a record off a GPU (no NVML) published tokens per joule "read from NVML's energy
    counter". Each now rejects its file, naming row 0 and the field."""
    path = _with_hardware(tmp_path, edit)
    loaded = load.load(tmp_path / "data")
    assert loaded.runs.height == 0
    problems = [p for r in loaded.rejected for p in r.problems]
    assert [r.path for r in loaded.rejected] == [f"data/h100/{path.name}"]
    assert any(f"row 0, field '{field}'" in p and said in p for p in problems), problems


DECODE_TEST = ROOT / "data" / "h100" / "2026-12" / "20261205T151454Z-llama-8b-tg128-d0-llamacpp-f16-444aa9.parquet"
"""llama.cpp's 8B F16 tg128 on an H100 (2026-12-05): a real metered test of five timed repetitions."""


def _doctored(tmp_path: Path, source: Path, rows=None, hardware=None) -> Path:  # type: ignore[no-untyped-def]
    """`source` under tmp_path/data/h100 with `rows` applied to its rows (a pyarrow table) and `hardware` to its
    footer's hardware document, the rest as it is; returns the copy's path."""
    import json

    import pyarrow.parquet as pq

    from runners import layout
    from tests.conftest import write_footer_once

    data = tmp_path / "data" / "h100"
    data.mkdir(parents=True)
    table = pq.read_table(source)
    run = json.loads(table.schema.metadata[layout.RUN_KEY])
    if hardware is not None:
        document = json.loads(run["hardware"])
        hardware(document)
        run["hardware"] = json.dumps(document)
    body = table.replace_schema_metadata(None)
    body = rows(body) if rows is not None else body
    path = data / source.name
    write_footer_once(body.replace_schema_metadata({layout.RUN_KEY: json.dumps(run).encode()}), path)
    return path


def _edit(metric: str, column: str, change):  # type: ignore[no-untyped-def]
    """A rows edit: `change` applied to `column` of every `metric` row."""
    import pyarrow as pa

    def edit(table: pa.Table) -> pa.Table:
        values, names = table.column(column).to_pylist(), table.column("metric").to_pylist()
        values = [change(v) if m == metric else v for v, m in zip(values, names, strict=True)]
        at = table.column_names.index(column)
        return table.set_column(at, table.schema.field(column), pa.array(values, table.schema.field(column).type))

    return edit


def _twice(metric: str):  # type: ignore[no-untyped-def]
    """A rows edit: every `metric` row once more, at the end."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return lambda table: pa.concat_tables([table, table.filter(pc.equal(table.column("metric"), metric))])


@pytest.mark.parametrize(
    ("source", "rows", "field", "said"),
    [
        (DECODE_TEST, _twice("energy_j"), "trial", "a second energy_j row for trial 0"),
        (DECODE_TEST, _edit("energy_j", "trial", lambda t: t + 50), "trial", "the run timed no such repetition"),
        (DECODE_TEST, _edit("energy_j", "step", lambda s: 7), "step", "the run timed no steps"),
        (METERED[0], _edit("energy_j", "step", lambda s: s + 100_000), "step", "the run timed no such step"),
        (METERED[0], _twice("energy_j"), "step", "a second energy_j row for trial 0, step"),
        (METERED[0], _edit("energy_j", "step", lambda s: None), "step", "null: a training run's energy_j row"),
        (SERVED_POINT, _edit("energy_j", "trial", lambda t: 3), "trial", "a served point's energy is one window"),
        (SERVED_POINT, _edit("idle_power_w", "phase", lambda p: "steady"), "phase", "idle_power_w is a run-level"),
        (SERVED_POINT, _twice("idle_power_w"), "metric", "a second idle_power_w row"),
    ],
)
def test_energy_rows_that_fit_no_window_the_run_timed_reject_its_file(  # type: ignore[no-untyped-def]
    tmp_path: Path, source: Path, rows, field: str, said: str
) -> None:
    """generator/derive/energy.py adds a run's joules up and credits them with its windows' tokens and seconds. Before,
    a second copy of each window's row was summed (a decode test read 0.139 tokens per joule at 1,210 W on one H100,
    its own 0.278 at 605 W); rows moved to repetitions the test never timed were credited with its tokens (0.556, twice
    its own); a training run's moved 100,000 steps on read 31,329 tokens per joule at 1.9 W over 13,621 s; and an idle
    power row in another phase vanished from the run page. Each now rejects the file naming the row and field (the
    records are real: runners/schema.py `_energy_row_problems`)."""
    path = _doctored(tmp_path, source, rows=rows)
    loaded = load.load(tmp_path / "data")
    assert loaded.runs.height == 0
    problems = [p for r in loaded.rejected for p in r.problems]
    assert [r.path for r in loaded.rejected] == [f"data/h100/{path.name}"]
    assert any(f"field '{field}'" in p and said in p for p in problems), problems
    assert all(p.startswith("row ") for p in problems), problems


@pytest.mark.parametrize(
    ("source", "rows", "said"),
    [
        (DECODE_TEST, _edit("energy_j", "value", lambda v: v * 1e4), "'energy_j', field 'value'"),
        (SERVED_POINT, _edit("energy_j", "value", lambda v: v * 100), "'energy_j', field 'value'"),
        (DECODE_TEST, _edit("energy_j", "value", lambda v: v * 1e-9), "'energy_j', field 'value'"),
        (DECODE_TEST, _edit("energy_j", "value", lambda v: 0.0), "'energy_j', field 'value': 0 J"),
        (METERED[0], _edit("energy_j", "value", lambda v: v * 3), "'energy_j', field 'value'"),
        (DECODE_TEST, _edit("idle_power_w", "value", lambda v: 1e9), "'idle_power_w', field 'value': 1e+09 W"),
        (DECODE_TEST, _edit("idle_power_w", "value", lambda v: 0.5), "'idle_power_w', field 'value': 0.5 W"),
    ],
)
def test_joules_no_gpu_could_draw_reject_the_run(tmp_path: Path, source: Path, rows, said: str) -> None:  # type: ignore[no-untyped-def]
    """A run's mean power over its metered windows, and its idle power, must be what its GPUs can draw: at most 1.5 ×
    the power limit its record names (700 W on these H100s and H200s, so 1,050 W), at least 1 W a GPU
    (runners/metrics.py `gpu_power_ceiling_w`). Before, a decode test whose joules read 10¹⁵ published 1.28e-13 tokens
    per joule "at a mean 1.313e+15 W", a served point's joules × 100 "a mean 48,457 W" on one H100, all-zero joules
    "0 J, no figure per token", and an idle power of 1e9 W "1,000,000,000 W at rest". Each run is now rejected as an
    impossible MFU is, by the site and by validate alike."""
    path = _doctored(tmp_path, source, rows=rows)
    loaded, summary = checks.checked(load.load(tmp_path / "data"))
    assert summary.height == 0 and loaded.runs.height == 0
    problems = [p for r in loaded.rejected for p in r.problems]
    assert [r.path for r in loaded.rejected] == [f"data/h100/{path.name}"]
    assert any(said in p and "can draw" in p for p in problems), problems


def test_every_committed_metered_run_draws_what_its_gpus_can(tmp_path: Path) -> None:
    """The other side of the check above: the real records it was written against pass it, each with a mean power
    between its idle power's neighbourhood and its limit's."""
    summary, _ = _summary(tmp_path, [*METERED, DECODE_TEST, SERVED_POINT])
    assert summary.height == len(METERED) + 2
    assert checks.implausible_power(summary) == []
    assert set(summary["power_limit_w"].to_list()) == {700.0} and set(summary["metered_gpus"].to_list()) == {1}


@pytest.mark.parametrize(
    ("edit", "field", "said"),
    [
        (lambda h: h["energy"].update(counter_update_s=1e-300), "hardware.energy.counter_update_s", "at least 0.001"),
        (lambda h: h["energy"].update(gpus=["GPU-made-up"]), "hardware.energy.gpus", "not one of the record's GPUs"),
    ],
)
def test_an_energy_reading_finer_or_wider_than_the_record_rejects_it(tmp_path: Path, edit, field, said) -> None:  # type: ignore[no-untyped-def]
    """A counter said to update every 1e-300 s switched off the resolution check (its page said "which updated every
    1e-300 s"); energy read from GPUs the record does not have would be held to their power. Both reject the file."""
    path = _doctored(tmp_path, SERVED_POINT, hardware=edit)
    loaded = load.load(tmp_path / "data")
    problems = [p for r in loaded.rejected for p in r.problems]
    assert [r.path for r in loaded.rejected] == [f"data/h100/{path.name}"]
    assert any(f"row 0, field '{field}'" in p and said in p for p in problems), problems


def test_a_metered_run_without_readings_says_so_on_its_page(tmp_path: Path) -> None:
    """A record that names how its energy was read but holds no `energy_j` or `idle_power_w` row (a run stopped before
    its first timed window) showed "– J, no figure per token: – over – s of timed windows; – W at rest"; its page
    now says what the record lacks. The record is real (`SERVED_POINT`) with those rows removed."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def without_readings(table: pa.Table) -> pa.Table:
        readings = pa.array(["energy_j", "idle_power_w"])
        return table.filter(pc.invert(pc.is_in(table.column("metric"), value_set=readings)))

    row = _energy_row(tmp_path, _doctored(tmp_path, SERVED_POINT, rows=without_readings))
    assert "no timed window's joules in the record" in row and "no idle power in the record" in row, row
    assert "–" not in row and "of timed windows" not in row, row


@pytest.mark.parametrize(
    ("source", "said"),
    [
        (
            SERVED_POINT,
            "W at rest before the run opened its GPU, as this engine's runner has always read it (the record",
        ),
        (METERED[0], "W at rest before the work, its GPU context already open, as this engine's runner read it until"),
    ],
)
def test_a_record_that_does_not_say_when_its_idle_power_was_read_is_read_as_its_engine_did(
    tmp_path: Path, source: Path, said: str
) -> None:
    """Records from before `idle_read` was kept (2026-12-07) do not say; a reader comparing engines took torch's and
    MLX's 115-138 W "at rest" beside llama.cpp's and vLLM's 70-81 W for a difference of engines. Their pages now say how
    that engine's runner read it (runners/energy.py `IDLE_READ_UNSAID`) and that the record does not say. Real records:
    vLLM's 32B served point (read before loading anything) and a one-GPU torch training run (context open), each with
    `idle_read` removed as records before 2026-12-07 are."""
    row = _energy_row(tmp_path, _doctored(tmp_path, source, hardware=lambda h: h["energy"].pop("idle_read", None)))
    assert said in row and "the record does not say" in row, row


def _without_energy_at(step: int):  # type: ignore[no-untyped-def]
    """A rows edit: the `energy_j` row at `step` (trial 0) removed."""
    import pyarrow.compute as pc

    def edit(table):  # type: ignore[no-untyped-def]
        at = pc.and_(
            pc.equal(table.column("metric"), "energy_j"), pc.equal(table.column("step"), step).fill_null(False)
        )
        return table.filter(pc.invert(at))

    return edit


@pytest.mark.parametrize(("step", "rejected"), [(39, True), (159, True), (299, False), (19, False)])
def test_a_training_run_whose_energy_leaves_out_a_steady_segment_is_rejected(
    tmp_path: Path, step: int, rejected: bool
) -> None:
    """generator/derive/energy.py credits a training run's steady joules with every steady step from the warm-up's end
    to its last energy row, so a steady segment left out (the first, step 39, or one mid-run, 159) published the run
    drawing less than it did: 300 steps, warm-up 20, windows of 20, so steady segments end at 39, 59, ..., 299
    (runners/training.py `steady_segment_ends`). Now the run is rejected naming the rows. Without its last segment it
    reads as a run stopped before its last window (credited to its last row, as derive does), and the warm-up's own
    segment (19) is not a steady one: both still publish. A real H200 training record (2026-12-05)."""
    path = _doctored(tmp_path, METERED[0], rows=_without_energy_at(step))
    loaded, summary = checks.checked(load.load(tmp_path / "data"))
    problems = [p for r in loaded.rejected for p in r.problems]
    if rejected:
        assert summary.height == 0 and [r.path for r in loaded.rejected] == [f"data/h100/{path.name}"]
        assert any("'energy_j', field 'step'" in p and "a segment's joules are missing" in p for p in problems), (
            problems
        )
    else:
        assert summary.height == 1 and not problems, problems
        assert summary["tokens_per_joule"][0] is not None
