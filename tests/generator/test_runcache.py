"""The data path's caches and progress (issue 37): per-run figures cached by file content, a damaged cache rebuilt
and never trusted, and progress shown only on a terminal. Real committed records, no mocks: the one monkeypatch
counts calls to the served-figure formula, to prove the cache answered instead."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import polars as pl
import pytest

from generator import derive, load, progress, store
from generator.commands import compare
from generator.derive import checks, copy_bound, serving
from generator.load import read_cache, records
from generator.store import fingerprint, runcache
from runners import metrics

DATA = Path(__file__).resolve().parents[2] / "data"


def _entries(folder: Path, kind: str) -> list[Path]:
    """The store's entries of `kind` (their bytes, not their notes) in the cache folder `folder`."""
    where = folder / store.FOLDER / kind
    return sorted(p for p in where.iterdir() if not p.name.endswith(store.NOTE) and not p.name.startswith("."))


def _flip(entries: list[Path]) -> None:
    """One byte of each entry changed: its bytes no longer those its note names."""
    for entry in entries:
        raw = bytearray(entry.read_bytes())
        raw[len(raw) // 2] ^= 0xFF
        entry.write_bytes(bytes(raw))


def _served_files() -> list[Path]:
    """A few committed files of served points (their samples are what the served figures are made from)."""
    files = [p for p in load.result_files(DATA) if "-serve-" in p.name]
    if not files:
        pytest.skip("no served points in data/")
    return files[:6]


def test_served_figures_come_from_the_cache_by_file_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loaded, summary = checks.checked(load.load(DATA, files=_served_files()))
    assert summary.filter(pl.col("kind") == "serve").height > 0
    runcache.use(None)
    bandwidths = copy_bound.copy_bandwidths(summary)
    fresh = serving.per_run_figures(summary, loaded.rows, bandwidths)
    try:
        runcache.use(tmp_path)
        first = serving.per_run_figures(summary, loaded.rows, bandwidths)
        assert _entries(tmp_path, runcache.KIND)
        calls: list[int] = []
        _count_figures(monkeypatch, calls)
        again = serving.per_run_figures(summary, loaded.rows, bandwidths)
        assert calls == []  # every figure came from the cache
        assert fresh.equals(first) and fresh.equals(again)  # and is the figure computed afresh, to the bit
        # a damaged table is rebuilt, never trusted: one byte changed, and the figures are computed again
        _flip(_entries(tmp_path, runcache.KIND))
        assert serving.SERVED_FIGURES.read() == {}
        rebuilt = serving.per_run_figures(summary, loaded.rows, bandwidths)
        assert calls and fresh.equals(rebuilt)
        # another file's content (another sha256) misses: its figures are computed from its own rows
        calls.clear()
        changed = summary.with_columns(sha256=pl.lit("0" * 64))
        serving.per_run_figures(changed, loaded.rows, bandwidths)
        assert calls
    finally:
        runcache.use(None)


def test_the_load_works_out_served_figures_while_it_holds_each_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a cache in use, each served point's figures are worked out from the rows the loader has just read
    (`serving.as_read`, handed to the load as the build hands it; a lean load then holds no samples): the derivation
    finds every one cached, reads no served file again, and shows the figures computed afresh from every row, to the
    bit."""
    files = _served_files()
    runcache.use(None)
    assert serving.as_read() is None  # no cache to keep them: the load works out nothing for the derivation
    full, full_summary = checks.checked(load.load(DATA, files=files))
    bandwidths = copy_bound.copy_bandwidths(full_summary)
    fresh = serving.per_run_figures(full_summary, full.rows, bandwidths)
    try:
        runcache.use(tmp_path)
        read = load.load(DATA, files=files, lean=True, per_file=serving.as_read())
        serving.remember(read.per_file)
        lean, summary = checks.checked(read)
        served = summary.filter(pl.col("kind") == "serve")
        assert len(serving.SERVED_FIGURES.read()) == served.height > 0
        calls: list[int] = []
        _count_figures(monkeypatch, calls)
        monkeypatch.setattr(records, "_read_again", lambda *a: pytest.fail("a served file was read again"))
        again = serving.per_run_figures(summary, lean.rows, bandwidths, lambda ids: load.full_rows(lean, ids))
        assert calls == [] and again.equals(fresh)
    finally:
        runcache.use(None)


def _count_figures(monkeypatch: pytest.MonkeyPatch, calls: list[int]) -> None:
    """Count in `calls` every served point's figures worked out from its rows, by either path (`metrics.served_figures`
    over the columns, or the requests' `requests_from_columns`)."""
    for name in ("served_figures", "requests_from_columns"):
        real = getattr(metrics, name)
        monkeypatch.setattr(metrics, name, lambda *a, real=real: (calls.append(1), real(*a))[1])


def test_columns_and_rows_give_one_served_point_the_same_requests() -> None:
    """`requests_from_columns` is `requests_from_rows` of the same rows: a repeated metric keeps the later row, the
    duration is the last one's, gaps come in step order."""
    rows = [
        {"trial": 1, "step": 0, "metric": "request_ok", "value": 1.0},
        {"trial": 0, "step": 2, "metric": "itl_s", "value": 0.3},
        {"trial": 0, "step": 1, "metric": "itl_s", "value": 0.2},
        {"trial": 0, "step": 0, "metric": "ttft_s", "value": 0.1},
        {"trial": 0, "step": 0, "metric": "ttft_s", "value": 0.15},
        {"trial": 0, "step": 0, "metric": "duration_s", "value": 9.0},
        {"trial": 0, "step": 0, "metric": "output_tokens", "value": 3.0},
        {"trial": 0, "step": 0, "metric": "duration_s", "value": 10.0},
        {"trial": 0, "step": 0, "metric": "loss", "value": 5.0},
    ]
    requests, duration = metrics.requests_from_rows(rows)
    columns = [[r[k] for r in rows] for k in ("trial", "step", "metric", "value")]
    assert metrics.requests_from_columns(*columns) == (requests, duration)
    assert duration == 10.0 and [r.ttft_s for r in requests] == [0.15, None]
    assert requests[0].itl_s == (0.2, 0.3) and requests[0].output_tokens == 3 and requests[1].ok


def test_a_table_of_other_code_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = runcache.Table("t")
    runcache.use(tmp_path / "cache")
    try:
        table.write({"a": {"v": 1.5}, "b": None})
        assert table.read() == {"a": {"v": 1.5}, "b": None}
        # the code or a library changed (`fingerprint`): every entry is stale
        monkeypatch.setattr(fingerprint, "fingerprint", lambda: "other code")
        assert table.read() == {}
    finally:
        runcache.use(None)
    assert table.read() == {}  # no cache folder in use: nothing is read


def test_a_damaged_load_cache_is_rebuilt(tmp_path: Path) -> None:
    files = _served_files()[:2]
    cache = tmp_path / "cache"
    cold = load.load(DATA, cache, files=files)
    for entry in _entries(cache, load.LOADED):
        entry.write_bytes(b"not arrow")
    again = load.load(DATA, cache, files=files)
    assert again.runs.equals(cold.runs) and again.rows.equals(cold.rows)
    assert read_cache.cached(cache) is not None  # rewritten whole
    # readable but not what the note names (a byte changed): not trusted either
    _flip(_entries(cache, load.LOADED)[:1])
    assert read_cache.cached(cache) is None


def test_progress_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAIRFIGHT_PROGRESS", raising=False)
    quiet = io.StringIO()
    with progress.Progress("reading result files", 3, stream=quiet) as bar:
        for _ in range(3):
            bar.advance()
    assert quiet.getvalue() == ""  # a pipe or a file sees nothing
    monkeypatch.setenv("FAIRFIGHT_PROGRESS", "1")
    shown = io.StringIO()
    with progress.Progress("reading result files", 2, stream=shown) as bar:
        bar.advance()
        bar.advance()
    assert "reading result files: 2 of 2 files in" in shown.getvalue()
    monkeypatch.setenv("FAIRFIGHT_PROGRESS", "0")
    assert not progress.enabled(shown)
    assert [progress.left_text(s) for s in (42, 185, 3720)] == ["42 s", "3 min 05 s", "1 h 02 min"]


def _same(a: compare.Dataset, b: compare.Dataset) -> bool:
    return (
        a.runs.equals(b.runs)
        and a.rejected == b.rejected
        and a.run_floors == b.run_floors
        and a.kind_floors == b.kind_floors
        and a.editions == b.editions
    )


def test_compare_reads_the_kept_table_while_the_data_is_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    for path in load.result_files(DATA)[:40]:  # where each lies, suite and month folders alike
        (data / path.relative_to(DATA)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, data / path.relative_to(DATA))
    monkeypatch.delenv(runcache.ENV, raising=False)
    monkeypatch.chdir(tmp_path)  # no build/cache here: nothing kept, nothing written
    fresh = compare.load_dataset(data)
    assert not (tmp_path / "build").exists()
    monkeypatch.setenv(runcache.ENV, str(tmp_path / "cache"))
    try:
        first = compare.load_dataset(data)
        assert len(_entries(tmp_path / "cache", compare.cache.KIND)) == 2
        monkeypatch.setattr(derive, "results", lambda *a: pytest.fail("derived again, with the table kept"))
        kept = compare.load_dataset(data)
        assert _same(fresh, first) and _same(fresh, kept)
        # one file removed: the key no longer holds, and the table is derived again without it
        gone = load.result_files(data)[0]
        gone.unlink()
        monkeypatch.undo()
        monkeypatch.setenv(runcache.ENV, str(tmp_path / "cache"))
        after = compare.load_dataset(data)
        assert gone.stem not in after.runs["run_id"].to_list() and after.runs.height == fresh.runs.height - 1
        # a damaged table is not trusted
        for table in _entries(tmp_path / "cache", compare.cache.KIND):
            table.write_bytes(table.read_bytes()[:-8] + b"\0" * 8)
        assert compare.cache.read(tmp_path / "cache", compare.cache.key(data)) is None
    finally:
        runcache.use(None)


def test_flattened_columns_come_from_the_cache_by_file_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`columns.flatten` with a cache: the first call works out every run, a second none, a call with new files only
    theirs; each returns the frame worked out afresh, column for column and to the bit. A damaged table is rebuilt."""
    from generator.load import columns

    runs = load.load(DATA).runs
    assert runs.height > 20
    runcache.use(None)
    fresh = columns.flatten(runs)
    worked: list[int] = []
    real = columns._flatten
    monkeypatch.setattr(columns, "_flatten", lambda frame: (worked.append(frame.height), real(frame))[1])
    try:
        runcache.use(tmp_path)
        part = runs.head(runs.height // 2)
        assert columns.flatten(part).equals(fresh.head(part.height))
        assert worked == [part.height]
        assert columns.flatten(runs).equals(fresh)  # the cached half joined to the new half's, in the runs' order
        assert worked == [part.height, runs.height - part.height]
        again = columns.flatten(runs.reverse())
        assert worked[-1] == runs.height - part.height and again.equals(fresh.reverse())  # nothing worked out
        _flip(_entries(tmp_path, runcache.KIND))
        assert columns.flatten(runs).equals(fresh) and worked[-1] == runs.height
        other = runs.drop("path")  # inputs of another shape: not the cached ones' columns
        assert columns.flatten(other).equals(real(other))
    finally:
        runcache.use(None)


def test_the_verdicts_resamples_come_back_from_the_cache_to_the_bit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweep's draws (seeded, so the same inputs give the same draws) are kept whole under what they were made
    from: a second build reads them back, array for array; a changed input (a run's file) draws them again; a damaged
    set is never trusted. The monkeypatch counts calls to the block resampler, to prove the cache answered."""
    import numpy as np

    from generator.derive import configurations, verdict
    from generator.derive.verdict import draws as sweep_draws

    loaded, summary = checks.checked(load.load(DATA, lean=True))
    spreads = {r: configurations.pooled_spreads(summary, c) for r, c in verdict.READINGS.items()}
    fight = verdict.fight(summary)
    if fight is None:
        pytest.skip("no seed claims in data/")
    points = verdict.sweep(summary, fight, spreads)
    runcache.use(None)
    fresh = sweep_draws.draws(points, summary, loaded.rows, spreads, fight.devices)
    assert any(fresh.values())

    def same(a: dict, b: dict) -> bool:
        return a.keys() == b.keys() and all(
            list(a[r]) == list(b[r])
            and all(
                all(np.array_equal(getattr(a[r][k], part), getattr(b[r][k], part)) for part in ("within", "z", "chi"))
                and (a[r][k].sd, a[r][k].runs) == (b[r][k].sd, b[r][k].runs)
                for k in a[r]
            )
            for r in a
        )

    calls: list[int] = []
    real = metrics.block_resample
    monkeypatch.setattr(metrics, "block_resample", lambda *a: (calls.append(1), real(*a))[1])
    try:
        runcache.use(tmp_path)
        first = sweep_draws.draws(points, summary, loaded.rows, spreads, fight.devices)
        assert calls and same(fresh, first)
        calls.clear()
        again = sweep_draws.draws(points, summary, loaded.rows, spreads, fight.devices)
        assert calls == [] and same(fresh, again)  # read back, to the bit
        # a spread of hardware no point is on (a CPU run added, say) changes none of the draws: still read back
        elsewhere = ("torch", "another-accelerator", 1)
        other = {r: {**s, elsewhere: metrics.PooledSpread(0.5, 3, 1)} for r, s in spreads.items()}
        assert same(fresh, sweep_draws.draws(points, summary, loaded.rows, other, fight.devices)) and calls == []
        # a damaged set is drawn again, never trusted
        _flip(_entries(tmp_path, runcache.KIND))
        sets = len(_entries(tmp_path, runcache.KIND))
        assert same(fresh, sweep_draws.draws(points, summary, loaded.rows, spreads, fight.devices)) and calls
        # a sweep run's file changed (another sha256): its draws are made afresh, under another key
        calls.clear()
        one = points["run_ids"][0][0]
        changed = summary.with_columns(
            sha256=pl.when(pl.col("run_id") == one).then(pl.lit("0" * 64)).otherwise(pl.col("sha256"))
        )
        sweep_draws.draws(points, changed, loaded.rows, spreads, fight.devices)
        assert calls and len(_entries(tmp_path, runcache.KIND)) == sets + 1
    finally:
        runcache.use(None)


def test_each_runs_own_figures_come_from_the_cache_by_file_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run summary's per-run figures (windows' interval, step-time quantiles, loss curve) are kept by file: a
    summary from a cold cache, from a warm one and from one missing a run equals the summary worked out afresh, column
    for column; the monkeypatch counts calls to the window formula, to prove which runs the cache answered."""
    from generator.derive import summaries

    loaded = load.load(DATA, lean=True)
    runcache.use(None)
    fresh = derive.run_summary(loaded.runs, loaded.rows)
    calls: list[int] = []
    real = metrics.median_ci
    monkeypatch.setattr(metrics, "median_ci", lambda rates, *a, **k: (calls.append(1), real(rates, *a, **k))[1])
    try:
        runcache.use(tmp_path)
        assert fresh.equals(derive.run_summary(loaded.runs, loaded.rows)) and calls
        calls.clear()
        assert fresh.equals(derive.run_summary(loaded.runs, loaded.rows)) and calls == []
        # a run whose file is new to the cache: only its figures are worked out
        one = fresh.filter(pl.col("windows") > 0)["run_id"][0]
        runs = loaded.runs.with_columns(
            sha256=pl.when(pl.col("run_id") == one).then(pl.lit("f" * 64)).otherwise(pl.col("sha256"))
        )
        again = derive.run_summary(runs, loaded.rows)
        assert len(calls) == 1 and again.drop("sha256").equals(fresh.drop("sha256"))
        # the same file with other warm-up steps (what the figures also take): worked out again, for that run only
        calls.clear()
        flat = summaries.config_fields(loaded.runs)
        summaries._own_figures(flat, loaded.rows)
        assert calls == []
        moved = flat.with_columns(
            warmup_steps=pl.when(pl.col("run_id") == one).then(pl.col("warmup_steps") + 1).otherwise("warmup_steps")
        )
        summaries._own_figures(moved, loaded.rows)
        assert len(calls) == 1
    finally:
        runcache.use(None)


def test_each_runs_own_figures_are_the_same_worked_out_a_chunk_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cold build works out the runs' own figures a chunk of runs at a time (`OWN_CHUNK`, to bound its memory):
    chunks of 7 runs give the run summary of the committed data exactly as one chunk of every run does."""
    from generator.derive import summaries

    loaded = load.load(DATA, lean=True)
    runcache.use(None)
    whole = derive.run_summary(loaded.runs, loaded.rows)
    monkeypatch.setattr(summaries, "OWN_CHUNK", 7)
    chunked = derive.run_summary(loaded.runs, loaded.rows)
    assert whole.height == loaded.runs.height > 7 * 3
    assert whole["windows"].drop_nulls().len() and whole.equals(chunked)


def test_a_served_point_whose_gap_has_no_step_gets_no_figures_and_stops_nothing() -> None:
    """A hostile served file may leave a gap's step null beside numbered ones (the schema lets step be null): its gaps
    have no order, so the point gets no figures (it stays unranked) where the per-request code raised a TypeError
    comparing None with a number, which stopped the load of every file."""
    rows = [
        {"trial": 0, "step": 0, "metric": "request_ok", "value": 1.0},
        {"trial": 0, "step": 0, "metric": "ttft_s", "value": 0.1},
        {"trial": 0, "step": 0, "metric": "e2e_s", "value": 0.5},
        {"trial": 0, "step": 0, "metric": "output_tokens", "value": 3.0},
        {"trial": 0, "step": None, "metric": "itl_s", "value": 0.2},
        {"trial": 0, "step": 1, "metric": "itl_s", "value": 0.2},
        {"trial": 0, "step": None, "metric": "duration_s", "value": 1.0},
    ]
    frame = pl.DataFrame(rows, schema={"trial": pl.Int32, "step": pl.Int32, "metric": pl.String, "value": pl.Float64})
    with pytest.raises(TypeError):
        metrics.requests_from_rows(rows)
    config = '{"workload": {"kind": "serve", "serving": {"slo_ttft_ms": 1000, "slo_tpot_ms": 50}}}'
    assert serving._figures(frame, 1000.0, 50.0) is None
    numbered = frame.with_columns(step=pl.col("step").fill_null(2))
    assert serving._figures(numbered, 1000.0, 50.0) is not None  # the same point with its steps: figures
    found = serving.file_figures("0" * 64, config, frame)  # what the loader works out as it reads the file
    assert found is not None and found[1] is None
    again = serving.file_figures("0" * 64, config, numbered)
    assert again is not None and again[1] is not None
