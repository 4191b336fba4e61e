"""Large downloads in parts (generator/render/parts.py): a new run moves no part but its own, parts are cached by
content, and gzip members joined end to end read as one file."""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from generator import store
from generator.render import parts


def test_a_new_run_changes_only_the_part_it_lands_in() -> None:
    ids = [f"20261201T{i:06d}Z-run-{i}" for i in range(5_000)]
    before = parts.part_names(ids)
    assert 3 < len(set(before.values())) < 30  # about one part per RUNS_PER_PART runs
    assert before[ids[0]] in (parts.FIRST, ids[0])  # the runs before the first boundary, or the first starts one
    new = next(n for k in range(10_000) if not parts._starts_part(n := f"20261201T002500Z-new-{k}"))
    after = parts.part_names([*ids, new])
    assert {r: p for r, p in after.items() if r != new} == before  # no other run moved
    assert after[new] in set(before.values())


def test_a_new_run_that_starts_a_part_moves_only_the_runs_after_it_in_that_part() -> None:
    ids = [f"20261201T{i:06d}Z-run-{i}" for i in range(5_000)]
    before = parts.part_names(ids)
    new = next(n for k in range(100_000) if parts._starts_part(n := f"20261201T002500Z-new-{k}"))
    after = parts.part_names([*ids, new])
    moved = {r for r in ids if after[r] != before[r]}
    assert moved and all(r > new and before[r] == before[max(i for i in ids if i < new)] for r in moved)
    assert after[new] == new  # named after the run that starts it (a slug: these ids are already slugs)


def test_samples_paths_cut_each_suite_apart() -> None:
    summary = pl.DataFrame({"run_id": ["a", "b", "c"], "suite": ["h100", "cpu-smoke", "h100"]})
    paths = parts.samples_paths(summary)
    assert paths["b"].startswith("downloads/samples/cpu-smoke/") and paths["a"].startswith("downloads/samples/h100/")


def test_a_part_is_made_once_and_linked_after(tmp_path: Path) -> None:
    made: list[Path] = []

    def make(path: Path) -> None:
        made.append(path)
        path.write_text("rows")

    kept = store.Store(tmp_path / "cache")
    parts.placed(tmp_path / "site" / "one.parquet", kept, "k1", make)
    parts.placed(tmp_path / "site2" / "one.parquet", kept, "k1", make)
    assert len(made) == 1 and (tmp_path / "site2" / "one.parquet").read_text() == "rows"


def test_gzip_members_joined_read_as_the_texts_joined() -> None:
    one, two = parts.gzipped("a,b\n1,2\n"), parts.gzipped("3,4\n", level=6)
    assert gzip.decompress(one + two) == b"a,b\n1,2\n3,4\n"
    assert parts.gzipped("x") == parts.gzipped("x")  # no time stamp: the same text, the same bytes


def test_a_samples_part_written_a_batch_of_runs_at_a_time_holds_every_row_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The samples part of committed runs, written `SAMPLES_BATCH` runs at a time (here 3, so several row groups), reads
    back as the whole frame `load.full_rows` gives, row for row and type for type; no runs give the columns alone."""
    from generator import load
    from generator.render import catalog

    data = Path(__file__).resolve().parents[2] / "data"
    files = load.result_files(data)
    picked = [p for p in files if "-serve-" in p.name][:3] + [p for p in files if "-train-" in p.name][:5]
    records = load.load(data, files=picked, lean=True)
    ids = records.rows["run_id"].unique(maintain_order=True).to_list()  # in load order, as a part lists its runs
    assert len(ids) == len(picked)
    monkeypatch.setattr(catalog, "SAMPLES_BATCH", 3)
    catalog._write_samples(tmp_path / "part.parquet", records, ids)
    assert pq.ParquetFile(tmp_path / "part.parquet").metadata.num_row_groups == 3
    assert pl.read_parquet(tmp_path / "part.parquet").equals(load.full_rows(records, ids))
    catalog._write_samples(tmp_path / "none.parquet", records, [])
    assert pl.read_parquet(tmp_path / "none.parquet").schema == load.full_rows(records, ids).schema
