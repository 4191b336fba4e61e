"""Hostile result files, one test per class of attack found against the site (issue 21): each file is written the
way a submitter would (straight to Parquet, not through our store), and each test fails on the code before the fix.
The script classes are also built into a site and opened in a real browser by tests/test_security.py."""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.compute
import pytest

from generator import derive, load, render
from generator.derive import checks, copy_bound, inference, serving
from generator.render import pages
from runners import layout, metrics, schema, store
from tests.conftest import ROOT, TRAIN, processes_with, run_module, write_as_submitted


def _source(bench_data) -> Path:
    data, _ = bench_data
    return next(p for p in (data / "cpu-smoke").rglob("*.parquet") if "ddp-fp32-stock" in p.name)


def doctored(
    source: Path,
    run_id: str,
    config: Callable[[dict], object] | None = None,
    hardware: Callable[[dict], object] | None = None,
    rows: Callable[[pa.Table], pa.Table] | None = None,
    software: Callable[[dict], object] | None = None,
    **columns: object,
) -> pa.Table:
    """A real record with its run id and any run-level column replaced, its config/hardware/software JSON edited."""
    table = layout.read(source)
    if rows is not None:
        table = rows(table)
    values: dict[str, object] = {"run_id": run_id, **columns}
    for name, edit in (("config", config), ("hardware", hardware), ("software", software)):
        if edit is not None:
            document = json.loads(table.column(name)[0].as_py())
            result = edit(document)
            values[name] = json.dumps(document if result is None else result)
    for name, value in values.items():
        field = table.schema.field(name)
        table = table.set_column(table.column_names.index(name), field, pa.array([value] * table.num_rows, field.type))
    return table


def submit(data: Path, table: pa.Table, folder: str = "cpu-smoke", name: str | None = None) -> Path:
    """Write a file as a submitter would: no store, no checks."""
    path = data / folder / f"{name or table.column('run_id')[0].as_py()}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_as_submitted(table, path)
    return path


def problems_of(data: Path) -> dict[str, str]:
    loaded, _ = checks.checked(load.load(data))
    return {Path(r.path).name: " ".join(r.problems) for r in loaded.rejected}


@pytest.fixture
def data(bench_data, tmp_path) -> Path:
    """A copy of the real bench data to attack."""
    src, _ = bench_data
    out = tmp_path / "data"
    for path in src.rglob("*.parquet"):
        target = out / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    return out


# 1 and 2: names and header numbers that are markup never reach a page; whatever reaches a template is escaped


@pytest.mark.bench
def test_markup_in_names_and_config_numbers_is_rejected_by_name(bench_data, data) -> None:
    src = _source(bench_data)
    submit(data, doctored(src, "evil-workload", workload="<img src=x onerror=alert(1)>"))
    submit(data, doctored(src, "evil-dim", config=lambda c: c["model"].update(dim="<img src=x onerror=alert(2)>")))
    found = problems_of(data)
    assert "field 'workload'" in found["evil-workload.parquet"] and "not a plain name" in found["evil-workload.parquet"]
    assert "config.model.dim" in found["evil-dim.parquet"] and "not a whole number" in found["evil-dim.parquet"]


def test_every_template_value_is_escaped_and_nav_titles_are_built_escaped(tmp_path) -> None:
    env = pages.environment()
    evil = "<img src=x onerror=alert(1)>|*x*"
    out = tmp_path / "page.md"
    # a raw `{{ value }}` with no filter: before, Markdown templates printed it as it was
    env.from_string("{{ v }} {{ n }} {{ m.dim }}").stream(v=evil, n=7, m={"dim": evil}).dump(str(out))
    text = out.read_text()
    assert "<img" not in text and "|" not in text and "&#60;img" in text and " 7 " in text
    assert "<" not in pages.nav_title("cpu-smoke", "<b>x</b>") and "&lt;b&gt;" in pages.nav_title("s", "<b>x</b>")


# 3: a config of the wrong shape is rejected by name, and the rest of the site builds


@pytest.mark.bench
def test_config_of_the_wrong_shape_is_rejected_and_the_site_still_builds(bench_data, data, tmp_path) -> None:
    src = _source(bench_data)
    submit(data, doctored(src, "config-list", config=lambda c: [c]))
    submit(data, doctored(src, "mb-four", config=lambda c: c["workload"].update(micro_batch="four")))
    submit(data, doctored(src, "no-model", config=lambda c: c.pop("model")))
    submit(data, doctored(src, "dup-key", config=lambda c: None, rows=None))
    # a repeated key: Python's json keeps the last, polars' path query the first
    table = layout.read(data / "cpu-smoke" / "dup-key.parquet")
    text = table.column("config")[0].as_py().replace('"micro_batch": ', '"micro_batch": 0, "micro_batch": ', 1)
    field = table.schema.field("config")
    table = table.set_column(table.column_names.index("config"), field, pa.array([text] * table.num_rows, field.type))
    submit(data, table)
    found = problems_of(data)
    assert "expected an object" in found["config-list.parquet"]
    assert "config.workload.micro_batch" in found["mb-four.parquet"]
    assert "appears more than once" in found["dup-key.parquet"]
    assert "no-model.parquet" not in found  # no model section: allowed, the header shows dashes
    proc = run_module("generator.commands.validate", str(data), check=False)
    assert proc.returncode == 1 and "mb-four.parquet: row 0, field 'config.workload.micro_batch'" in proc.stdout
    run_module("generator.build", "--data", str(data), "--out", str(tmp_path / "site"), "--work", str(tmp_path / "b"))
    board = (tmp_path / "site" / "leaderboards" / f"cpu-smoke-{TRAIN}.html").read_text()
    assert "no-model" in board  # ranked like any run (a config without a model section gives a dash, not a crash)


# 4: hardware the datasheet table does not know cannot rank


@pytest.mark.bench
def test_an_unknown_accelerator_is_unverified_not_ranked(bench_data, data) -> None:
    src = _source(bench_data)
    fast = doctored(
        src,
        "misspelt-gpu",
        accelerator="NVIDIA H2OO",
        hardware=lambda h: h.update(device="cuda", accelerator="NVIDIA H2OO"),
        config=lambda c: c["workload"].update(device="cuda"),
        rows=lambda t: t.set_column(
            t.column_names.index("value"),
            "value",
            pa.array(
                [
                    v / 1000 if m == "step_time_s" else v
                    for v, m in zip(t["value"].to_pylist(), t["metric"].to_pylist(), strict=True)
                ]
            ),
        ),
    )
    submit(data, fast)
    _, summary = checks.checked(load.load(data))
    row = summary.filter(pl.col("run_id") == "misspelt-gpu").row(0, named=True)
    assert "no datasheet peak for 'NVIDIA H2OO'" in row["unverified"]
    from generator import derive

    boards = derive.leaderboards(summary)
    assert "misspelt-gpu" not in boards[("cpu-smoke", TRAIN)]["run_id"].to_list()
    proc = run_module("generator.commands.validate", str(data / "cpu-smoke" / "misspelt-gpu.parquet"), check=False)
    assert "accepted but unverified, so not ranked" in proc.stdout and "NVIDIA H2OO" in proc.stdout


@pytest.mark.bench
def test_a_cpu_run_faster_than_any_cpu_could_be_is_rejected(bench_data, data) -> None:
    src = _source(bench_data)
    times = lambda t: t.set_column(  # noqa: E731
        t.column_names.index("value"),
        "value",
        pa.array(
            [
                v / 1e9 if m == "step_time_s" else v
                for v, m in zip(t["value"].to_pylist(), t["metric"].to_pylist(), strict=True)
            ]
        ),
    )
    submit(data, doctored(src, "cpu-too-fast", rows=times))
    # the same, made to look possible: FLOPs per token declared tiny, a host with 2³¹ cores, 2³¹ devices, or a GPU
    # on the record's hardware but not in its workload
    submit(data, doctored(src, "tiny-flops", rows=times, config=lambda c: c["derived"].update(flops_per_token=1e-300)))
    submit(data, doctored(src, "many-cores", rows=times, hardware=lambda h: h.update(cpu_cores=2**31 - 1)))
    submit(data, doctored(src, "many-devices", rows=times, accelerator_count=2**31 - 1))
    gpu = lambda h: h.update(device="cuda", accelerator="NVIDIA H100")  # noqa: E731
    submit(data, doctored(src, "gpu-on-cpu", rows=times, accelerator="NVIDIA H100", hardware=gpu))
    found = problems_of(data)
    assert "FLOP/s ceiling" in found["cpu-too-fast.parquet"]
    assert "config.derived.flops_per_token': declares 1e-300" in found["tiny-flops.parquet"]
    assert "hardware.cpu_cores" in found["many-cores.parquet"]
    assert "accelerator_count" in found["many-devices.parquet"]
    assert "hardware.device" in found["gpu-on-cpu.parquet"]


# 5: duplicates never let one copy win; a file's folder matches its suite


@pytest.mark.bench
def test_duplicate_run_ids_reject_every_differing_copy_and_folders_match_suites(bench_data, data) -> None:
    src = _source(bench_data)
    genuine = src.stem
    doctored_copy = doctored(src, genuine, engine_version="9.9.9")
    submit(data, doctored_copy, folder="elsewhere", name=genuine)  # wrong folder for suite cpu-smoke
    submit(data, doctored(src, genuine, engine_version="9.9.9", suite="h100"), folder="h100")
    found = problems_of(data)
    hits = {k: v for k, v in found.items() if k == f"{genuine}.parquet"}
    loaded, _ = checks.checked(load.load(data))
    rejected_paths = {r.path for r in loaded.rejected}
    where = "data/" + src.relative_to(bench_data[0]).as_posix()  # the genuine file, in its month's folder
    assert where in rejected_paths and f"data/h100/{genuine}.parquet" in rejected_paths
    assert genuine not in loaded.runs["run_id"].to_list()  # neither wins
    assert f"data/elsewhere/{genuine}.parquet" in rejected_paths and hits
    reasons = {r.path: " ".join(r.problems) for r in loaded.rejected}
    assert "is in folder 'elsewhere'" in reasons[f"data/elsewhere/{genuine}.parquet"]
    assert "with other contents" in reasons[where]


# 6: implausible values


@pytest.mark.bench
def test_implausible_values_are_rejected_and_control_characters_shown(bench_data, data) -> None:
    src = _source(bench_data)
    from datetime import UTC, datetime

    def zero_batch(config: dict) -> None:
        config["workload"]["micro_batch"] = 0
        config["derived"]["tokens_per_step"] = 0

    submit(data, doctored(src, "mb-zero", config=zero_batch))
    later = datetime(2099, 1, 1, tzinfo=UTC)
    submit(data, doctored(src, "from-2099", started_at=later, ended_at=later))
    submit(data, doctored(src, "huge-note", config=lambda c: c.update(note="x" * 10_000_000)))
    found = problems_of(data)
    assert "config.workload.micro_batch" in found["mb-zero.parquet"] and "at least 1" in found["mb-zero.parquet"]
    assert "config.derived.tokens_per_step" in found["mb-zero.parquet"]
    assert "in the future" in found["from-2099.parquet"]
    assert "more than the" in found["huge-note.parquet"]
    assert pages.md_text("a\u202ebc\u200bd") == "a⟨U+202E⟩bc⟨U+200B⟩d"
    from runners import bounds  # (new with these checks: imported here so the tests above run against older code)

    assert "\u202e" not in pages.pre("x\u202ey") and "\x1b" not in bounds.neutral("\x1b[31m")


def test_every_character_shown_as_a_mark_is_one_python_calls_unprintable() -> None:
    """`bounds.neutral` returns printable text as it is (str.isprintable: no scan of its characters); that is right
    only while every character it marks (a control, a format character) is unprintable to Python, for every code point
    of this Python's Unicode."""
    import sys

    from runners import bounds

    marked = [chr(c) for c in range(sys.maxunicode + 1) if bounds._is_hidden(chr(c))]
    assert len(marked) > 150 and not any(ch.isprintable() for ch in marked)
    assert bounds.neutral("µs × 2 – fine") == "µs × 2 – fine" and bounds.neutral("a\u2066b") == "a⟨U+2066⟩b"
    # lines and tabs are shown as they are, so text that is printable but for them is returned unscanned too: right
    # while none of the three is marked, and a marked character beside them is still found
    assert not any(bounds._is_hidden(ch) for ch in "\t\n\r")
    assert bounds.neutral("a\tb\r\nc") == "a\tb\r\nc" and bounds.neutral("a\n\u202eb\t") == "a\n⟨U+202E⟩b\t"
    assert bounds.neutral("x\n\x1b[31m") == "x\n⟨U+001B⟩[31m" and bounds.neutral("a\u00a0\nb") == "a\u00a0\nb"


@pytest.mark.bench
def test_a_run_rejected_for_a_start_in_the_future_is_compared_once_its_time_comes(
    bench_data, data, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`compare` keeps its table by the data's files: a run rejected because it started past this clock (with the
    skew allowed) stayed rejected from that table after its time came, while a cold `compare` accepted it (issue 57).
    Time is moved by widening the allowed skew past the run's start: the clock itself cannot be moved here."""
    from datetime import UTC, datetime, timedelta

    from generator.commands import compare
    from generator.store import runcache

    soon = (datetime.now(UTC) + schema.CLOCK_SKEW + timedelta(minutes=5)).replace(microsecond=0)
    submit(data, doctored(_source(bench_data), "soon", started_at=soon, ended_at=soon))
    monkeypatch.setenv(runcache.ENV, str(tmp_path / "cache"))
    try:
        before = compare.load_dataset(data)
        assert [Path(r.path).name for r in before.rejected if "in the future" in " ".join(r.problems)] == [
            "soon.parquet"
        ]
        monkeypatch.setattr(schema, "CLOCK_SKEW", schema.CLOCK_SKEW + timedelta(minutes=10))
        after = compare.load_dataset(data)
        assert "soon" in after.runs["run_id"].to_list()
        assert not [r for r in after.rejected if Path(r.path).name == "soon.parquet"]
    finally:
        runcache.use(None)


# 7: a missing column is named


@pytest.mark.bench
def test_a_missing_column_is_named(bench_data, data) -> None:
    table = layout.read(_source(bench_data))
    submit(data, doctored(_source(bench_data), "no-variant").drop_columns(["variant"]))
    # the same in a file of schema 2's layout, whose run-level fields are columns
    committed = ROOT / "data" / "cpu-smoke" / "20261129T174009Z-train-gpt-tiny-mb4-ddp-fp32-stock-2f85f7.parquet"
    submit(data, doctored(committed, "no-variant-v2").drop_columns(["variant"]))
    assert table.num_rows
    found = problems_of(data)
    assert "field 'fairfight.run.variant': missing from the file's run metadata" in found["no-variant.parquet"]
    assert "field 'variant': missing column" in found["no-variant-v2.parquet"]


# 8: the bench's runners end with it and write nothing after; a run id is checked before it names a file


@pytest.mark.bench
def test_store_refuses_run_ids_that_are_not_plain_names(bench_data, tmp_path) -> None:
    table = doctored(_source(bench_data), "ok-id")
    for bad in ("../escape", "a/b", ".hidden", "x" * 300):
        with pytest.raises(ValueError, match=r"refusing|not a plain name"):
            store.run_path(tmp_path, "cpu-smoke", bad, table.column("started_at")[0].as_py())
        with pytest.raises(ValueError):
            store.write_run(tmp_path, table.set_column(1, "run_id", pa.array([bad] * table.num_rows)))
    assert not any(tmp_path.rglob("*.parquet"))


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
@pytest.mark.bench
def test_killing_the_bench_ends_its_runner_and_nothing_is_written(tmp_path, how, torch_engine: str) -> None:
    out = tmp_path / f"killed-{how.name}"
    scratch = tmp_path / f"scratch-{how.name}"  # the bench's temporary folder: its runners' `--out` lies inside
    scratch.mkdir()
    marker = str(scratch)
    bench = subprocess.Popen(
        [sys.executable, "-m", "runners", "bench", "--suite", "cpu-smoke", "--workload", TRAIN,
         "--variant", "ddp-fp32-stock", "--steps", "100000", "--data-dir", str(out)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=os.environ | {"TMPDIR": marker},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not [p for p in processes_with(marker) if p != bench.pid] and time.monotonic() < deadline:
            time.sleep(0.5)
        assert [p for p in processes_with(marker) if p != bench.pid], "the runner never started"
        time.sleep(5)  # the runner is stepping
        os.kill(bench.pid, how)
        bench.wait(timeout=60)
        deadline = time.monotonic() + 30
        while processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert processes_with(marker) == [], "the runner outlived the bench"
        time.sleep(3)
        assert not list(out.rglob("*.parquet")), "a file was written after the bench was killed"
    finally:
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)
        bench.kill()


# 9: long runs: the statistics work at any length, and the site builds


@pytest.mark.bench
def test_statistics_and_the_site_at_ten_to_the_five_steps(bench_data, data, tmp_path) -> None:
    ci = metrics.median_ci([float(i % 97) for i in range(100_000)])
    assert ci.lo <= ci.median <= ci.hi and 0.95 <= ci.coverage < 0.951
    src = _source(bench_data)
    base = layout.read(src)
    steps = 100_000
    step_rows = {
        "trial": [0] * steps,
        "step": list(range(steps)),
        "phase": ["warmup" if s < 2 else "steady" for s in range(steps)],
        "metric": ["step_time_s"] * steps,
        "value": [0.01 + 0.001 * (s % 7) for s in range(steps)],
        "unit": ["s"] * steps,
    }
    run = base.slice(0, 1).to_pylist()[0] | {"run_id": "long-run", "status": "ok", "error": None}
    config = json.loads(run["config"])
    config["workload"].update(warmup_steps=2, window_steps=20, steps=steps, steps_requested=steps)
    run["config"] = json.dumps(config)
    rows = [dict(zip(step_rows, values, strict=True)) for values in zip(*step_rows.values(), strict=True)]
    rows.append(
        {"trial": 0, "step": None, "phase": "run", "metric": "steps_completed", "value": steps, "unit": "steps"}
    )
    submit(data, schema.make_table(run, rows))
    site = tmp_path / "site"
    run_module("generator.build", "--data", str(data), "--out", str(site), "--work", str(tmp_path / "b"))
    assert "long-run" in (site / "leaderboards" / f"cpu-smoke-{TRAIN}.html").read_text()


def test_site_build_refuses_a_data_folder_that_does_not_exist(tmp_path) -> None:
    proc = run_module("generator.build", "--data", str(tmp_path / "nope"), "--out", str(tmp_path / "s"), check=False)
    assert proc.returncode != 0 and "no such folder" in proc.stderr


# past the list: rows whose metric or unit is markup or a spreadsheet formula, and formulas in the downloads


@pytest.mark.bench
def test_row_names_are_plain_and_downloads_never_hold_a_formula(bench_data, data, tmp_path) -> None:
    src = _source(bench_data)

    def renamed(metric: str, unit: str) -> Callable[[pa.Table], pa.Table]:
        def edit(t: pa.Table) -> pa.Table:
            t = t.set_column(t.column_names.index("metric"), "metric", pa.array([metric] * t.num_rows))
            return t.set_column(t.column_names.index("unit"), "unit", pa.array([unit] * t.num_rows))

        return edit

    submit(data, doctored(src, "formula-metric", rows=renamed('=HYPERLINK("http://x.invalid","y")', "s")))
    submit(data, doctored(src, "markup-unit", rows=renamed("odd_metric", "<b>u</b>")))
    submit(data, doctored(src, "formula-error", status="failed", error='=cmd|" /C calc"!A0 \u202egnp.exe'))
    found = problems_of(data)
    assert "field 'metric'" in found["formula-metric.parquet"] and "field 'unit'" in found["markup-unit.parquet"]
    site = tmp_path / "site"
    run_module("generator.build", "--data", str(data), "--out", str(site), "--work", str(tmp_path / "b"))
    runs_csv = gzip.decompress((site / "downloads" / "runs.csv.gz").read_bytes()).decode()
    assert "'=cmd|" in runs_csv and ",=cmd|" not in runs_csv and '"=cmd|' not in runs_csv
    run_page = (site / "runs" / "formula-error.html").read_text()
    assert "\u202e" not in run_page and "⟨U+202E⟩gnp.exe" in run_page  # shown, not obeyed


@pytest.mark.bench
def test_malformed_edition_manifests_are_rejected_and_the_site_builds(data, tmp_path) -> None:
    editions = data / "editions"
    editions.mkdir()
    (editions / "garbage.json").write_text("{not json")
    (editions / "evil.json").write_text(
        json.dumps({"name": "<script>x</script>", "created_at": "2026-12-01", "runs": []})
    )
    good = {"created_at": "2026-11-30T10:00:00Z", "previous": None, "runs": []}
    for file, name, extra in (
        ("v1", "v1", {}),
        ("zz-forged", "v1", {"created_at": "2026-11-30T11:00:00Z"}),  # another file claiming edition v1
        ("v-2", "v-2", {}),
        ("v_2", "v_2", {}),  # the same page as v-2: neither may have it
        ("v3", "v3", {"created_at": "2026-11-30T10:00:00+14:00"}),  # not UTC: would sort as text
    ):
        (editions / f"{file}.json").write_text(json.dumps(good | {"name": name} | extra))
    site = tmp_path / "site"
    run_module("generator.build", "--data", str(data), "--out", str(site), "--work", str(tmp_path / "b"))
    rejected = (site / "rejected.html").read_text()
    assert "garbage.json" in rejected and "evil.json" in rejected and "<script>x" not in rejected
    assert "zz-forged.json" in rejected and "v3.json" in rejected and "would have the same page" in rejected
    assert "editions/v1.json" not in rejected and "editions/v-2.json" in rejected
    assert rejected.count("would have the same page") == 2  # v-2 and v_2 (whose `_` the page writes as an entity)
    assert (site / "editions" / "v1.html").exists() and not (site / "editions" / "v-2.html").exists()


@pytest.mark.bench
def test_a_run_level_metric_named_like_a_summary_column_and_oversized_files(bench_data, data, tmp_path, monkeypatch):
    src = _source(bench_data)

    def shadow(t: pa.Table) -> pa.Table:  # the run-level rows renamed to columns the summary computes itself
        names = iter(["loss_parity_ok", "run_id", "steps_per_s_lo", "steps_per_s_lo_right"])
        metrics_ = [
            next(names, m) if p == "run" else m
            for m, p in zip(t["metric"].to_pylist(), t["phase"].to_pylist(), strict=True)
        ]
        return t.set_column(t.column_names.index("metric"), "metric", pa.array(metrics_))

    submit(data, doctored(src, "shadowing", rows=shadow))
    site = tmp_path / "site"
    run_module("generator.build", "--data", str(data), "--out", str(site), "--work", str(tmp_path / "b"))
    assert "shadowing" in (site / "runs" / "shadowing.html").read_text()
    from runners import bounds

    monkeypatch.setattr(bounds, "MAX_ROWS", 10)
    assert "one run may hold" in problems_of(data)["shadowing.parquet"]


@pytest.mark.bench
def test_a_run_without_loss_and_look_alike_names_do_not_rank(bench_data, data) -> None:
    src = _source(bench_data)
    no_loss = doctored(src, "no-loss", rows=lambda t: t.filter(pa.compute.not_equal(t["metric"], "loss")))
    submit(data, no_loss)
    submit(data, doctored(src, "look-alike-cpu", accelerator="\u0410MD EPYC"))  # a Cyrillic А
    submit(data, doctored(src, "empty-settings", variant="ddp-fp32-stock[ ]"))
    found = problems_of(data)
    assert "printable ASCII" in found["look-alike-cpu.parquet"] and "field 'variant'" in found["empty-settings.parquet"]
    _, summary = checks.checked(load.load(data))
    from generator import derive

    assert "no loss recorded" in summary.filter(pl.col("run_id") == "no-loss")["unverified"][0]
    assert "no-loss" not in derive.leaderboards(summary)[("cpu-smoke", TRAIN)]["run_id"].to_list()


# past the list, too: a record's GPU state and package list (issue 26) hold what nvidia-smi and importlib.metadata
# can say (numbers in range, plain names, short strings, declared keys); whatever text passes is escaped on the page


H200_RUN = ROOT / "data" / "h100" / "20261129T200656Z-train-gpt-1.27b-mb4-fsdp2-compile-19b4d3.parquet"
"""A committed H200 record to doctor (no bench run needed): these checks are of the JSON, not the rows."""


def test_hostile_gpu_state_and_package_lists_are_rejected_by_field_and_text_is_escaped(tmp_path) -> None:
    data = tmp_path / "data"
    gpu = {"index": 0, "name": "NVIDIA H200", "sm_clock_mhz": 1980, "power_limit_w": 700.0, "ecc_mode": "Enabled"}

    def gpus(*entries: object) -> Callable[[dict], None]:
        return lambda h: h.update(gpus=list(entries))

    def software(**values: object) -> Callable[[dict], None]:
        return lambda s: s.update(values)

    cases = {
        "gpu-huge-name": (gpus(gpu | {"name": "H" * 5000}), None, "hardware.gpus[0].name"),
        "gpu-cyrillic-name": (gpus(gpu, gpu | {"name": "NVIDIA H2\u041e0"}), None, "hardware.gpus[1].name"),
        "gpu-unknown-key": (gpus(gpu | {"onclick": "alert(1)"}), None, "hardware.gpus[0].onclick"),
        "gpu-clock-text": (gpus(gpu | {"sm_clock_mhz": "1980 MHz"}), None, "hardware.gpus[0].sm_clock_mhz"),
        "gpu-clock-huge": (gpus(gpu | {"max_sm_clock_mhz": 10**12}), None, "hardware.gpus[0].max_sm_clock_mhz"),
        "gpu-power-negative": (gpus(gpu | {"power_limit_w": -700}), None, "hardware.gpus[0].power_limit_w"),
        "gpu-not-object": (gpus("<script>alert(1)</script>"), None, "hardware.gpus[0]"),
        "gpus-not-list": (lambda h: h.update(gpus={"0": gpu}), None, "hardware.gpus"),
        "version-number": (None, software(torch=2.11), "software.torch"),
        "version-object": (None, software(torch={"version": "2.11.0"}), "software.torch"),
        "version-huge": (None, software(torch="2." * 500), "software.torch"),
        "software-key-markup": (None, software(**{"<b>torch</b>": "2.11.0"}), "software.<b>torch</b>"),
        "package-markup": (None, software(packages=["numpy==2.5.2", "<script>==1"]), "software.packages[1]"),
        "package-number": (None, software(packages=[2.11]), "software.packages[0]"),
        "package-no-version": (None, software(packages=["torch"]), "software.packages[0]"),
        "packages-too-many": (None, software(packages=[f"p{i}==1" for i in range(2001)]), "software.packages"),
        "packages-not-list": (None, software(packages="torch==2.11.0"), "software.packages"),
        "packages-omitted-text": (None, software(packages_omitted="some"), "software.packages_omitted"),
    }
    for name, (hardware, soft, _) in cases.items():
        submit(data, doctored(H200_RUN, name, hardware=hardware, software=soft), folder="h100")
    markup = "<script>alert(1)</script>"
    good = doctored(
        H200_RUN,
        "gpu-markup-escaped",
        hardware=gpus(gpu | {"name": markup, "ecc_mode": "<b>on</b>"}, {"index": 1}),
        software=software(torch="<img src=x onerror=alert(2)>", packages=["numpy==2.5.2", "torch==2.11.0+cu130"]),
    )
    submit(data, good, folder="h100")
    found = problems_of(data)
    for name, (_, _, field) in cases.items():
        assert f"field '{field}'" in found.get(f"{name}.parquet", ""), (name, found.get(f"{name}.parquet"))
    assert "gpu-markup-escaped.parquet" not in found  # printable text in declared places: shown, escaped

    loaded = load.load(data, files=[data / "h100" / "gpu-markup-escaped.parquet"])
    summary = derive.run_summary(loaded.runs, loaded.rows)
    bandwidths = copy_bound.copy_bandwidths(summary)
    figures = derive.with_test_figures(
        summary,
        inference.per_run_figures(summary, loaded.rows, bandwidths),
        serving.per_run_figures(summary, loaded.rows, bandwidths),
    )
    render.runs.start_run_pages(tmp_path / "site" / "runs", figures, loaded.rows).finish(tmp_path / "site")
    page = (tmp_path / "site" / "runs" / "gpu-markup-escaped.html").read_text()
    assert "<script>alert" not in page and "<b>on" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;b&gt;on&lt;/b&gt;" in page
    assert "&lt;img src=x onerror=alert(2)&gt;" in page
    # the package list is one plain-text file its runs' pages link (never HTML): the page names it, escaped or not
    listed = re.search(r'href="(packages-[0-9a-f]+\.txt)"', page)
    assert listed, "the run page links its package list"
    assert (tmp_path / "site" / "runs" / listed[1]).read_text().splitlines() == ["numpy==2.5.2", "torch==2.11.0+cu130"]
