"""B against A, as `asv compare` and `pytest-benchmark compare` do for their results:

    fairfight compare A B [--data-dir data] [--threshold 5%] [--fail-on slower|faster|both] [--only-changed]
                          [--format text|json|csv|md]                 (or python -m generator.commands.compare)

A and B are each a run, a configuration (pooling its runs), an edition or a harness commit (every configuration in
both: `compare @A @B`, selected by generator/derive/commit_pairs.py). Each
row holds the figure its kind of test is ranked by on the boards, A's and B's with their intervals (a run's 95%
interval; a configuration's median of its runs' figures, from its runs' lowest low to highest high), B/A with the
interval those give (`metrics.ratio_interval`), the A/A floor (the spread between identical runs, or the largest of
its kind on that hardware, as the boards widen one-run rows: `Results.kind_floors`) and the verdict
(`metrics.compare_verdict`). The runs, their figures and the floors are the site's own `derive.results`
(`derive.runs.every_run`), and only finished, verified, unretracted runs count (the boards' own reasons, less those
about a board's shape). This module selects, pairs and prints.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from generator import derive, load
from generator.commands import compare_cache, compare_format
from generator.derive import checks, commit_pairs, configurations, evidence, serving
from generator.load import editions
from generator.store import runcache
from runners import arguments, formats, metrics, schema

SELECTORS = """\
A and B are each one of:
  RUN_ID            a run: its id, or a unique prefix of it (a result file's path works too)
  HASH              a configuration: its 12-hex settings hash (as on the boards, or a unique prefix), pooling its
                    finished, verified runs; the engine version is part of the hash (another version is another
                    configuration). Narrow it with one or more of:
    HASH@COMMIT           only its runs made at a harness commit (a prefix: HASH@c0ffee1; also @commit=c0ffee1)
    HASH@workload=NAME    only one of the tests it ran (an inference configuration runs several)
  edition:NAME      every configuration of edition NAME (data/editions/NAME.json) that the other side also has
  @COMMIT           every configuration measured at harness commit COMMIT (a hex prefix; a prefix alone works
                    when it names no run or hash): `compare @A @B` compares every configuration measured at both
                    commits, one row each, as `asv compare A B` does

Rows pair A and B on their suite and workload (editions and commits: and configuration). Only finished, verified,
unretracted runs count; a row whose side has none says why. "same": the interval of B/A holds 1, or A and B are no
further apart than identical runs of the configurations compared (the A/A floor).

exit status: 0 when no row fails; 1 when a row is slower beyond --threshold (--fail-on faster: faster beyond it;
--fail-on both: either) or B has no figure where A has one (as asv counts a benchmark that started failing); 2 for
a usage error."""


class UsageError(Exception):
    """A selector or a pair that cannot be compared: exit status 2, with what to do."""


def threshold(text: str) -> float:
    """A relative change: `5%` or `0.05`."""
    t = text.strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: a relative change, as 5% or 0.05") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a relative change of 0 or more, as 5% or 0.05")
    if not t.endswith("%") and value >= 1:
        raise argparse.ArgumentTypeError(f"{text!r}: write {t}% for {t} percent, or a fraction below 1 (0.05)")
    return value


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    if parser.description is None:
        parser.description = "Compare two runs, configurations or editions: B against A."
    if parser.epilog is None:
        parser.epilog = SELECTORS
        parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument(
        "a", metavar="A", nargs="?", help="the baseline: RUN_ID, HASH[@COMMIT][@workload=NAME], @COMMIT or edition:NAME"
    )
    parser.add_argument("b", metavar="B", nargs="?", help="compared with A: the same forms")
    parser.add_argument(
        "--list",
        action="store_true",
        help="instead of comparing, list the harness commits with runs and the pairs of them that share "
        "configurations (what `compare @A @B` has rows for)",
    )
    arguments.add_data_dir(parser)
    parser.add_argument(
        "--threshold",
        type=threshold,
        default="5%",
        metavar="CHANGE",
        help="a slower row fails (exit 1) when B/A is further than this from 1 (default: 5%%; or 0.05)",
    )
    parser.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default="slower",
        help="which rows beyond the threshold fail (exit 1): slower (the default), faster, or both",
    )
    parser.add_argument(
        "--only-changed", action="store_true", help="print only the rows beyond the threshold or with one side's figure"
    )
    formats.add_format_arg(parser, "the comparison")
    parser.add_argument("--json", dest="format", action="store_const", const="json", help="the same as --format json")


# --- the data: one row per run with the figure its kind is ranked by (`derive.runs.every_run`) -------------------

TEST_KEYS = configurations.KEYS
SIDE_KEYS = (*TEST_KEYS, "engine", "kind", "accelerator", "accelerator_count")
"""One side of a row is one configuration of one engine, kind of test and hardware: one spread widens it."""


@dataclass(frozen=True, slots=True)
class Dataset:
    data_dir: Path
    runs: pl.DataFrame
    """One row per loaded run (`derive.runs.COLUMNS`): `value`, `lo`, `hi` its figure; `excluded` why it does not
    count."""
    rejected: list[load.Rejected]
    run_floors: dict[str, float]
    """run_id -> the A/A spread of the repeats it belongs to."""
    kind_floors: dict[tuple[str, str, int, bool], float]
    """(kind, accelerator, count, shared host) -> the largest A/A spread of that kind on that hardware."""
    editions: list[editions.Edition]
    bad_editions: list[load.Rejected]
    spreads: dict[tuple[object, ...], metrics.PooledSpread] = field(default_factory=dict)
    """The boards' pooled between-run spreads, by (engine, kind, accelerator, count) (training's kind: "train"): a
    side's interval is its board row's (`evidence.interval`)."""


def load_dataset(data_dir: Path) -> Dataset:
    """Load and check as the site build does, and take the runs and floors from the same `derive.results`; with a
    cache folder (`runcache.command_folder`), the table the last build or compare of the same data kept
    (`compare_cache`), when its key still holds."""
    folder = runcache.command_folder()
    shown, data_dir = Path(data_dir), load.canonical(data_dir)  # loaded as the site loads it, named as it was given
    found, bad = editions.scan(data_dir)
    data_key = compare_cache.key(data_dir) if folder is not None else ""
    kept = compare_cache.read(folder, data_key) if folder is not None else None
    # a file rejected for a start in the future may be accepted now: the table is derived again, as cold
    if kept is not None and any(schema.changes_with_time(p) for _, problems in kept[1]["rejected"] for p in problems):
        kept = None
    if kept is not None:
        runs, rest = kept
        return Dataset(
            shown, runs, [load.Rejected(p, tuple(problems)) for p, problems in rest["rejected"]],
            rest["run_floors"], {tuple(k): v for k, v in rest["kind_floors"]}, found, bad,
            {tuple(k): metrics.PooledSpread(*v) for k, v in rest.get("spreads", [])},
        )  # fmt: skip
    runcache.use(folder)
    loaded = load.load(data_dir, folder, lean=True, per_file=serving.as_read())
    serving.remember(loaded.per_file)
    results = derive.results(*checks.checked(editions.audited(loaded, data_dir)[0]))
    made = dataset(shown, results, found, bad)
    if folder is not None:
        keep(folder, data_key, made)
    return made


def keep(folder: Path, data_key: str, made: Dataset) -> None:
    """Keep `made` for the next `compare` of the same data (`compare_cache`; the site build keeps its own too)."""
    rest = {
        "rejected": [[r.path, list(r.problems)] for r in made.rejected],
        "run_floors": made.run_floors,
        "kind_floors": [[list(k), v] for k, v in made.kind_floors.items()],
        "spreads": [[list(k), [s.sd, s.df, s.groups]] for k, s in made.spreads.items()],
    }
    compare_cache.save(folder, data_key, made.runs, rest)


def dataset(
    data_dir: Path,
    results: derive.Results,
    found: list[editions.Edition] | None = None,
    bad: list[load.Rejected] | None = None,
) -> Dataset:
    """What compare selects from, out of a site's `Results`: nothing is derived here."""
    every = results.every_run
    spreads: dict[tuple[object, ...], metrics.PooledSpread] = dict(results.test_spreads.items())
    spreads |= {
        (engine, "train", acc, count): s for (engine, acc, count), s in results.training_spreads["steady"].items()
    }
    return Dataset(
        data_dir, every.runs, results.rejected, every.run_floors, results.kind_floors, found or [], bad or [],
        spreads,
    )  # fmt: skip


# --- what A and B select ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Side:
    text: str
    """As typed."""
    what: str
    """run, configuration or edition."""
    label: str
    runs: pl.DataFrame
    """The selected runs (rows of `Dataset.runs`), counted or not."""
    problems: tuple[str, ...] = ()
    """An edition's runs whose files are missing or changed (left out)."""


_HEX = re.compile(r"[0-9a-f]{4,40}")


def select(text: str, ds: Dataset) -> Side:
    """The runs `text` names (see `SELECTORS`), or a UsageError that says what to do."""
    if text.startswith("edition:"):
        return _edition(text, text.removeprefix("edition:"), ds)
    if text.startswith("@"):
        return _commit(text, text[1:].removeprefix("commit="), ds)
    base, *narrowing = text.split("@")
    base = arguments.run_id(base)
    ids = ds.runs["run_id"]
    runs = arguments.matching_runs(base, ids)  # the one rule every command reads a run id by (retract too)
    if runs == [base]:
        matches = [("run", base)]
    else:
        rejected = [r for r in ds.rejected if Path(r.path).stem == base]
        if rejected:
            path, problem = rejected[0].path, rejected[0].problems[0]
            raise UsageError(f"{base}: its file {path} was rejected ({problem}); a rejected file is not compared")
        matches = [("run", r) for r in runs]
        if _HEX.fullmatch(base.lower()):
            hashes = ds.runs["settings_hash"].unique().sort()
            matches += [("configuration", h) for h in hashes.filter(hashes.str.starts_with(base.lower()))]
        if not narrowing:  # a commit prefix alone selects every configuration measured there
            matches += [("commit", group[0][:12]) for group in commit_pairs.matching(base, ds.runs)]
    if not matches:
        raise UsageError(f"{base!r}: no run id, configuration hash or harness commit {_close(base, ds)}")
    if len(matches) > 1:
        raise UsageError(commit_pairs.listing(base, matches))
    what, key = matches[0]
    if what == "commit":
        return _commit(text, base, ds)
    if what == "configuration":
        return _configuration(text, key, narrowing, ds)
    if narrowing:
        settings_hash = ds.runs.filter(pl.col("run_id") == key)["settings_hash"][0]
        raise UsageError(
            f"{text!r}: '@' narrows a configuration; {key} is one run (its configuration: {settings_hash})"
        )
    run = ds.runs.row(ids.to_list().index(key), named=True)
    label = f"run {key}  ({_describe(run)} · commit {(run['harness_commit'] or '?')[:7]} · {run['status']})"
    return Side(text, "run", label, ds.runs.filter(pl.col("run_id") == key))


def _close(text: str, ds: Dataset) -> str:
    """Run ids and hashes that hold `text`, or look like it: what to say after "no such run"."""
    names = [*ds.runs["run_id"], *ds.runs["settings_hash"].unique().sort()]
    holding = [n for n in names if text.lower() in n.lower()]
    close = holding[:8] or difflib.get_close_matches(text, names, n=5, cutoff=0.5)
    if close:
        return f"in {ds.data_dir}/; close: " + ", ".join(close)
    return f"in {ds.data_dir}/ ({ds.runs.height} runs; run ids are the result files' names, hashes are on the boards)"


def _describe(run: dict[str, Any]) -> str:
    """What ran: variant, engine and version, hardware."""
    engine, hardware = f"{run['engine']} {run['engine_version']}", f"{run['accelerator_count']} × {run['accelerator']}"
    return f"{run['variant']} · {engine} · {hardware}"


def _configuration(text: str, settings_hash: str, narrowing: list[str], ds: Dataset) -> Side:
    runs = ds.runs.filter((pl.col("settings_hash") == settings_hash) & (pl.col("origin") != "retraction"))
    said = []
    for part in narrowing:
        key, _, value = part.partition("=") if "=" in part else ("commit", "", part)
        if key == "commit" and _HEX.fullmatch(value.lower()):
            narrowed = runs.filter(pl.col("harness_commit").str.starts_with(value.lower()))
            choices = runs.group_by("harness_commit").len().sort("harness_commit")
            listed = ", ".join(f"{(c or '?')[:7]} ({n} run{'s' * (n > 1)})" for c, n in choices.iter_rows())
            said.append(f"at commit {value}")
        elif key == "workload" and value:
            narrowed = runs.filter(pl.col("workload") == value)
            listed = ", ".join(runs["workload"].unique().sort())
            said.append(f"on {value}")
        else:
            raise UsageError(
                f"{text!r}: narrow a configuration with @COMMIT (a harness commit's hex prefix, at least 4 digits) or "
                "@workload=NAME; the engine version is part of the hash"
            )
        if not narrowed.height:
            raise UsageError(f"{text!r}: configuration {settings_hash} has no run {said[-1]}; it has: {listed}")
        runs = narrowed
    hardware = runs.select("accelerator", "accelerator_count").unique().sort("accelerator_count", "accelerator")
    if hardware.height > 1:  # one side is one configuration on one hardware: one spread widens it (`SIDE_KEYS`)
        where = "; ".join(
            f"{n} × {a}: " + ", ".join(runs.filter((pl.col("accelerator") == a) & (pl.col("accelerator_count") == n))
                                       ["run_id"].head(3).to_list())
            for a, n in hardware.iter_rows()
        )  # fmt: skip
        raise UsageError(
            f"{text!r}: configuration {settings_hash} ran on {hardware.height} kinds of hardware, which one figure "
            f"cannot pool; compare runs of one of them by their ids ({where})"
        )
    run = runs.row(runs.height - 1, named=True)
    scope = f" {' '.join(said)}" if said else ""
    label = f"configuration {settings_hash}{scope}  ({_describe(run)} · {runs.height} run{'s' * (runs.height > 1)})"
    return Side(text, "configuration", label, runs)


def _commit(text: str, prefix: str, ds: Dataset) -> Side:
    """Every run made at one harness commit (`commit_pairs`)."""
    groups = commit_pairs.matching(prefix, ds.runs)
    if not groups:
        known = [g[0][:12] for g in commit_pairs.commits(ds.runs)]
        hint = f"the latest: {', '.join(reversed(known[-5:]))}" if known else "no run names one"
        how = "" if commit_pairs.HEX.fullmatch(prefix.lower()) else " (a commit is 4 to 40 hex digits)"
        raise UsageError(f"{text!r}: no run in {ds.data_dir}/ was made at harness commit {prefix!r}{how}; {hint}")
    if len(groups) > 1:
        raise UsageError(commit_pairs.listing(prefix, (("commit", g[0][:12]) for g in groups)))
    return Side(text, "commit", commit_pairs.label(groups[0], ds.runs), commit_pairs.runs_at(groups[0], ds.runs))


def _edition(text: str, name: str, ds: Dataset) -> Side:
    edition = next((e for e in ds.editions if e.name == name), None)
    if edition is None:
        bad = [r for r in ds.bad_editions if Path(r.path).stem == name]
        if bad:
            raise UsageError(f"edition {name!r}: {bad[0].path} cannot be read: {bad[0].problems[0]}")
        names = [e.name for e in ds.editions]
        close = difflib.get_close_matches(name, names, n=5, cutoff=0.5)
        hint = (
            (f"did you mean {', '.join(close)}? " if close else "") + f"editions: {', '.join(names)}"
            if names
            else "none has been released (python -m generator.load.editions release NAME)"
        )
        raise UsageError(f"edition {name!r}: no {editions.editions_dir(ds.data_dir) / (name + '.json')}; {hint}")
    current = dict(ds.runs.select("run_id", "sha256").iter_rows())
    missing = [r for r in edition.runs if r not in current]
    changed = [r for r in edition.runs if r in current and current[r] != edition.runs[r]]
    problems = tuple(
        f"{len(ids)} of its runs {why}, left out: {', '.join(ids[:3])}{' …' * (len(ids) > 3)}"
        for ids, why in ((missing, "have no loaded result file (missing or rejected)"), (changed, "changed files"))
        if ids
    )
    runs = ds.runs.filter(
        pl.col("run_id").is_in(list(edition.runs))
        & ~pl.col("run_id").is_in(changed)
        & (pl.col("origin") != "retraction")
    )
    label = f"edition {name}  ({edition.created_at}, {len(edition.runs)} runs)"
    return Side(text, "edition", label, runs, problems)


# --- rows: one per pair -------------------------------------------------------------------------------------------


FAIL_ON = ("slower", "faster", "both")
MANY = ("edition", "commit")
"""Sides that hold every configuration of an edition or a commit: they pair configuration by configuration."""


def fails(row: dict[str, Any], fail_on: str = "slower") -> bool:
    """A row that fails the comparison (exit 1): B lost A's figure (as asv counts a benchmark that started failing),
    or its verdict is `fail_on` (or either, for "both") and B/A is further from 1 than the threshold, or a side is
    flagged (`flags`: a run that measured no steady state, or ran beside other jobs) and B/A itself is beyond the
    threshold that way: a flagged run's width cannot hide a regression."""
    if row["lost"]:
        return fail_on != "faster"
    if row["beyond_threshold"]:
        return fail_on in ("both", row["verdict"])
    return (
        bool(row["flags"])
        and row["change"] is not None
        and abs(row["change"]) > row["threshold"]
        and (fail_on in ("both", "slower" if row["change"] < 0 else "faster"))
    )


def changed(row: dict[str, Any]) -> bool:
    """What `--only-changed` keeps (asv's `--only-changed`: the rows it marks): faster or slower beyond the
    threshold, or a figure on one side only."""
    return bool(row["beyond_threshold"]) or (row["a"]["value"] is None) != (row["b"]["value"] is None)


@dataclass(slots=True)
class Report:
    a: Side
    b: Side
    threshold: float
    rows: list[dict[str, Any]]
    only_in_a: list[str] = field(default_factory=list)
    only_in_b: list[str] = field(default_factory=list)
    fail_on: str = "slower"
    only_changed: bool = False

    @property
    def exit_status(self) -> int:
        return 1 if any(fails(r, self.fail_on) for r in self.rows) else 0

    @property
    def shown(self) -> list[dict[str, Any]]:
        """The rows printed: all of them, or with `only_changed` those that changed (the summary counts all)."""
        return [r for r in self.rows if changed(r)] if self.only_changed else self.rows

    @property
    def summary(self) -> str:
        counts = {v: sum(r["verdict"] == v for r in self.rows) for v in ("faster", "slower", "same", "undecided")}
        text = f"B against A: {counts['faster']} faster, {counts['slower']} slower, {counts['same']} same"
        text += f", {counts['undecided']} undecided" if counts["undecided"] else ""
        flagged = sum(bool(r["flags"]) for r in self.rows)
        text += f", {flagged} flagged" if flagged else ""
        none = sum(r["verdict"] is None for r in self.rows)
        text += f", {none} without a figure" if none else ""
        beyond = sum(r["beyond_threshold"] for r in self.rows)
        lost = sum(r["lost"] for r in self.rows)
        text += f"; {beyond} beyond ±{self.threshold * 100:g}%" + (f", {lost} where B lost A's figure" if lost else "")
        hidden = len(self.rows) - len(self.shown)
        text += f"; {hidden} unchanged not shown" if hidden else ""
        failing = {"slower": "slowdowns fail", "faster": "speed-ups fail", "both": "speed-ups and slowdowns fail"}
        return f"{text} (exit {self.exit_status}: {failing[self.fail_on]})"

    def to_json(self) -> dict[str, Any]:
        sides = {
            k: {"selector": s.text, "what": s.what, "label": s.label, "runs": s.runs["run_id"].to_list(),
                "problems": list(s.problems)}
            for k, s in (("a", self.a), ("b", self.b))
        }  # fmt: skip
        rows = [r | {"fails": fails(r, self.fail_on)} for r in self.shown]
        return {**sides, "threshold": self.threshold, "fail_on": self.fail_on, "rows": rows,
                "only_in_a": self.only_in_a, "only_in_b": self.only_in_b, "rows_not_shown": len(self.rows) - len(rows),
                "summary": self.summary, "exit_status": self.exit_status}  # fmt: skip


def compare(
    a_text: str, b_text: str, ds: Dataset, threshold: float = 0.05, fail_on: str = "slower", only_changed: bool = False
) -> Report:
    """One row per pair of A's and B's runs of one test: a run or a configuration pairs on suite and workload, an
    edition or a commit with an edition or a commit on suite, workload and configuration."""
    a = select(a_text, ds)
    if a.what not in MANY and b_text.startswith("edition:"):
        raise UsageError("an edition compares with another edition (or a commit): give both as edition:NAME")
    b = select(b_text, ds)
    if (a.what in MANY) != (b.what in MANY):
        raise UsageError(
            f"A is a {a.what}, B a {b.what}: an edition or a commit (every configuration in it) compares with "
            "another edition or commit (@COMMIT, edition:NAME), a run or a configuration with a run or a configuration"
        )
    return compare_sides(a, b, ds, threshold, fail_on, only_changed)


def compare_sides(
    a: Side, b: Side, ds: Dataset, threshold: float = 0.05, fail_on: str = "slower", only_changed: bool = False
) -> Report:
    """`compare` of two sides already selected (`fairfight submit` makes its own: a new run, and the committed runs
    of the configuration it reproduces)."""
    keys = [*TEST_KEYS] if a.what in MANY else ["suite", "workload"]
    cells_a = {k: g for k, g in a.runs.group_by(keys, maintain_order=True)}
    cells_b = {k: g for k, g in b.runs.group_by(keys, maintain_order=True)}
    common = sorted(cells_a.keys() & cells_b.keys(), key=str)
    if not common:
        raise UsageError(_nothing_in_common(a, b, ds))
    rows = [_row(key, cells_a[key], cells_b[key], ds, threshold) for key in common]
    only_in_a, only_in_b = (
        sorted(" · ".join(map(str, k)) for k in x.keys() - y.keys())
        for x, y in ((cells_a, cells_b), (cells_b, cells_a))
    )
    return Report(a, b, threshold, rows, only_in_a, only_in_b, fail_on=fail_on, only_changed=only_changed)


def _nothing_in_common(a: Side, b: Side, ds: Dataset) -> str:
    def tests(side: Side) -> str:
        listed = side.runs.select("suite", "workload", "kind").unique().sort("suite", "workload")
        return _some(f"{s} · {w} ({k})" for s, w, k in listed.iter_rows()) or "no runs"

    if a.what in MANY:
        return f"{a.what} {a.text} and {b.what} {b.text} have no configuration in common"
    suite, workload = a.runs.row(0, named=True)["suite"], a.runs.row(0, named=True)["workload"]
    there = ds.runs.filter((pl.col("suite") == suite) & (pl.col("workload") == workload))
    others = there.group_by("settings_hash", maintain_order=True).agg(pl.col("variant").last())
    listed = _some(f"{h} ({v})" for h, v in others.iter_rows())
    return (
        f"A ({a.text}) is {tests(a)}, B ({b.text}) is {tests(b)}: runs of different workloads (or kinds) cannot be "
        f"compared. Configurations on {suite} · {workload}: {listed}"
    )


def _some(items: Any, n: int = 6) -> str:
    """The first `n` items, and how many more."""
    items = list(items)
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")


def _row(key: tuple, a_runs: pl.DataFrame, b_runs: pl.DataFrame, ds: Dataset, threshold: float) -> dict[str, Any]:
    first = a_runs.row(0, named=True)
    a_ok, b_ok = (runs.filter(pl.col("excluded").is_null()) for runs in (a_runs, b_runs))
    figure, columns = first["figure"], ("value", "lo", "hi")
    sizes = pl.concat([a_ok, b_ok])["tokens_per_step"].drop_nulls().unique()
    if first["kind"] == "train" and len(sizes) > 1:  # another micro-batch or device count: steps are not alike
        figure, columns = "tokens/s", ("tokens_per_s", "tokens_per_s_lo", "tokens_per_s_hi")
    row: dict[str, Any] = {
        "suite": first["suite"],
        "workload": first["workload"],
        "kind": first["kind"],
        "settings_hash": key[2] if len(key) > 2 else None,
        "variant": first["variant"] if len(key) > 2 else None,
        "figure": figure,
        "a": _side_figure(a_runs, a_ok, columns, ds),
        "b": _side_figure(b_runs, b_ok, columns, ds),
        **dict.fromkeys(("ratio", "ratio_lo", "ratio_hi", "change", "floor", "floor_basis", "verdict"), None),
        "beyond_threshold": False,
        "threshold": threshold,
        "lost": bool(a_ok.height) and not b_ok.height,
        "flags": [],
        "notes": [],
    }
    if figure != first["figure"]:
        listed = " and ".join(f"{s:,.0f}" for s in sizes.sort())
        row["notes"].append(f"tokens/s, not steps/s: A's and B's steps are of {listed} tokens")
    for side, runs in (("A", a_ok), ("B", b_ok)):
        for run_id, note in runs.select("run_id", "note").drop_nulls().iter_rows():
            row["notes"].append(f"{side} {run_id}: not on the board: {note}")
    row["flags"] = [f"{side} {flag}" for side in ("A", "B") for flag in row[side.lower()]["flags"]]
    if row["a"]["value"] is None or row["b"]["value"] is None:
        return row
    (a, a_lo, a_hi), (b, b_lo, b_hi) = ((s["value"], s["lo"], s["hi"]) for s in (row["a"], row["b"]))
    if min(a, b) <= 0:
        row["notes"].append("a figure at or below zero: no ratio")
        return row
    row |= {"ratio": b / a, "change": b / a - 1}
    if a_lo is None or b_lo is None:  # unreplicated, or one measurement: nothing says where another run lands
        identical = row["a"]["runs"] == row["b"]["runs"]  # an edition beside another that kept the same runs
        row["verdict"] = "same" if identical else "undecided"
        row["notes"].append("a side has no interval (its basis says why): the ratio's interval is unknown"
                            + ("; the same runs on both sides" if identical else ""))  # fmt: skip
        return row
    ratio, lo, hi = metrics.ratio_interval(a, a_lo, a_hi, b, b_lo, b_hi)
    floors = [_floor(a_ok, ds, "A"), _floor(b_ok, ds, "B")]
    floor, basis = max(floors, key=lambda f: f[0])
    verdict = metrics.compare_verdict(a, b, lo, hi, floor)
    row |= {"ratio": ratio, "ratio_lo": lo, "ratio_hi": hi, "change": ratio - 1, "floor": floor}
    row |= {"floor_basis": basis, "verdict": verdict}
    row["beyond_threshold"] = verdict != "same" and abs(ratio - 1) > threshold
    return row


def _side_figure(
    runs: pl.DataFrame, counted: pl.DataFrame, columns: tuple[str, str, str], ds: Dataset
) -> dict[str, Any]:
    """A side's figure and interval as its board row has them (`evidence.interval`: the median of its runs'
    figures, widened by its engine's pooled between-run spread of its kind on its hardware; none where it is
    unreplicated), and its flags: runs that measured no steady state (`metrics.wider_than_figure`: their own span is
    left out), ran beside other jobs on a shared host, were recorded on a busy host (`metrics.busy_host`) or beside
    other processes on its GPUs (the bench's `hardware.host_load`)."""
    left_out = [{"run_id": r, "reason": why} for r, why in runs.filter(pl.col("excluded").is_not_null())
                .select("run_id", "excluded").iter_rows()]  # fmt: skip
    out = {"value": None, "lo": None, "hi": None, "runs": counted["run_id"].to_list(), "left_out": left_out,
           "flags": []}  # fmt: skip
    if not counted.height:
        why = "; ".join(f"{x['run_id']}: {x['reason']}" for x in left_out)
        return out | {"basis": f"no run counts ({why})" if len(left_out) > 1 else left_out[0]["reason"]}
    value, lo, hi = columns
    if counted.select(*SIDE_KEYS).n_unique() != 1:  # an edition's cell is one configuration, a run's one too
        raise AssertionError(f"one side of a row pools {counted.select(*SIDE_KEYS).n_unique()} configurations")
    first = counted.row(0, named=True)
    spread = ds.spreads.get(tuple(first[k] for k in ("engine", "kind", "accelerator", "accelerator_count")))
    own = list(counted.select(value, lo, hi).iter_rows())
    found = evidence.interval([x for x, _, _ in own], own, spread)
    flags = [f"{r}: {evidence.FLAGGED}" for r, (x, low, high) in zip(counted["run_id"], own, strict=True)
             if metrics.wider_than_figure(x, low, high)]  # fmt: skip
    flags += [f"{r}: ran beside other jobs on a shared host" for r in counted.filter(pl.col("shared_host"))["run_id"]]
    flags += [
        f"{r}: recorded on a busy host (other processes took {others:.2g} of its {cores} cores while it ran)"
        for r, others, cores in counted.filter(pl.col("busy_host"))
        .select("run_id", "others_cpu_cores", "cpu_cores")
        .iter_rows()
    ]
    flags += [
        f"{r}: {n} other process(es) on its host's GPUs"
        for r, n in counted.filter(pl.col("gpu_processes") > 0).select("run_id", "gpu_processes").iter_rows()
    ]
    n = counted.height
    hardware = f"{first['accelerator_count']} × {first['accelerator']}"
    if found.unreplicated:
        basis = configurations.unreplicated(first["engine"], hardware, (None, None))
    elif found.lo is None:
        basis = f"{'one run' if n == 1 else f'median of {n} runs'}, one measurement: no interval"
    else:
        basis = configurations.basis(n, spread, f"{hardware} by {first['engine']}" if spread else hardware)
    return out | {"value": found.value, "lo": found.lo, "hi": found.hi, "basis": basis, "flags": flags}


def _floor(counted: pl.DataFrame, ds: Dataset, side: str) -> tuple[float, str]:
    """The A/A spread of a side's runs: of the repeats they belong to, else the largest of their kind on their
    hardware and host condition, else none measured (0)."""
    own = [ds.run_floors[r] for r in counted["run_id"] if r in ds.run_floors]
    if own:
        return max(own), f"the spread of {side}'s repeats"
    kinds = counted.select("kind", "accelerator", "accelerator_count", "shared_host").unique()
    found = [(ds.kind_floors[k], k) for k in kinds.iter_rows() if k in ds.kind_floors]
    if found:
        spread, (kind, acc, count, shared) = max(found)
        where = f"{kind} on {count} × {acc}{', shared host' * shared}"
        return spread, f"the largest spread of repeats of {where} ({side} has no repeats)"
    kind, acc, count, _ = kinds.row(0)
    return 0.0, f"none: no repeats of {kind} on {count} × {acc} measured, so no floor"


# --- printing -----------------------------------------------------------------------------------------------------


def render(report: Report) -> str:
    """The comparison as a table, its notes and a one-line summary."""
    lines = [f"A  {report.a.label}", f"B  {report.b.label}"]
    lines += [f"   {s}: {p}" for s, side in (("A", report.a), ("B", report.b)) for p in side.problems]
    header = ("test", "figure", "A", "B", "B/A [interval]", "change", "A/A floor", "verdict")
    table = [header]
    notes = []
    for row in report.shown:
        test = f"{row['suite']} · {row['workload']}"
        if row["settings_hash"]:
            test += f" · {row['variant']} ({row['settings_hash']})"
        ratio, change, floor = compare_format.ratio(row), compare_format.change(row), "—"
        if row["verdict"] is None:
            verdict = "lost: B has no figure" if row["lost"] else "no figure"
        else:
            floor = "—" if row["floor"] is None else f"{row['floor']:.2%}"
            verdict = row["verdict"] + (f", beyond {report.threshold * 100:g}%" if row["beyond_threshold"] else "")
        if fails(row, report.fail_on) and not row["lost"] and not row["beyond_threshold"]:
            verdict += f", flagged and beyond {report.threshold * 100:g}%: fails"
        table.append(
            (
                test,
                row["figure"],
                compare_format.cell(row["a"]),
                compare_format.cell(row["b"]),
                ratio,
                change,
                floor,
                verdict,
            )
        )
        for side in ("a", "b"):
            for out in row[side]["left_out"]:
                notes.append(f"{test}: {side.upper()} {out['run_id']} does not count: {out['reason']}")
        notes += [f"{test}: {n}" for n in row["notes"]]
        notes += [f"{test}: flagged: {f}" for f in row["flags"]]
        if row["floor_basis"]:
            notes.append(f"{test}: A/A floor: {row['floor_basis']}")
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines.append("")
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table]
    for name, only in (("A", report.only_in_a), ("B", report.only_in_b)):
        if only:
            lines.append(f"only in {name} (not compared): {_some(only)}")
    if notes:
        lines += ["", *notes]
    return "\n".join([*lines, "", report.summary])


def commit_list(ds: Dataset, fmt: str) -> str:
    """`compare --list`: the harness commits the data holds, and the pairs of them that share configurations."""
    groups = commit_pairs.commits(ds.runs)
    pairs = commit_pairs.shared(ds.runs)
    listed = [{"commit": g[0], "label": commit_pairs.label(g, ds.runs)} for g in groups]
    shared = [{"a": a[0], "b": b[0], "configurations": n} for a, b, n in pairs]
    data = {"commits": listed, "pairs": shared}

    def text() -> str:
        lines = [f"{len(groups)} harness commits with runs in {ds.data_dir}/ (by their latest run, oldest first):"]
        lines += [f"  {c['label']}" for c in listed]
        lines += ["", f"{len(pairs)} of {len(groups) * (len(groups) - 1) // 2} pairs share configurations"
                  " (`fairfight compare @A @B` has a row for each shared one):"]  # fmt: skip
        lines += [f"  @{a[0][:12]} @{b[0][:12]}: {n} configuration{'s' * (n > 1)}" for a, b, n in pairs]
        return "\n".join(lines)

    table = formats.Table(columns=("a", "b", "configurations"),
                          rows=[(p["a"], p["b"], p["configurations"]) for p in shared])  # fmt: skip
    return formats.render(fmt, text=text, data=data, table=table)


def main(args: argparse.Namespace) -> int:
    fmt = getattr(args, "format", "text")
    try:
        listing = getattr(args, "list", False)
        if (listing and args.a is not None) or (not listing and args.b is None):
            raise UsageError("give A and B to compare, or --list (and neither A nor B) to see which commits can be")
        if not Path(args.data).is_dir():
            raise UsageError(f"--data-dir {args.data}: no such folder (run from the repository root, or pass it)")
        ds = load_dataset(args.data)
        if listing:
            sys.stdout.write(commit_list(ds, fmt))
            return 0
        report = compare(args.a, args.b, ds, args.threshold, getattr(args, "fail_on", "slower"),
                         getattr(args, "only_changed", False))  # fmt: skip
    except UsageError as e:
        print(f"compare: {e}", file=sys.stderr)
        if fmt == "json":
            print(json.dumps({"error": str(e), "exit_status": 2}))
        return 2
    data = report.to_json()
    sys.stdout.write(formats.render(fmt, text=lambda: render(report), data=data,
                                    table=lambda: compare_format.table(data),
                                    md=lambda: compare_format.md_table(data)))  # fmt: skip
    return report.exit_status


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m generator.commands.compare")
    add_cli_args(parser)
    sys.exit(main(parser.parse_args()))
