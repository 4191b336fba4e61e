"""Names a checkout on any common OS can hold, and claims refused in a sentence (issue 57, class 5). Each hostile file
is a committed record renamed as a submitter would; each test failed on the code before."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from generator import load
from runners import store
from tests.conftest import run_module
from tests.test_hostile_files import CLAIM, TUNED, genuine_copy


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return genuine_copy(tmp_path)


def _renamed(data: Path, run_id: str, suite: str = "cpu-smoke") -> Path:
    """TUNED's record (schema 2, its run-level fields as columns) as run `run_id` of `suite`, in that suite's folder."""
    table = pq.read_table(TUNED)
    for name, value in (("run_id", run_id), ("suite", suite)):
        at = table.column_names.index(name)
        table = table.set_column(at, table.schema.field(at), pa.array([value] * table.num_rows, pa.string()))
    path = data / suite / f"{run_id}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


@pytest.mark.parametrize("name", ["CON", "NUL", "aux", "Com1", "lpt9", "PRN.v2"])
def test_a_file_windows_cannot_hold_is_refused_by_validate_naming_it(data: Path, name: str) -> None:
    """Before: `CON.parquet`, `NUL.parquet`, `aux.parquet` were accepted and published, though a checkout on Windows
    cannot create them (a device name, whatever the extension, in any case). Now `validate` names the file and why,
    and the build keeps it out (what rejected.html lists)."""
    path = _renamed(data, name)
    loaded = load.load(data)
    assert name not in loaded.runs["run_id"].to_list()
    problems = {Path(r.path).name: " ".join(r.problems) for r in loaded.rejected}
    device = name.split(".")[0].upper()
    assert f"{device} is a device name on Windows" in problems[path.name], problems
    proc = run_module("generator.commands.validate", str(data), check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    line = next(line for line in proc.stdout.splitlines() if line.startswith(str(path)))
    assert "device name on Windows" in line, proc.stdout


def test_a_suite_folder_with_a_trailing_dot_is_refused_naming_it(data: Path) -> None:
    """A suite `cpu-smoke.` is a plain name, but Windows drops the dot: its folder would be `cpu-smoke`, another's."""
    path = _renamed(data, "20261129T182303Z-train-gpt-tiny-mb4-ddp-tuned-dot000", suite="cpu-smoke.")
    problems = {r.path: " ".join(r.problems) for r in load.load(data).rejected}
    rel = path.relative_to(data.parent).as_posix()
    assert "'cpu-smoke.': ends in a dot or a space" in problems[rel], problems


@pytest.mark.parametrize("run_id", ["CON", "nul", "LPT1"])
def test_the_store_never_names_a_file_windows_cannot_hold(tmp_path: Path, run_id: str) -> None:
    with pytest.raises(ValueError, match=f"run_id '{run_id}': {run_id.upper()} is a device name on Windows"):
        store.find(tmp_path, "cpu-smoke", run_id)


@pytest.mark.parametrize(
    ("claim_id", "suite", "rate", "field"),
    [("absurd", "../../x", "21.7", "suite"), ("absurd", "CON", "21.7", "suite"), ("١٢٣", "cpu-smoke", "21.7", "id"),
     ("absurd", "cpu-smoke", "inf", "steps_per_s"), ("absurd", "cpu-smoke", "nan", "steps_per_s")],
)  # fmt: skip
def test_every_claim_refusal_is_a_sentence_naming_the_field(
    tmp_path: Path, claim_id: str, suite: str, rate: str, field: str
) -> None:
    """Before: a suite `../../x` ended in the store's traceback, and an id of Arabic-Indic digits was refused naming
    no field (inf and nan were already sentences). Now each is refused before anything is written, by `fairfight
    claim`, naming the claim and the field."""
    claims_file = tmp_path / "claims.toml"
    claims_file.write_text(CLAIM.format(id=claim_id, suite=suite, steps=2000, rate=rate), encoding="utf-8")
    proc = run_module("fairfight", "claim", str(claims_file), "--data-dir", str(tmp_path / "data"), check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert f"claim {claim_id!r}, field {field!r}" in proc.stderr, proc.stderr
    assert not (tmp_path / "data").exists() and not (tmp_path.parent / "x").exists()
