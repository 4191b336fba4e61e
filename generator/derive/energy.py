"""Each run's GPU energy (runners/energy.py wrote it: `energy_j` rows over its timed windows, `idle_power_w`, and
`hardware.energy`) as figures per token: what the boards and "One GPU, every engine" show beside the speed.

What a run's metered windows hold, by kind:
- training: steady segments of steps; tokens = the steps they cover × tokens per step, seconds = those steps × the
  mean steady step time;
- pp/tg and offline tests: each timed repetition; tokens = the test's tokens (offline: output tokens) per
  repetition, seconds = the repetitions' own times;
- served points: the timed requests, first sent to last answered; tokens = its output tokens/s × its duration,
  seconds = its duration. Those are known only from the point's figures, so `per_run` gives a served point its joules
  and no figure; `generator/derive/serving.py` works them out with the same `figures`, and the run page takes them from
  there (`results.with_test_figures`).
A run whose windows span fewer than `metrics.ENERGY_MIN_UPDATES` counter updates gets no figure (`energy_note` says
why), and a run without energy rows gets none at all: nothing is estimated.
"""

from __future__ import annotations

import polars as pl

from runners import metrics

COLUMNS = pl.Schema({"run_id": pl.String, "energy_j": pl.Float64, "energy_tokens": pl.Float64, "energy_s": pl.Float64,
           "joules_per_token": pl.Float64, "tokens_per_joule": pl.Float64, "mean_power_w": pl.Float64,
           "energy_note": pl.String})  # fmt: skip
"""`per_run`'s columns."""

FIGURES = tuple(c for c in COLUMNS if c not in ("run_id", "energy_j"))
"""The columns `figures` makes: a served point's come from generator/derive/serving.py, over its requests."""

_METRICS = ["energy_j", "test_time_s", "output_tokens_per_s"]


def per_run(summary: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """One row per run that has energy rows (`COLUMNS`). `summary`: run_id, kind, warmup_steps, tokens_per_step,
    steady_step_s, n_tokens, duration_s, energy_counter_update_s, energy_sample_interval_s (the resolution of the
    power-sampled method)."""
    samples = rows.filter(pl.col("metric").is_in(_METRICS), pl.col("phase") == "steady")
    energy = samples.filter(pl.col("metric") == "energy_j")
    if not energy.height:
        return pl.DataFrame(schema=COLUMNS)
    runs = summary.select(
        "run_id", "kind", "warmup_steps", "tokens_per_step", "steady_step_s", "n_tokens", "duration_s",
        pl.coalesce("energy_counter_update_s", "energy_sample_interval_s").alias("energy_counter_update_s"),
    ).join(energy.select("run_id").unique(), on="run_id", how="semi")  # fmt: skip
    trials = (
        samples.filter(pl.col("step").is_null(), pl.col("run_id").is_in(runs["run_id"].implode()))
        .pivot(on="metric", index=["run_id", "trial"], values="value", aggregate_function="sum")
        .join(runs.select("run_id", "kind", "n_tokens"), on="run_id")
    )
    for name in ("energy_j", "test_time_s", "output_tokens_per_s"):
        if name not in trials.columns:
            trials = trials.with_columns(pl.lit(None, dtype=pl.Float64).alias(name))
    tests = (  # pp/tg and offline repetitions; a served point's one window (trial 0, no step) comes through too
        trials.filter(pl.col("kind") != "train", pl.col("energy_j").is_not_null())
        .with_columns(
            tokens=pl.when(pl.col("kind") == "offline")
            .then(pl.col("output_tokens_per_s") * pl.col("test_time_s"))
            .otherwise(pl.col("n_tokens").cast(pl.Float64))
        )
        .group_by("run_id")
        .agg(*(pl.col(c).sort_by("trial") for c in ("energy_j", "tokens", "test_time_s")))
        .select(  # summed as lists, in trial order: the sum depends on the run's own values alone
            "run_id",
            energy_j=pl.col("energy_j").list.sum(),
            tokens=pl.col("tokens").list.sum(),
            seconds=pl.col("test_time_s").list.sum(),
        )
    )
    training = (
        energy.filter(pl.col("step").is_not_null(), pl.col("trial") == 0)  # the steps below are trial 0's
        .group_by("run_id")
        .agg(joules=pl.col("value").sort_by("trial", "step"), last_step=pl.col("step").max())
        .with_columns(energy_j=pl.col("joules").list.sum())
        .join(runs.filter(pl.col("kind") == "train"), on="run_id")
        .with_columns(steps=pl.col("last_step") + 1 - pl.col("warmup_steps"))
        .select(
            "run_id",
            "energy_j",
            tokens=pl.col("steps") * pl.col("tokens_per_step"),
            seconds=pl.col("steps") * pl.col("steady_step_s"),
        )
    )
    out = pl.concat([training, tests], how="diagonal_relaxed").join(
        runs, on="run_id", how="left"
    )  # a served point's tokens and seconds come from its figures (generator/derive/serving.py)
    served = pl.col("kind") == "serve"  # its window has no test time: its figures come from serving.py's
    return (
        out.select(
            "run_id", "energy_j", served.alias("served"), **figures("tokens", "seconds", "energy_counter_update_s")
        )
        .with_columns(pl.when(~pl.col("served")).then(pl.col(c)).alias(c) for c in FIGURES)
        .drop("served")
        .cast(COLUMNS)
    )


def figures(tokens: str | pl.Expr, seconds: str | pl.Expr, update_s: str | pl.Expr) -> dict[str, pl.Expr]:
    """A run's energy figures from its `energy_j` column and its windows' tokens, seconds and the counter's (or the
    power sampling's) interval: the same expressions for every kind of run (`per_run`; a served point's in
    `generator/derive/serving.py`, whose tokens come from its requests)."""
    tokens, seconds, update = (pl.col(c) if isinstance(c, str) else c for c in (tokens, seconds, update_s))
    joules = pl.col("energy_j")
    resolved = metrics.energy_resolved(seconds, update)
    shown = resolved.fill_null(False) & (tokens > 0).fill_null(False) & (joules > 0)
    return dict(
        energy_tokens=tokens,
        energy_s=seconds,
        joules_per_token=pl.when(shown).then(metrics.joules_per_token(joules, tokens)),
        tokens_per_joule=pl.when(shown).then(metrics.tokens_per_joule(joules, tokens)),
        mean_power_w=pl.when(shown).then(metrics.mean_power_w(joules, seconds)),
        energy_note=pl.when(shown | joules.is_null())
        .then(pl.lit(None, dtype=pl.String))
        .when(update.is_null())
        .then(pl.lit("the record does not say how often its energy reading updates"))
        .when(~resolved)
        .then(
            pl.format(
                "its timed windows ({} s) span fewer than {} updates of the energy counter (every {} s)",
                seconds.round(2),
                pl.lit(metrics.ENERGY_MIN_UPDATES),
                update.round(3),
            )
        )
        .otherwise(pl.lit("no tokens or no energy in its windows")),
    )
