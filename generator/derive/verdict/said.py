"""The verdict's answer as typed records (`verdict.answer` makes them; `Verdict.said` holds one): what the home page,
the fight's board, the owed list and the sweep chart read. Every figure is computed in generator/derive/verdict/ from
`runners.metrics`; these records only name them.

An answer without resamples (`verdict.answer` without draws) has point figures only: every interval field is None
and there is no decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl


@dataclass(frozen=True, slots=True, kw_only=True)
class DecidingPoint:
    """A sweep point the matched shape is interpolated between (one, where the shape falls on a measured point): where
    further runs would settle an undecided answer."""

    label: str
    """Its curve's label (the sweep's `label`)."""
    curve_hash: str
    """Its curve (the sweep's `curve_hash`): what names its runs' settings, so the runs it wants can be found."""
    micro_batch: int
    runs: int
    """The runs the point has now."""
    full_length: bool
    """Whether any of them ran the workload's full length: further full-length runs join them, else replace them."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Tuned:
    """A tuned curve at the matched shape, interpolated between its measured micro-batches around it."""

    variant: str
    label: str
    """The curve's label: its variant, with what differs where the variant has several curves."""
    curve_hash: str
    steps_per_s: float
    """Its steps/s at the matched micro-batch (`metrics.interpolate`)."""
    ratio: float
    """Tuned over stock: `steps_per_s` over the claim's stock figure (`Answer.target`)."""
    gap: float
    """The sparse-first claim's steps/s over `steps_per_s`: the gap the seed asks about."""
    steps_per_s_lo: float | None = None
    """The resampled 95% interval of `steps_per_s` (`metrics.percentile_interval`); None without resamples."""
    steps_per_s_hi: float | None = None
    ratio_lo: float | None = None
    ratio_hi: float | None = None
    gap_lo: float | None = None
    """The interval of `gap`: the claimed figure over the interval's high end."""
    gap_hi: float | None = None
    undefined_share: float | None = None
    """The share of resamples whose own matched shape falls outside either curve's measured micro-batches."""
    decision: str | None = None
    """"closes", "does not" or "undecided" (`metrics.three_way` of the gap's interval against `verdict.GAP_ASKED`;
    where more resamples are undefined than the interval's tails hold, of the range every defined resample spans);
    None without resamples."""
    beats_claim: bool | None = None
    """Whether the interval's low end is at or above the sparse-first claim's steps/s."""
    p_gap_above: float | None = None
    """P(gap > `verdict.GAP_ASKED`): the share of resamples with a defined matched shape whose gap is above it."""
    further_runs: int | None = None
    """When undecided: the fewest further full-length runs at each deciding point, over two or more sessions, that
    settle it with probability `verdict.POWER` or more if the figures hold (`verdict.further_runs_power`, Student's t
    kept); None where none up to `verdict.MAX_FURTHER_RUNS` would, or no spread was measured."""
    settle_probability: float | None = None
    """The probability that `further_runs` settle it."""
    deciding: tuple[DecidingPoint, ...] = ()
    """When undecided: the stock and tuned points the matched shape is interpolated between."""
    settles_to: str | None = None
    """The decision `further_runs` more runs would settle it to, if the figures hold."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Reading:
    """The verdict in one reading of steps/s (`verdict.READINGS`)."""

    column: str
    """The run summary's column this reading reads (`steps_per_s`, `end_to_end_steps_per_s`)."""
    stock_points: tuple[tuple[float, float], ...]
    """The stock curve the matched shape is found on, as (micro-batch, steps/s); empty without one."""
    matched_micro_batch: float | None
    """Where the stock curve runs the claim's stock figure (`metrics.crossing`); None where it does not cross it
    within the micro-batches measured."""
    matched_tokens_per_step: float | None
    """The matched shape in tokens a step; None without one."""
    tuned: tuple[Tuned, ...]
    """Every tuned curve measured around the matched shape, fastest first."""
    best: Tuned | None
    """The fastest tuned curve; None where there is none."""
    ddp: Tuned | None
    """Tuned DDP alone (`verdict.DDP_TUNED`: no FSDP, no float8), the seed's own words; None where not measured."""
    why_not: str | None
    """Why there is no answer yet (no matched shape, or no tuned curve around it); None where there is one."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """The answer in every reading of steps/s; the headline reading's figures also read directly (`best`, ...)."""

    target: float
    """The claim's stock steps/s: the figure the matched shape is found at."""
    claimed_ratio: float
    """The sparse-first claim over the stock claim."""
    headline: str
    """The reading the headline answers with (`verdict.HEADLINE`)."""
    readings: Mapping[str, Reading]
    """Per reading (`verdict.READINGS`, in its order), its answer."""

    @property
    def at_headline(self) -> Reading:
        return self.readings[self.headline]

    @property
    def stock_points(self) -> tuple[tuple[float, float], ...]:
        return self.at_headline.stock_points

    @property
    def matched_micro_batch(self) -> float | None:
        return self.at_headline.matched_micro_batch

    @property
    def matched_tokens_per_step(self) -> float | None:
        return self.at_headline.matched_tokens_per_step

    @property
    def tuned(self) -> tuple[Tuned, ...]:
        return self.at_headline.tuned

    @property
    def best(self) -> Tuned | None:
        return self.at_headline.best

    @property
    def ddp(self) -> Tuned | None:
        return self.at_headline.ddp

    @property
    def why_not(self) -> str | None:
        return self.at_headline.why_not


def crossings(said: Answer) -> pl.DataFrame:
    """Where the verdict's curves cross the matched shape (`verdict.answer`): the stock curve at the claimed stock
    figure (its crossing defines the shape) and each tuned curve at its interpolated steps/s there."""
    labels = [f"stock ({said.target:.3g}, the claim's stock)"]
    values = [float(said.target)]
    labels += [t.label for t in said.tuned]
    values += [float(t.steps_per_s) for t in said.tuned]
    schema = {"label": pl.String, "steps_per_s": pl.Float64}
    return pl.DataFrame({"label": labels, "steps_per_s": values}, schema=schema)
