"""Boards of inference and serving tests (llama-bench's pp and tg, vLLM's offline and served points): which runs
rank, one row per configuration, and ranks.

A measured run ranks only when it finished, its hardware is one the datasheet table knows, and, where its engine has
its own benchmark tool (the engine registry, runners/engines: `own_tools`), that tool's record of the same test on
the same host agrees with it
within `metrics.OWN_TOOL_REL_TOL` on every figure both report (throughput; for served points also median TTFT and
TPOT). A test the tool cannot run (mlx_lm.benchmark has no KV-cache depth) has nothing to agree with, so it does not
rank. Ranked runs of one configuration (`settings_hash`) share one row; every other run is listed with its reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

import generator.derive.configurations as configurations
import generator.derive.counting as counting
import generator.derive.evidence as evidence
import generator.load.fields as fields
from runners import engines, metrics

KEYS = configurations.KEYS


def _tool() -> pl.Expr:
    return pl.col("engine").replace_strict(engines.own_tools(), default=None, return_dtype=pl.String)


def with_tool_record(runs: pl.DataFrame, tools: Sequence[str], **figures: pl.Expr) -> pl.DataFrame:
    """`runs` with, on each runner's run, the record its engine's bench tool (`tools`) made of the same test: the
    tool's `bench_run`, its `figures` (name: the tool record's expression) and `bench_status`; null where none."""
    bench = runs.filter(pl.col("engine").is_in(list(tools))).select(
        run_id="paired_run", bench_run=pl.col("run_id"), **figures, bench_status=pl.col("status")
    )
    return runs.join(bench, on="run_id", how="left")


def with_bandwidth_use(frame: pl.DataFrame, rate: pl.Expr, decodes: pl.Expr, gpus: pl.Expr) -> pl.DataFrame:
    """`frame` with the MBU of `rate` where `decodes` (null elsewhere): the bytes a decoded token reads
    (`decode_bytes_per_token`) × `rate` ÷ the datasheet bandwidth of `gpus` of its hardware (`metrics.mbu`, the
    site's one MBU), and beside it, never instead of it, the same over the copy bandwidth calibrated on its hardware
    model (`copy_bandwidth`, `metrics.copy_bound_fraction`). The one place a rate becomes an MBU: a run's of its own
    rate, a board's row's of the row's own figure (`inference.board`, `serving.board`), which every page that shows
    the row takes as it is."""
    return frame.with_columns(
        mbu_datasheet=pl.when(decodes).then(
            metrics.mbu(pl.col("decode_bytes_per_token"), rate, pl.col("datasheet_bandwidth") * gpus)
        ),
        copy_fraction=pl.when(decodes).then(
            metrics.copy_bound_fraction(pl.col("decode_bytes_per_token"), rate, pl.col("copy_bandwidth") * gpus)
        ),
    )


def unranked_reason(checks: Sequence[tuple[str, ...]], depth: bool, columns: Sequence[str] = ()) -> pl.Expr:
    """Why a measured run does not rank (null when it does). `checks` are (what, column of runner / tool ratios[,
    column of that figure's tolerance]) that must be within the tolerance (`metrics.OWN_TOOL_REL_TOL` where no
    column gives one, or it is null); `depth`: whether the frame has a `depth` column (inference tests); `columns`:
    the frame's columns (a tolerance column it lacks is the default's)."""
    default = metrics.OWN_TOOL_REL_TOL
    tool = _tool()
    name = tool.replace_strict(engines.tool_labels(), default=tool, return_dtype=pl.String)
    no_depth = engines.tools_without_depth()
    cannot = (
        pl.when((pl.col("depth") > 0) & tool.is_in(list(no_depth)))
        .then(pl.format(" ({})", tool.replace_strict(no_depth, default="", return_dtype=pl.String)))
        .otherwise(pl.lit(""))
        if depth
        else pl.lit("")
    )
    expr = (
        pl.when(pl.col("status") != "ok")
        .then(pl.format("stopped: {} ({})", pl.col("status"), pl.col("error_short")))
        .when(pl.col("unverified").is_not_null())
        .then(pl.col("unverified"))
        .when(pl.col("value").is_null())
        .then(pl.lit("no steady-state figure"))
        .when(tool.is_not_null() & pl.col("bench_run").is_null())
        .then(pl.format("not cross-checked: no {} record of this test{}", name, cannot))
        .when(tool.is_not_null() & (pl.col("bench_status") != "ok"))
        .then(pl.format("not cross-checked: {}'s record of this test {}", name, pl.col("bench_status")))
    )
    for what, column, *given in checks:
        ratio = pl.col(column).cast(pl.Float64)
        tol = pl.col(given[0]).fill_null(default) if given and given[0] in columns else pl.lit(default)
        expr = expr.when(tool.is_not_null() & ratio.is_null()).then(
            pl.format("not cross-checked: no like-for-like {} to compare with {}'s", pl.lit(what), name)
        )
        expr = expr.when(tool.is_not_null() & ~metrics.within(ratio, tol)).then(
            pl.format(
                "{} disagrees with {}: runner / tool = {}, beyond ±{}%",
                pl.lit(what),
                name,
                ratio.round(4).cast(pl.String).fill_null("none"),
                (tol * 100).round(1).cast(pl.String).str.replace(r"\.0$", ""),
            )
        )
    return expr.otherwise(None)


def verified(
    tests: pl.DataFrame, value: pl.Expr, lo: pl.Expr, hi: pl.Expr, checks: Sequence[tuple[str, ...]]
) -> pl.DataFrame:
    """The measured, unretracted runs of `tests` with their figure (`value`, `lo`, `hi`: a run's figure and its 95%
    interval, null where a run has no repetitions) and `unranked`: why a run does not rank, null where it does."""
    runs = tests.filter(counting.STANDING).with_columns(value=value, lo=lo, hi=hi)
    return runs.with_columns(unranked=unranked_reason(checks, "depth" in runs.columns, runs.columns))


def board(
    tests: pl.DataFrame,
    value: pl.Expr,
    lo: pl.Expr,
    hi: pl.Expr,
    checks: Sequence[tuple[str, ...]],
    spreads: Spreads | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A test's ranked configurations and its unranked runs (`verified`). Returns (rows: one per configuration of
    ranked runs, ranked with ties, with `value`, `lo`, `hi`, `runs`, `run_ids`, `interval_basis` and the latest
    run's other columns; unranked: every other measured, unretracted run with its `unranked` reason). `spreads`
    (`pooled_spreads`) gives each row's interval its engine's between-run spread of its kind of test on its hardware;
    a board's row of one run without one is unreplicated: no interval, no rank (`rows`, `rank`)."""
    runs = verified(tests, value, lo, hi, checks)
    unranked = runs.filter(pl.col("unranked").is_not_null()).sort(
        "value", "run_id", descending=[True, False], nulls_last=True
    )
    return rank(rows(runs.filter(pl.col("unranked").is_null()), spreads)), unranked


SPREAD_KEYS = ("engine", "kind", "accelerator", "accelerator_count")
"""What a between-run spread is estimated per: an engine's own repeats of one kind of test on one hardware model and
device count. Never another engine's: MLX's repeats spread several times llama.cpp's on the same GPU."""

Spreads = Mapping[tuple[str, str, str, int], metrics.PooledSpread]
"""Per `SPREAD_KEYS`, the between-run spread pooled over its groups of identical settings (`pooled_spreads`)."""


def pooled_spreads(ranked_runs: pl.DataFrame) -> dict[tuple[str, str, str, int], metrics.PooledSpread]:
    """Per engine, kind of test, hardware model and device count (`SPREAD_KEYS`), the between-run spread of the
    figure pooled over every configuration (`KEYS`) with two or more ranked runs (`metrics.pooled_log_sd`), as
    `configurations.pooled_spreads` is for training."""
    groups = (
        ranked_runs.filter(
            pl.col("value").is_not_null() & ~configurations.flagged("value", "lo", "hi", ranked_runs.columns)
        )
        .group_by(*SPREAD_KEYS, *KEYS)
        .agg(pl.col("value"))
        .sort(*SPREAD_KEYS, *KEYS)
    )
    out: dict[tuple[str, str, str, int], metrics.PooledSpread] = {}
    for (engine, kind, acc, count), group in groups.group_by(*SPREAD_KEYS, maintain_order=True):
        pooled = metrics.pooled_log_sd(group["value"].to_list())
        if pooled is not None:
            out[(str(engine), str(kind), str(acc), int(count))] = pooled  # type: ignore[call-overload, unused-ignore]
    return out


def spread_key(row: Mapping[str, object]) -> tuple[object, ...]:
    """A row's key into `pooled_spreads` (`SPREAD_KEYS`; a key with a null never matches)."""
    return tuple(row.get(k) for k in SPREAD_KEYS)


def rows(ranked: pl.DataFrame, spreads: Spreads | None = None) -> pl.DataFrame:
    """One row per configuration: the median of its runs' figures, its 95% interval (`metrics.repeat_interval`: its
    engine's between-run spread of its kind of test pooled on its hardware, `pooled_spreads`, with a t quantile, never
    narrower than its runs' own intervals nor excluding a run), its runs (latest last) with each one's harness
    commit (`harness_commits`, in the same order) and the latest run's other columns. On a board (`spreads` given:
    every published board), a configuration of one run whose engine has no such spread is unreplicated: nothing
    measured how far a second run would land, so it has no interval (its repetitions' span within the run is no
    between-run interval) and `interval_basis` says so. Without `spreads` (one side of a comparison, or a unit test of
    a board's other rules) a run's own interval stands. A
    configuration of one measurement (a served point) with no pooled spread has no interval either: `lo` and `hi` are
    null, never equal to its figure."""
    # a column the board makes for the row itself (its MBU, of the row's figure) is not taken from its runs
    others = [
        c for c in ranked.columns if c not in {*KEYS, "value", "lo", "hi"} and fields.aggregation(c, True) != "row"
    ]
    grouped = (
        ranked.sort("started_at", "run_id")
        .group_by(KEYS, maintain_order=True)
        .agg(
            pl.col("value").median(),
            *(configurations.aggregated(c, tests=True) for c in others),  # each as declared (generator/load/fields.py)
            figures=pl.col("value"),
            lows=pl.col("lo"),
            highs=pl.col("hi"),
            runs=pl.len(),
            run_ids=pl.col("run_id"),
            harness_commits=pl.col("harness_commit"),
        )
    )
    out: list[tuple[float | None, float | None, str]] = []
    for row in grouped.iter_rows(named=True):
        key = (row.get("engine"), row.get("kind"), row.get("accelerator"), row.get("accelerator_count"))
        spread = (spreads or {}).get(key)  # type: ignore[arg-type]  # a key with a null never matches
        figures = [x for x in row["figures"] if x is not None]
        own = [(x, lo, hi) for x, lo, hi in zip(row["figures"], row["lows"], row["highs"], strict=True)
               if x is not None]  # fmt: skip
        repetitions = any(lo is not None for _, lo, _ in own)
        hardware = f"{key[3]} × {key[2]}" + (f", {key[1]} tests" if key[1] else "")
        found = evidence.interval(figures, own, spread, board=spreads is not None)
        if not figures:
            out.append((None, None, "no figure"))
        elif spread is None and len(figures) == 1 and not repetitions:
            out.append(
                (
                    None,
                    None,
                    f"one run, one measurement: no interval (no repeats by {key[0]} of its kind on its hardware)",
                )
            )
        elif found.unreplicated:
            out.append((None, None, configurations.unreplicated(key[0], hardware, own[0][1:])))
        else:
            text = configurations.basis(len(figures), spread, f"{hardware} by {key[0]}" if spread else hardware)
            text = text if repetitions or len(figures) > 1 else text + "; one measurement a run"
            flagged = f"; {found.flagged} run(s): {evidence.FLAGGED}" if found.flagged else ""
            out.append((found.lo, found.hi, text + flagged))
    lows, highs, bases = zip(*out, strict=True) if out else ((), (), ())
    grouped = grouped.drop("figures", "lows", "highs").with_columns(
        lo=pl.Series(lows, dtype=pl.Float64),
        hi=pl.Series(highs, dtype=pl.Float64),
        interval_basis=pl.Series(bases, dtype=pl.String),
    )
    return grouped.join(configurations.differences(grouped), on=KEYS, how="left")


def repeats(runs: pl.DataFrame, by: tuple[str, ...] = ()) -> pl.DataFrame:
    """A/A for inference and serving tests, as `derive.repeats` is for training: every configuration of a test (`KEYS`)
    with two or more runs under the same host conditions, their figures and their relative spread
    (`metrics.relative_spread`). `runs`: the runs that count (finished, verified), each with its figure in `value`;
    `by`: more columns a repeat shares (`runs.every_run` adds the harness commit: runs of two commits are not A/A)."""
    keys = [*KEYS, "kind", "accelerator", "accelerator_count", "shared_host", *by]
    groups = (
        runs.filter(pl.col("value").is_not_null() & ~configurations.flagged("value", "lo", "hi", runs.columns))
        .sort("started_at", "run_id")
        .group_by(keys, maintain_order=True)
        .agg(pl.col("run_id"), values=pl.col("value"))
        .filter(pl.col("run_id").list.len() >= 2)
    )
    spreads = [metrics.relative_spread(v) for v in groups["values"]]
    return groups.with_columns(runs=pl.col("run_id").list.len(), spread=pl.Series(spreads, dtype=pl.Float64)).sort(keys)


def rank(rows: pl.DataFrame) -> pl.DataFrame:
    """Ranks with ties where configurations' intervals overlap (`metrics.ranks_with_ties`), fastest first. A row
    without an interval has no rank (null), and is listed after the ranked rows: it could overlap any of them, so it
    never ranks above one, and no row ranks below it."""
    rows = rows.sort(pl.col("lo").is_null(), "value", "settings_hash", descending=[False, True, False])
    bounds = rows.select("lo", "hi").rows()
    ranks = metrics.ranks_with_ties(list(bounds))
    return rows.with_columns(rank=pl.Series(ranks, dtype=pl.Int64))


def rank_rule(agreement: str | None = None) -> str:
    """The boards' rank rule, with the agreement with the engine's own tool that the board applied (`agreement`: a
    served board's `serving.agreement_clause`; by default the floor on every figure both report)."""
    agreement = agreement or f"±{metrics.OWN_TOOL_REL_TOL * 100:g}% on every figure both report"
    return (
        "One row per configuration (variant settings, test, devices, hardware, engine version); only finished runs on "
        "known hardware rank, and where the engine has its own benchmark tool "
        f"({', '.join(sorted(engines.tool_labels().values()))}) "
        f"only beside that tool's record of the same test agreeing within {agreement}; "
        "a row's figure is the median of its runs'; its 95% interval is exp(mean ln ± t·s/√n) with "
        "the between-run spread s of its engine's own repeats of its kind of test, pooled over every configuration it "
        "repeated on its hardware (never another engine's), never narrower than its runs' own intervals nor excluding "
        "a run; a row of one run whose engine has no such repeats is unreplicated: no interval; "
        "a row's rank is one plus the number of rows "
        "whose interval lies wholly above its own (no row is ranked below one it overlaps; ranks can repeat and skip), "
        "and a row without an interval has no rank (it could overlap any row)."
    )


RANK_RULE = rank_rule()
"""The rank rule of a board held to the floor tolerance (inference and offline boards)."""
