"""Checks that no single row can fail: a run's derived figures that cannot be. A run whose steps imply more than
100% MFU of its device's datasheet peak is rejected like a malformed file: kept out of every leaderboard and
listed on the Rejected files page with the reason, by the site build and by `nox -s validate` alike.

MBU is not checked this way: a model small enough to sit in the GPU's cache can read faster than memory does.
"""

from __future__ import annotations

import dataclasses

import polars as pl

import generator.derive.summaries as summaries
from generator import load


def impossible(summary: pl.DataFrame) -> list[tuple[str, str]]:
    """(run_id, problem) for each run whose derived FLOP/s exceed what its hardware can do: a GPU's datasheet peak,
    a CPU's ceiling over all its cores (`metrics.flops_ceiling`)."""
    over = summary.filter(pl.col("ceiling_fraction") > 1)
    windows = summary.filter(
        (pl.col("fastest_window_fraction") > 1) & ~(pl.col("ceiling_fraction") > 1).fill_null(False)
    )
    fastest = [
        (
            run_id,
            f"rows of metric 'step_time_s', field 'value': its fastest timing window implies {_share(share)} of what "
            f"{acc} can do (runners/metrics.py): a step time is wrong",
        )
        for run_id, share, acc in windows.select("run_id", "fastest_window_fraction", "accelerator").iter_rows()
    ]
    return fastest + [
        (
            run_id,
            f"rows of metric 'step_time_s', field 'value': these steps imply {_share(share)} "
            + (
                f"of the FLOP/s ceiling of {acc}'s cores (runners/metrics.py)"
                if device == "cpu"
                else f"MFU, above the {acc} datasheet peak for {precision or 'fp32'}"
            )
            + ": a step time, config.model or config.derived is wrong",
        )
        for run_id, share, acc, precision, device in over.select(
            "run_id", "ceiling_fraction", "accelerator", "compute_precision", "device"
        ).iter_rows()
    ]


def _share(share: float) -> str:
    """A share as a percentage, in few digits however absurd (10⁵⁰% is not a figure anyone needs every digit of)."""
    return f"{share:.0%}" if share < 100 else f"{share * 100:.3g}%"


def misdeclared(summary: pl.DataFrame) -> list[tuple[str, str]]:
    """(run_id, problem) for each run whose declared tokens per step or FLOPs per token differ from what its shapes
    give (`columns.flatten`): a file cannot make its steps worth more than they are."""
    out = []
    for run_id, origin, *pairs in summary.select(
        "run_id",
        "origin",
        "declared_tokens_per_step",
        "tokens_per_step",
        "declared_flops_per_token",
        "flops_per_token",
    ).iter_rows():
        if origin == "claim":
            continue
        for name, (declared, computed) in zip(
            ("tokens_per_step", "flops_per_token"), (pairs[:2], pairs[2:]), strict=True
        ):
            if declared is not None and computed is not None and abs(declared - computed) > 1e-9 * computed:
                out.append(
                    (
                        run_id,
                        f"row 0, field 'config.derived.{name}': declares {declared:,.6g}, but the record's shapes "
                        f"give {computed:,.6g} (runners/metrics.py)",
                    )
                )
    return out


def checked(loaded: load.Loaded) -> tuple[load.Loaded, pl.DataFrame]:
    """The loaded runs less those with impossible figures (now listed as rejected, with any retraction of
    them), and the run summary of the rest."""
    # a run's flattened config is its own (row by row): flattened once, for the runs kept too
    flat = summaries.config_fields(loaded.runs)
    summary = summaries.run_summary(loaded.runs, loaded.rows, flat)
    bad: dict[str, list[str]] = {}
    for run_id, problem in [*misdeclared(summary), *impossible(summary)]:
        bad.setdefault(run_id, []).append(problem)
    if not bad:
        return loaded, summary
    path = dict(loaded.runs.select("run_id", "path").iter_rows())
    rejected = [*loaded.rejected, *(load.Rejected(path[r], tuple(problems)) for r, problems in bad.items())]
    retracting = summary.filter(pl.col("origin") == "retraction").select("run_id", target=pl.col("retracts"))
    for run_id, target in retracting.iter_rows():
        if target in bad:
            bad[run_id] = [f"row 0, field 'config': retracts {target!r}, which is rejected"]
            rejected.append(load.Rejected(path[run_id], tuple(bad[run_id])))
    gone = pl.Series(list(bad), dtype=pl.String).implode()
    runs = loaded.runs.filter(~pl.col("run_id").is_in(gone))
    rows = loaded.rows.filter(~pl.col("run_id").is_in(gone))
    kept = dataclasses.replace(loaded, runs=runs, rows=rows, rejected=rejected)
    return kept, summaries.run_summary(runs, rows, flat)
