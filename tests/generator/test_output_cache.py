"""The page writers' outputs kept by what they are made from (issue 37, `generator/store/output_cache.py`): a warm build
reads back each run list's gzipped CSV, each board's JSON and each chart's spec, byte for byte what making them
gives, and makes again only an output whose input changed or whose entry is damaged. Real committed records, no
mocks: the monkeypatches count calls (the makers, and the writes a miss makes), to prove the cache answered."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import generator.render.lists as lists
from generator import derive, render, store
from generator.derive import changelog
from generator.load import history
from generator.render import charts, pages
from generator.store import output_cache, runcache

DATA = Path(__file__).resolve().parents[2] / "data"


def _pages(results: derive.Results, docs: Path, svg: Path) -> dict[str, bytes]:
    """Every file `write_pages` writes into `docs`, by its path there."""
    sink = pages.Charts(docs, svg)
    render.boards.write_pages(results, docs, sink, changelog.changelog([], results, history.repo(DATA) is not None))
    sink.finish()
    return {p.relative_to(docs).as_posix(): p.read_bytes() for p in sorted(docs.rglob("*")) if p.is_file()}


def _use(monkeypatch: pytest.MonkeyPatch, folder: Path | None) -> None:
    """Keep outputs in the store of the cache folder `folder` (None: none) for this test."""
    monkeypatch.setattr(runcache, "_folder", folder)
    monkeypatch.setattr(store, "_active", None if folder is None else store.Store(folder / store.FOLDER))


def _entries(folder: Path) -> list[Path]:
    """The outputs' entries (their bytes, not their notes) in the store of the cache folder `folder`."""
    kind = folder / store.FOLDER / output_cache.KIND
    return sorted(p for p in kind.iterdir() if not p.name.endswith(store.NOTE) and not p.name.startswith("."))


def _counting(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[int]:
    calls: list[int] = []
    real = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a, **k: (calls.append(1), real(*a, **k))[1])
    return calls


def test_a_warm_write_reads_every_list_board_and_chart_back_byte_for_byte(
    committed_results: derive.Results, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lists, "SHOWN", 3)  # every board's lists long enough to be written as CSVs
    _use(monkeypatch, None)
    fresh = _pages(committed_results, tmp_path / "fresh", tmp_path / "svg")
    assert any(name.startswith("downloads/lists/") for name in fresh)
    _use(monkeypatch, tmp_path / "cache")
    cold = _pages(committed_results, tmp_path / "cold", tmp_path / "svg")
    assert len(_entries(tmp_path / "cache")) > 3

    stale = tmp_path / "cache" / store.FOLDER / output_cache.KIND / ("0" * 64)
    stale.write_bytes(b"x")
    _use(monkeypatch, tmp_path / "cache")  # a new build's store: it counts what it uses afresh
    reads = _counting(monkeypatch, store.Store, "get")
    writes = _counting(monkeypatch, store.Store, "put")  # a miss writes its entry
    boards = _counting(monkeypatch, render.boards, "board_rows")
    warm = _pages(committed_results, tmp_path / "warm", tmp_path / "svg")
    assert reads and not writes and not boards  # every output answered by the cache
    assert warm == cold == fresh
    active = store.active()
    assert active is not None and active.prune() >= 1
    assert not stale.exists()  # a build keeps only the entries it used
    assert len(_entries(tmp_path / "cache")) == len(active._used[output_cache.KIND])  # each one read


def test_a_changed_row_misses_and_a_damaged_entry_is_made_again(
    committed_results: derive.Results, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failures = committed_results.catalog.failures
    assert failures.height > 1 and "error" in failures.columns
    monkeypatch.setattr(lists, "SHOWN", 1)
    docs, page = tmp_path / "docs", tmp_path / "docs" / "failures.md"
    target = docs / "downloads" / "lists" / "failures.csv.gz"

    def written(frame: pl.DataFrame) -> bytes:
        lists.bounded(frame, docs, page, "failures")
        return target.read_bytes()

    _use(monkeypatch, None)
    fresh = written(failures)
    first = pl.int_range(pl.len()) == 0
    changed = failures.with_columns(pl.when(first).then(pl.lit("x")).otherwise("error").alias("error"))
    fresh_changed = written(changed)
    assert fresh_changed != fresh

    _use(monkeypatch, tmp_path / "cache")
    assert written(failures) == fresh
    csvs = _counting(monkeypatch, lists, "csv_ready")
    assert written(failures) == fresh and not csvs  # kept
    assert written(changed) == fresh_changed and len(csvs) == 1  # one cell changed: made again

    _use(monkeypatch, tmp_path / "damaged")
    assert written(failures) == fresh and len(csvs) == 2
    (entry,) = _entries(tmp_path / "damaged")
    entry.write_bytes(entry.read_bytes()[:-8] + b"damaged!")  # its bytes no longer those its sha256 names
    assert written(failures) == fresh and len(csvs) == 3  # made again, not trusted
    assert written(failures) == fresh and len(csvs) == 3  # and kept whole again


def test_a_chart_spec_is_kept_by_its_inputs(
    committed_results: derive.Results, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ranked = next(b.ranked for b in committed_results.boards.values() if b.kind == "train" and b.ranked.height > 1)
    changed = ranked.with_columns(pl.col("steps_per_s") * 2)

    def fresh(frame: pl.DataFrame) -> str:
        return json.dumps(charts.throughput(frame, "steps/s").to_dict(validate=False), sort_keys=True)

    _use(monkeypatch, tmp_path)
    assert json.dumps(pages.kept_spec(charts.throughput, ranked, "steps/s"), sort_keys=True) == fresh(ranked)
    writes = _counting(monkeypatch, store.Store, "put")
    assert (
        json.dumps(pages.kept_spec(charts.throughput, ranked, "steps/s"), sort_keys=True) == fresh(ranked)
        and not writes
    )
    assert json.dumps(pages.kept_spec(charts.throughput, changed, "steps/s"), sort_keys=True) == fresh(changed)
    assert len(writes) == 1 and fresh(changed) != fresh(ranked)


def test_a_negative_zero_is_a_changed_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """-0.0 equals 0.0 as a number (polars hashes them alike) but is written differently."""
    zero = pl.DataFrame({"step": [1, 2], "loss": [0.0, 1.5]})
    negative = zero.with_columns(pl.Series("loss", [-0.0, 1.5]))
    kind = output_cache.Kind("test")
    _use(monkeypatch, tmp_path)
    assert kind.made(lambda: zero.write_csv().encode(), zero) == b"step,loss\n1,0.0\n2,1.5\n"
    assert kind.made(lambda: negative.write_csv().encode(), negative) == b"step,loss\n1,-0.0\n2,1.5\n"
