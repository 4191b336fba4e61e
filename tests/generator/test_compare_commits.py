"""`compare @A @B`: every configuration measured at both harness commits, one row each (as `asv compare REV1 REV2`),
exit 1 only for slowdowns (and figures B lost); `--only-changed`; a commit prefix alone is a selector; an ambiguous
prefix lists a few candidates of each kind. On the committed runs of two commits, copied into a temporary folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from generator import derive
from generator.commands import compare
from generator.derive import commit_pairs
from tests.generator.test_compare import _cli

ROOT = Path(__file__).resolve().parents[2]
A, B = "87a441d", "ddb5cf6"
"""Two harness commits of the committed H200 data that measured some MLX configurations each (pp/tg tests)."""


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory, committed_results: derive.Results) -> Path:
    """Every committed result file made at A or B (compare's runs are the site's `every_run`: test_compare.py)."""
    commit = pl.col("harness_commit")
    runs = committed_results.every_run.runs.filter(commit.str.starts_with(A) | commit.str.starts_with(B))
    data = tmp_path_factory.mktemp("commits") / "data"
    for suite, run_id in runs.select("suite", "run_id").iter_rows():
        (data / suite).mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "data" / suite / f"{run_id}.parquet", data / suite)
    return data


@pytest.fixture(scope="module")
def ds(data: Path) -> compare.Dataset:
    return compare.load_dataset(data)


def _configurations(ds: compare.Dataset, commit: str) -> set[tuple[str, str, str]]:
    at = ds.runs.filter(pl.col("harness_commit").str.starts_with(commit) & (pl.col("origin") != "retraction"))
    return set(at.select(compare.TEST_KEYS).unique().iter_rows())


def test_every_configuration_measured_at_both_commits_is_one_row(ds: compare.Dataset) -> None:
    report = compare.compare(f"@{A}", f"@{B}", ds)
    assert report.a.what == report.b.what == "commit"
    both = _configurations(ds, A) & _configurations(ds, B)
    keys = [(r["suite"], r["workload"], r["settings_hash"]) for r in report.rows]
    assert len(both) >= 5 and sorted(keys) == sorted(both)  # each once, and nothing else
    assert len(report.only_in_a) == len(_configurations(ds, A) - both)
    lost = [r for r in report.rows if r["lost"]]
    assert lost and report.exit_status == 1  # B lost figures A had: that fails, as a slowdown does
    assert all(compare.fails(r) == (r["lost"] or (r["verdict"] == "slower" and r["beyond_threshold"]))
               for r in report.rows)  # fmt: skip
    back = compare.compare(f"@{B}", f"@{A}", ds)  # the other way round: B gained them, and nothing is slower
    assert len(back.rows) == len(report.rows) and not any(r["lost"] for r in back.rows)
    assert not any(r["verdict"] == "slower" and r["beyond_threshold"] for r in back.rows) and back.exit_status == 0


def test_a_commit_prefix_alone_is_a_selector_and_only_changed_hides_the_rest(
    data: Path, ds: compare.Dataset, capsys: pytest.CaptureFixture[str]
) -> None:
    assert compare.select(A, ds).what == "commit"  # no run id or hash begins with it
    full = commit_pairs.matching(A, ds.runs)[0][0]
    assert compare.select(f"@commit={full}", ds).runs.height == compare.select(f"@{A}", ds).runs.height
    status, out, _ = _cli(capsys, A, B, "--data-dir", str(data), "--only-changed", "--format", "json")
    report = json.loads(out)
    assert status == report["exit_status"] == 1
    assert report["rows"] and all(r["lost"] or r["beyond_threshold"] for r in report["rows"])
    assert report["rows_not_shown"] == len(compare.compare(f"@{A}", f"@{B}", ds).rows) - len(report["rows"]) > 0
    assert "unchanged not shown" in report["summary"]


def test_bad_and_ambiguous_commits_exit_2_and_list_candidates_briefly(
    data: Path, ds: compare.Dataset, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = _cli(capsys, "@1234567", f"@{B}", "--data-dir", str(data))
    assert status == 2 and not out and "no run in" in err and "harness commit '1234567'" in err and B in err
    status, _, err = _cli(capsys, "@", "@", "--data-dir", str(data))
    assert status == 2 and "a commit is 4 to 64 hex digits" in err
    with pytest.raises(compare.UsageError) as e:
        compare.select("2026", ds)  # every run id begins with the year
    message = str(e.value)
    assert "is ambiguous: it begins" in message and "more)" in message and len(message) < 400
    with pytest.raises(compare.UsageError, match="A is a commit, B a run"):
        compare.compare(f"@{A}", ds.runs["run_id"][0], ds)


def test_list_names_the_commits_and_the_pairs_that_share_configurations(
    data: Path, ds: compare.Dataset, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = _cli(capsys, "--list", "--data-dir", str(data), "--format", "json")
    listed = json.loads(out)
    assert status == 0
    commits = [c["commit"] for c in listed["commits"]]
    assert len(commits) == 2 and {c[:7] for c in commits} == {A, B}
    (pair,) = listed["pairs"]  # the only pair, and it shares what compare @A @B has a row for
    assert pair["configurations"] == len(compare.compare(f"@{pair['a']}", f"@{pair['b']}", ds).rows) >= 5
    status, out, _ = _cli(capsys, "--list", "--data-dir", str(data))
    assert status == 0 and "2 harness commits with runs in" in out and "1 of 1 pairs share configurations" in out
    assert f"@{pair['a'][:12]} @{pair['b'][:12]}: {pair['configurations']} configurations" in out
    for argv in (("--list", A), (A,)):  # --list with a selector, or one selector alone
        status, _, err = _cli(capsys, *argv, "--data-dir", str(data))
        assert status == 2 and "give A and B to compare, or --list" in err


def test_one_rule_says_which_recorded_forms_are_one_commit() -> None:
    """`commit_pairs.full_commits`, which the history across commits, `@COMMIT` and `HASH@COMMIT` all read commits by:
    a form of 7 or more digits that begins exactly one full id (40 digits, or a SHA-256 repository's 64) is that
    commit; a form two ids begin, a form shorter than git abbreviates to, and anything that is not hex are their own.
    `@COMMIT` groups the forms so (before, a form two ids begin went to whichever came first, and forms of any length
    were grouped), and a form recorded as given names its own commit even where it begins others."""
    one, two = "c" * 7 + "1" + "0" * 32, "c" * 7 + "2" + "0" * 32
    sha256 = "d" * 7 + "4" + "0" * 56
    assert commit_pairs.full_commits(["ccccccc", one]) == {"ccccccc": one}
    assert commit_pairs.full_commits(["ccccccc", one, two]) == {}
    assert commit_pairs.full_commits(["cccccc", one]) == {}
    assert commit_pairs.full_commits(["ddddddd", sha256]) == {"ddddddd": sha256}
    assert commit_pairs.full_commits([None, "", "unknown", one]) == {}
    assert commit_pairs.full_commits(["ccccccc", "ccccccc1", one]) == {"ccccccc": one, "ccccccc1": one}
    recorded = ["ccccccc", one, two, "cccccc", "ddddddd", sha256]
    runs = pl.DataFrame(
        {"harness_commit": recorded, "started_at": list(range(len(recorded))), "origin": ["measured"] * len(recorded)}
    )
    assert sorted(commit_pairs.commits(runs)) == sorted([["ccccccc"], [one], [two], ["cccccc"], [sha256, "ddddddd"]])
    assert commit_pairs.matching("ccccccc", runs) == [["ccccccc"]]
    assert commit_pairs.matching(one, runs) == [[one]]  # not the 7 digits two ids begin
    assert commit_pairs.matching(sha256, runs) == [[sha256, "ddddddd"]]
    assert len(commit_pairs.matching("cccc", runs)) == 4  # a prefix of four commits: compare says it is ambiguous
    orphan = pl.DataFrame({"harness_commit": ["eeeeeee"], "started_at": [0], "origin": ["measured"]})
    assert commit_pairs.matching("eeeeeee5" + "0" * 32, orphan) == [["eeeeeee"]]  # nothing recorded says otherwise
