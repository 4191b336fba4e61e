"""Large downloads in parts (generator/render/parts.py): a new run moves no part but its own, a samples part is named
by its suite and its place in id order and listed with the runs it holds, parts are cached by content, and gzip
members joined end to end read as one file."""

from __future__ import annotations

import collections
import gzip
import html
import re
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from generator import store
from generator.render import parts


def _numbered(ids: list[str]) -> dict[str, int]:
    """Each run's part number (from 1) when `ids` are cut into parts."""
    return {run_id: number for number, members in enumerate(parts.cut(ids), start=1) for run_id in members}


def test_a_new_run_changes_only_the_part_it_lands_in() -> None:
    ids = [f"20261201T{i:06d}Z-run-{i}" for i in range(5_000)]
    before = _numbered(ids)
    assert 3 < len(set(before.values())) < 30  # about one part per RUNS_PER_PART runs
    assert [r for members in parts.cut(ids) for r in members] == sorted(ids)  # in id order, each run once
    new = next(n for k in range(10_000) if not parts._starts_part(n := f"20261201T002500Z-new-{k}"))
    after = _numbered([*ids, new])
    assert {r: p for r, p in after.items() if r != new} == before  # no other run moved, no part renumbered
    assert after[new] in set(before.values())


def test_a_new_run_that_starts_a_part_moves_only_the_runs_after_it_in_that_part() -> None:
    """It splits the part it falls in; the parts after it keep their runs and take the next numbers, the parts
    before it keep their numbers too."""
    ids = [f"20261201T{i:06d}Z-run-{i}" for i in range(5_000)]
    before = parts.cut(ids)
    new = next(n for k in range(100_000) if parts._starts_part(n := f"20261201T002500Z-new-{k}"))
    after = parts.cut([*ids, new])
    split = next(i for i, members in enumerate(before) if members[-1] > new)
    assert after[:split] == before[:split] and after[split + 2 :] == before[split + 1 :]
    assert after[split] + after[split + 1] == sorted([*before[split], new]) and after[split + 1][0] == new


def test_a_new_run_after_every_other_moves_no_part() -> None:
    """A run id begins with its start time, so a new run sorts last: the parts before the last keep their runs and
    their numbers, so their names and links, whether or not it starts a part."""
    ids = [f"20261201T{i:06d}Z-run-{i}" for i in range(5_000)]
    before = parts.cut(ids)
    for k in range(600):  # about one new run in RUNS_PER_PART starts a part: some of these do
        after = parts.cut([*ids, f"20261202T{k:06d}Z-new"])
        assert after[: len(before) - 1] == before[:-1]


def test_samples_paths_cut_each_suite_apart_and_number_its_parts() -> None:
    summary = pl.DataFrame({"run_id": ["a", "b", "c"], "suite": ["h100", "cpu-smoke", "h100"]})
    paths = parts.samples_paths(summary)
    assert paths["b"] == "downloads/samples/cpu-smoke/samples-cpu-smoke-001.parquet"
    assert paths["a"] == paths["c"] == "downloads/samples/h100/samples-h100-001.parquet"
    assert parts.listed_at("h100") == "downloads.html#samples-h100"


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


def test_the_downloads_page_lists_each_samples_part_by_number_with_the_runs_it_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Committed runs of every kind, cut into several parts (`RUNS_PER_PART` lowered to reach them): each part is
    named by its suite and its place in id order (`samples-h100-001.parquet`, …), and its line on the downloads page
    gives the runs its file holds (how many, the first and last by id, how many of each kind); a run's samples file
    (what its page links) is the listed part whose first and last enclose its id, and holds its rows. Parts were
    named after the run that began them, so a part named after a training run held served runs' rows."""
    from generator import derive, load
    from generator.render import catalog, pages

    data = Path(__file__).resolve().parents[2] / "data"
    files = [p for p in load.result_files(data) if "h100" in p.parts]
    marks = ("-train-", "-pp512-", "-tg128-", "-throughput-", "-serve-", "claim-")
    picked = [p for mark in marks for p in [f for f in files if mark in f.name][:3]]
    records = load.load(data, files=picked, lean=True)
    summary = derive.run_summary(records.runs, records.rows)
    monkeypatch.setattr(parts, "RUNS_PER_PART", 3)
    catalog.write_downloads(pages.environment(), tmp_path / "docs", summary, records.rows, [], records)
    page = html.unescape((tmp_path / "docs" / "downloads.md").read_text())
    # | [name](link) | runs | first to last | kinds |
    line = (
        r"\| \[(samples-h100-\d{3}\.parquet)\]\(downloads/samples/h100/\1\) \| (\d+) \| "
        r'<span class="ff-ids"><code>(.+?)</code> to<br><code>(.+?)</code></span> \| (.+?) \|'
    )
    listed = re.findall(line, page)
    assert len(listed) >= 3, page
    assert [name for name, *_ in listed] == [f"samples-h100-{n:03d}.parquet" for n in range(1, len(listed) + 1)]
    kinds = dict(zip(summary["run_id"].to_list(), summary["kind"].fill_null("claim").to_list(), strict=True))
    order = list(catalog.KIND_WORDS)
    held: dict[str, str] = {}
    for name, runs, first, last, what in listed:
        ids = sorted(pl.read_parquet(tmp_path / "downloads-staged" / "samples" / "h100" / name)["run_id"].unique())
        assert (int(runs), first, last) == (len(ids), ids[0], ids[-1]), name
        counted = sorted(collections.Counter(kinds[r] for r in ids).items(), key=lambda kc: order.index(kc[0]))
        assert what == ", ".join(f"{catalog.KIND_WORDS[k]} {c}" for k, c in counted), name
        held |= dict.fromkeys(ids, name)
    assert set(kinds.values()) == set(order) and set(held) == set(kinds)  # every kind of run, claims too, has rows
    for run_id, path in parts.samples_paths(summary).items():
        enclosing = [name for name, _, first, last, _ in listed if first <= run_id <= last]
        assert enclosing == [held[run_id]] == [Path(path).name], run_id
