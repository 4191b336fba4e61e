"""Wanted runs: for every undecided answer of the verdict, every unreplicated board row and every configuration kept
from a rank only by its engine's own tool, the runs that would settle it, on which hardware, with which command, how
many, and what the answer becomes if the figures hold.

Nothing here is a statistic of its own. An undecided answer's runs are the verdict's "further runs" advice
(`verdict_answer.Tuned`: its deciding points, `further_runs` at each from `verdict.further_runs_power`, the probability
and the side it settles to); an unreplicated row is a board row whose `interval_basis` says so
(`configurations.unreplicated`): one more run of identical settings on its hardware gives its engine a repeat there,
so a between-run spread, and the row an interval (`evidence.interval`). Each command is the one a run page offers
(`reproduce.command`), started as `fairfight bench`, and for a sweep point shortened to fewer steps, without the
shortening: the verdict asks for full-length runs.

A configuration whose newest finished run does not rank because its engine's own tool did not run beside it, failed,
or disagreed beyond the tolerance (`NOT_CROSS_CHECKED`, `ladder.unranked_reason`'s words) wants one more run of
identical settings, which the bench session runs with the tool beside it. Other reasons not to rank (no datasheet
peak, no core count, no shapes or loss recorded) are settled by a table entry or a newer harness, not by a run, and
are not listed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import polars as pl

import generator.derive.configurations as configurations
import generator.derive.reproduce as reproduce
import generator.derive.verdict as verdict
import generator.load.slugs as slugs
from generator.derive.verdict.said import Tuned
from runners import engines

BENCH = ("fairfight", "bench")
"""The words every wanted command starts with: the installed command a contributor types."""
READING_WORDS = {"steady": "steps/s read as the steady state", "end_to_end": "steps/s read end to end"}
"""How each reading of steps/s (`verdict.READINGS`) is named beside its answer."""
UNDECIDED = "undecided answer"
UNREPLICATED = "unreplicated row"
UNVERIFIED = "unverified row"
NOT_CROSS_CHECKED = ("not cross-checked: ", " disagrees with ")
"""The words of a finished run's `unranked` reason (`ladder.unranked_reason`) when only its engine's own tool stands
between it and a rank: no tool record, a failed one, or a runner / tool ratio beyond the tolerance."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Wanted:
    """One configuration's runs that would settle one undecided answer or one unreplicated or unverified row."""

    kind: str
    """`UNDECIDED`, `UNREPLICATED` or `UNVERIFIED`."""
    settles: str
    """What the runs settle, in the words of the page that states it."""
    href: str
    """Where that is stated, relative to the docs root."""
    suite: str
    workload: str
    variant: str
    label: str
    """The configuration as the page names it (a sweep curve's label; a board row's variant)."""
    micro_batch: int | None
    settings_hash: str
    """The hash of the settings the runs must have to join (a sweep curve's `curve_hash`, a row's `settings_hash`)."""
    device: str | None
    """The runs' device kind (cuda, cpu, metal), as their records say."""
    accelerator: str
    accelerator_count: int
    command: str | None
    """The `fairfight bench` command of one such run; None where the record makes none (`why_no_command`)."""
    why_no_command: str | None
    runs: int | None
    """How many more runs; None where even `verdict.MAX_FURTHER_RUNS` would not settle it."""
    runs_now: int
    """The runs it has now."""
    full_length_now: bool
    """Whether one of them ran its workload's full length (else further full-length runs replace them)."""
    if_figures_hold: str | None
    """What the answer becomes if the figures hold ("closes", "does not"; for a row, "interval")."""
    probability: float | None
    """The probability `runs` settle it, if the figures hold (`verdict.further_runs_power`); None for a row."""
    becomes: str
    """All of that in one sentence."""

    @property
    def hardware(self) -> str:
        return f"{self.accelerator_count} × {self.accelerator}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"hardware": self.hardware}


def wanted(
    the_verdict: verdict.Verdict | None,
    boards: Iterable[tuple[str, pl.DataFrame, pl.DataFrame]],
    runs: pl.DataFrame,
) -> list[Wanted]:
    """Every wanted entry: the verdict's undecided answers' deciding points first (reading by reading, in
    `verdict.READINGS`' order), then each board's unreplicated rows and its unverified configurations. `boards`:
    (board href, ranked rows, unranked runs) triples; `runs`: the run summary (one row per run: the commands are
    built from its records)."""
    by_id = {r["run_id"]: r for r in runs.select(*_RUN_COLUMNS).iter_rows(named=True)}
    out = [] if the_verdict is None else _undecided(the_verdict, by_id)
    for href, ranked, unranked in boards:
        out += _unreplicated(href, ranked, by_id)
        out += _unverified(href, ranked, unranked, by_id)
    return out


_RUN_COLUMNS = ("run_id", "origin", "suite", "workload", "variant", "engine", "config", "device")


def _undecided(the_verdict: verdict.Verdict, by_id: Mapping[str, dict[str, Any]]) -> list[Wanted]:
    points = {(r["curve_hash"], r["micro_batch"]): r for r in the_verdict.points.iter_rows(named=True)}
    out: list[Wanted] = []
    for reading, said in the_verdict.said.readings.items():
        for tuned in said.tuned:
            if tuned.decision != "undecided" or not tuned.deciding:
                continue
            # tuned DDP in the home page's words, with the curve it is; any other curve by its label alone
            who = "tuned DDP" if tuned.variant == verdict.DDP_TUNED else tuned.label
            curve = f"; {tuned.label}" if who != tuned.label else ""
            settles = f"whether {who} closes the gap to {verdict.GAP_ASKED}× ({READING_WORDS[reading]}{curve})"
            becomes = _becomes(tuned)
            for point in tuned.deciding:
                row = points[(point.curve_hash, point.micro_batch)]
                run = by_id[row["run_id"]]  # the point's latest run: its settings are the curve's
                command, why = _command(run, leave_out=frozenset({"steps"}))
                out.append(Wanted(kind=UNDECIDED, settles=settles, href="index.md#the-verdict", suite=run["suite"],
                                  workload=run["workload"], variant=row["variant"], label=point.label,
                                  micro_batch=point.micro_batch, settings_hash=point.curve_hash, device=run["device"],
                                  accelerator=row["accelerator"], accelerator_count=the_verdict.fight.devices,
                                  command=command, why_no_command=why, runs=tuned.further_runs, runs_now=point.runs,
                                  full_length_now=point.full_length, if_figures_hold=tuned.settles_to,
                                  probability=tuned.settle_probability, becomes=becomes))  # fmt: skip
    return out


def _becomes(tuned: Tuned) -> str:
    """The verdict's further-runs advice for `tuned`, as the home page words it."""
    n = len(tuned.deciding)
    if tuned.further_runs is None or tuned.settle_probability is None:
        return (
            f"even {verdict.MAX_FURTHER_RUNS} further runs at each of its {n} deciding points would settle it with "
            f"probability under {verdict.POWER:.0%}: the figure sits at the threshold"
        )
    k = tuned.further_runs
    return (
        f"{k} more full-length run{'' if k == 1 else 's'} at each of its {n} deciding points, over two or more "
        f"sessions, settle it with probability {tuned.settle_probability:.1%}"
        + (f', as "{tuned.settles_to}" if the figures hold' if tuned.settles_to else "")
    )


def _unreplicated(href: str, ranked: pl.DataFrame, by_id: Mapping[str, dict[str, Any]]) -> list[Wanted]:
    if "interval_basis" not in ranked.columns or not ranked.height:
        return []
    rows = ranked.filter(pl.col("interval_basis").str.starts_with(configurations.UNREPLICATED))
    out: list[Wanted] = []
    for row in rows.iter_rows(named=True):
        run = by_id[row["run_ids"][-1]]
        hardware = f"{row['accelerator_count']} × {row['accelerator']}"
        command, why = _command(run)
        out.append(Wanted(kind=UNREPLICATED, settles=f"{row['variant']} on {row['suite']} / {row['workload']}: "
                          "unreplicated, no interval and no rank", href=href, suite=run["suite"],
                          workload=run["workload"], variant=row["variant"], label=row["variant"],
                          micro_batch=row.get("micro_batch"), settings_hash=row["settings_hash"],
                          device=run["device"], accelerator=row["accelerator"],
                          accelerator_count=row["accelerator_count"], command=command, why_no_command=why, runs=1,
                          runs_now=row["runs"], full_length_now=True, if_figures_hold="interval", probability=None,
                          becomes=f"one more run of identical settings by {row['engine']} on {hardware} is the "
                          "repeat its interval needs: the row (and every unreplicated row of that engine, kind of "
                          "test and hardware) gets a between-run interval, and so a rank"))  # fmt: skip
    return out


def _unverified(
    href: str, ranked: pl.DataFrame, unranked: pl.DataFrame, by_id: Mapping[str, dict[str, Any]]
) -> list[Wanted]:
    """A configuration with no ranked row and a finished run kept from a rank only by its engine's own tool
    (`NOT_CROSS_CHECKED`; the newest such run speaks for it): one more run of identical settings, the tool beside it
    as the bench session runs it.
    A test the tool cannot run (a depth it does not fill) wants nothing: no run would settle it."""
    needed = {"unranked", "status", "settings_hash", "variant", "accelerator", "accelerator_count", "run_id"}
    if not unranked.height or not needed <= set(unranked.columns):
        return []
    tool_cannot = tuple(f" ({why})" for why in engines.tools_without_depth().values())
    reason = pl.col("unranked")
    left = unranked.filter(
        (pl.col("status") == "ok")
        & pl.any_horizontal(*(reason.str.contains(words, literal=True) for words in NOT_CROSS_CHECKED))
        & ~pl.any_horizontal(*(reason.str.ends_with(why) for why in tool_cannot), pl.lit(False))
    )
    config = ["variant", "settings_hash", "accelerator", "accelerator_count"]
    if ranked.height and set(config) <= set(ranked.columns):
        left = left.join(ranked.select(config).unique(), on=config, how="anti")
    order = "started_at" if "started_at" in left.columns else "run_id"
    newest = left.sort(order).group_by(config, maintain_order=True).agg(pl.all().last(), runs_now=pl.len())
    out: list[Wanted] = []
    for row in newest.iter_rows(named=True):
        run = by_id[row["run_id"]]
        hardware = f"{row['accelerator_count']} × {row['accelerator']}"
        command, why = _command(run)
        out.append(Wanted(kind=UNVERIFIED, settles=f"{row['variant']} on {run['suite']} / {run['workload']}: "
                          f"{row['unranked']}", href=href, suite=run["suite"], workload=run["workload"],
                          variant=row["variant"], label=row["variant"], micro_batch=row.get("micro_batch"),
                          settings_hash=row["settings_hash"], device=run["device"], accelerator=row["accelerator"],
                          accelerator_count=row["accelerator_count"], command=command, why_no_command=why, runs=1,
                          runs_now=row["runs_now"],
                          full_length_now=True, if_figures_hold="cross-checked", probability=None,
                          becomes=f"one more run of identical settings on {hardware}, its engine's own tool run "
                          "beside it by the bench session: where the two agree within the tolerance the row is "
                          "cross-checked and ranks; a disagreement that holds is the engine's, not noise"))  # fmt: skip
    return out


def _command(run: dict[str, Any], leave_out: frozenset[str] = frozenset()) -> tuple[str | None, str | None]:
    config = json.loads(run["config"]) if isinstance(run["config"], str) else run["config"]
    return reproduce.command(run, config if isinstance(config, dict) else {}, BENCH, leave_out)


def board_href(suite: str, workload: str) -> str:
    """A board's page, relative to the docs root (as `verdict.owed` links it)."""
    return f"leaderboards/{slugs.slug(suite, workload)}.md"
