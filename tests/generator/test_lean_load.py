"""A lean load (issue 37): the per-request samples of served points stay in their files, and every figure, run page
CSV and download is what a load of every row gives. Real committed records, no mocks."""

from __future__ import annotations

import contextlib
import pickle
import shutil
from pathlib import Path

import polars as pl
import pytest

from generator import derive, load, render
from generator.derive import checks
from generator.load import read_all, read_cache
from generator.render import pages
from generator.store import runcache

DATA = Path(__file__).resolve().parents[2] / "data"


def _files() -> list[Path]:
    """Committed files of each kind: served points (the samples held out), offline tests, training and inference."""
    files = load.result_files(DATA)
    picked = []
    for tag, n in (("-serve-", 6), ("-offline-", 2), ("-train-", 4), ("-tg", 3), ("-pp", 2)):
        picked += [p for p in files if tag in p.name][:n]
    if not any("-serve-" in p.name for p in picked):
        pytest.skip("no served points in data/")
    return sorted(set(picked))


@pytest.fixture(scope="module")
def both() -> tuple[tuple[load.Loaded, pl.DataFrame], tuple[load.Loaded, pl.DataFrame]]:
    files = _files()
    return checks.checked(load.load(DATA, files=files)), checks.checked(load.load(DATA, files=files, lean=True))


def test_lean_rows_leave_the_samples_out_and_full_rows_gives_them_back(both) -> None:  # type: ignore[no-untyped-def]
    (full, _), (lean, _) = both
    held = lean.rows.filter(pl.col("metric").is_in(load.HELD_OUT))
    assert lean.held_out and held.height <= len(lean.held_out)  # at most a file's first row of them stays
    assert lean.rows.height + sum(lean.held_out.values()) == full.rows.height
    assert full.held_out == {} and full.rows.filter(pl.col("metric").is_in(load.HELD_OUT)).height > held.height
    ids = full.runs["run_id"].to_list()
    assert load.full_rows(lean, ids).equals(full.rows)
    some = [r for r in ids if r in lean.held_out][:2] + [r for r in ids if r not in lean.held_out][:2]
    assert load.full_rows(lean, some).equals(full.rows.filter(pl.col("run_id").is_in(some)))


def test_every_figure_is_the_same_from_a_lean_load(both) -> None:  # type: ignore[no-untyped-def]
    """Served figures computed afresh (no cache) from the samples read again equal those from every row in memory."""
    (full, full_summary), (lean, lean_summary) = both
    runcache.use(None)
    a, b = derive.results(full, full_summary), derive.results(lean, lean_summary)
    assert a.served.filter(pl.col("kind") == "serve")["median_itl_ms"].drop_nulls().len() > 0
    for name in ("runs", "tests", "served", "page_runs"):
        assert getattr(a, name).equals(getattr(b, name)), name
    for key, board in a.boards.items():
        assert board.ranked.equals(b.boards[key].ranked), key


def test_the_downloads_are_the_same_bytes_from_a_lean_load(both, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (full, summary), (lean, _) = both
    for name, records in (("full", full), ("lean", lean)):
        render.catalog.write_downloads(
            pages.environment(), tmp_path / name / "docs", summary, records.rows, [], records
        )
    parts = sorted(p.relative_to(tmp_path / "full") for p in (tmp_path / "full").rglob("*.parquet"))
    assert any("samples" in str(p) for p in parts)
    for part in parts:
        assert (tmp_path / "full" / part).read_bytes() == (tmp_path / "lean" / part).read_bytes(), part
    page = (tmp_path / "full" / "docs" / "downloads.md").read_text()
    assert page == (tmp_path / "lean" / "docs" / "downloads.md").read_text()  # the rows each part holds, too


def test_a_worker_writes_the_samples_parts_byte_for_byte_as_this_process(  # type: ignore[no-untyped-def]
    both, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The samples parts written here, by a worker begun in `write_downloads` (`PARTS_POOL_FROM` lowered to reach it
    with these few runs) and by one begun before it (`samples_begun`, as the build does): the same bytes and page."""
    (_, summary), (lean, _) = both
    env = pages.environment()
    for name, pool_from in (("here", 10**9), ("worker", 1), ("begun", 1)):
        monkeypatch.setattr(render.catalog, "PARTS_POOL_FROM", pool_from)
        docs = tmp_path / name / "docs"
        with render.catalog.samples_begun(summary, lean, docs) if name == "begun" else contextlib.nullcontext():
            render.catalog.write_downloads(env, docs, summary, lean.rows, [], lean)
    made = sorted(p.relative_to(tmp_path / "here") for p in (tmp_path / "here").rglob("*.parquet"))
    assert any("samples" in str(p) for p in made)
    for name in ("worker", "begun"):
        assert sorted(p.relative_to(tmp_path / name) for p in (tmp_path / name).rglob("*.parquet")) == made
        for part in made:
            assert (tmp_path / name / part).read_bytes() == (tmp_path / "here" / part).read_bytes(), (name, part)
        page = (tmp_path / name / "docs" / "downloads.md").read_text()
        assert page == (tmp_path / "here" / "docs" / "downloads.md").read_text(), name
        assert not list((tmp_path / name / "cache" / "downloads").glob(".*")), name  # no temporary file left


def test_a_subset_gives_its_runs_every_row_as_the_whole_load(both) -> None:  # type: ignore[no-untyped-def]
    """`load.subset`, what a worker writing a samples part is handed (pickled): `full_rows` of it is that of the whole
    load, runs in the rows' order whatever order they are asked in; rows whose runs lie apart are found by filtering."""
    (full, _), (lean, _) = both
    ids = lean.rows["run_id"].unique(maintain_order=True).to_list()
    some = ids[1::2]  # every other run: slices apart in the rows
    sub = pickle.loads(pickle.dumps(load.subset(lean, list(reversed(some)))))
    assert sub.held_out == {r: n for r, n in lean.held_out.items() if r in some} and sub.held_out
    assert sub.rows.height < lean.rows.height and sub.runs.height == len(some)
    assert load.full_rows(sub, some).equals(load.full_rows(lean, some))
    assert load.full_rows(lean, list(reversed(some))).equals(full.rows.filter(pl.col("run_id").is_in(some)))
    apart = pl.concat([lean.rows, lean.rows.head(1)])  # the first run's rows, then one of them again at the end
    [(run_id, rows)] = load.run_slices(apart, ids[:1])
    assert run_id == ids[0] and rows.equals(apart.filter(pl.col("run_id") == ids[0]))


def test_a_file_changed_after_a_lean_load_is_named_not_read(tmp_path: Path) -> None:
    served = next(
        p for p in _files() if "-serve-" in p.name and pl.read_parquet(p)["metric"].is_in(load.HELD_OUT).any()
    )
    copy = tmp_path / "data" / served.relative_to(DATA)  # in its suite's folder, or its month folder there
    copy.parent.mkdir(parents=True)
    shutil.copyfile(served, copy)
    lean = load.load(tmp_path / "data", lean=True)
    assert lean.held_out
    copy.write_bytes(copy.read_bytes() + b"\0")  # other bytes, whatever they hold
    with pytest.raises(ValueError, match=f"{served.name}: changed since this build loaded it"):
        load.full_rows(lean, lean.runs["run_id"].to_list())


def test_a_new_file_among_cached_ones_loads_lean_as_afresh(tmp_path: Path) -> None:
    """A warm build with one new run: the cached heads are renumbered around it (before, their `_held` and `_file`
    came back in another order and the concatenation stopped the build)."""
    files = _files()[:4]
    data = tmp_path / "data"
    for f in files[1:]:
        (data / f.relative_to(DATA)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, data / f.relative_to(DATA))
    load.load(data, tmp_path / "cache", lean=True)
    (data / files[0].relative_to(DATA)).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(files[0], data / files[0].relative_to(DATA))  # sorts first: every index moves
    warm, cold = load.load(data, tmp_path / "cache", lean=True), load.load(data, lean=True)
    assert warm.runs.height == len(files) and warm.runs.equals(cold.runs) and warm.rows.equals(cold.rows)
    assert warm.held_out == cold.held_out


@pytest.mark.parametrize("slices", [read_all.MERGE_SLICES, 0])
def test_new_files_rows_go_in_among_the_cached_ones_in_file_order(monkeypatch, slices) -> None:
    """A warm load puts new files' rows among the cached ones (`read_all._merged`): by slices where they go in a few
    places, by a merge past `MERGE_SLICES` (0: always a merge). Either way the rows are those of a sort by file, each
    file's rows in their order, for files split between the two tables every way a seeded draw gives."""
    import random

    monkeypatch.setattr(read_all, "MERGE_SLICES", slices)
    draw = random.Random(37)
    for _ in range(200):
        files = list(range(draw.randint(1, 40)))
        draw.shuffle(files)
        cut = draw.randint(0, len(files))

        def rows(of: list[int]) -> pl.DataFrame:
            made = [(f, j) for f in sorted(of) for j in range(draw.randint(1, 4))]
            return pl.DataFrame(made, schema={"_file": pl.Int32, "j": pl.Int64}, orient="row")

        cached, new = rows(files[:cut]), rows(files[cut:])
        merged = read_all._merged(cached, new)
        assert merged.equals(pl.concat([cached, new]).sort("_file", "j")), (files[:cut], files[cut:])


@pytest.mark.parametrize(
    ("path", "folder"),
    [("data/s/f.parquet", "."), ("../x/f.parquet", ".."), ("/abs/data/f.parquet", "/abs"), ("/x/d/f.parquet", "/"),
     ("/x/data/s/f.parquet", "/x/"), ("rel/data/f.parquet", "rel")],
)  # fmt: skip
def test_a_files_path_relative_to_the_data_folders_parent_is_pathlibs(path: str, folder: str) -> None:
    assert read_cache._relative(Path(path), Path(folder)) == Path(path).relative_to(Path(folder)).as_posix()


def test_rows_put_aside_as_the_files_are_read_give_every_row_without_reading_a_file_again(tmp_path: Path) -> None:
    """A load given a `held` folder (the site build's stage) puts each served point's every row aside as it reads the
    file: `full_rows` takes them from there, the same rows as a load of every row, and reads no file again (a copy
    of the data changed after the load is never opened: re-reading it would be refused as changed)."""
    data = tmp_path / "data"
    for path in _files():
        target = data / path.relative_to(DATA)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    files = load.result_files(data)
    full = load.load(data, files=files)
    lean = load.load(data, files=files, lean=True, held=tmp_path / "held")
    assert lean.held_in.keys() == lean.held_out.keys() and lean.held_in
    assert {Path(p).parent for p, _, _ in lean.held_in.values()} == {tmp_path / "held"}
    for path in files:  # every file changes after the load: only rows put aside can still be read
        path.write_bytes(path.read_bytes() + b"changed")
    ids = full.runs["run_id"].to_list()
    assert load.full_rows(lean, ids).equals(full.rows)
    part = [r for r in ids if r in lean.held_in][:2]
    assert load.full_rows(load.subset(lean, part), part).equals(full.rows.filter(pl.col("run_id").is_in(part)))
    without = load.Loaded(lean.runs, lean.rows, held_out=lean.held_out, root=lean.root)
    with pytest.raises(ValueError, match="changed since this build loaded it"):
        load.full_rows(without, part)
