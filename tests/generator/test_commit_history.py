"""A configuration's figure across harness commits (generator/derive/commit_history.py) and the band of identical
repeats around the latest (`metrics.spread_band`): synthetic runs frames, as `Results.every_run.runs` holds them, built
by hand."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pytest

from generator.derive import commit_history, commit_pairs, evidence
from generator.render import charts
from runners import metrics

SPREADS = {("e", "train", "GPU", 2): metrics.PooledSpread(sd=0.001, df=10, groups=3)}
"""The engine's pooled between-run spread on the runs' hardware: small enough that every commit's interval here is
its runs' hull, as `compare` gives it."""


def _runs() -> pl.DataFrame:
    rows = [  # run id, commit, day, figure, lo, hi, excluded
        ("r1", "aaaaaaa1", 1, 10.0, 9.8, 10.2, None),
        ("r2", "aaaaaaa1", 2, 10.4, 10.3, 10.5, None),
        ("r3", "bbbbbbb2", 3, 11.0, 10.9, 11.1, None),
        ("r4", "ccccccc3", 4, 12.0, 11.9, 12.1, None),
        ("r5", "ccccccc3", 5, 1.0, 0.9, 1.1, "stopped: failed (boom)"),  # never a point
    ]
    return pl.DataFrame(
        [
            {
                "run_id": r,
                "suite": "s",
                "workload": "w",
                "settings_hash": "h" * 12,
                "kind": "train",
                "figure": "steps/s",
                "variant": "v",
                "engine": "e",
                "origin": "measured",
                "harness_commit": c,
                "started_at": datetime(2026, 11, d, tzinfo=UTC),
                "value": v,
                "lo": lo,
                "hi": hi,
                "excluded": x,
                "accelerator": "GPU",
                "accelerator_count": 2,
                "shared_host": False,
            }
            for r, c, d, v, lo, hi, x in rows
        ]
    )


def test_one_point_per_commit_in_order_with_the_median_and_hull_of_its_counted_runs() -> None:
    dirty = pl.DataFrame({"run_id": ["r3"], "harness_dirty": [True]})
    points = commit_history.points(_runs(), SPREADS, dirty)
    assert points["harness_commit"].to_list() == ["aaaaaaa1", "bbbbbbb2", "ccccccc3"]
    assert points["order"].to_list() == [0, 1, 2] and points["latest"].to_list() == [False, False, True]
    first = points.row(0, named=True)
    assert first["value"] == pytest.approx(10.2) and (first["lo"], first["hi"]) == (9.8, 10.5)
    assert first["runs"] == 2 and first["run_ids"] == ["r1", "r2"]
    assert points["dirty"].to_list() == [False, True, False]
    assert points.row(2, named=True)["run_ids"] == ["r4"]  # the failed run at that commit is not drawn


def test_the_band_is_the_aa_floor_around_the_latest_and_names_the_commits_outside_it() -> None:
    runs = _runs()
    points = commit_history.points(runs, SPREADS)
    (band,) = commit_history.bands(points, runs, {("train", "GPU", 2, False): 0.10}).to_dicts()
    lo, hi = metrics.spread_band(12.0, 0.10)
    assert (band["center"], band["band_lo"], band["band_hi"]) == (12.0, lo, hi)
    assert band["outside"] == ["aaaaaaa1"]  # 10.2 is 16% from 12, 11.0 is 8.7%
    assert metrics.relative_spread([12.0, lo]) == pytest.approx(0.10)
    assert metrics.relative_spread([12.0, hi]) == pytest.approx(0.10)
    (none,) = commit_history.bands(points, runs, {}).to_dicts()
    assert none["band_lo"] is None and "no repeats at one commit of train on 2 × GPU measured" in none["floor_basis"]


def test_the_band_and_the_verdicts_hold_each_commit_to_the_floor_compare_holds_it_to() -> None:
    """The band is the latest commit's own repeats' spread where it has repeats (`evidence.aa_floor`, as `compare`
    takes a side's floor), not the kind's largest; a commit is said to differ only where compare's pair floor (the
    larger of the two sides') lets it. Before, the history took the kind's largest spread for both."""
    runs = _runs()
    points = commit_history.points(runs, SPREADS)
    kinds = {("train", "GPU", 2, False): 0.30}  # wide enough to swallow every difference here
    (by_kind,) = commit_history.bands(points, runs, kinds).to_dicts()
    assert by_kind["spread"] == 0.30 and by_kind["outside"] == [] and by_kind["differs"] == []
    own = {"r4": 0.02}  # the latest commit's run belongs to repeats 2% apart
    (band,) = commit_history.bands(points, runs, kinds, own).to_dicts()
    assert band["spread"] == 0.02 and band["floor_basis"] == "the spread of the latest commit's repeats"
    assert band["outside"] == ["aaaaaaa1", "bbbbbbb2"]
    # aaaaaaa1 has no repeats of its own: compare holds it to the kind's 30% (the larger of the two), so it is the same
    assert band["differs"] == []
    (both,) = commit_history.bands(points, runs, kinds, own | {"r1": 0.03, "r2": 0.03, "r3": 0.01}).to_dicts()
    assert both["differs"] == ["aaaaaaa1", "bbbbbbb2"]
    r3, r4 = runs.filter(pl.col("run_id") == "r3"), runs.filter(pl.col("run_id") == "r4")
    assert evidence.pair_floor(r3, r4, own | {"r3": 0.01}, kinds) == (0.02, "the spread of B's repeats at its commit")


def test_a_commit_recorded_abbreviated_and_in_full_is_one_point() -> None:
    """Early records wrote their commit in 7 digits: a run at `ccccccc` and one at the full `ccccccc3…` ran at one
    commit, one point, as `compare HASH@ccccccc` selects them both; a prefix of two full ids is left as it is."""
    full = "ccccccc3" + "0" * 32
    runs = _runs().with_columns(
        harness_commit=pl.when(pl.col("run_id") == "r3").then(pl.lit("ccccccc")).otherwise(
            pl.when(pl.col("run_id") == "r4").then(pl.lit(full)).otherwise(pl.col("harness_commit")))
    )  # fmt: skip
    points = commit_history.points(runs, SPREADS)
    assert points["harness_commit"].to_list() == ["aaaaaaa1", full]
    assert points.row(1, named=True)["run_ids"] == ["r3", "r4"]
    two = pl.Series(["ccccccc", full, "ccccccc9" + "0" * 32])
    assert commit_pairs.full_commits(two) == {}


def test_the_chart_draws_the_band_and_every_commit() -> None:
    runs = _runs()
    points = commit_history.points(runs, SPREADS)
    band = commit_history.bands(points, runs, {("train", "GPU", 2, False): 0.10}).row(0, named=True)
    spec = charts.commit_history(points, band, "steps/s").to_dict()
    marks = [layer["mark"]["type"] for layer in spec["layer"]]
    assert marks[:3] == ["rect", "rule", "text"] and "line" in marks
    data = list(spec["datasets"].values())
    assert any(rows == [{"lo": band["band_lo"], "hi": band["band_hi"], "center": 12.0, "label": "A/A band"}]
               for rows in data)  # fmt: skip
    assert any([r.get("commit") for r in rows] == ["aaaaaaa", "bbbbbbb", "ccccccc"] for rows in data)
    unbanded = charts.commit_history(points, None, "steps/s").to_dict()
    assert "rect" not in [layer["mark"]["type"] for layer in unbanded["layer"]]


def test_a_band_needs_a_positive_centre_and_a_spread_below_two() -> None:
    with pytest.raises(ValueError):
        metrics.spread_band(0.0, 0.1)
    with pytest.raises(ValueError):
        metrics.spread_band(1.0, 2.0)


def test_a_history_without_a_counted_run_is_of_the_declared_columns() -> None:
    runs = _runs().with_columns(excluded=pl.lit("stopped: failed (boom)"))
    summary = runs.select("run_id", *commit_history.KEYS, harness_dirty=pl.lit(False))
    history = commit_history.history(summary, runs, {}, SPREADS)
    assert history.points.height == history.bands.height == 0 and not history.configurations
    assert history.of_runs.schema == pl.Schema(commit_history.RUN_SCHEMA)
    assert history.of_runs["history_band"].null_count() == runs.height
    assert history.of_runs["history_excluded"].to_list() == ["stopped: failed (boom)"] * runs.height
    from generator.render import commit_history_page

    page_runs = commit_history_page.with_history(summary, history)
    assert page_runs.height == runs.height and page_runs["history_chart"].null_count() == runs.height


def test_a_commit_differs_only_outside_the_band_and_beyond_its_interval() -> None:
    runs = _runs()
    points = commit_history.points(runs, SPREADS)
    (band,) = commit_history.bands(points, runs, {("train", "GPU", 2, False): 0.05}).to_dicts()
    assert band["outside"] == ["aaaaaaa1", "bbbbbbb2"] and band["differs"] == ["aaaaaaa1", "bbbbbbb2"]
    wide = runs.with_columns(hi=pl.when(pl.col("run_id") == "r3").then(13.0).otherwise(pl.col("hi")))
    (band,) = commit_history.bands(
        commit_history.points(wide, SPREADS), wide, {("train", "GPU", 2, False): 0.05}
    ).to_dicts()
    assert band["outside"] == ["aaaaaaa1", "bbbbbbb2"] and band["differs"] == ["aaaaaaa1"]  # 11 [10.9, 13] holds 12


def test_a_history_chart_kept_in_the_site_cache_is_the_one_drawn_afresh(tmp_path, monkeypatch) -> None:
    """The run pages' history charts come from the site cache when their inputs are the same (`SPECS`), and are
    drawn again when a point changes: either way the spec is the one an uncached build draws."""
    from generator.render import commit_history_page
    from generator.store import runcache

    def history(runs: pl.DataFrame) -> list[str | None]:
        page_runs = runs.select("run_id", *commit_history.KEYS)
        summary = page_runs.with_columns(harness_dirty=pl.lit(False))
        derived = commit_history.history(summary, runs, {("train", "GPU", 2, False): 0.10}, SPREADS)
        out = commit_history_page.with_history(page_runs, derived)
        return [None if d is None else f"{c} {d}" for c, d in out.select("history_chart", "history_data").rows()]

    changed = _runs().with_columns(value=pl.when(pl.col("run_id") == "r4").then(13.0).otherwise(pl.col("value")))
    try:
        runcache.use(None)
        fresh, fresh_changed = history(_runs()), history(changed)
        assert fresh[0] is not None and fresh != fresh_changed
        runcache.use(tmp_path)
        assert history(_runs()) == fresh
        assert len(commit_history_page.SPECS.read()) == 1  # kept
        drawn = charts.commit_history
        with monkeypatch.context() as m:
            m.setattr(charts, "commit_history", lambda *a: pytest.fail("drawn again, not taken from the cache"))
            assert history(_runs()) == fresh  # from the cache
        assert charts.commit_history is drawn
        assert history(changed) == fresh_changed  # a changed point is drawn again
    finally:
        runcache.use(None)


@pytest.mark.parametrize("floors", [{("train", "GPU", 2, False): 0.10}, {}], ids=["with a band", "no band"])
def test_a_history_chart_is_the_shared_spec_with_its_own_data(floors: dict) -> None:
    """A run page holds its history chart's data and names its spec, one for every chart of its figure and band
    (`commit_history_page.script` writes them once): put together, the chart is the one drawn for it alone, and the
    page carries none of the spec (each page held its own 4 KB copy)."""
    import json

    from generator.render import commit_history_page

    runs = _runs()
    page_runs = runs.select("run_id", *commit_history.KEYS)
    summary = page_runs.with_columns(harness_dirty=pl.lit(False))
    out = commit_history_page.with_history(page_runs, commit_history.history(summary, runs, floors, SPREADS))
    name, data = out.select("history_chart", "history_data").row(0)
    assert name == ("steps/s|band" if floors else "steps/s|no band") and '"layer"' not in data and "</" not in data
    points = commit_history.points(runs, SPREADS)
    (band,) = commit_history.bands(points, runs, floors).to_dicts()
    drawn = charts.commit_history(points, band, "steps/s").to_dict(validate=False)
    shared = commit_history_page.shared_spec(name)
    whole = shared | {"datasets": json.loads(data)}
    renamed = {old: "band" if rows and "label" in rows[0] else "commits" for old, rows in drawn["datasets"].items()}
    for holder in (drawn, *drawn["layer"]):  # a dataset every layer shares is named once, at the top
        if "data" in holder:
            holder["data"] = {"name": renamed[holder["data"]["name"]]}
    # the page's numbers keep DRAWN_DIGITS significant digits (finer than the chart draws or the table prints)
    rounded = commit_history_page.drawn_values
    drawn["datasets"] = {renamed[old]: rounded(rows) for old, rows in drawn["datasets"].items()}
    assert json.loads(json.dumps(drawn, sort_keys=True)) == whole
    script = commit_history_page.script([name, None, name])
    prefix = "window.FF_HISTORY = "
    assert script.startswith(prefix) and json.loads(script[len(prefix) : -2]) == {name: shared}


def test_the_history_is_derived_once_into_results_and_the_run_pages_only_draw_it(tmp_path, monkeypatch) -> None:
    """`derive.results` holds every configuration's history (`Results.history`), so `compare` and the editions read the
    figures the run pages show: drawing the pages derives none of it again. The committed CPU records, whose fp32
    stock configuration ran at two harness commits."""
    import shutil
    from pathlib import Path

    from generator import derive, load
    from generator.derive import checks
    from generator.render import commit_history_page

    shutil.copytree(Path(__file__).resolve().parents[2] / "data" / "cpu-smoke", tmp_path / "data" / "cpu-smoke")
    results = derive.results(*checks.checked(load.load(tmp_path / "data")))
    history, runs = results.history, results.every_run.runs
    assert (
        history.of_runs.schema == pl.Schema(commit_history.RUN_SCHEMA) and history.of_runs.height == results.runs.height
    )
    assert history.points.equals(
        commit_history.points(
            runs,
            evidence.spreads(results.test_spreads, results.training_spreads["steady"]),
            results.runs.select("run_id", "harness_dirty"),
        )
    )
    assert history.bands.equals(
        commit_history.bands(history.points, runs, results.kind_floors, results.every_run.run_floors)
    )
    (band,) = history.bands.filter(pl.col("commits") == 2).to_dicts()
    key = (band["suite"], band["workload"], band["settings_hash"])
    here = history.points.filter(*(pl.col(c) == v for c, v in zip(commit_history.KEYS, key, strict=True)))
    assert history.configurations[key].equals(here)  # its chart's points, split once
    mine = history.of_runs.filter(pl.col("history_band").struct.field("commits") == 2)  # its runs, counted or not
    counted = set(history.configurations[key]["run_ids"].explode())
    assert (
        len(counted) >= 2
        and counted <= set(mine["run_id"])
        and set(mine["history_band"].struct.field("center")) == {band["center"]}
    )
    for name in ("points", "bands", "history"):
        monkeypatch.setattr(commit_history, name, lambda *a, **k: pytest.fail("the history derived again to draw it"))
    page_runs = commit_history_page.with_history(results.page_runs, history)
    drawn = page_runs.filter(pl.col("history_chart").is_not_null())
    assert (
        set(drawn["run_id"]) == set(mine["run_id"])
        and drawn["history_band"].to_list() == mine["history_band"].to_list()
    )


def test_one_run_alone_without_a_pooled_spread_is_unreplicated_as_compare_says() -> None:
    """A commit of one run whose engine has no pooled spread on its hardware has no interval, as `compare` gives
    none for that side (`evidence.interval`: nothing says where a second run lands); two runs keep their hull."""
    points = commit_history.points(_runs(), {})
    assert points.select("lo", "hi").rows() == [(9.8, 10.5), (None, None), (None, None)]


@pytest.fixture(scope="module")
def committed() -> tuple[object, object]:
    """The committed data's `Results` and the `compare.Dataset` made of them, built once."""
    from pathlib import Path

    from generator import derive, load
    from generator.commands.compare import data
    from generator.derive import checks

    root = Path(__file__).resolve().parents[2] / "data"
    results = derive.results(*checks.checked(load.load(root)))
    return results, data.dataset(root, results)


def test_each_commit_of_a_history_has_the_interval_compare_gives_it(committed: tuple) -> None:
    """For the configurations of the committed data that ran at the most harness commits, each commit's point is the
    figure and interval `fairfight compare HASH@COMMIT HASH@LATEST` prints for that side (`evidence.of_runs`, widened
    by the engine's pooled spread), and the commits the history calls faster or slower are those compare does (where
    their figure lies outside the A/A band). The history once took its runs' hull alone: 291 of 310 points differed."""
    from generator.commands.compare import rows

    results, ds = committed
    history = results.history
    several = history.bands.filter(pl.col("commits") >= 3).sort("commits", *commit_history.KEYS, descending=True)
    assert several.height >= 3
    checked = 0
    for band in several.head(4).iter_rows(named=True):
        key = tuple(band[k] for k in commit_history.KEYS)
        points = history.configurations[key].filter(pl.col("harness_commit") != "unknown")
        latest = points.filter(pl.col("latest")).row(0, named=True)
        for point in points.filter(~pl.col("latest")).iter_rows(named=True):
            hash_ = key[2]
            report = rows.compare(f"{hash_}@{point['harness_commit']}", f"{hash_}@{latest['harness_commit']}", ds)
            (row,) = [r for r in report.rows if (r["suite"], r["workload"]) == key[:2]]
            for side, shown in (("a", point), ("b", latest)):
                said = f"{hash_} at {shown['harness_commit'][:7]}"
                assert row[side]["runs"] == shown["run_ids"] or set(row[side]["runs"]) == set(shown["run_ids"]), said
                assert (row[side]["value"], row[side]["lo"], row[side]["hi"]) == pytest.approx(
                    (shown["value"], shown["lo"], shown["hi"]), rel=1e-12
                ), said
            differs = point["harness_commit"] in band["differs"]
            assert differs == (row["verdict"] in ("faster", "slower")), (hash_, point["harness_commit"][:7])
            assert not differs or point["harness_commit"] in band["outside"]
            checked += 1
    assert checked >= 6


# --- the history says what `compare` says, for every commit against the latest -----------------------------------
HASH = "abcdef012345"
"""A settings hash `compare` reads as one (hex): the synthetic configuration's."""
SHA1 = "c" * 7 + "1" + "0" * 32, "c" * 7 + "2" + "0" * 32
"""Two full ids that begin with one 7-digit form, `ccccccc`."""


def _with(commits: dict[str, str], runs: pl.DataFrame | None = None) -> pl.DataFrame:
    """`_runs()` (or `runs`) with the synthetic configuration's hash and each run's commit from `commits`."""
    runs = _runs() if runs is None else runs
    recorded = pl.col("run_id").replace_strict(commits, default=pl.col("harness_commit"))
    return runs.with_columns(settings_hash=pl.lit(HASH), harness_commit=recorded)


def _dataset(runs: pl.DataFrame, run_floors: dict, kind_floors: dict) -> object:
    """The `compare.Dataset` of a synthetic runs frame (`Results.every_run.runs`'s columns, the rest at defaults)."""
    from pathlib import Path

    from generator.commands import compare
    from generator.derive import runs as every

    defaults = {
        "settings": pl.lit("{}"), "engine_version": pl.lit("1"), "status": pl.lit("ok"), "sha256": pl.lit(""),
        "tokens_per_step": pl.lit(None, pl.Float64), "tokens_per_s": pl.lit(None, pl.Float64),
        "tokens_per_s_lo": pl.lit(None, pl.Float64), "tokens_per_s_hi": pl.lit(None, pl.Float64),
        "note": pl.lit(None, pl.String), "busy_host": pl.lit(False), "others_cpu_cores": pl.lit(0.0),
        "cpu_cores": pl.lit(1), "gpu_processes": pl.lit(0),
    }  # fmt: skip
    full = runs.with_columns(**{c: e for c, e in defaults.items() if c not in runs.columns}).select(every.COLUMNS)
    return compare.Dataset(Path("data"), full, [], run_floors, kind_floors, [], [], SPREADS)


def _agrees(runs: pl.DataFrame, run_floors: dict | None = None, kind_floors: dict | None = None) -> dict:
    """Assert that each point of the one configuration of `runs` holds the runs `compare HASH@COMMIT` selects at its
    commit, and that a commit is among the band's `differs` exactly where `compare HASH@COMMIT HASH@LATEST` calls it
    faster or slower; the band."""
    from generator.commands import compare

    run_floors, kind_floors = run_floors or {}, kind_floors or {}
    ds = _dataset(runs, run_floors, kind_floors)
    points = commit_history.points(runs, SPREADS)
    (band,) = commit_history.bands(points, runs, kind_floors, run_floors).to_dicts()
    latest = points.filter(pl.col("latest")).row(0, named=True)["harness_commit"]
    for point in points.iter_rows(named=True):
        at = f"{HASH}@{point['harness_commit']}"
        side = compare.select(at, ds).runs.filter(pl.col("excluded").is_null())
        assert sorted(side["run_id"]) == sorted(point["run_ids"]), at
        if not point["latest"]:
            (row,) = compare.compare(at, f"{HASH}@{latest}", ds).rows
            assert (point["harness_commit"] in band["differs"]) == (row["verdict"] in ("faster", "slower")), (at, row)
    return band


@pytest.mark.parametrize(
    "commits",
    [
        {"r1": SHA1[0], "r2": SHA1[0], "r3": "ccccccc", "r4": SHA1[1], "r5": SHA1[1]},
        {"r1": SHA1[0], "r2": SHA1[0], "r3": "cccccc", "r4": SHA1[1], "r5": SHA1[1]},
        {"r3": "cccccc", "r4": SHA1[1], "r5": SHA1[1]},
        {"r3": "ddddddd", "r4": "ddddddd4" + "0" * 56, "r5": "ddddddd4" + "0" * 56},
        {"r3": "ccccccc", "r4": SHA1[1], "r5": SHA1[1]},
    ],
    ids=[
        "a 7-digit form that begins two full ids",
        "a prefix of two commits",
        "a 6-digit form",
        "a SHA-256 id and its 7 digits",
        "merged",
    ],
)
def test_compare_at_each_commit_of_the_history_selects_that_point_s_runs(commits: dict) -> None:
    """`HASH@COMMIT` at a point's commit selects the point's runs, however its records wrote the commit: a 7-digit
    form that begins two full ids is neither (compare took it for both, the history for none); a prefix that begins two
    commits' ids names no one commit (compare pooled both into one side); a 6-digit form is shorter than git abbreviates
    to (the history merged it, compare did not); a 64-digit SHA-256 id (`runners.provenance.FULL_COMMIT`) is whole as
    a 40-digit one is (compare refused it, and the history never merged its 7 digits)."""
    _agrees(_with(commits), kind_floors={("train", "GPU", 2, False): 0.02})


def test_a_prefix_of_two_commits_narrows_a_configuration_to_neither() -> None:
    """`HASH@cccc` where two of the configuration's commits begin `cccc` is ambiguous, as `@cccc` is: it pooled both
    commits' runs into one side, a figure no point of the history (one commit each) shows."""
    from generator.commands import compare

    ds = _dataset(_with({"r1": SHA1[0], "r2": SHA1[0], "r4": SHA1[1], "r5": SHA1[1]}), {}, {})
    with pytest.raises(compare.UsageError, match="'cccc' is ambiguous: it begins 2 commits"):
        compare.select(f"{HASH}@cccc", ds)
    assert compare.select(f"{HASH}@ccccccc1", ds).runs["run_id"].to_list() == ["r1", "r2"]


def test_with_no_floor_measured_a_commit_compare_calls_faster_or_slower_differs() -> None:
    """Where no repeats of the kind were measured there is no band (a floor of 0), but `compare` still decides by
    the ratio's interval: 10.2 [9.8, 10.5] against 12.0 is slower whatever the floor. The history said nothing
    differed."""
    band = _agrees(_with({}))
    assert band["band_lo"] is None and band["differs"] == ["aaaaaaa1", "bbbbbbb2"]


def test_the_verdict_is_compare_s_to_the_last_digit() -> None:
    """The history decides B = the latest against A = the commit, as `compare HASH@COMMIT HASH@LATEST` does: taken the
    other way round the ratio's interval is the reciprocal in exact arithmetic, not in floating point, and here its
    end lands on 1 one way (0.9999999999999999, compare: slower) and not the other (1.0: the same)."""
    a = 57.42993405376164, 54.58554696438782, 60.214855775386816
    b = 51.1084913679612, 47.821141913477184, 56.76506038326132
    runs = _with({"r1": "a" * 40, "r4": "b" * 40}).filter(pl.col("run_id").is_in(["r1", "r4"]))
    points = pl.DataFrame(
        [{"suite": "s", "workload": "w", "settings_hash": HASH, "kind": "train", "figure": "steps/s", "variant": "v",
          "harness_commit": c * 40, "dirty": False, "first_started_at": None, "order": i, "runs": 1, "run_ids": [r],
          "value": x, "lo": lo, "hi": hi, "latest": i == 1}
         for i, (c, r, (x, lo, hi)) in enumerate((("a", "r1", a), ("b", "r4", b)))],
        schema=commit_history.POINT_SCHEMA,
    )  # fmt: skip
    floor = 0.01
    ratio_lo, ratio_hi = metrics.ratio_interval(*a, *b)[1:]
    assert metrics.compare_verdict(a[0], b[0], ratio_lo, ratio_hi, floor) == "slower"  # as compare's row has it
    (band,) = commit_history.bands(points, runs, {("train", "GPU", 2, False): floor}).to_dicts()
    assert band["differs"] == ["a" * 40]


def test_a_commit_on_the_band_s_edge_is_not_outside_it() -> None:
    """A commit no further from the latest than the floor is inside the band, as `compare` holds it the same
    (`metrics.relative_spread` within the floor), not outside by the last digit of `spread_band`'s division: in the
    committed data a configuration's two runs (05602451b86a, llama-8b-pp512-d0) made its floor, so the older one
    lies exactly on the band's edge, and the page said it lay outside, "further than identical repeats moved"."""
    old, new = 19546.380430286077, 16557.54158021299
    runs = _with({"r1": "a" * 40, "r4": "b" * 40}).filter(pl.col("run_id").is_in(["r1", "r4"]))
    runs = runs.with_columns(
        value=pl.when(pl.col("run_id") == "r1").then(old).otherwise(new), lo=pl.lit(None), hi=pl.lit(None)
    )
    spread = metrics.relative_spread([old, new])
    band = _agrees(runs, run_floors={"r1": spread, "r4": spread})
    assert band["spread"] == spread and band["outside"] == []


@pytest.mark.parametrize(
    ("floor", "latest", "why"),
    [(2.5, 12.0, "no two positive figures are that far apart"), (0.05, 0.0, "at or below zero")],
    ids=["spread of 200% or more", "latest at zero"],
)
def test_no_band_says_why(floor: float, latest: float, why: str) -> None:
    """The page prints `floor_basis` alone where there is no band: it says why there is none, not "…, and no band"
    after a spread that was measured."""
    runs = _with({}).with_columns(
        value=pl.when(pl.col("run_id") == "r4").then(latest).otherwise(pl.col("value")),
        lo=pl.when(pl.col("run_id") == "r4").then(None).otherwise(pl.col("lo")),
        hi=pl.when(pl.col("run_id") == "r4").then(None).otherwise(pl.col("hi")),
    )
    points = commit_history.points(runs, {})  # no pooled spread: a figure at zero has no logarithm to widen
    (band,) = commit_history.bands(points, runs, {("train", "GPU", 2, False): floor}).to_dicts()
    assert band["band_lo"] is None and why in band["floor_basis"], band["floor_basis"]


def test_a_commit_that_moved_further_than_its_own_repeats_differs() -> None:
    """Two runs at each of two commits, each pair within 1% of itself, the newer 20% faster with tight intervals:
    the older commit differs from the latest. A run's A/A repeats are the runs of its configuration at its own commit
    (`runs.at_commit_floors`: `ladder.repeats` and `training_boards.repeats` by the harness commit); pooled across
    both commits they spread 19%, and neither `compare` nor the history could call the change a difference (so it
    was: in the committed data 36 of the 37 configurations measured at two or more commits took their band from such
    a group, 31 with a single run at the latest commit whose "repeats" were other commits' runs)."""
    from generator.derive import ladder
    from generator.derive import runs as every

    rows = {"r1": ("a" * 40, 10.0), "r2": ("a" * 40, 10.1), "r3": ("b" * 40, 12.0), "r4": ("b" * 40, 12.1)}
    runs = (
        _with({r: c for r, (c, _) in rows.items()})
        .filter(pl.col("run_id").is_in(list(rows)))
        .with_columns(value=pl.col("run_id").replace_strict({r: v for r, (_, v) in rows.items()}))
        .with_columns(lo=pl.col("value") * 0.999, hi=pl.col("value") * 1.001)
    )
    pooled = every.floors(ladder.repeats(runs))[0]
    assert pooled["r4"] == pytest.approx(metrics.relative_spread([10.0, 10.1, 12.0, 12.1]))
    run_floors, kind_floors = every.floors(ladder.repeats(runs, by=("harness_commit",)))
    assert run_floors["r1"] == pytest.approx(metrics.relative_spread([10.0, 10.1]))
    assert kind_floors == {("train", "GPU", 2, False): max(run_floors.values())}
    band = _agrees(runs, run_floors=run_floors, kind_floors=kind_floors)
    assert band["differs"] == ["a" * 40]


def test_every_floor_of_the_committed_data_is_of_repeats_at_one_commit(committed: tuple) -> None:
    """Each run a floor is recorded for (`EveryRun.run_floors`, what `compare` and the history hold a side to) has a
    repeat at its own harness commit: another counted run of its configuration, hardware and host condition recorded
    at that commit. Before, 36 of the 37 configurations measured at two or more commits had floors of groups that
    spanned commits. And the kind floors are the largest of those spreads, nothing else."""
    from generator.derive import commit_pairs

    results, _ = committed
    every = results.every_run
    one = commit_pairs.full_commits(every.runs["harness_commit"])
    runs = every.runs.filter(pl.col("excluded").is_null()).with_columns(
        commit=pl.col("harness_commit").replace(one), shared=pl.col("shared_host").fill_null(False)
    )
    keys = ["suite", "workload", "settings_hash", "accelerator", "accelerator_count", "shared", "commit"]
    mates = runs.group_by(keys).agg(pl.col("run_id"))
    with_mates = {r for ids in mates["run_id"] for r in ids if len(ids) >= 2}
    floored = set(every.run_floors)
    assert floored and floored <= with_mates, sorted(floored - with_mates)[:5]
    spanning = runs.group_by(keys[:-1]).agg(pl.col("commit").n_unique().alias("commits")).filter(pl.col("commits") > 1)
    assert spanning.height >= 10  # configurations at several commits exist, and none pools them into a floor
    assert max(results.kind_floors.values()) == max(every.run_floors.values())
