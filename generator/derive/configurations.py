"""One row, one configuration: which runs may rank, which runs are the same configuration, and the figure and
interval a configuration's row shows.

A configuration is everything that ran (`settings_hash`, made where the config is flattened: `columns._settings`):
the variant and its settings, the environment a sweep changed, micro-batch, sequence, steps asked, device count,
hardware and the engine's version. Runs of one
configuration share one row and one rank; runs with one variant name and different settings never merge. A run
ranks only when it is verified (`unranked_reason` is null); every other run is listed below the ranking with its
reason. Every formula is in `runners.metrics`.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from typing import Any

import polars as pl

import generator.derive.counting as counting
import generator.load.fields as fields
from runners import metrics


def unranked_reason() -> pl.Expr:
    """Why a measured run with a steady-state figure does not rank (null when it does): it must have finished, run
    its board's whole length, be verified against its hardware, and pass loss parity against a baseline."""
    return (
        pl.when(pl.col("status") != "ok")
        .then(pl.format("stopped: {} ({})", pl.col("status"), pl.col("error_short")))
        .when(pl.col("sweep_point"))
        .then(pl.format("a sweep point at micro-batch {}, not the workload's", pl.col("micro_batch")))
        .when(~pl.col("full_length"))
        .then(pl.format("a short run: {} steps asked, fewer than the workload's", pl.col("steps_requested")))
        .when(pl.col("unverified").is_not_null())
        .then(pl.col("unverified"))
        .when(pl.col("loss_parity_ok").is_null())
        .then(
            pl.format(
                "no loss-parity baseline ({} on the same hardware, device count and micro-batch)",
                pl.col("baseline_variant").fill_null("the workload's first variant"),
            )
        )
        .when(pl.col("parity_problem").is_not_null())
        .then(pl.col("parity_problem"))
        .when(~pl.col("loss_parity_ok"))
        .then(
            pl.format(
                "loss departs from the baseline's (largest window gap {}, tolerance {})",
                _pct(pl.col("loss_max_rel_gap")),
                _pct(pl.col("loss_parity_tol")),
            )
        )
        .otherwise(None)
    )


def _pct(expr: pl.Expr) -> pl.Expr:
    return (expr * 100).round(2).cast(pl.String) + pl.lit("%")


KEYS = ["suite", "workload", "settings_hash"]

_EXPRESSIONS = {"median": pl.Expr.median, "all": lambda e: e, "max": pl.Expr.max, "min": pl.Expr.min,
                "latest": pl.Expr.last}  # fmt: skip


def aggregated(name: str, tests: bool = False) -> pl.Expr:
    """Column `name` of a board's row (a test board's where `tests`) from its configuration's runs, as declared in
    `generator/load/fields.py` (a column declared nowhere stops the build, naming itself)."""
    how = fields.aggregation(name, tests)
    if how not in _EXPRESSIONS:
        raise fields.SchemaError(f"board column {name!r} is declared {how!r}: a board makes it, no run has it")
    return _EXPRESSIONS[how](pl.col(name))


Spreads = dict[tuple[str, str, int], metrics.PooledSpread]
"""Per engine, hardware model and device count, the between-run spread pooled over its groups of identical settings:
an engine's own repeats, never another engine's (MLX and torch train on the same GPU and move differently)."""


def measured_runs(summary: pl.DataFrame) -> pl.DataFrame:
    """The runs that measured their configuration's steady state: measured, unretracted, verified, finished or
    stopped by their time budget (a steady-state figure either way), not departing from their baseline's loss. A
    configuration's interval never excludes one of them, and their repeats make the pooled spread."""
    return summary.filter(
        counting.STANDING
        & pl.col("status").is_in(["ok", "timeout"])
        & pl.col("steps_per_s_lo").is_not_null()
        & pl.col("unverified").is_null()
        # null: no baseline to depart from, kept (`!= False` would drop it: a comparison with null is null in polars)
        & pl.col("loss_parity_ok").ne_missing(False)
    )


def flagged(
    value: str = "steps_per_s", lo: str = "steps_per_s_lo", hi: str = "steps_per_s_hi", columns: Sequence[str] = ()
) -> pl.Expr:
    """Whether a run is no evidence of its configuration's speed: its own interval is wider than its figure
    (`metrics.wider_than_figure`: it measured no steady state), or, where the frame has the column (`columns`), it was
    recorded on a busy host (`busy_host`: others took CPU time it waited for, `metrics.busy_host`). Such a run is
    nobody's repeat (a 16× slowdown on a loaded host would otherwise be its configuration's A/A spread, and hide
    itself). Training runs by their steady-state windows in either reading."""
    out = metrics.wider_than_figure(pl.col(value), pl.col(lo), pl.col(hi)).fill_null(False)
    return out | pl.col("busy_host").fill_null(False) if "busy_host" in columns else out


SPREAD_KEYS = ("engine", "accelerator", "accelerator_count")
"""What a training figure's between-run spread is estimated per (`Spreads`)."""


def pooled_spreads(summary: pl.DataFrame, figure: str = "steps_per_s") -> Spreads:
    """Per engine, hardware model and device count (`SPREAD_KEYS`), `metrics.pooled_log_sd` of `figure` over every
    group of identical settings (`KEYS`) with two or more of its `measured_runs`: what widens a configuration's
    interval."""
    groups = (
        measured_runs(summary)
        .filter(pl.col(figure).is_not_null() & ~flagged(columns=summary.columns))
        .group_by(*SPREAD_KEYS, *KEYS)
        .agg(pl.col(figure))
        .sort(*SPREAD_KEYS, *KEYS)
    )
    out: Spreads = {}
    for (engine, acc, count), group in groups.group_by(*SPREAD_KEYS, maintain_order=True):
        pooled = metrics.pooled_log_sd(group[figure].to_list())
        if pooled is not None:
            out[(str(engine), str(acc), int(count))] = pooled  # type: ignore[call-overload, unused-ignore]
    return out


def basis(runs: int, spread: metrics.PooledSpread | None, hardware: str, stopped: int = 0) -> str:
    """How a configuration's interval was made, in words (a row's `interval_basis`)."""
    counted = f"{runs} run" if runs == 1 else f"{runs} runs"
    also = f", and the {stopped} stopped by their time budget" if stopped else ""
    if spread is None:
        alone = "; no repeats of identical settings on " + hardware + " to widen it by" if runs == 1 else ""
        return f"{counted}: lowest low to highest high{also}{alone}"
    return (
        f"{counted}: exp(mean ln ± t·s/√{runs}), s = {spread.sd:.2%} pooled over {spread.groups} group(s) of "
        f"identical settings on {hardware} ({spread.df} degrees of freedom, t = "
        f"{metrics.student_t_quantile(0.975, spread.df):.3f}), never narrower than its runs' own intervals nor "
        f"excluding one{also}"
    )


UNREPLICATED = "unreplicated"
"""How an unreplicated row's `interval_basis` begins (`unreplicated`)."""


def unreplicated(engine: object, hardware: str, own: tuple[float | None, float | None]) -> str:
    """An unreplicated row's `interval_basis` (a row of one run whose engine repeated nothing of its kind on its
    hardware): why it has no interval and no rank, with its span within the run."""
    lo, hi = own
    within = f" (its own figures span {lo:.4g} – {hi:.4g} within the run)" if lo is not None and hi is not None else ""
    return (
        f"{UNREPLICATED}: one run, and no repeats of identical settings by {engine} on {hardware} to say how far a "
        f"second run would land: no between-run interval, no rank{within}"
    )


def rows(ranked_runs: pl.DataFrame, spreads: Spreads, stopped: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per configuration of ranked runs: the median of its runs' medians, an interval that holds both
    within-run and between-run variation, its runs (latest last) with each one's harness commit (`harness_commits`,
    in the same order) and the rest of the row from its runs.

    The interval (`metrics.repeat_interval`): the pooled between-run spread of its hardware (`pooled_spreads`) with
    a t quantile, never narrower than its runs' own intervals, and never excluding one of its runs nor one of
    `stopped` (runs of the same configuration stopped by their time budget, which measured its steady state too);
    `interval_basis` says how. A configuration of one run (and none stopped) whose engine has no pooled spread on its
    hardware is unreplicated: no interval (null), and so no rank (`rank`)."""
    aggregations = [aggregated(name) for name in ranked_runs.columns if name not in KEYS]  # every one declared
    # no early return for a board where nothing ranks: the same steps on no rows give the same columns and types,
    # which the declared board schema holds every board to (generator/load/fields.py)
    ordered = ranked_runs.sort("started_at", "run_id")
    grouped = ordered.group_by(KEYS, maintain_order=True).agg(
        *aggregations, figures=pl.col("steps_per_s"), runs=pl.len(), run_ids=pl.col("run_id"),
        harness_commits=pl.col("harness_commit"),
    )  # fmt: skip
    others: dict[tuple[str, str, str], list[float]] = {}
    if stopped is not None:
        for suite, workload, settings_hash, figure in stopped.select(*KEYS, "steps_per_s").iter_rows():
            others.setdefault((suite, workload, settings_hash), []).append(figure)
    import generator.derive.evidence as evidence  # the derive package imports this module: not at the top

    out: list[tuple[str, str, str, float | None, float | None, str]] = []
    for row in grouped.iter_rows(named=True):
        key: tuple[str, str, str] = (row["suite"], row["workload"], row["settings_hash"])
        spread = spreads.get((row["engine"], row["accelerator"], row["accelerator_count"]))
        extra = others.get(key, [])
        own = list(zip(row["figures"], row["steps_per_s_lo"], row["steps_per_s_hi"], strict=True))
        found = evidence.interval(row["figures"], own + [(x, x, x) for x in extra], spread)
        hardware = f"{row['accelerator_count']} × {row['accelerator']}"
        if found.unreplicated:
            out.append((*key, None, None, unreplicated(row["engine"], hardware, own[0][1:])))
            continue
        text = basis(row["runs"], spread, f"{hardware} by {row['engine']}", len(extra))
        out.append(
            (*key, found.lo, found.hi, text + (f"; {found.flagged} run(s): {evidence.FLAGGED}" * bool(found.flagged)))
        )
    intervals = pl.DataFrame(
        out,
        schema={**{k: pl.String for k in KEYS}, "lo": pl.Float64, "hi": pl.Float64, "interval_basis": pl.String},
        orient="row",
    )
    return (
        grouped.drop("steps_per_s_lo", "steps_per_s_hi", "figures")
        .join(intervals, on=KEYS)
        .join(differences(grouped), on=KEYS, how="left")
        .rename({"lo": "steps_per_s_lo", "hi": "steps_per_s_hi"})
        .with_columns(
            tokens_per_s_lo=pl.col("steps_per_s_lo") * pl.col("tokens_per_step"),
            tokens_per_s_hi=pl.col("steps_per_s_hi") * pl.col("tokens_per_step"),
        )
    )


def unranked_figure(
    figures: list[float | None], lows: list[float | None], highs: list[float | None]
) -> tuple[float | None, float | None, float | None]:
    """A configuration none of whose runs ranks, as a board's data gives it: the median of its runs' figures and the
    span of their own intervals and figures (`metrics.repeat_interval` without a pooled spread); none where one run
    without an interval of its own has nothing to span (never its figure twice: `metrics.with_width`)."""
    values = [x for x in figures if x is not None]
    median = statistics.median(values) if values else None
    own = [(lo, hi) for lo, hi in zip(lows, highs, strict=True) if lo is not None and hi is not None]
    if not values or (len(values) < 2 and not own):
        return median, None, None
    lo, hi = metrics.with_width(*metrics.repeat_interval(values, own, None))
    return median, lo, hi


SPANS_SCHEMA = {"settings_hash": pl.String, "value": pl.Float64, "lo": pl.Float64, "hi": pl.Float64}


def unranked_spans(unranked: pl.DataFrame, figure: tuple[str, str, str]) -> pl.DataFrame:
    """Per configuration (`settings_hash`) of a board's unranked runs, its figure and span as the board's data gives
    it (`unranked_figure`); `figure` names the runs' figure, low and high columns."""
    value, lo, hi = figure
    out = []
    if unranked.height:
        grouped = unranked.group_by("settings_hash", maintain_order=True).agg(pl.col(value), pl.col(lo), pl.col(hi))
        for settings_hash, figures, lows, highs in grouped.iter_rows():
            out.append((settings_hash, *unranked_figure(figures, lows, highs)))
    return pl.DataFrame(out, schema=SPANS_SCHEMA, orient="row")


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out |= _flat(inner, f"{prefix}{key}." if not isinstance(inner, dict) or inner else f"{prefix}{key}")
        return out
    return {prefix.rstrip("."): value}


def changed(lower: str, upper: str) -> list[tuple[str, Any, Any]]:
    """What changes from one configuration to another (canonical JSON each, as `curve_settings`): (name, before,
    after) of every flattened key whose value differs, by name, the variant's name left out (what it is called is no
    setting); a key one side lacks reads as None."""
    a, b = _flat(json.loads(lower)), _flat(json.loads(upper))
    return [(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if k != "variant" and a.get(k) != b.get(k)]


def differing(settings: dict[Any, str]) -> dict[Any, str]:
    """For settings (canonical JSON, by any key) that share a name: per key, `key=value` of its settings wherever
    another of them has another value, "" where none differs."""
    flats = {k: _flat(json.loads(t)) for k, t in settings.items()}
    names = set().union(*flats.values()) if flats else set()
    out = {}
    for key, mine in flats.items():
        keys = sorted(k for k in names if any(f.get(k) != mine.get(k) for f in flats.values()))
        out[key] = ", ".join(f"{k}={json.dumps(mine.get(k))}" for k in keys)
    return out


def differences(grouped: pl.DataFrame) -> pl.DataFrame:
    """For configurations that share a variant name on a board: what differs between them (`key=value` of this
    row's settings where another row of the same name has another value); empty otherwise."""
    out = []
    for _, group in grouped.group_by("suite", "workload", "variant"):
        texts = differing(dict(group.select("settings_hash", "settings").iter_rows()))
        for row in group.select(*KEYS).iter_rows(named=True):
            out.append((row["suite"], row["workload"], row["settings_hash"], texts[row["settings_hash"]]))
    return pl.DataFrame(out, schema={**{k: pl.String for k in KEYS}, "differs": pl.String}, orient="row")


def rank(board: pl.DataFrame) -> pl.DataFrame:
    """Ranks with ties where configurations' intervals overlap (`metrics.ranks_with_ties`), fastest first; a row
    without an interval (unreplicated) has no rank and comes after the ranked rows."""
    board = board.sort("steps_per_s", "settings_hash", descending=[True, False])
    ranks = metrics.ranks_with_ties(list(board.select("steps_per_s_lo", "steps_per_s_hi").iter_rows()))
    return board.with_columns(rank=pl.Series(ranks, dtype=pl.Int64)).sort(
        "rank", "steps_per_s", "settings_hash", descending=[False, True, False], nulls_last=True
    )


UNIT = "steps/s"
"""What a training board's figure (a configuration's `steps_per_s`) is in."""

RANK_RULE = (
    "One row per configuration (everything that ran: settings, environment, micro-batch, steps, devices, hardware, "
    "engine version); only finished, full-length, verified runs whose loss agrees with the baseline rank; a row's "
    "figure is the median of its runs' medians; its 95% interval is exp(mean ln ± t·s/√n) with the between-run spread "
    "s pooled over every group of identical settings its engine ran on its hardware (never another engine's), never "
    "narrower than its runs' own intervals (a row of one run whose engine repeated nothing there is unreplicated: no "
    "interval, no rank) "
    "and never excluding one of its runs; and a row's rank is one plus the number of rows "
    "whose interval lies wholly above its own (no row is ranked below one it overlaps; ranks can repeat and skip)."
)
