"""The verdict: the seed's question ("If tuned DDP closes the gap to 1.1x, I'll say so") answered at the shape it
was asked, from the records alone, no more certain than its evidence.

The seed's claims (imported claim records) give the fight: suite, workload, device count and the two figures,
21.7 steps/s for the sparse-first trainer and 14.1 for stock PyTorch DDP. The seed never states its batch, so the
matched shape is where our stock bf16 DDP (`STOCK`) runs the claim's stock figure, interpolated between the two
micro-batches that bracket it (`metrics.crossing`); there, tuned over stock against the claim's ratio, and tuned's
own steps/s against the sparse-first figure. The seed never says which steps/s it means either, so each reading
(`READINGS`: steady state, and end to end with warm-up and compilation) gets its own matched shape and answer.

A curve of the sweep is one configuration at every micro-batch (`curve_hash`: its settings but micro-batch and
steps), labelled by what differs where a variant has several. The intervals come from resampling every point
(generator/derive/verdict/draws.py) and recomputing the matched shape and every ratio in each resample, so the
crossing's own uncertainty is in the gap; the answer is three-way (`metrics.three_way`) with P(gap > 1.1) beside it,
and an undecided one says how many further full-length runs at each deciding point, over two or more sessions, settle it
with what probability (`further_runs_power`: Student's t kept, `metrics.t_power`). Every formula comes from
`runners.metrics`; this module groups, interpolates and words.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

import generator.derive.configurations as configurations
import generator.derive.counting as counting
import generator.derive.evidence as evidence
import generator.derive.readable as readable
import generator.derive.verdict.owed_list as owed_list
from generator.derive.verdict.said import Answer, DecidingPoint, Reading, Tuned
from runners import metrics, schema

STOCK = "ddp-amp-stock"
"""The seed's "stock PyTorch DDP": the DDP tutorial with bf16 autocast. fp32 stock cannot have been it (at the
claimed 14.1 steps/s the seed's GPUs would have run at over 600% of their fp32 peak: see the claims page)."""
SWEEP_MIN_STEPS = 300
"""Shortest run that counts as a sweep point (issue 22: each point at least 300 steps)."""
GAP_ASKED = 1.1
"""The seed's threshold: "If tuned DDP closes the gap to 1.1x, I'll say so"."""
DDP_TUNED = "ddp-tuned"
"""Tuned DDP in the seed's own sense: DDP with every setting a performance engineer would reach for, no FSDP."""
READINGS = {"steady": "steps_per_s", "end_to_end": "end_to_end_steps_per_s"}
"""The two readings of "steps/s", by the summary column each reads: the median steady-state window rate (warm-up
and compilation excluded, the project's measurement rule), and all of the workload's steps over their wall time,
warm-up and compilation included (a shorter run's projected to the workload's steps)."""
HEADLINE = "steady"
"""The reading the home page's headline answers with: the project's measurement rule is that warm-up and
compilation are reported apart from throughput, and the seed's "steps/s" beside a 2000-step run says no more."""
MAX_FURTHER_RUNS = 100
"""The most further runs per deciding point `answer` looks for: beyond it, "more than 100"."""
POWER = 0.8
"""The probability of settling an undecided answer that the "further runs" advice asks for (`metrics.t_power`): the
usual planning power of a test (Montgomery, "Design and Analysis of Experiments", §2.4.4)."""
CONFIDENCE = 0.95


@dataclass(frozen=True, slots=True)
class Fight:
    """The seed's two claims and the fight they describe."""

    suite: str
    workload: str
    devices: int
    challenger: dict[str, Any]
    """The sparse-first trainer's claim record (summary row)."""
    stock: dict[str, Any]
    """Stock PyTorch DDP's claim record."""

    @property
    def claimed_ratio(self) -> float:
        return self.challenger["steps_per_s"] / self.stock["steps_per_s"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """The answer to the seed's question as the home page states it (`sweep_draws.compute`)."""

    fight: Fight
    points: pl.DataFrame
    """The sweep's points (`sweep`): every measured point of the stock and tuned curves, with its intervals."""
    said: Answer
    """The answer (`answer`), with every figure at the matched shape resampled."""
    spreads: dict[str, configurations.Spreads]
    """Per reading of steps/s, the pooled between-run spreads the points' intervals and resamples use."""
    pooled: metrics.PooledSpread | None
    """The headline reading's pooled spread on the fight's hardware and device count."""
    owed: list[dict[str, Any]]
    """What the seed's post owes and has not been measured yet (`owed`)."""
    claims: pl.DataFrame
    """The fight's two claims as the sweep's chart rules them (`claim_lines`): label and steps/s."""
    crossings: pl.DataFrame
    """Where the sweep's curves cross the matched shape (`verdict.said.crossings`): label and steps/s."""
    t975: float | None
    """Student's t at 97.5% with the pooled spread's degrees of freedom (`metrics.student_t_quantile`): the quantile
    every interval of the sweep is made with, as the home page states it; None without a pooled spread."""
    full_steps: int | None
    """The fight's workload's full length in steps, as its suite file defines it now (`full_steps`)."""

    @property
    def matched(self) -> dict[tuple[str, str], float]:
        """The matched shape in tokens a step, by the fight's (suite, workload); empty where none was found."""
        tokens = self.said.matched_tokens_per_step
        return {} if tokens is None else {(self.fight.suite, self.fight.workload): tokens}


SEED_CLAIMS = Path(__file__).resolve().parents[3] / "runners" / "claims" / "seed.toml"
"""The seed's claims as the project states them: only claim records that match one of these (id and figure) can
define the fight, so a submitted claim file cannot move the question."""


def _seed_claims() -> dict[str, float]:
    return {f"claim-{c['id']}": c["steps_per_s"] for c in tomllib.loads(SEED_CLAIMS.read_text())["claims"]}


def fight(summary: pl.DataFrame) -> Fight | None:
    """The fight the seed's claims describe: its torch claim (stock DDP) and its other engine's, on one suite and
    workload, each a claim record whose id and figure match runners/claims/seed.toml."""
    seed = _seed_claims()
    claims = summary.filter(
        (pl.col("origin") == "claim") & pl.col("retracted_by").is_null() & pl.col("run_id").is_in(list(seed))
    ).sort("run_id")
    claims = claims.filter(
        pl.col("steps_per_s") == pl.col("run_id").replace_strict(seed, default=None, return_dtype=pl.Float64)
    )
    for (suite, workload), group in claims.group_by("suite", "workload", maintain_order=True):
        stock = group.filter(pl.col("engine") == "torch")
        other = group.filter(pl.col("engine") != "torch")
        if stock.height and other.height:
            s, c = stock.row(0, named=True), other.row(0, named=True)
            return Fight(str(suite), str(workload), int(s["accelerator_count"]), c, s)
    return None


def sweep(
    summary: pl.DataFrame, the_fight: Fight, spreads: dict[str, configurations.Spreads] | None = None
) -> pl.DataFrame:
    """Per curve (one configuration at every micro-batch: `curve_hash`) and micro-batch: our measured runs, by the
    stock claim's engine, of the fight's model on its device count (any workload of the suite training the same
    model), of a variant the suite file gives the fight's workload, verified, unretracted, loss parity passed, at
    least `SWEEP_MIN_STEPS` steps. Where a point has full-length runs only those count. Each reading's figure is the
    median over runs; its interval `evidence.interval` with the between-run spread pooled on the hardware
    (`spreads`, per reading: `configurations.pooled_spreads`), as a board row's is. `label` names the curve: its
    variant, and what differs where the variant has several curves."""
    pinned = pl.col("variant").is_in(_defined_variants(the_fight))  # pinned variants only, no sweep settings
    return _points(summary, the_fight, spreads, pinned)


def changed_sweep(
    summary: pl.DataFrame, the_fight: Fight, spreads: dict[str, configurations.Spreads] | None = None
) -> pl.DataFrame:
    """The points `sweep` would give runs that changed the settings of a variant the suite file gives the fight's
    workload (`name[key=value]`), by the same rules: the configurations tuning.py's ladder climbs through between
    two of the sweep's, never a point of the verdict's."""
    base = pl.col("variant").str.replace(r"\[.*\]$", "")
    changed = pl.col("variant").str.ends_with("]") & base.is_in(_defined_variants(the_fight))
    return _points(summary, the_fight, spreads, changed)


def _points(
    summary: pl.DataFrame, the_fight: Fight, spreads: dict[str, configurations.Spreads] | None, variants: pl.Expr
) -> pl.DataFrame:
    """`sweep`'s points of the runs whose variant `variants` admits."""
    model = pl.col("model_name")
    optional = (
        ("mfu_datasheet_reference", pl.Float64),
        ("reference_precision", pl.String),
        ("shared_host", pl.Boolean),
        ("end_to_end_steps_per_s", pl.Float64),
        ("peak_mem_steady_gib", pl.Float64),
        ("gpu_uuids", pl.String),
    )
    for name, dtype in optional:
        if name not in summary.columns:  # only float8 runs have the first two; a summary of bf16 runs may lack them
            summary = summary.with_columns(pl.lit(None, dtype=dtype).alias(name))
    fight_model = summary.filter(
        (pl.col("suite") == the_fight.suite) & (pl.col("workload") == the_fight.workload) & counting.MEASURED
    ).select(model.alias("m"))["m"]
    if not fight_model.len():
        return _empty_sweep()
    points = (
        summary.filter(
            (pl.col("suite") == the_fight.suite)
            & (model == fight_model[0])
            & counting.MEASURED
            & (pl.col("engine") == the_fight.stock["engine"])  # the question is about the stock claim's engine
            & (pl.col("accelerator_count") == the_fight.devices)
            & pl.col("retracted_by").is_null()
            & pl.col("unverified").is_null()
            & pl.col("steps_per_s_lo").is_not_null()
            & (pl.col("loss_parity_ok") == True)  # noqa: E712 (null: no baseline, not a pass)
            & (pl.col("steps_completed") >= SWEEP_MIN_STEPS)
            & variants
        )
        .with_columns(any_full=pl.col("full_length").any().over("curve_hash", "micro_batch"))
        .filter(pl.col("full_length") | ~pl.col("any_full"))
        .sort("started_at", "run_id")
        .group_by("curve_hash", "micro_batch", maintain_order=True)
        .agg(
            variant=pl.col("variant").first(),
            curve_settings=pl.col("curve_settings").last(),
            tier=pl.col("tier").first(),
            tokens_per_step=pl.col("tokens_per_step").first(),
            steps_per_s=pl.col("steps_per_s").median(),
            end_to_end_steps_per_s=pl.col("end_to_end_steps_per_s").median(),
            figures=pl.col("steps_per_s"),
            end_to_end_figures=pl.col("end_to_end_steps_per_s"),
            own_lo=pl.col("steps_per_s_lo"),
            own_hi=pl.col("steps_per_s_hi"),
            tokens_per_s_per_device=pl.col("tokens_per_s_per_device").median(),
            mfu_datasheet=pl.col("mfu_datasheet").median(),
            compute_precision=pl.col("compute_precision").first(),
            # a float8 run's MFU against the bf16 peak too, so it reads beside bf16 runs' (null for bf16 runs)
            mfu_datasheet_reference=pl.col("mfu_datasheet_reference").median(),
            reference_precision=pl.col("reference_precision").first(),
            peak_mem_gib=pl.col("peak_mem_gib").max(),
            peak_mem_steady_gib=pl.col("peak_mem_steady_gib").max(),
            runs=pl.len(),
            # distinct sets of GPUs among the point's runs: hosts (null where a run does not name its GPUs)
            hosts=pl.when(pl.col("gpu_uuids").is_not_null().all()).then(pl.col("gpu_uuids").n_unique()),
            run_ids=pl.col("run_id"),
            full_length=pl.col("full_length").any(),
            run_id=pl.col("run_id").last(),
            accelerator=pl.col("accelerator").first(),
            engine=pl.col("engine").first(),  # the stock claim's: whose pooled spread widens the point
            shared_host=pl.col("shared_host").any(),
        )
        .sort("variant", "curve_hash", "micro_batch")
    )
    return _intervals(_labelled(points), the_fight.devices, spreads or {})


def _labelled(points: pl.DataFrame) -> pl.DataFrame:
    """`label`: a curve's variant, with what differs from the variant's other curves where it has several."""
    labels: dict[str, str] = {}
    for (variant,), group in points.group_by("variant", maintain_order=True):
        curves = dict(group.select("curve_hash", "curve_settings").unique("curve_hash").iter_rows())
        texts = configurations.differing(curves) if len(curves) > 1 else dict.fromkeys(curves, "")
        # as a reader reads them (`compile_loss off · reduce_dtype fp32`); text not of that form loses its prefix alone
        texts = {h: _readable(t) for h, t in texts.items()}
        labels |= {h: f"{variant} ({t})" if t else str(variant) for h, t in texts.items()}
    return points.with_columns(label=pl.col("curve_hash").replace_strict(labels, default=None, return_dtype=pl.String))


def _readable(text: str) -> str:
    said = readable.settings(text) or text
    return said if said != text else text.replace("settings.", "")


def _intervals(points: pl.DataFrame, devices: int, spreads: dict[str, configurations.Spreads]) -> pl.DataFrame:
    """Each point's interval for each reading, as a board row's (`evidence.interval`: the reading's pooled spread, its
    runs' own intervals, a run that measured no steady state left out, none where the point is unreplicated), with
    the basis of the steady one named."""
    columns: dict[str, list[Any]] = {"steps_per_s_lo": [], "steps_per_s_hi": [], "end_to_end_lo": [],
                                     "end_to_end_hi": [], "interval_basis": []}  # fmt: skip
    for row in points.iter_rows(named=True):
        key = (row["engine"], row["accelerator"], devices)
        steady = spreads.get("steady", {}).get(key)
        own = list(zip(row["figures"], row["own_lo"], row["own_hi"], strict=True))
        found = evidence.interval(row["figures"], own, steady)
        columns["steps_per_s_lo"].append(found.lo)
        columns["steps_per_s_hi"].append(found.hi)
        # a run's end-to-end figure has no interval of its own: the reading's spread alone widens it
        e2e = evidence.interval(row["end_to_end_figures"], [], spreads.get("end_to_end", {}).get(key))
        columns["end_to_end_lo"].append(e2e.lo)
        columns["end_to_end_hi"].append(e2e.hi)
        hardware = f"{devices} × {row['accelerator']}"
        columns["interval_basis"].append(
            configurations.unreplicated(row["engine"], hardware, own[0][1:])
            if found.unreplicated
            else configurations.basis(row["runs"], steady, f"{hardware} by {row['engine']}")
        )
    return points.with_columns(
        *(pl.Series(name, values, dtype=pl.String if name == "interval_basis" else pl.Float64)
          for name, values in columns.items())
    ).drop("own_lo", "own_hi")  # fmt: skip


def claim_lines(the_fight: Fight) -> pl.DataFrame:
    """The fight's claims (the challenger's, then stock's) as the sweep's chart draws them: a label and steps/s each."""
    claims = (the_fight.challenger, the_fight.stock)
    return pl.DataFrame(
        {"label": [f"{c['variant']} (claim)" for c in claims], "steps_per_s": [c["steps_per_s"] for c in claims]}
    )


def full_steps(suite: str, workload: str) -> int | None:
    """A workload's full length in steps as its suite file defines it now (a run's own record says how many steps it
    made, not the full length); None where the suite file gives none."""
    steps = (schema.suite_workloads(suite).get(workload) or {}).get("steps")
    return steps if isinstance(steps, int) and not isinstance(steps, bool) else None


def _defined_variants(the_fight: Fight) -> list[str]:
    """The variants the suite file gives the fight's workload: no record joins the sweep under a name of its own."""
    defined = schema.suite_workloads(the_fight.suite).get(the_fight.workload)
    return defined["variants"] if defined else []


def _empty_sweep() -> pl.DataFrame:
    return pl.DataFrame(
        schema={"curve_hash": pl.String, "micro_batch": pl.Int64, "variant": pl.String, "curve_settings": pl.String,
                "tier": pl.String, "tokens_per_step": pl.Float64, "steps_per_s": pl.Float64,
                "end_to_end_steps_per_s": pl.Float64, "figures": pl.List(pl.Float64),
                "end_to_end_figures": pl.List(pl.Float64), "tokens_per_s_per_device": pl.Float64,
                "mfu_datasheet": pl.Float64, "compute_precision": pl.String, "mfu_datasheet_reference": pl.Float64,
                "reference_precision": pl.String, "peak_mem_gib": pl.Float64, "peak_mem_steady_gib": pl.Float64,
                "runs": pl.UInt32, "hosts": pl.UInt32,
                "run_ids": pl.List(pl.String), "full_length": pl.Boolean, "run_id": pl.String,
                "accelerator": pl.String, "engine": pl.String, "shared_host": pl.Boolean, "label": pl.String,
                "steps_per_s_lo": pl.Float64, "steps_per_s_hi": pl.Float64, "end_to_end_lo": pl.Float64,
                "end_to_end_hi": pl.Float64, "interval_basis": pl.String}
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class PointDraws:
    """A sweep point's resamples (generator/derive/verdict/draws.py), kept in their parts: figure = within · exp(sd · z
    / (chi · √runs)), z standard normal and chi = √(V/df) with V chi-square of the pooled spread's degrees of freedom,
    so that z / chi is Student's t."""

    within: Any
    """The point's figure in each resample of its runs' windows (numpy array, one per draw)."""
    z: Any
    chi: Any
    sd: float
    """The pooled between-run spread (0 where none was measured: the point then moves by its windows alone)."""
    runs: int
    df: int = 0
    """The pooled spread's degrees of freedom (0 where none was measured)."""

    def figures(self) -> Any:
        return metrics.with_between_run_deviation(self.within, self.sd, self.z, self.chi, self.runs)


Draws = dict[tuple[str, int], PointDraws]
"""Per point (curve, micro-batch), its resamples."""


def _curve(points: pl.DataFrame, curve: str, column: str) -> list[tuple[float, float]]:
    rows = points.filter(pl.col("curve_hash") == curve).select("micro_batch", column).drop_nulls().rows()
    return [(float(m), float(v)) for m, v in rows]


def _stock_curve(points: pl.DataFrame, column: str) -> str | None:
    """The stock curve the matched shape is found on: `STOCK`'s curve with the most micro-batches measured (the
    latest run's, on a tie)."""
    stock = points.filter((pl.col("variant") == STOCK) & pl.col(column).is_not_null())
    if not stock.height:
        return None
    ranked = stock.group_by("curve_hash").agg(n=pl.len(), latest=pl.col("run_id").max()).sort("n", "latest")
    return str(ranked["curve_hash"][-1])


def answer(points: pl.DataFrame, the_fight: Fight, draws: dict[str, Draws] | None = None) -> Answer:
    """The verdict in each reading of steps/s (`Answer.readings`, by `READINGS`), the headline's (`HEADLINE`) also
    read directly: the matched shape, and there each tuned curve's steps/s, tuned over stock, the gap to the
    sparse-first figure and the three-way decision. With `draws` (per reading, `sweep_draws.draws`) every figure at
    the matched shape has its resampled 95% interval; without, point figures only (and no decision)."""
    readings = {
        reading: _reading(points, the_fight, column, (draws or {}).get(reading)) for reading, column in READINGS.items()
    }
    return Answer(target=the_fight.stock["steps_per_s"], claimed_ratio=the_fight.claimed_ratio, headline=HEADLINE,
                  readings=readings)  # fmt: skip


def _reading(points: pl.DataFrame, the_fight: Fight, column: str, draws: Draws | None) -> Reading:
    target, claimed = the_fight.stock["steps_per_s"], the_fight.challenger["steps_per_s"]
    stock_curve = _stock_curve(points, column)
    stock = tuple(_curve(points, stock_curve, column)) if stock_curve else ()
    unanswered = functools.partial(Reading, column=column, stock_points=stock, tuned=(), best=None, ddp=None)
    matched = metrics.crossing(list(stock), target) if stock else None
    if matched is None or stock_curve is None:
        return unanswered(matched_micro_batch=matched, matched_tokens_per_step=None, why_not=_why_not(stock, target))
    seq = points.filter(pl.col("curve_hash") == stock_curve).select(pl.col("tokens_per_step") / pl.col("micro_batch"))
    tokens = matched * seq.to_series()[0] if seq.height else None
    tuned: list[Tuned] = []
    tuned_curves = points.filter((pl.col("tier") == "tuned") & pl.col(column).is_not_null())
    for curve, variant, label in tuned_curves.select("curve_hash", "variant", "label").unique().sort("label").rows():
        curve_points = _curve(points, curve, column)
        rate = metrics.interpolate(curve_points, matched)
        if rate is None:
            continue
        intervals = (
            {} if draws is None else _with_draws(points, stock_curve, curve, column, matched, draws, target, claimed)
        )
        tuned.append(Tuned(variant=variant, label=label, curve_hash=curve, steps_per_s=rate, ratio=rate / target,
                           gap=claimed / rate, **intervals))  # fmt: skip
    tuned.sort(key=lambda t: -t.steps_per_s)
    if not tuned:
        why_not = "no tuned variant has been measured at both micro-batches around the matched shape yet"
        return unanswered(matched_micro_batch=matched, matched_tokens_per_step=tokens, why_not=why_not)
    return Reading(
        column=column,
        stock_points=stock,
        matched_micro_batch=matched,
        matched_tokens_per_step=tokens,
        tuned=tuple(tuned),
        best=tuned[0],
        # the seed's words are "tuned DDP": the DDP variant alone, without FSDP or float8, answers them literally
        ddp=next((t for t in tuned if t.variant == DDP_TUNED), None),
        why_not=None,
    )


def _gap_draws(
    points: pl.DataFrame, stock_curve: str, curve: str, column: str, draws: Draws, target: float, scaled: Draws
) -> Any:
    """The tuned curve's steps/s at each resample's own matched shape (NaN where that falls outside either curve's
    measured micro-batches): the crossing found again on each resample of the stock curve."""
    stock_x = [x for x, _ in _curve(points, stock_curve, column)]
    tuned_x = [x for x, _ in _curve(points, curve, column)]

    def matrix(curve_hash: str, xs: list[float]) -> Any:
        keys = [(curve_hash, int(x)) for x in xs]
        columns: list[Any] = [scaled[k] if k in scaled else draws[k].figures() for k in keys]
        return np.column_stack(columns)

    crossing = metrics.crossings(stock_x, matrix(stock_curve, stock_x), target)
    return metrics.interpolations(tuned_x, matrix(curve, tuned_x), crossing)


def _decided(rates: Any, claimed: float) -> tuple[float, float, float, str]:
    """(steps/s low, high, share of undefined resamples, decision) of a tuned curve's resampled rates."""
    finite = np.isfinite(rates)
    undefined = float(np.mean(~finite))
    lo, hi = metrics.percentile_interval(rates, CONFIDENCE) if undefined < 1 else (float("nan"), float("nan"))
    if undefined <= (1 - CONFIDENCE) / 2:
        return lo, hi, undefined, metrics.three_way(claimed / hi, claimed / lo, GAP_ASKED)
    # more resamples fall off the sweep (their matched shape outside the micro-batches measured) than the interval's
    # tails hold: the interval is not known well enough, and only a side every resample on the sweep takes decides
    gaps = claimed / np.asarray(rates)[finite]
    if not gaps.size:
        return lo, hi, undefined, "undecided"
    return lo, hi, undefined, metrics.three_way(float(gaps.min()), float(gaps.max()), GAP_ASKED)


def _p_gap_above(rates: Any, claimed: float) -> float | None:
    """P(gap > `GAP_ASKED`): the share of the resamples with a defined matched shape whose gap is above it."""
    finite = np.asarray(rates)[np.isfinite(rates)]
    return float(np.mean(claimed / finite > GAP_ASKED)) if finite.size else None


def _with_draws(
    points: pl.DataFrame, stock_curve: str, curve: str, column: str, matched: float, draws: Draws, target: float,
    claimed: float,
) -> dict[str, Any]:  # fmt: skip
    """A tuned curve's intervals at the matched shape from the resamples, its decision and, when undecided, the
    further full-length runs at each deciding point that would settle it at the current spread (`Tuned`'s fields)."""
    rates = _gap_draws(points, stock_curve, curve, column, draws, target, {})
    lo, hi, undefined, decision = _decided(rates, claimed)
    out = {"steps_per_s_lo": lo, "steps_per_s_hi": hi, "ratio_lo": lo / target, "ratio_hi": hi / target,
           "gap_lo": claimed / hi, "gap_hi": claimed / lo, "undefined_share": undefined, "decision": decision,
           "beats_claim": lo >= claimed, "further_runs": None, "deciding": (), "settles_to": None,
           "p_gap_above": _p_gap_above(rates, claimed), "settle_probability": None}  # fmt: skip
    if decision != "undecided":
        return out
    deciding = _deciding(points, stock_curve, matched, column) + _deciding(points, curve, matched, column)
    out["deciding"] = tuple(DecidingPoint(label=r["label"], curve_hash=r["curve_hash"], micro_batch=r["micro_batch"],
                                          runs=r["runs"], full_length=r["full_length"]) for r in deciding)  # fmt: skip
    df = min((draws[(r["curve_hash"], r["micro_batch"])].df for r in deciding), default=0)
    rate = metrics.interpolate(_curve(points, curve, column), matched)
    if not df or rate is None or not np.isfinite(lo) or not lo > 0:
        return out
    for k in range(1, MAX_FURTHER_RUNS + 1):
        found = further_runs_power(claimed / rate, claimed / hi, claimed / lo, df, deciding, k)
        if found >= POWER:
            out["further_runs"], out["settle_probability"] = k, found
            out["settles_to"] = "does not" if claimed / rate > GAP_ASKED else "closes"
            break
    return out


def further_runs_power(
    gap: float, gap_lo: float, gap_hi: float, df: int, deciding: list[dict[str, Any]], k: int
) -> float:
    """The probability that k further full-length runs at each deciding point, made over two or more sessions so that
    the pooled spread (which holds sessions) still describes them, settle the gap against `GAP_ASKED`, if the figures
    hold (`metrics.settle_probability`, Student's t kept): each point's variance shrinks by n / (n + k) for its n
    full-length runs (n / k where shorter runs are replaced), the slowest-shrinking point setting the pace, and the
    spread gains a degree of freedom for each further run at a point that has one already."""
    shrink = max((r["runs"] / (r["runs"] + k) if r["full_length"] else r["runs"] / k) for r in deciding)
    gained = sum(k if r["full_length"] else k - 1 for r in deciding)
    return metrics.settle_probability(gap, gap_lo, gap_hi, df, min(1.0, shrink), df + gained, GAP_ASKED, CONFIDENCE)


def _deciding(points: pl.DataFrame, curve: str, matched: float, column: str) -> list[dict[str, Any]]:
    """The points of a curve the matched shape is interpolated between (one, where it falls on a measured one)."""
    rows = points.filter(pl.col("curve_hash") == curve).filter(pl.col(column).is_not_null()).sort("micro_batch")
    xs = rows["micro_batch"].to_list()
    below = [i for i, x in enumerate(xs) if x <= matched]
    above = [i for i, x in enumerate(xs) if x >= matched]
    picked = sorted({below[-1], above[0]}) if below and above else []
    return [rows.row(i, named=True) for i in picked]


def owed(
    summary: pl.DataFrame,
    the_fight: Fight,
    said: Answer,
    leaderboards: Mapping[tuple[str, str], pl.DataFrame] | None = None,
) -> list[dict[str, Any]]:
    """The seed's list of what it still owes (`owed.items`), against the gap the seed asked about."""
    return owed_list.items(summary, the_fight, said, GAP_ASKED, leaderboards)


def _why_not(stock: Sequence[tuple[float, float]], target: float) -> str:
    if not stock:
        return f"{STOCK} has no sweep point on this hardware yet"
    lowest, highest = min(stock), max(stock)
    if lowest[1] < target:
        return (
            f"{STOCK} runs {lowest[1]:.3g} steps/s at the smallest micro-batch measured ({lowest[0]:g}), below the "
            f"claim's {target:g}: the matched shape lies at a smaller micro-batch, not measured yet"
        )
    return (
        f"{STOCK} runs {highest[1]:.3g} steps/s at the largest micro-batch measured ({highest[0]:g}), above the "
        f"claim's {target:g}: the matched shape lies at a larger micro-batch, not measured yet"
    )
