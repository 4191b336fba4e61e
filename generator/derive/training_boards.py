"""The training leaderboards made from the run summary (`summaries.run_summary`): which runs rank (`candidates`), one
row per configuration ranked with ties and its speedup over the baseline variant (`leaderboards`), the A/A repeats
(`repeats`), device-count scaling (`scaling`) and the loss per timing window the boards' charts draw
(`loss_windows`).

Every formula comes from `runners.metrics`; this module only groups, joins and orders.
"""

from __future__ import annotations

import polars as pl

import generator.derive.configurations as configurations
import generator.derive.counting as counting
from runners import metrics


def candidates(summary: pl.DataFrame) -> pl.DataFrame:
    """The measured, unretracted runs on the suite's device count with a steady-state figure, each with its
    `unranked` reason (null for the runs that rank: `configurations.unranked_reason`)."""
    return summary.filter(
        counting.STANDING & pl.col("suite_scale") & pl.col("steps_per_s_lo").is_not_null()
    ).with_columns(unranked=configurations.unranked_reason())


def _speed_baselines(summary: pl.DataFrame, ranked: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Per board key, the variant speedups are over and its speed: the first of the workload's variants, in the
    suite file's order (its baseline first; for a workload the file does not define, as its newest run lists
    them), that has ranked runs on that key; its speed is the median of those runs' medians. A baseline that
    never ranks (fp32 stopped by its budget) is passed over."""
    order = {
        (suite, workload): listed
        for suite, workload, listed in (
            summary.filter(counting.MEASURED)
            .sort("started_at")
            .group_by("suite", "workload")
            .agg(pl.col("listed_variants").last())
            .iter_rows()
        )
    }
    speeds = ranked.group_by([*keys, "variant"]).agg(rate=pl.col("steps_per_s").median())
    out = []
    for key, group in speeds.group_by(keys):
        rates = dict(group.select("variant", "rate").iter_rows())
        variant = next((v for v in order.get(key[:2], []) if v in rates), None)
        out.append((*key, variant, rates.get(variant)))
    columns: dict[str, pl.DataType | type[pl.DataType]] = {
        **ranked.select(keys).schema,
        "speed_baseline": pl.String,
        "baseline_steps_per_s": pl.Float64,
    }
    return pl.DataFrame(out, schema=columns, orient="row")


def leaderboards(
    summary: pl.DataFrame, spreads: configurations.Spreads | None = None, found: pl.DataFrame | None = None
) -> dict[tuple[str, str], pl.DataFrame]:
    """Per (suite, workload) with any record: one row per configuration of its ranked runs (`configurations`), ranked
    with ties, with the speedup over the median of the baseline variant's ranked runs on the same hardware, device
    count and micro-batch (`speed_baseline`, `_speed_baselines`). Other device
    counts are in `scaling`; runs that do not rank are in `candidates` with their reason. A workload with nothing
    ranked gets an empty board of the same columns. `spreads`: the pooled spreads of steps/s
    (`configurations.pooled_spreads`) and `found` (`candidates`), computed here when not given."""
    keys = ["suite", "workload", "accelerator", "accelerator_count", "micro_batch"]
    found = candidates(summary) if found is None else found
    ranked = found.filter(pl.col("unranked").is_null())
    ranked = ranked.join(_speed_baselines(summary, ranked, keys), on=keys, how="left", nulls_equal=True)
    ranked = ranked.with_columns(speedup=pl.col("steps_per_s") / pl.col("baseline_steps_per_s"))
    ranked_ids = ranked["run_id"].implode()
    stopped = configurations.measured_runs(found).filter(
        (pl.col("status") == "timeout") & ~pl.col("run_id").is_in(ranked_ids)
    )
    spreads = configurations.pooled_spreads(summary) if spreads is None else spreads
    rows = configurations.rows(ranked, spreads, stopped)
    boards: dict[tuple[str, str], pl.DataFrame] = {}
    for suite, workload in summary.select("suite", "workload").unique().sort("suite", "workload").iter_rows():
        board = rows.filter((pl.col("suite") == suite) & (pl.col("workload") == workload))
        boards[(suite, workload)] = configurations.rank(board)
    return boards


def _comparable(summary: pl.DataFrame) -> pl.DataFrame:
    """Measured, unretracted full-length runs that finished (a run stopped by its time budget has not run the whole
    workload), with a steady-state figure, whose loss agrees with their baseline."""
    return summary.filter(
        counting.STANDING
        & (pl.col("status") == "ok")
        & pl.col("full_length")
        & pl.col("steps_per_s_lo").is_not_null()
        & pl.col("loss_parity_ok").fill_null(True)
        & pl.col("unverified").is_null()
    )


CONFIG_KEYS = ["suite", "workload", "variant", "settings_hash", "accelerator", "accelerator_count", "micro_batch"]
"""One configuration: a variant name can cover runs whose settings differ (made at different harness commits), and
those are not repeats of each other (`settings_hash`, generator/load/columns.py)."""


def repeats(summary: pl.DataFrame, by: tuple[str, ...] = ()) -> pl.DataFrame:
    """A/A: every configuration (variant with its overrides, hardware, device count, micro-batch) with two or more
    full-length runs under the same host conditions, their medians and their relative spread
    (`metrics.relative_spread`). A run beside other jobs on a shared host and a run alone are not repeats of each
    other: sharing is a condition, not noise, so each condition has its own spread. `by`: more columns a repeat
    shares (`runs.every_run` adds the harness commit)."""
    keys = [*CONFIG_KEYS, "shared_host", *by]
    groups = (
        _comparable(summary)
        .filter(~configurations.flagged(columns=summary.columns))  # no steady state, or a busy host: nobody's repeat
        .sort("started_at")
        .group_by(keys, maintain_order=True)
        .agg(
            pl.col("run_id"),
            pl.col("steps_per_s").alias("medians"),
        )
        .filter(pl.col("run_id").list.len() >= 2)
    )
    spreads = [metrics.relative_spread(m) for m in groups["medians"]]
    return groups.with_columns(
        runs=pl.col("run_id").list.len(),
        lowest=pl.col("medians").list.min(),
        highest=pl.col("medians").list.max(),
        spread=pl.Series(spreads, dtype=pl.Float64),
    ).sort(keys)


def scaling(summary: pl.DataFrame) -> pl.DataFrame:
    """Per variant, hardware and micro-batch, each device count's tokens/s per device (the median of its
    full-length runs' medians) and its efficiency against one device (`metrics.scaling_efficiency`; null
    without a one-device run). Only variants run on two or more device counts appear."""
    keys = ["suite", "workload", "variant", "accelerator", "micro_batch"]
    points = (
        _comparable(summary)
        .group_by(*keys, "accelerator_count")
        .agg(
            pl.col("tokens_per_s_per_device").median(),
            pl.col("steps_per_s").median(),
            runs=pl.len(),
            shared_host=pl.col("shared_host").any(),
            tier=pl.col("tier").first(),
        )
    )
    one = points.filter(pl.col("accelerator_count") == 1).select(*keys, one_device=pl.col("tokens_per_s_per_device"))
    counts = points.group_by(keys).agg(n_counts=pl.col("accelerator_count").n_unique())
    out = (
        points.join(counts, on=keys)
        .filter(pl.col("n_counts") >= 2)
        .join(one, on=keys, how="left")
        .drop("n_counts")
        .sort(*keys, "accelerator_count")
    )
    eff = [
        None if base is None else metrics.scaling_efficiency(rate, base)
        for rate, base in out.select("tokens_per_s_per_device", "one_device").iter_rows()
    ]
    return out.with_columns(efficiency=pl.Series(eff, dtype=pl.Float64))


def loss_windows(summary: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """Every run's trial-0 loss as the mean per timing window (run_id, step at the window's start, value): what
    the leaderboards' loss charts draw, computed once for all boards."""
    return (
        rows.lazy()
        .filter(pl.col("metric") == "loss", pl.col("trial") == 0)
        .join(summary.lazy().select("run_id", "window_steps"), on="run_id")
        .with_columns(step=(pl.col("step") // pl.col("window_steps")) * pl.col("window_steps"))
        .group_by("run_id", "step")
        .agg(pl.col("value").mean())
        .sort("run_id", "step")
        .collect()
    )
