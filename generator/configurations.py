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
from typing import Any

import polars as pl

from runners import metrics


def unranked_reason() -> pl.Expr:
    """Why a measured run with a steady-state figure does not rank (null when it does): it must have finished, run
    its board's whole length, be verified against its hardware, and pass loss parity against a baseline."""
    return (
        pl.when(pl.col("status") != "ok")
        .then(pl.format("stopped: {} ({})", pl.col("status"), pl.col("error_short")))
        .when(~pl.col("full_length"))
        .then(pl.format("a short run: {} steps asked, fewer than the workload's", pl.col("steps_requested")))
        .when(pl.col("sweep_point"))
        .then(pl.format("a sweep point at micro-batch {}, not the workload's", pl.col("micro_batch")))
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


def aa_spreads(repeats: pl.DataFrame) -> dict[tuple[str, int, bool], float]:
    """Per hardware model, device count and host condition (alone, or sharing the host), the largest A/A spread
    measured between repeats of one configuration (derive.repeats): what a single run's interval is widened by."""
    out: dict[tuple[str, int, bool], float] = {}
    for acc, count, shared, spread in repeats.select(
        "accelerator", "accelerator_count", "shared_host", "spread"
    ).iter_rows():
        if spread is not None:
            out[(acc, count, shared)] = max(out.get((acc, count, shared), 0.0), spread)
    return out


KEYS = ["suite", "workload", "settings_hash"]


def rows(ranked_runs: pl.DataFrame, spreads: dict[tuple[str, int, bool], float]) -> pl.DataFrame:
    """One row per configuration of ranked runs: the median of its runs' medians, an interval that holds both
    within-run and between-run variation, its runs (latest last) with each one's harness commit (`harness_commits`,
    in the same order) and the rest of the row from its runs.

    The interval: with two or more runs, from the lowest run's low to the highest run's high (so at least as wide
    as the spread of the runs' medians); with one run, its own interval widened to the A/A spread measured on that
    hardware (`aa_spreads`; `interval_basis` says which), or its own interval where no spread was measured."""
    if not ranked_runs.height:
        return ranked_runs.with_columns(
            runs=pl.lit(0, dtype=pl.UInt32),
            run_ids=pl.lit([], dtype=pl.List(pl.String)),
            harness_commits=pl.lit([], dtype=pl.List(pl.String)),
            interval_basis=pl.lit(None, dtype=pl.String),
        )
    ordered = ranked_runs.sort("started_at", "run_id")
    medians = {"steps_per_s", "tokens_per_s_per_device", "speedup", "mfu_datasheet", "mfu_calibrated",
               "mfu_datasheet_reference", "mfu_calibrated_reference", "tokens_per_s"}  # fmt: skip
    aggregations = []
    for name in ranked_runs.columns:
        if name in KEYS:
            continue
        if name in medians:
            aggregations.append(pl.col(name).median())
        elif name == "steps_per_s_lo":
            aggregations.append(pl.col(name).min())
        elif name in ("steps_per_s_hi", "peak_mem_gib"):
            aggregations.append(pl.col(name).max())
        elif name in ("coverage", "steps_completed"):
            aggregations.append(pl.col(name).min())
        else:
            aggregations.append(pl.col(name).last())  # the latest run's (run_id, note, step quantiles ...)
    grouped = ordered.group_by(KEYS, maintain_order=True).agg(
        *aggregations, runs=pl.len(), run_ids=pl.col("run_id"), harness_commits=pl.col("harness_commit")
    )
    out = []
    for row in grouped.iter_rows(named=True):
        lo, hi, median = row["steps_per_s_lo"], row["steps_per_s_hi"], row["steps_per_s"]
        if row["runs"] >= 2:
            basis = f"{row['runs']} runs: lowest low to highest high"
        elif (row["accelerator"], row["accelerator_count"], row["shared_host"]) in spreads:
            spread = spreads[(row["accelerator"], row["accelerator_count"], row["shared_host"])]
            lo, hi = metrics.widened(median, lo, hi, spread)
            basis = f"one run, widened to the A/A spread of {row['accelerator_count']} × {row['accelerator']} " + (
                f"({spread:.2%})"
            )
        else:
            basis = "one run; no A/A spread measured on this hardware"
        out.append((row["suite"], row["workload"], row["settings_hash"], lo, hi, basis))
    intervals = pl.DataFrame(
        out,
        schema={**{k: pl.String for k in KEYS}, "lo": pl.Float64, "hi": pl.Float64, "interval_basis": pl.String},
        orient="row",
    )
    return (
        grouped.join(intervals, on=KEYS)
        .join(differences(grouped), on=KEYS, how="left")
        .with_columns(steps_per_s_lo=pl.col("lo"), steps_per_s_hi=pl.col("hi"))
        .drop("lo", "hi")
        .with_columns(
            tokens_per_s_lo=pl.col("steps_per_s_lo") * pl.col("tokens_per_step"),
            tokens_per_s_hi=pl.col("steps_per_s_hi") * pl.col("tokens_per_step"),
        )
    )


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out |= _flat(inner, f"{prefix}{key}." if not isinstance(inner, dict) or inner else f"{prefix}{key}")
        return out
    return {prefix.rstrip("."): value}


def differences(grouped: pl.DataFrame) -> pl.DataFrame:
    """For configurations that share a variant name on a board: what differs between them (`key=value` of this
    row's settings where another row of the same name has another value); empty otherwise."""
    out = []
    for _, group in grouped.group_by("suite", "workload", "variant"):
        flats = {h: _flat(json.loads(t)) for h, t in group.select("settings_hash", "settings").iter_rows()}
        for row in group.select(*KEYS).iter_rows(named=True):
            mine = flats[row["settings_hash"]]
            keys = sorted(
                k for k in set().union(*flats.values()) if any(f.get(k) != mine.get(k) for f in flats.values())
            )
            text = ", ".join(f"{k}={json.dumps(mine.get(k))}" for k in keys)
            out.append((row["suite"], row["workload"], row["settings_hash"], text))
    return pl.DataFrame(out, schema={**{k: pl.String for k in KEYS}, "differs": pl.String}, orient="row")


def rank(board: pl.DataFrame) -> pl.DataFrame:
    """Ranks with ties where configurations' intervals overlap (`metrics.ranks_with_ties`), fastest first."""
    board = board.sort("steps_per_s", "settings_hash", descending=[True, False])
    ranks = metrics.ranks_with_ties(list(board.select("steps_per_s_lo", "steps_per_s_hi").iter_rows()))
    return board.with_columns(rank=pl.Series(ranks, dtype=pl.Int64)).sort(
        "rank", "steps_per_s", "settings_hash", descending=[False, True, False]
    )


RANK_RULE = (
    "One row per configuration (everything that ran: settings, environment, micro-batch, steps, devices, hardware, "
    "engine version); only finished, full-length, verified runs whose loss agrees with the baseline rank; a row's "
    "figure is the median of its runs' medians, its interval spans its runs' intervals (one run: widened to the A/A "
    "spread measured on its hardware), and a row's rank is one plus the number of rows "
    "whose interval lies wholly above its own (no row is ranked below one it overlaps; ranks can repeat and skip)."
)
