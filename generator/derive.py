"""From loaded records to the numbers the site shows: per-run summaries and per-workload leaderboards.

Every formula comes from `runners.metrics`; this module only groups, joins and orders.
"""

from __future__ import annotations

import polars as pl

from runners import metrics

SUMMARY_SCHEMA = {
    "run_id": pl.String,
    "steps_per_s": pl.Float64,
    "steps_per_s_lo": pl.Float64,
    "steps_per_s_hi": pl.Float64,
    "windows": pl.Int64,
    "coverage": pl.Float64,
}


def _config_fields(runs: pl.DataFrame) -> pl.DataFrame:
    cfg = pl.col("config")
    return runs.with_columns(
        warmup_steps=cfg.str.json_path_match("$.workload.warmup_steps").cast(pl.Int64),
        window_steps=cfg.str.json_path_match("$.workload.window_steps").cast(pl.Int64),
        steps_requested=cfg.str.json_path_match("$.workload.steps_requested").cast(pl.Int64),
        baseline_variant=cfg.str.json_path_match("$.workload.variants[0]"),
        tokens_per_step=cfg.str.json_path_match("$.derived.tokens_per_step").cast(pl.Float64),
        flops_per_token=cfg.str.json_path_match("$.derived.flops_per_token").cast(pl.Float64),
        compute_precision=cfg.str.json_path_match("$.compute_precision"),
        model=cfg.str.json_path_match("$.workload.model"),
        description=cfg.str.json_path_match("$.variant.description"),
    )


def window_intervals(runs: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """Steps/s per complete window of steady steps, pooled over trials: median and 95% interval per run."""
    windows = (
        rows.lazy()
        .filter((pl.col("metric") == "step_time_s") & (pl.col("phase") == "steady"))
        .join(runs.lazy().select("run_id", "warmup_steps", "window_steps"), on="run_id")
        .with_columns(window=(pl.col("step") - pl.col("warmup_steps")) // pl.col("window_steps"))
        .group_by("run_id", "trial", "window")
        .agg(elapsed=pl.col("value").sum(), n=pl.len(), window_steps=pl.col("window_steps").first())
        .filter(pl.col("n") == pl.col("window_steps"))
        .with_columns(rate=pl.col("window_steps") / pl.col("elapsed"))
        .group_by("run_id")
        .agg(pl.col("rate"))
        .sort("run_id")
        .collect()
    )
    out = []
    for run_id, rates in windows.iter_rows():
        ci = metrics.median_ci(rates)
        out.append((run_id, ci.median, ci.lo, ci.hi, ci.n, ci.coverage))
    return pl.DataFrame(out, schema=SUMMARY_SCHEMA, orient="row")


def run_summary(runs: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """One row per run with its headline numbers (null where a run has none, e.g. a failure)."""
    runs = _config_fields(runs)
    run_values = (
        rows.filter(pl.col("phase") == "run")
        .group_by("run_id", "metric")
        .agg(pl.col("value").first())  # run-level values of the first trial
        .pivot(on="metric", index="run_id", values="value")
    )
    for name in ("steps_completed", "startup_s", "warmup_s", "peak_mem_gib", "peak_rss_gib"):
        if name not in run_values.columns:
            run_values = run_values.with_columns(pl.lit(None, dtype=pl.Float64).alias(name))
    losses = (
        rows.filter(pl.col("metric") == "loss", pl.col("trial") == 0)
        .sort("step")
        .group_by("run_id")
        .agg(first_loss=pl.col("value").first(), final_loss=pl.col("value").last())
    )
    summary = (
        runs.join(window_intervals(runs, rows), on="run_id", how="left")
        .join(run_values, on="run_id", how="left")
        .join(losses, on="run_id", how="left")
        .with_columns(
            tokens_per_s=pl.col("steps_per_s") * pl.col("tokens_per_step"),
            tokens_per_s_lo=pl.col("steps_per_s_lo") * pl.col("tokens_per_step"),
            tokens_per_s_hi=pl.col("steps_per_s_hi") * pl.col("tokens_per_step"),
        )
        .with_columns(tokens_per_s_per_device=pl.col("tokens_per_s") / pl.col("accelerator_count"))
    )
    peaks = [
        metrics.datasheet_peak_flops(acc, prec or "fp32")
        for acc, prec in summary.select("accelerator", "compute_precision").iter_rows()
    ]
    return summary.with_columns(datasheet_peak_flops=pl.Series(peaks, dtype=pl.Float64)).with_columns(
        mfu_datasheet=pl.col("flops_per_token")
        * pl.col("tokens_per_s")
        / (pl.col("datasheet_peak_flops") * pl.col("accelerator_count"))
    )


def leaderboards(summary: pl.DataFrame) -> dict[tuple[str, str], pl.DataFrame]:
    """Per (suite, workload): measured runs that produced steady-state numbers, ranked with ties, with speedup.

    The speedup is over the workload's baseline (its first listed variant, a stock one) on the same accelerator
    model and count: the latest such run's median.
    """
    boards: dict[tuple[str, str], pl.DataFrame] = {}
    ranked = summary.filter(pl.col("steps_per_s").is_not_null())
    for (suite, workload), board in ranked.group_by("suite", "workload", maintain_order=True):
        board = board.sort("steps_per_s", "run_id", descending=[True, False])
        ranks = metrics.ranks_with_ties(list(board.select("steps_per_s_lo", "steps_per_s_hi").iter_rows()))
        baselines = (
            board.filter(pl.col("variant") == pl.col("baseline_variant"))
            .sort("started_at")
            .group_by("accelerator", "accelerator_count")
            .agg(baseline_steps_per_s=pl.col("steps_per_s").last())
        )
        board = (
            board.with_columns(rank=pl.Series(ranks, dtype=pl.Int64))
            .join(baselines, on=["accelerator", "accelerator_count"], how="left")
            .with_columns(speedup=pl.col("steps_per_s") / pl.col("baseline_steps_per_s"))
            .sort("rank", "steps_per_s", "run_id", descending=[False, True, False])
        )
        boards[(suite, workload)] = board
    return boards
