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
from runners import metrics, training


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


def implausible_power(summary: pl.DataFrame) -> list[tuple[str, str]]:
    """(run_id, problem) for each metered run whose GPUs' power, at work or at rest, no GPU could draw: above its
    recorded power limit with a margin (`metrics.gpu_power_ceiling_w`) or below `metrics.GPU_POWER_MIN_W` a GPU. At
    work, the mean over its metered windows (`metrics.mean_power_w` of its joules over their seconds: a served point's
    window is its duration), judged only where those windows span enough counter updates to be read
    (`metrics.energy_resolved`), as the figures are."""
    out = []
    metered = summary.filter(pl.col("energy_j").is_not_null() | pl.col("idle_power_w").is_not_null())
    for run_id, kind, joules, seconds, duration, update, interval, idle, gpus, limit, count in metered.select(
        "run_id", "kind", "energy_j", "energy_s", "duration_s", "energy_counter_update_s", "energy_sample_interval_s",
        "idle_power_w", "metered_gpus", "power_limit_w", "accelerator_count",
    ).iter_rows():  # fmt: skip
        n = gpus or count or 1
        ceiling = metrics.gpu_power_ceiling_w(n, limit)
        floor = n * metrics.GPU_POWER_MIN_W
        bound = f"the {_watts(floor)} to {_watts(ceiling)} {n} GPU{'s' if n > 1 else ''} can draw " + (
            f"({metrics.GPU_POWER_MARGIN:g} × the recorded power limit, {_watts(limit)}; runners/metrics.py)"
            if limit is not None and limit * metrics.GPU_POWER_MARGIN < metrics.GPU_POWER_MAX_W
            else "(runners/metrics.py)"
        )
        if idle is not None and not floor <= idle <= ceiling:
            out.append(
                (run_id, f"rows of metric 'idle_power_w', field 'value': {_watts(idle)} at rest, outside {bound}")
            )
        seconds = duration if kind == "serve" else seconds
        update = update if update is not None else interval
        if joules is None or not seconds or update is None or not metrics.energy_resolved(seconds, update):
            continue
        power = metrics.mean_power_w(joules, seconds)
        if not floor <= power <= ceiling:
            out.append(
                (
                    run_id,
                    f"rows of metric 'energy_j', field 'value': {joules:,.6g} J over {seconds:,.4g} s of metered "
                    f"windows is a mean {_watts(power)}, outside {bound}: a joule reading is wrong",
                )
            )
    return out


def missing_segments(summary: pl.DataFrame, rows: pl.DataFrame) -> list[tuple[str, str]]:
    """(run_id, problem) for each metered training run whose steady energy rows are not every segment its steps were
    cut into (`training.steady_segment_ends`) up to its last: generator/derive/energy.py credits its joules with every
    steady step from the warm-up's end to that last segment, so a segment left out would publish the run drawing less
    than it did. Trial 0's, as the figure is; a run stopped before its last window has no row for that window's part
    and is credited up to its last row only."""
    runs = summary.filter(
        pl.col("kind") == "train",
        pl.col("energy_j").is_not_null(),
        pl.col("window_steps") > 0,
        pl.col("warmup_steps") >= 0,
    ).select("run_id", "warmup_steps", "window_steps")
    if not runs.height:
        return []
    mine = rows.filter(pl.col("run_id").is_in(runs["run_id"].implode()), pl.col("trial") == 0)
    steps = mine.filter(pl.col("metric") == "step_time_s").group_by("run_id").agg(steps=pl.col("step").max() + 1)
    ends = (
        mine.filter(pl.col("metric") == "energy_j", pl.col("phase") == "steady", pl.col("step").is_not_null())
        .group_by("run_id")
        .agg(ends=pl.col("step").sort())
    )
    out = []
    for run_id, warmup, window, n, have in runs.join(steps, on="run_id").join(ends, on="run_id").iter_rows():
        want = [e for e in training.steady_segment_ends(n, warmup, window) if e <= have[-1]]
        if have != want:
            out.append(
                (
                    run_id,
                    f"rows of metric 'energy_j', field 'step': trial 0's steady segments end at steps {_few(have)}, "
                    f"but its steps, cut at every {window}-step window after a {warmup}-step warm-up, end them at "
                    f"{_few(want)} (runners/training.py `ends_segment`): a segment's joules are missing or moved",
                )
            )
    return out


def _few(steps: list[int]) -> str:
    """Steps as a short list: the first three, and how many more."""
    return (
        ", ".join(map(str, steps[:3])) + (f" and {len(steps) - 3} more" if len(steps) > 3 else "") if steps else "none"
    )


def _watts(w: float) -> str:
    """Watts in few digits however absurd."""
    return f"{w:,.0f} W" if 1 <= w < 1e6 else f"{w:.3g} W"


def checked(loaded: load.Loaded) -> tuple[load.Loaded, pl.DataFrame]:
    """The loaded runs less those with impossible figures (now listed as rejected, with any retraction of
    them), and the run summary of the rest."""
    # a run's flattened config is its own (row by row): flattened once, for the runs kept too
    flat = summaries.config_fields(loaded.runs)
    summary = summaries.run_summary(loaded.runs, loaded.rows, flat)
    bad: dict[str, list[str]] = {}
    found = [*misdeclared(summary), *impossible(summary), *implausible_power(summary)]
    for run_id, problem in [*found, *missing_segments(summary, loaded.rows)]:
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
