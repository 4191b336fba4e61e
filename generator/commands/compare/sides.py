"""What A and B select (`SELECTORS` in cli.py): a run, a configuration (narrowed to a commit or a workload), an
edition or a harness commit, as a `Side`, or a `UsageError` that says what to do.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

import generator.derive.commit_pairs as commit_pairs
import generator.load.editions as editions
from generator.commands.compare.data import Dataset
from runners import arguments


class UsageError(Exception):
    """A selector or a pair that cannot be compared: exit status 2, with what to do."""


MANY = ("edition", "commit")
"""Sides that hold every configuration of an edition or a commit: they pair configuration by configuration."""


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


_HEX = commit_pairs.HEX


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
            # every form its records wrote the commit in (`commit_pairs.full_commits`: a 7-digit form of early records
            # is at the full id it begins), as the history across commits groups them: of the whole data, not of this
            # configuration alone, so that a form two commits begin is neither here either
            named = [g for g in commit_pairs.matching(value, ds.runs) if runs["harness_commit"].is_in(g).any()]
            if len(named) > 1:
                raise UsageError(f"{text!r}: {commit_pairs.listing(value, (('commit', g[0][:12]) for g in named))}")
            narrowed = runs.filter(pl.col("harness_commit").is_in(named[0] if named else []))
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
        how = "" if commit_pairs.HEX.fullmatch(prefix.lower()) else " (a commit is 4 to 64 hex digits)"
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
