"""Every formula Fair Fight publishes, in one place, each with its source.

Pure functions of numbers and shapes: no engine, no I/O. The generator imports this module too, so the site's
methodology page and the runners compute the same thing the same way.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class ModelSpec(Protocol):
    """The shapes these formulas read: `runners.spec.ModelSpec` has them (this module imports nothing of the
    harness, so that every other module may import it)."""

    # Read-only properties: the frozen dataclasses that satisfy it cannot be assigned to.
    @property
    def family(self) -> str: ...
    @property
    def vocab(self) -> int: ...
    @property
    def dim(self) -> int: ...
    @property
    def layers(self) -> int: ...
    @property
    def heads(self) -> int: ...
    @property
    def kv_heads(self) -> int: ...
    @property
    def ffn_dim(self) -> int: ...
    @property
    def tied_embeddings(self) -> bool: ...
    @property
    def head_dim(self) -> int: ...


# --- parameters and FLOPs -----------------------------------------------------------------------------------


def block_params(spec: ModelSpec) -> int:
    """Parameters of one transformer block, without biases (none of our models use them)."""
    d, f = spec.dim, spec.ffn_dim
    norms = 2 * d  # two norm weight vectors per block
    if spec.family == "gpt":
        attention = 4 * d * d  # fused q, k, v (3·d²) and the output projection (d²)
        mlp = 2 * d * f  # up and down projections
    else:
        kv = spec.kv_heads * spec.head_dim
        attention = 2 * d * d + 2 * d * kv  # q and o are d×d; k and v are d×(kv_heads·head_dim)
        mlp = 3 * d * f  # gate, up, down (SwiGLU)
    return attention + mlp + norms


def non_embedding_params(spec: ModelSpec) -> int:
    """All blocks, the final norm and an untied LM head: the parameters that enter a matmul or a norm.

    Token and position tables are lookups (no FLOPs) and are excluded, as in Kaplan et al. 2020 (§2.1) and
    nanoGPT's `get_num_params(non_embedding=True)`. A tied head shares the embedding's weights and is counted
    with the embedding; its matmul is added back in `train_flops_per_token`.
    """
    head = 0 if spec.tied_embeddings else spec.vocab * spec.dim
    return spec.layers * block_params(spec) + spec.dim + head


def train_flops_per_token(spec: ModelSpec, seq_len: int) -> float:
    """Model FLOPs per trained token: 6·N + 12·L·d·T.

    Source: Chowdhery et al., "PaLM: Scaling Language Modeling with Pathways" (2022), appendix B: 6N for the
    forward and backward matmuls of N non-embedding parameters, plus 12·L·H·Q·T for self-attention (H·Q = d).
    Recomputation (activation checkpointing) is not counted: this is *model* FLOPs, so MFU compares engines
    on the work the model needs, not the work an engine chooses to do.
    """
    n = non_embedding_params(spec) + (spec.vocab * spec.dim if spec.tied_embeddings else 0)
    return 6.0 * n + 12.0 * spec.layers * spec.dim * seq_len


@dataclass(frozen=True, slots=True)
class RecordShapes:
    """A record's `config.model`, checked as `runners.spec.ModelSpec` checks a suite's model (`shapes_of`)."""

    family: str
    vocab: int
    dim: int
    layers: int
    heads: int
    kv_heads: int
    ffn_dim: int
    tied_embeddings: bool

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads


_WHOLE = ("vocab", "dim", "layers", "heads", "kv_heads", "ffn_dim", "context")


def shapes_of(model: object) -> RecordShapes | None:
    """A record's `config.model` as shapes, or None when it does not describe a model the way a suite does: every
    field present, whole positive sizes, heads dividing the width and key/value heads dividing the heads, and a
    GPT-style model without grouped-query attention and with GELU."""
    if not isinstance(model, dict):
        return None
    text = ("name", "family", "norm", "activation")
    if any(not isinstance(model.get(k), str) for k in text) or not isinstance(model.get("tied_embeddings"), bool):
        return None
    if any(not isinstance(model.get(k), int) or isinstance(model.get(k), bool) or model[k] <= 0 for k in _WHOLE):
        return None
    if model["family"] not in ("gpt", "llama") or model["dim"] % model["heads"] or model["heads"] % model["kv_heads"]:
        return None
    if model["family"] == "gpt" and (model["kv_heads"] != model["heads"] or model["activation"] != "gelu"):
        return None
    return RecordShapes(**{k: model[k] for k in RecordShapes.__slots__})


def train_flops_per_token_of(model: object, seq_len: object) -> float | None:
    """`train_flops_per_token` of a record's `config.model` and sequence length, or None when they do not describe
    a model (the site computes a run's FLOPs from its shapes rather than taking the figure a file declares)."""
    if not isinstance(seq_len, int) or isinstance(seq_len, bool) or seq_len < 1:
        return None
    shapes = shapes_of(model)
    return None if shapes is None else train_flops_per_token(shapes, seq_len)


def _positive(what: str, *values: Any) -> None:
    """Numbers must be positive; polars expressions are checked by their data (a null or zero gives null or inf)."""
    if any(isinstance(v, int | float) and v <= 0 for v in values):
        raise ValueError(f"{what} must be positive")


def tokens_per_s(steps_per_s: Any, tokens_per_step: Any) -> Any:
    """Training throughput in tokens/s: steps/s × tokens a step consumes (micro-batch × sequence × devices)."""
    return steps_per_s * tokens_per_step


def mfu(flops_per_token: Any, tokens_per_s: Any, peak_flops_per_device: Any, devices: Any) -> Any:
    """Model FLOPs utilisation (PaLM appendix B): achieved model FLOP/s over the peak of all devices, in [0, 1].
    Floats or polars expressions alike: the leaderboard's column is this function of its columns."""
    _positive("peak FLOP/s and device count", peak_flops_per_device, devices)
    return flops_per_token * tokens_per_s / (peak_flops_per_device * devices)


# Dense (no sparsity) datasheet peaks in FLOP/s, most specific name first: the first key contained in the
# reported device name wins. Sources: NVIDIA H100 Tensor Core GPU datasheet (SXM5: 989.4 TFLOP/s BF16,
# 494.7 TF32, 66.9 FP32); NVIDIA H200 datasheet (same compute as H100 SXM). FP8 (e4m3/e5m2): the datasheets
# list 3,958 TFLOP/s for H100 SXM and H200 and 3,026 for H100 PCIe *with sparsity*; dense is half (1,978.9 and
# 1,513), twice the dense BF16 figure, as the NVIDIA H100 Tensor Core architecture whitepaper tabulates.
DATASHEET_PEAK_FLOPS: dict[str, dict[str, float]] = {
    "H200": {"fp8": 1978.9e12, "bf16": 989.4e12, "tf32": 494.7e12, "fp32": 66.9e12},
    "H100 80GB HBM3": {"fp8": 1978.9e12, "bf16": 989.4e12, "tf32": 494.7e12, "fp32": 66.9e12},
    "H100 PCIe": {"fp8": 1513.0e12, "bf16": 756.5e12, "tf32": 378.0e12, "fp32": 51.2e12},
    "H100": {"fp8": 1978.9e12, "bf16": 989.4e12, "tf32": 494.7e12, "fp32": 66.9e12},
}


def datasheet_peak_flops(device_name: str, precision: str) -> float | None:
    """Datasheet peak for a device and precision, or None where there is no honest number (CPUs)."""
    for key, peaks in DATASHEET_PEAK_FLOPS.items():
        if key in device_name:
            return peaks.get(precision)
    return None


# A CPU has no datasheet peak we can honestly quote, but it has a ceiling no core exceeds: Intel AMX's tile
# multiply does 1,024 bf16 multiply-adds (2,048 FLOP) per cycle per core (Intel 64 and IA-32 Architectures
# Optimization Reference Manual, ch. 20, "Intel AMX"), the widest of any CPU unit, and no server core clocks
# above 6 GHz. Steps that imply more than this are impossible, whatever the CPU.
CPU_CEILING_FLOPS_PER_CORE = 2048 * 6.0e9


def flops_ceiling(device_name: str, precision: str, device: str | None, cpu_cores: int | None) -> float | None:
    """The most FLOP/s one device can do: its datasheet peak (GPUs), or for a CPU run the ceiling of all the host's
    cores. None where nothing is known: such a run's speed cannot be checked, so it is shown unverified."""
    if device == "cpu":
        return CPU_CEILING_FLOPS_PER_CORE * cpu_cores if cpu_cores else None
    return datasheet_peak_flops(device_name, precision)


# --- intervals ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Interval:
    """A median with a distribution-free confidence interval."""

    median: float
    lo: float
    hi: float
    n: int
    coverage: float
    """Exact coverage of [lo, hi]; below the 95% asked for when there are fewer than 6 samples."""


def median_ci(values: Sequence[float], confidence: float = 0.95) -> Interval:
    """Median and the order-statistic confidence interval [x(j), x(n+1-j)].

    Source: J.-Y. Le Boudec, "Performance Evaluation of Computer and Communication Systems" (EPFL Press,
    2010), Theorem 2.1; W. J. Conover, "Practical Nonparametric Statistics" (3rd ed.), §3.2. The number of
    samples below the median is Binomial(n, 1/2), so [x(j), x(n+1-j)] covers the true median with probability
    1 − 2·P(B ≤ j−1), with no assumption on the distribution. We pick the largest j that keeps the coverage at
    or above `confidence`; with fewer than 6 samples no j does, and [min, max] is returned with its (lower)
    exact coverage, which the site shows.
    """
    xs = sorted(float(v) for v in values)
    n = len(xs)
    if n == 0:
        raise ValueError("median_ci needs at least one value")
    mid = n // 2
    median = xs[mid] if n % 2 else (xs[mid - 1] + xs[mid]) / 2
    # P(B = i) for B ~ Binomial(n, 1/2), in logs: 2**n overflows a float from n = 1024 (a 5,000-step run has
    # that many windows), and exact integers cost O(n²) bits at 10⁵ samples
    log_half_n = -n * math.log(2)
    alpha_half = (1 - confidence) / 2
    j, tail = 0, 0.0  # tail = P(B ≤ j − 1)
    while j + 1 <= n // 2:
        next_tail = tail + math.exp(_log_comb(n, j) + log_half_n)
        if next_tail > alpha_half:
            break
        j, tail = j + 1, next_tail
    if j == 0:  # too few samples for the requested confidence: widest interval, honest coverage
        return Interval(median, xs[0], xs[-1], n, 1 - 2 * math.exp(log_half_n) if n > 1 else 0.0)
    return Interval(median, xs[j - 1], xs[n - j], n, 1 - 2 * tail)


def with_width(lo: float | None, hi: float | None) -> tuple[float | None, float | None]:
    """An interval as published: (lo, hi) where it has a width, else (None, None). An interval of zero width (one
    repetition's order statistics, the range of one run) says nothing of how far the figure could move, and read as
    a bound it claims a certainty no measurement gave: a figure without an interval shows none."""
    if lo is None or hi is None or not lo < hi:
        return None, None
    return lo, hi


def wider_than_figure(value: Any, lo: Any, hi: Any) -> Any:
    """Whether a run's own 95% interval is wider than its figure (hi − lo > value): for a rate, an interval that wide
    reaches down to zero or below it, so the run measured no steady state (the host changed speed under it: a loaded
    CPU's 0.72 steps/s run spanned [−47.8, 69.1]). Such a run is flagged, its own interval is no evidence, and it is
    never anyone's repeat. Floats (None: False) or polars expressions (null stays null)."""
    if value is None or lo is None or hi is None:
        return False
    return (hi - lo) > value


def window_interval(rates: Sequence[float]) -> tuple[float, float, float, int, float]:
    """A run's figure and its own 95% interval from its timing windows' rates: (median, lo, hi, windows, coverage).
    The interval is the wider of the median's order-statistic interval (`median_ci`, which treats windows as
    independent) and the batch-means interval (`batch_means_ci`, which does not: neighbouring windows of one run are
    strongly correlated). One function for every place a run's own interval is printed (the boards, `compare`,
    `bench`'s summary)."""
    ci = median_ci(rates)
    batched = batch_means_ci(rates)
    lo, hi = (ci.lo, ci.hi) if batched is None else (min(ci.lo, batched[0]), max(ci.hi, batched[1]))
    return ci.median, lo, hi, ci.n, ci.coverage


def repetition_interval(values: Sequence[float]) -> tuple[float, float | None, float | None, int, float | None] | None:
    """A test run's figure and its own 95% interval from its repetitions' values: (median, lo, hi, repetitions,
    coverage), the median's order-statistic interval (`median_ci`: with fewer than six repetitions the range and its
    exact coverage), never of zero width (`with_width`: one repetition, or all equal, has lo, hi and coverage None).
    None without a value. One function for every place a test run's own interval is printed (the boards, `compare`,
    `bench`'s summary)."""
    if not values:
        return None
    ci = median_ci(values)
    lo, hi = with_width(ci.lo, ci.hi)
    return ci.median, lo, hi, ci.n, None if lo is None else ci.coverage


OTHERS_SHARE = 0.10
"""A busy host: others took at least this share of its cores while a run ran (`busy_host`)."""
SATURATED = 0.90
"""... and the host's CPUs were at least this busy in all, so what others took, the run waited for."""


def others_cores(cpu_busy_s: Any, cpu_own_s: Any, wall_s: Any) -> Any:
    """Cores' worth of CPU time that other processes took while a run ran: the host's busy CPU seconds (a
    hypervisor's steal included) less the run's own (the bench and every process it reaped), over the wall seconds
    (`provenance.host_load_around`); never below zero (the busy counter ticks in 10 ms, the run's own in µs).
    Floats (None where one is missing or no time passed) or polars expressions (`bounds` holds wall_s above zero)."""
    values = (cpu_busy_s, cpu_own_s, wall_s)
    if all(isinstance(x, float | int) for x in values):
        return max(cpu_busy_s - cpu_own_s, 0.0) / wall_s if wall_s > 0 else None
    if any(x is None or isinstance(x, float | int) for x in values):
        return None
    return (cpu_busy_s - cpu_own_s).clip(lower_bound=0.0) / wall_s


def busy_host(cpu_busy_s: Any, cpu_own_s: Any, wall_s: Any, cpu_cores: Any) -> Any:
    """Whether a host was busy while a run was recorded: other processes took at least `OTHERS_SHARE` of its cores
    (`others_cores`) and its CPUs were `SATURATED` in all, so the run's own processes waited for CPU (a CPU run
    benched twice on one host gave 11.9 steps/s, then 0.72 beside another job). Judged by CPU time, not the load
    average: a load average read after a run still holds the run's own processes (it decays over a minute), which
    flagged every CPU run that used its cores. An idle 2-core VM's others take 0.004 cores. Floats (a missing value:
    False) or polars expressions (null stays null)."""
    others = others_cores(cpu_busy_s, cpu_own_s, wall_s)
    if others is None or cpu_cores is None:
        return False
    if isinstance(others, float):
        own = cpu_own_s / wall_s
        return others >= OTHERS_SHARE * cpu_cores and others + own >= SATURATED * cpu_cores
    return (others >= OTHERS_SHARE * cpu_cores) & (others + cpu_own_s / wall_s >= SATURATED * cpu_cores)


def _log_comb(n: int, k: int) -> float:
    """log C(n, k), finite for any n (math.comb's integer grows to n bits)."""
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


# Two-sided 97.5% quantiles of Student's t for 1-9 degrees of freedom (any table, e.g. NIST/SEMATECH
# e-Handbook of Statistical Methods, §1.3.6.7.2).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262)
BATCHES = 10
"""Batches of consecutive windows in the batch-means interval."""


def batch_means_ci(values: Sequence[float], batches: int = BATCHES) -> tuple[float, float] | None:
    """A 95% interval for the mean of a series whose neighbours are correlated (a run's timing windows: one run
    speeds up or slows down over minutes): the series is cut into `batches` contiguous batches and the batches'
    means are treated as independent, a Student t interval over them. Source: A. M. Law, "Simulation Modeling and
    Analysis" (5th ed., 2015), §9.5.3, the method of batch means. None with fewer than two values per batch."""
    n = len(values)
    b = min(batches, n // 2, len(_T975) + 1)
    if b < 2:
        return None
    size = n // b
    means = [sum(values[i * size : (i + 1) * size]) / size for i in range(b)]  # a partial last batch is dropped
    mean = sum(means) / b
    sd = math.sqrt(sum((m - mean) ** 2 for m in means) / (b - 1))
    half = _T975[b - 2] * sd / math.sqrt(b)
    return mean - half, mean + half


def window_rates(step_times_s: Sequence[float], window_steps: int) -> list[float]:
    """Steps per second of each complete window of `window_steps` consecutive steps (a partial tail is dropped).

    A window's rate is its step count over its summed time, so a slow step weighs as much as it cost.
    """
    rates = []
    for start in range(0, len(step_times_s) - window_steps + 1, window_steps):
        elapsed = sum(step_times_s[start : start + window_steps])
        rates.append(window_steps / elapsed)
    return rates


def ranks_with_ties(intervals: Sequence[tuple[float | None, float | None]]) -> list[int | None]:
    """Rank (1 = best, higher is better) where overlapping intervals tie.

    An entry's rank is one plus the number of entries whose interval lies wholly above its own: two entries share
    a rank unless one is better beyond doubt, so a reader never sees an order the data cannot support. An entry
    without an interval (a None end) has no rank and lies wholly above none: it could overlap any entry, so it
    never ranks above one, and none ranks below it.
    """
    known = [(lo, hi) for lo, hi in intervals if lo is not None and hi is not None]
    return [
        None if lo_i is None or hi_i is None else 1 + sum(1 for lo_j, _ in known if lo_j > hi_i)
        for lo_i, hi_i in intervals
    ]


# --- calibration --------------------------------------------------------------------------------------------


def matmul_flops(m: int, n: int, k: int) -> float:
    """FLOPs of an (m×k)·(k×n) matmul: one multiply and one add per term, 2·m·n·k."""
    return 2.0 * m * n * k


def copy_bandwidth(nbytes: int, seconds: float) -> float:
    """Device copy bandwidth counting bytes read plus bytes written (2·size), as STREAM's Copy kernel does."""
    return 2.0 * nbytes / seconds


def allreduce_bus_bandwidth(nbytes: int, seconds: float, ranks: int) -> float:
    """All-reduce bus bandwidth: algorithm bandwidth (size / time) × 2·(n−1)/n.

    Source: NVIDIA nccl-tests, doc/PERFORMANCE.md: the factor makes the figure comparable with the hardware's
    link bandwidth whatever the number of ranks (a ring all-reduce moves 2·(n−1)/n of the data per rank).
    """
    return nbytes / seconds * 2.0 * (ranks - 1) / ranks


# --- own-tool agreement -------------------------------------------------------------------------------------

OWN_TOOL_REL_TOL = 0.05
"""Largest relative gap allowed between a runner's figure and its engine's own benchmark tool's (llama-bench,
`mlx_lm.benchmark`, `vllm bench`) on the same test, weights, settings and host, for throughput and, where the tool
reports them, median TTFT and TPOT: a runner that disagrees with the engine's authors' own clock by more than this
has measured something else, and does not rank. llama.cpp's runner and llama-bench agree within 2.5% on every H200
test in data/h100 where both finished, and vLLM's offline runner and `vllm bench throughput` within 0.5%."""


TOOL_REPEATS_MIN = 3
"""The fewest records of one test by an engine's own tool that may widen its agreement tolerance: two records give one
difference, and one odd session (a loaded host, a server in another state) is then the whole estimate (on 2 × H200
one such pair once widened the served tolerance to 35%); with three, one odd record is outvoted by two."""


def agreement_tolerance(
    tool_repeats: Sequence[Sequence[float]], floor: float = OWN_TOOL_REL_TOL, least: int = TOOL_REPEATS_MIN
) -> float:
    """The relative gap allowed between a runner's figure and its engine's tool's, from the tool's own repeats of
    identical tests (`tool_repeats`: each test's figures, one a record): the largest relative spread
    (`relative_spread`) among the tests the tool repeated `least` or more times, never below `floor`; where no test
    was repeated that often, the floor. A runner cannot be asked to agree with the tool more closely than the tool
    agrees with itself (the idea of a repeatability limit: ISO 5725-6:1994, §4.1, the largest difference two results
    of the same method may show), but fewer than `least` repeats do not say how closely that is (`TOOL_REPEATS_MIN`)."""
    return max([floor, *(relative_spread(list(v)) for v in tool_repeats if len(v) >= max(least, 2))])


def within(ratio: Any, tol: Any) -> Any:
    """Whether a ratio of two figures of the same thing is 1 within a relative tolerance (a float, or a polars
    expression of a column of ratios)."""
    return abs(ratio - 1.0) <= tol


# --- loss parity --------------------------------------------------------------------------------------------

LOSS_PARITY_FIRST_STEP_NATS = 0.01
"""Same weights and same data give the same first loss; a larger gap means a different model or data."""
LOSS_PARITY_REL_TOL = 0.03
"""Largest relative gap allowed between a run's and its baseline's mean loss over each steady window.

Measured on 2×H200 at the seed's shapes (micro-batch 4, lr 1e-3 without warm-up, so the loss spikes early):
DDP variants, fp32 or bf16, stay within 0.25% of the fp32 baseline; FSDP2 with bf16 parameters departs by up
to 2.7% during the spike and two identical FSDP2 runs differ from each other by up to 3.0%. A run that trains
a different model (other data, other initial weights, a broken optimizer) departs far more than this.
"""


def window_means(values: Sequence[float], window_steps: int) -> list[float]:
    """Mean of each complete window of `window_steps` consecutive values."""
    return [
        sum(values[i : i + window_steps]) / window_steps for i in range(0, len(values) - window_steps + 1, window_steps)
    ]


LOSS_PARITY_REL_TOL_FP32 = 0.001
"""The same, when the run and its baseline both compute in full fp32 (no TF32, no bf16): then only the order of
reductions differs. Repeats of the fp32 stock baseline on 2×H200 stay within 0.0104% of each other and are identical
on CPU, while on the tiny CPU model (two processes, fp32) a frozen block moves the loss by 0.30% and a missing block
by 0.67% (tests/generator/test_claims_and_parity.py): 3% would let both pass, 0.1% neither."""


LOSS_PARITY_MEAN_REL_TOL = 0.04
"""Largest mean relative gap over all windows between a run and a full-length stock run, over the whole run.

The largest window gap cannot serve over 2000 steps: with AdamW at lr 1e-3 and no warm-up, two identical
`ddp-amp-stock` runs on 2×H200 end 6.8% apart in their last window, but their mean gap over the 99 windows is 1.83%;
`fsdp2-compile` against `ddp-amp-stock` averages 0.41–1.99% at micro-batch 4 on two GPUs, 2.93% at 16, 3.16% on one
GPU at 4. A halved learning rate on the tiny CPU model averages 6%."""


def loss_parity_whole(windows: Sequence[float], baseline_windows: Sequence[float]) -> tuple[float, bool]:
    """(mean relative window gap, within `LOSS_PARITY_MEAN_REL_TOL`) against a full-length run, over the windows both
    have."""
    common = min(len(windows), len(baseline_windows))
    gaps = [abs(w - b) / abs(b) for w, b in zip(windows[:common], baseline_windows[:common], strict=True)]
    mean = sum(gaps) / len(gaps) if gaps else 0.0
    return mean, mean <= LOSS_PARITY_MEAN_REL_TOL


def loss_parity_tolerance(precision: str | None, baseline_precision: str | None) -> float:
    """The relative window tolerance for a pair of runs, from the precision each one's matmuls ran in."""
    return LOSS_PARITY_REL_TOL_FP32 if precision == baseline_precision == "fp32" else LOSS_PARITY_REL_TOL


def loss_parity(
    first: float,
    baseline_first: float,
    windows: Sequence[float],
    baseline_windows: Sequence[float],
    rel_tol: float = LOSS_PARITY_REL_TOL,
) -> tuple[float, float, bool]:
    """(first-step gap in nats, largest relative window gap, within tolerance) against the baseline.

    Windows are compared where both runs have them (a shorter run is compared over its own length).
    """
    first_gap = abs(first - baseline_first)
    common = min(len(windows), len(baseline_windows))
    rel = max(
        (abs(w - b) / abs(b) for w, b in zip(windows[:common], baseline_windows[:common], strict=True)), default=0.0
    )
    return first_gap, rel, first_gap <= LOSS_PARITY_FIRST_STEP_NATS and rel <= rel_tol


# --- repeats and scaling ------------------------------------------------------------------------------------


def relative_spread(values: Sequence[float]) -> float:
    """Run-to-run spread of repeated runs of one configuration (an A/A test): (max − min) / median of the runs'
    medians. Two configurations whose medians differ by less than this have not been shown to differ: the
    same code on the same hardware already moved that much (see the Methodology page, "Repeats")."""
    if len(values) < 2:
        raise ValueError("a spread needs at least two runs")
    if not all(v > 0 for v in values):  # a range over a median of mixed signs, or over zero, is no relative spread
        raise ValueError(f"a spread needs positive figures: {sorted(values)}")
    ordered = sorted(values)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return (ordered[-1] - ordered[0]) / median


def spread_band(center: float, spread: float) -> tuple[float, float]:
    """The figures no further from `center` than identical runs moved: every b with `relative_spread([center, b])`
    at most `spread` (the A/A floor `compare_verdict` holds a difference to), so a figure inside the band has not been
    shown to differ from `center`. From |b − c| / ((b + c) / 2) ≤ s: c·(2 − s)/(2 + s) ≤ b ≤ c·(2 + s)/(2 − s)."""
    if center <= 0 or not 0 <= spread < 2:
        raise ValueError("a band needs a positive centre and a spread in [0, 2)")
    return center * (2 - spread) / (2 + spread), center * (2 + spread) / (2 - spread)


# --- between-run spread, pooled -------------------------------------------------------------------------------
# One run says nothing of how far a second run of the same settings would land; repeats of other settings on the same
# hardware do. Their spreads are pooled as the within-groups mean square of a one-way analysis of variance, on the log
# of each run's figure (so a configuration at 4 steps/s and one at 25 pool alike, as relative spreads), and an
# interval for a configuration's figure uses Student's t with the pool's degrees of freedom.


@dataclass(frozen=True, slots=True)
class PooledSpread:
    """The between-run standard deviation of ln(figure) pooled over groups of identical settings (`pooled_log_sd`)."""

    sd: float
    """Pooled standard deviation of ln(figure): about the relative run-to-run spread (0.01: 1%)."""
    df: int
    """Degrees of freedom: Σ (runs in a group − 1)."""
    groups: int
    """Groups of identical settings (two or more runs each) that were pooled."""


def pooled_log_sd(groups: Sequence[Sequence[float]]) -> PooledSpread | None:
    """s_p² = Σ_g Σ_i (ln x_gi − mean_g)² / Σ_g (n_g − 1) over the groups of two or more positive figures; None
    where there is none. Source: the error (within-groups) mean square of the one-way analysis of variance, D. C.
    Montgomery, "Design and Analysis of Experiments" (9th ed., 2017), ch. 3 ("Analysis of the fixed effects
    model"); Minitab's "One-way ANOVA: methods and formulas" (pooled standard deviation, n_T − r degrees of
    freedom)."""
    squares, df, used = 0.0, 0, 0
    for values in groups:
        logs = [math.log(v) for v in values if v is not None and v > 0]
        if len(logs) < 2:
            continue
        mean = sum(logs) / len(logs)
        squares += sum((x - mean) ** 2 for x in logs)
        df += len(logs) - 1
        used += 1
    return PooledSpread(math.sqrt(squares / df), df, used) if df else None


@functools.lru_cache(maxsize=4096)
def student_t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with `df` degrees of freedom (0 < p < 1), by bisection on its distribution
    function F(t) = 1 − ½·I_{df/(df+t²)}(df/2, ½) for t ≥ 0 (Abramowitz & Stegun, "Handbook of Mathematical
    Functions", 26.7.1 with 26.5.27), I the regularized incomplete beta function (`_incomplete_beta`). Kept per
    (p, df): a board asks for the same few hundreds of times, and each costs a bisection of 60 steps."""
    if not 0 < p < 1 or df <= 0:
        raise ValueError("p must be in (0, 1) and df positive")
    if p < 0.5:
        return -student_t_quantile(1 - p, df)

    def cdf(t: float) -> float:
        return 1 - 0.5 * _incomplete_beta(df / 2, 0.5, df / (df + t * t))

    lo, hi = 0.0, 1.0
    while cdf(hi) < p:
        hi *= 2
    for _ in range(200):  # to the float's resolution
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if cdf(mid) < p else (lo, mid)
    return (lo + hi) / 2


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), from its continued fraction evaluated by the modified Lentz method. Source: W. H. Press et al.,
    "Numerical Recipes" (3rd ed., 2007), §6.4 (`betai`, `betacf`)."""
    if x <= 0 or x >= 1:
        return 0.0 if x <= 0 else 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x > (a + 1) / (a + b + 2):  # the fraction converges fast below this point: use the symmetry there
        return 1 - _incomplete_beta(b, a, 1 - x)
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):  # fmt: skip
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return front * h / a


def repeat_interval(
    figures: Sequence[float],
    own: Sequence[tuple[float | None, float | None]],
    spread: PooledSpread | None,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """A 95% interval for a configuration's figure from its n runs' `figures` (and each run's own interval, `own`:
    (lo, hi), None where a run has none): exp(mean(ln x) ± t_{df, 0.975} · s_p / √n) with the pooled between-run
    spread (`pooled_log_sd`), the interval for a factor level's mean in a one-way analysis of variance (Montgomery,
    ch. 3, "Estimation of the model parameters"; Minitab's one-way ANOVA confidence intervals),
    never narrower than its runs' own intervals (lowest low to highest high) and never excluding one of its runs. A
    configuration of one run is so widened by t · s_p each side of its figure in ln units. Without a pooled spread
    it is its runs' hull alone."""
    if not figures:
        raise ValueError("an interval needs at least one run")
    if spread is not None and not all(x > 0 for x in figures):  # the pooled interval is on the figures' logs
        raise ValueError(f"an interval with a pooled spread needs positive figures: {list(figures)}")
    lows = [lo for lo, _ in own if lo is not None] + list(figures)
    highs = [hi for _, hi in own if hi is not None] + list(figures)
    lo, hi = min(lows), max(highs)
    if spread is not None:
        centre = sum(math.log(x) for x in figures) / len(figures)
        half = student_t_quantile(0.5 + confidence / 2, spread.df) * spread.sd / math.sqrt(len(figures))
        lo, hi = min(lo, math.exp(centre - half)), max(hi, math.exp(centre + half))
    return lo, hi


# --- resampling ----------------------------------------------------------------------------------------------


def block_length(n: int) -> int:
    """Block length of the moving-block bootstrap for a series of n: ⌈n^(1/3)⌉, the rate at which the optimal length
    grows for variance and distribution estimates (P. Hall, J. L. Horowitz and B.-Y. Jing, "On blocking rules for the
    bootstrap with dependent data", Biometrika 82(3), 1995)."""
    return max(1, math.ceil(n ** (1 / 3)))


def block_resample(values: Sequence[float], draws: int, rng: Any) -> Any:
    """`draws` moving-block bootstrap resamples of a series whose neighbours are correlated (a run's timing windows),
    as an array of shape (draws, n): blocks of `block_length(n)` consecutive values with uniformly drawn starts,
    joined and cut to n. Source: H. R. Künsch, "The jackknife and the bootstrap for general stationary
    observations", Annals of Statistics 17(3), 1989. `rng`: a numpy Generator (a fixed seed keeps a site
    reproducible)."""
    import numpy as np

    series = np.asarray(values, dtype=np.float64)
    n = len(series)
    size = block_length(n)
    blocks = -(-n // size)
    starts = rng.integers(0, n - size + 1, size=(draws, blocks))
    index = (starts[:, :, None] + np.arange(size)).reshape(draws, blocks * size)[:, :n]
    return series[index]


def with_between_run_deviation(within: Any, sd: float, z: Any, chi: Any, runs: int) -> Any:
    """Resamples of a figure of `runs` runs (`within`: each from its runs' windows resampled) moved by a between-run
    deviation: within · exp(sd · T / √runs) with T = z / chi Student's t (z standard normal, chi = √(V/df), V
    chi-square with the pooled spread's degrees of freedom: the standard construction of t, e.g. Abramowitz &
    Stegun 26.7) and sd the pooled between-run spread (`pooled_log_sd`). The second stage of a two-stage bootstrap
    of runs and their windows (A. C. Davison and D. V. Hinkley, "Bootstrap Methods and their Application", 1997,
    §3.8), made parametric because one or two runs cannot be resampled. A huge t draw gives inf, not an error."""
    import numpy as np

    with np.errstate(over="ignore"):
        return within * np.exp(sd * z / (chi * np.sqrt(runs)))


def percentile_interval(draws: Any, confidence: float = 0.95) -> tuple[float, float]:
    """The bootstrap percentile interval: the (1 − c)/2 and (1 + c)/2 quantiles of the resampled statistic, finite
    draws only (B. Efron and R. J. Tibshirani, "An Introduction to the Bootstrap", 1993, §13.3)."""
    import numpy as np

    finite = np.asarray(draws, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    lo, hi = np.quantile(finite, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(lo), float(hi)


def end_to_end_steps_per_s(steps: Any, warmup_s: Any, warmup_steps: Any, steady_step_s: Any) -> Any:
    """Steps over the wall time of all of them, warm-up and compilation included, for a run of `steps`: its warm-up
    time plus (steps − warm-up steps) at its mean steady step time. For a run of `steps` steps this is its steps over
    the sum of every step's time; for a shorter run, its projection to `steps`. Floats or polars expressions."""
    return steps / (warmup_s + (steps - warmup_steps) * steady_step_s)


def ratio_interval(
    a: float, a_lo: float, a_hi: float, b: float, b_lo: float, b_hi: float
) -> tuple[float, float, float]:
    """B / A and a 95% interval for it, from each figure's own 95% interval (lo ≤ value ≤ hi, all positive): the
    MOVER limits of ln B − ln A, exponentiated. MOVER (method of variance estimates recovery) recovers the limits of a
    difference of two independent estimates from the limits of each, so an asymmetric interval (a median's order
    statistics) keeps its asymmetry: lower = ln r − √((ln b − ln b_lo)² + (ln a_hi − ln a)²), upper = ln r +
    √((ln b_hi − ln b)² + (ln a − ln a_lo)²). Source: G. Y. Zou and A. Donner, "Construction of confidence limits
    about effect measures: a general approach", Statistics in Medicine 27(10), 2008, pp. 1693–1702. Deterministic (no
    resampling); it takes A and B as independent, as two runs are. A figure without an interval (lo = hi = value)
    adds nothing to the width."""
    if not 0 < a_lo <= a <= a_hi or not 0 < b_lo <= b <= b_hi:
        raise ValueError("each figure must be positive and inside its own interval")
    ratio = b / a
    down = math.hypot(math.log(b) - math.log(b_lo), math.log(a_hi) - math.log(a))
    up = math.hypot(math.log(b_hi) - math.log(b), math.log(a) - math.log(a_lo))
    return ratio, ratio * math.exp(-down), ratio * math.exp(up)


def compare_verdict(a: float, b: float, ratio_lo: float, ratio_hi: float, floor: float) -> str:
    """B against A (higher is better, as every compared figure is): "same" where the interval of B / A
    (`ratio_interval`) holds 1, or where A and B are no further apart than identical runs were (their
    `relative_spread` within `floor`, the A/A spread of the configurations compared: "a difference smaller than the
    spread of the configurations compared is not a difference", Methodology, "Repeats"); otherwise "faster" or
    "slower"."""
    if ratio_lo <= 1.0 <= ratio_hi or relative_spread([a, b]) <= floor:
        return "same"
    return "faster" if b > a else "slower"


def scaling_efficiency(per_device_rate: float, per_device_rate_one: float) -> float:
    """Weak-scaling efficiency of data parallelism: throughput per device on N devices over throughput on one,
    at the same micro-batch per device (so N devices process N times the tokens per step). 1.0 means N devices
    deliver N times one device's tokens/s; communication not hidden behind compute pulls it below 1.
    Source: the usual definition for weak scaling (e.g. Hoefler & Belli, "Scientific Benchmarking of Parallel
    Computing Systems", SC 2015, section 5)."""
    if per_device_rate_one <= 0:
        raise ValueError("the one-device rate must be positive")
    return per_device_rate / per_device_rate_one


def strong_scaling_efficiency(rate: float, rate_base: float, devices: int, base_devices: int = 1) -> float:
    """Strong-scaling efficiency of the same work split over `devices` (tensor parallelism serving one request
    stream): speedup over `base_devices` ÷ (devices ÷ base_devices); 1.0 means k times the devices finish k times
    faster. The base is one device where the work fits on one, else the fewest measured (a 70B model in fp16 does not
    fit one H200): relative efficiency, which says nothing of the step from one device to the base. Source:
    Amdahl-style strong scaling as in Hoefler & Belli, SC 2015, section 5 (which asks that the base be stated)."""
    if rate_base <= 0 or devices <= 0 or base_devices <= 0:
        raise ValueError("the base rate and both device counts must be positive")
    return rate / rate_base / (devices / base_devices)


# --- the verdict's matched shape ----------------------------------------------------------------------------
# The seed does not state its batch. Where our stock run matches its stock figure is found by linear interpolation
# between the two measured micro-batches that bracket it (piecewise-linear interpolation, e.g. Press et al.,
# "Numerical Recipes", 3rd ed., §3.1): the figure between two measured points, never beyond them.


def crossing(points: Sequence[tuple[float, float]], target: float) -> float | None:
    """The x where the piecewise-linear curve through `points` (x, y), sorted by x, first meets y = `target`;
    None where no two neighbouring points bracket it."""
    pts = sorted(points)
    for (x0, y0), (x1, y1) in itertools.pairwise(pts):
        if y0 == target:
            return x0
        if (y0 - target) * (y1 - target) < 0 or y1 == target:
            return x0 + (y0 - target) * (x1 - x0) / (y0 - y1)
    return pts[0][0] if len(pts) == 1 and pts[0][1] == target else None


def interpolate(points: Sequence[tuple[float, float]], x: float) -> float | None:
    """y at `x` on the piecewise-linear curve through `points`; None outside the measured range."""
    pts = sorted(points)
    for (x0, y0), (x1, y1) in itertools.pairwise(pts):
        if x0 <= x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return pts[0][1] if len(pts) == 1 and pts[0][0] == x else None


def crossings(xs: Sequence[float], ys: Any, target: float) -> Any:
    """`crossing` of many curves at once: `ys` of shape (draws, len(xs)) are the curves' values at the sorted `xs`
    (each row one resample); returns each row's crossing, NaN where none (numpy arrays)."""
    import numpy as np

    ys = np.asarray(ys, dtype=np.float64)
    out = np.full(ys.shape[0], np.nan)
    if len(xs) == 1:
        return np.where(ys[:, 0] == target, xs[0], np.nan)
    for i in range(len(xs) - 1):
        y0, y1 = ys[:, i], ys[:, i + 1]
        open_ = np.isnan(out)
        at = open_ & (y0 == target)
        out[at] = xs[i]
        between = open_ & ~at & (((y0 - target) * (y1 - target) < 0) | (y1 == target))
        with np.errstate(divide="ignore", invalid="ignore"):
            x = xs[i] + (y0 - target) * (xs[i + 1] - xs[i]) / (y0 - y1)
        out[between] = x[between]
    return out


def interpolations(xs: Sequence[float], ys: Any, at: Any) -> Any:
    """`interpolate` of many curves at once, each at its own x (`at`, one per row of `ys`); NaN outside the measured
    range or where `at` is NaN."""
    import numpy as np

    ys = np.asarray(ys, dtype=np.float64)
    at = np.asarray(at, dtype=np.float64)
    out = np.full(ys.shape[0], np.nan)
    if len(xs) == 1:
        return np.where(at == xs[0], ys[:, 0], np.nan)
    for i in range(len(xs) - 1):
        inside = np.isnan(out) & (at >= xs[i]) & (at <= xs[i + 1])
        frac = (at - xs[i]) / (xs[i + 1] - xs[i])
        out[inside] = (ys[:, i] + (ys[:, i + 1] - ys[:, i]) * frac)[inside]
    return out


def t_power(delta: float, df: float, confidence: float = 0.95) -> float:
    """The probability that a future two-sided t interval of `confidence` with `df` degrees of freedom excludes a
    threshold its estimate is `delta` standard errors from: P(|T| > t_{df,(1+c)/2}) for T noncentral t with `df` and
    noncentrality `delta` (the power of the two-sided one-sample t test: D. C. Montgomery, "Design and Analysis of
    Experiments", 9th ed., §2.4.4 and ch. 3's sample-size curves), as E_u[Φ(δ − t·u/√df) + Φ(−δ − t·u/√df)] over
    u = √V, V chi-square with `df` (the estimated spread's own uncertainty, which a normal quantile leaves out),
    integrated by Simpson's rule over u's density 2·u^(df−1)·e^(−u²/2) / (2^(df/2)·Γ(df/2))."""
    if df <= 0:
        raise ValueError("a t interval needs positive degrees of freedom")
    crit = student_t_quantile(0.5 + confidence / 2, df) / math.sqrt(df)
    log_norm = math.log(2) - (df / 2) * math.log(2) - math.lgamma(df / 2)

    def phi(x: float) -> float:
        return 0.5 * (1 + math.erf(x / math.sqrt(2)))

    def f(u: float) -> float:
        if u > 0:
            density = math.exp(log_norm + (df - 1) * math.log(u) - u * u / 2)
        else:  # u^(df−1) at 0: 1 for one degree of freedom, 0 for more
            density = math.exp(log_norm) if df == 1 else 0.0
        return density * (phi(delta - crit * u) + phi(-delta - crit * u))

    top, steps = math.sqrt(df) + 12.0, 4000
    h = top / steps
    total = f(0.0) + f(top) + sum((4 if i % 2 else 2) * f(i * h) for i in range(1, steps))
    return min(1.0, max(0.0, total * h / 3))


def settle_probability(
    estimate: float, lo: float, hi: float, df: float, variance_after: float, df_after: float, threshold: float,
    confidence: float = 0.95,
) -> float:  # fmt: skip
    """How likely further runs settle a three-way decision (`three_way`) about a ratio now estimated at `estimate`
    with the 95% interval [lo, hi] from a spread of `df` degrees of freedom, if the figure holds: the interval's
    standard error in ln units, (ln hi − ln lo) / (2·t_{df}), scaled by √`variance_after` (n / (n + k) for k further
    runs joining n), and `t_power` of its distance from `threshold` with the `df_after` degrees of freedom the
    further runs give the spread. A planning figure: it takes the present estimate as the truth."""
    se = (math.log(hi) - math.log(lo)) / (2 * student_t_quantile(0.5 + confidence / 2, df))
    delta = (math.log(estimate) - math.log(threshold)) / (se * math.sqrt(variance_after))
    return t_power(delta, df_after, confidence)


def three_way(lo: float, hi: float, threshold: float) -> str:
    """A decision its interval settles, or not: "closes" when the whole interval of a gap is at or below `threshold`,
    "does not" when it is wholly above, otherwise "undecided"."""
    return "closes" if hi <= threshold else "does not" if lo > threshold else "undecided"


# Datasheet memory per device (GB) and bandwidth (bytes/s), for stating the hardware difference between a claim's
# GPUs and ours. Sources: NVIDIA H100 datasheet (SXM5: 80 GB HBM3, 3.35 TB/s); NVIDIA H200 datasheet (SXM: 141 GB
# HBM3e, 4.8 TB/s). The dense bf16 peak is the same for both (DATASHEET_PEAK_FLOPS).
DATASHEET_MEMORY: dict[str, tuple[float, float]] = {
    "H200": (141.0, 4.8e12),
    "H100 80GB HBM3": (80.0, 3.35e12),
    "H100": (80.0, 3.35e12),
}


def datasheet_memory(device_name: str) -> tuple[float, float] | None:
    """(memory GB, bandwidth bytes/s) from the datasheet for a device name, None where there is none."""
    for key, value in DATASHEET_MEMORY.items():
        if key in device_name:
            return value
    return None


# --- decoding: bytes moved per token ------------------------------------------------------------------------


def kv_cache_bytes_per_token(spec: ModelSpec, k_bytes: float, v_bytes: float) -> float:
    """Bytes one token of context holds in the KV cache, and so the bytes a decoded token reads per token of
    depth: a key and a value of kv_heads × head_dim elements in every layer (grouped-query attention shares them
    across heads). `k_bytes`/`v_bytes` are bytes per element of the cache's types (2 for f16)."""
    return spec.layers * spec.kv_heads * spec.head_dim * (k_bytes + v_bytes)


def mbu(bytes_per_token: Any, tokens_per_s: Any, bandwidth_bytes_per_s: Any) -> Any:
    """Model bandwidth utilisation of batch-1 decoding: bytes a token reads (every weight once, plus the KV cache
    so far) × tokens/s over the memory bandwidth, in [0, 1] for a memory-bound decode.

    Source: Databricks, "LLM Inference Performance Engineering: Best Practices" (2023), section "Model Bandwidth
    Utilization": achieved bandwidth = (total model parameter bytes + KV cache size) / TPOT, over peak bandwidth.
    """
    _positive("bandwidth", bandwidth_bytes_per_s)
    return bytes_per_token * tokens_per_s / bandwidth_bytes_per_s


def copy_bound_fraction(bytes_per_token: Any, tokens_per_s: Any, copy_bytes_per_s: Any) -> Any:
    """A decode's rate as a fraction of the measured copy bound (`bandwidth_bound_tokens_per_s` at the device-copy
    bandwidth calibrated on the GPU, runners/calibrate.py): bytes a token reads × tokens/s ÷ copy bandwidth. Not MBU,
    which is against the datasheet bandwidth (`mbu`, the one MBU the site publishes): a device copy counts the bytes it
    reads and the bytes it writes, so a decode, which mostly reads, can run above it (a fraction above 1 is no error),
    and the fraction is a reference to what this GPU's memory did in the same kind of job, never a ceiling. Same
    arithmetic as `mbu` (Databricks' achieved bandwidth over a bandwidth), another denominator."""
    _positive("copy bandwidth", copy_bytes_per_s)
    return bytes_per_token * tokens_per_s / copy_bytes_per_s


def decode_bytes_per_token(weight_bytes: Any, kv_bytes_per_token_of_depth: Any, depth: Any, n_tokens: Any) -> Any:
    """Bytes one decoded token of a generation test reads: every weight once (the file's, less the embedding table,
    of which one row is looked up) and the KV cache so far, which holds the depth plus, on average over the test, half
    of the tokens it generates (the Databricks MBU definition, `mbu`, counts "total model parameter bytes + KV cache
    size")."""
    return weight_bytes + kv_bytes_per_token_of_depth * (depth + n_tokens / 2)


def kv_bytes_read_per_token(kv_bytes_per_token_of_depth: Any, depth: Any, n_tokens: Any) -> Any:
    """Of `decode_bytes_per_token`, the KV cache's part."""
    return kv_bytes_per_token_of_depth * (depth + n_tokens / 2)


def bits_per_weight(weight_bytes: Any, weights: Any) -> Any:
    """Bits a weight takes on average in a file or format: 8 × bytes ÷ weights (what names a precision family)."""
    _positive("weights", weights)
    return 8 * weight_bytes / weights


def grouped_quant_bytes_per_weight(bits: int, group_size: int, scale_bytes: float = 2.0) -> float:
    """Bytes per weight of a group-quantized format with a scale and a zero point per group of `group_size` weights
    along the input: `bits`/8 for the weight, plus, per group, a `scale_bytes` scale and a `bits`-wide zero point.
    AWQ's layout (Lin et al., "AWQ: Activation-aware Weight Quantization for LLM Compression and Acceleration",
    MLSys 2024; its `qweight`, `scales` and `qzeros` tensors as vLLM's AWQ loader reads them): 4 bits, groups of 128,
    fp16 scales, so 0.5 + 2.5/128 bytes."""
    _positive("bits and group size", bits, group_size)
    return bits / 8 + (scale_bytes + bits / 8) / group_size


def computed_ttft_ms(n_prompt: Any, prefill_tokens_per_s: Any, decode_tokens_per_s: Any) -> Any:
    """Time to first token of one request from an engine's prompt-processing and generation tests, for an engine
    measured without a server: the prompt's time at the pp rate plus one generated token's (ms). Not a served TTFT:
    no queueing, tokenisation or HTTP is in it, so it is a lower bound on what a served request would see."""
    _positive("rates", prefill_tokens_per_s, decode_tokens_per_s)
    return 1000 * (n_prompt / prefill_tokens_per_s + 1 / decode_tokens_per_s)


def bandwidth_bound_tokens_per_s(bytes_per_token: Any, bandwidth_bytes_per_s: Any) -> Any:
    """The fastest a batch-1 decode can run when each token must read `bytes_per_token` at `bandwidth_bytes_per_s`:
    bandwidth ÷ bytes per token (the memory roof of the roofline model: Williams, Waterman and Patterson,
    "Roofline: an insightful visual performance model for multicore architectures", CACM 52(4), 2009). At the
    datasheet bandwidth a decode's rate over this bound is its MBU (`mbu`); at the measured copy bandwidth, its
    `copy_bound_fraction`."""
    _positive("bytes per token", bytes_per_token)
    return bandwidth_bytes_per_s / bytes_per_token


def decode_tokens_per_s(tpot_ms: Any) -> Any:
    """Decode rate of one sequence from its time per output token: 1000 / TPOT (ms)."""
    return 1000 / tpot_ms


# --- serving latency ---------------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0–100) with linear interpolation between order statistics: numpy's default
    (`np.percentile`, method "linear"), which vLLM's benchmark uses."""
    if not values:
        raise ValueError("percentile of no values")
    return _percentile_of_sorted(sorted(values), q)


def _percentile_of_sorted(xs: Sequence[float], q: float) -> float:
    """`percentile` of values already in ascending order (a mean, a median and a p99 of one list sort it once)."""
    pos = (len(xs) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


@dataclass(frozen=True, slots=True)
class ServedRequest:
    """One streamed request as a load generator saw it (seconds, from the request's own start)."""

    ok: bool
    ttft_s: float | None
    """Time to the first streamed token."""
    itl_s: tuple[float, ...]
    """Gaps between consecutive streamed chunks after the first (inter-token latency)."""
    e2e_s: float | None
    """Time to the last byte of the response."""
    prompt_tokens: int
    output_tokens: int
    """As the server's usage report counts them."""


SERVED_SAMPLES = ("request_ok", "ttft_s", "e2e_s", "prompt_tokens", "output_tokens", "itl_s", "duration_s")
"""The record rows of a served point (runners/engines/vllm/runner.py `served_rows`): per request (trial) and per gap
(step)."""


def requests_from_rows(rows: Sequence[dict]) -> tuple[list[ServedRequest], float]:
    """A served point's requests and duration back from its record rows (`trial`, `step`, `metric`, `value`)."""
    return requests_from_columns(*([r[k] for r in rows] for k in ("trial", "step", "metric", "value")))


def requests_from_columns(
    trials: Sequence[int], steps: Sequence[int], names: Sequence[str], values: Sequence[float]
) -> tuple[list[ServedRequest], float]:
    """`requests_from_rows` of the rows given column by column (a file's columns as lists: no dict per row, which
    cost more than the figures at thousands of samples a point). A metric given twice for one request (or one token's
    gap) keeps the later row; the duration is the last `duration_s` row's."""
    by: dict[int, dict] = {}
    duration = 0.0
    samples = SERVED_SAMPLES
    for trial, step, name, value in zip(trials, steps, names, values, strict=True):
        if name == "duration_s":
            duration = value
        elif name in samples:
            d = by.get(trial)
            if d is None:
                d = by[trial] = {"itl": {}}
            if name == "itl_s":
                d["itl"][step] = value
            else:
                d[name] = value
    requests = [
        ServedRequest(
            ok=bool(d.get("request_ok")),
            ttft_s=d.get("ttft_s"),
            itl_s=tuple(v for _, v in sorted(d["itl"].items())),
            e2e_s=d.get("e2e_s"),
            prompt_tokens=int(d.get("prompt_tokens") or 0),
            output_tokens=int(d.get("output_tokens") or 0),
        )
        for _, d in sorted(by.items())
    ]
    return requests, duration


def serving_metrics(
    requests: Sequence[ServedRequest], duration_s: float, slo_ttft_ms: float, slo_tpot_ms: float
) -> dict[str, float]:
    """Throughput, latency and goodput of one served point, as vLLM's `benchmarks/serve.py` (`calculate_metrics`)
    computes them: TPOT = (end-to-end − TTFT) ÷ (output tokens − 1) per request with more than one token; ITL pools
    every gap of every request; throughputs divide by the whole point's duration. Goodput (DistServe, Zhong et al.
    2024, §2.3; vLLM's `--goodput`) counts completed requests with TTFT ≤ `slo_ttft_ms` and TPOT ≤ `slo_tpot_ms`
    (a one-token request's TPOT counts as 0) per second. Failed requests count in `failed_requests` only.
    The formulas are `_served_figures`', which `served_figures` (a record's columns) shares."""
    import numpy as np

    done = [r for r in requests if r.ok and r.ttft_s is not None and r.e2e_s is not None]
    return _served_figures(
        len(requests),
        np.array([r.ttft_s for r in done], dtype=np.float64),
        np.array([r.e2e_s for r in done], dtype=np.float64),
        np.array([r.prompt_tokens for r in done], dtype=np.int64),
        np.array([r.output_tokens for r in done], dtype=np.int64),
        np.array([g for r in done for g in r.itl_s], dtype=np.float64),
        duration_s,
        slo_ttft_ms,
        slo_tpot_ms,
    )


def served_figures(
    trials: Any, steps: Any, metrics: Any, values: Any, slo_ttft_ms: float, slo_tpot_ms: float
) -> dict[str, float] | None:
    """`serving_metrics(*requests_from_columns(...))` of a record's rows given as numpy arrays (trial, step, metric,
    value; steps as integers; each row's metric as its index in `SERVED_SAMPLES`, -1 for another), to the bit, without
    a Python object per row or per request (a served point holds thousands of rows: the loader works out each one's
    figures as it reads the file); None where the duration is not positive. Picks what `requests_from_columns` picks:
    per request (trial, in ascending order) the later of a repeated metric, its gaps in step order, the later of a
    repeated step; the last `duration_s` row."""
    import numpy as np

    code = {name: i for i, name in enumerate(SERVED_SAMPLES)}
    metrics = np.asarray(metrics)
    values = np.asarray(values, dtype=np.float64)
    trials = np.asarray(trials)
    steps = np.asarray(steps)
    durations = values[metrics == code["duration_s"]]
    duration = float(durations[-1]) if len(durations) else 0.0
    if duration <= 0:
        return None
    sampled = (metrics >= 0) & (metrics != code["duration_s"])
    ids = np.unique(trials[sampled])  # the requests, in trial order

    def last(metric: str) -> tuple[Any, Any]:
        """Per request: whether it has a `metric` row, and the later such row's value (0 where none)."""
        rows = metrics == code[metric]
        t, v = trials[rows][::-1], values[rows][::-1]
        found, first_from_end = np.unique(t, return_index=True)  # the first from the end: the later row
        at = np.searchsorted(ids, found)
        has, value = np.zeros(len(ids), dtype=bool), np.zeros(len(ids), dtype=np.float64)
        has[at], value[at] = True, v[first_from_end]
        return has, value

    has_ok, ok = last("request_ok")
    has_ttft, ttft = last("ttft_s")
    has_e2e, e2e = last("e2e_s")
    prompt, output = (np.trunc(last(m)[1]).astype(np.int64) for m in ("prompt_tokens", "output_tokens"))
    done = has_ok & (ok != 0) & has_ttft & has_e2e  # bool(value): NaN is true, as in Python
    gaps = metrics == code["itl_s"]
    t, s, v = trials[gaps], steps[gaps], values[gaps]
    order = np.lexsort((np.arange(len(t)), s, t))  # by request, then step, then row: a repeated step's later row last
    t, s, v = t[order], s[order], v[order]
    later = np.ones(len(t), dtype=bool)
    later[:-1] = (t[1:] != t[:-1]) | (s[1:] != s[:-1])
    keep = later & np.isin(t, ids[done])
    return _served_figures(
        len(ids), ttft[done], e2e[done], prompt[done], output[done], v[keep], duration, slo_ttft_ms, slo_tpot_ms
    )


def _served_figures(
    requests: int,
    ttft_s: Any,
    e2e_s: Any,
    prompt_tokens: Any,
    output_tokens: Any,
    itl_s: Any,
    duration_s: float,
    slo_ttft_ms: float,
    slo_tpot_ms: float,
) -> dict[str, float]:
    """`serving_metrics`' formulas over the completed requests' arrays (in request order; `itl_s` every gap of each
    in turn); `requests` counts the failed ones too. Each element is computed as the per-request formula computes it
    (the same operations in the same order), and the means add in request order with Python's `sum`: the figures do
    not depend on which of the two paths made the arrays."""
    import numpy as np

    if duration_s <= 0:
        raise ValueError(f"duration {duration_s} s: a served point takes time")
    done = len(ttft_s)
    out: dict[str, float] = {
        "completed_requests": float(done),
        "failed_requests": float(requests - done),
        "duration_s": duration_s,
    }
    if not done:
        return out
    ttft = ttft_s * 1e3
    e2e = e2e_s * 1e3
    several = output_tokens > 1
    tpot_all = np.zeros(done, dtype=np.float64)
    tpot_all[several] = (e2e_s[several] - ttft_s[several]) * 1e3 / (output_tokens[several] - 1)
    tpot = tpot_all[several]
    itl = itl_s * 1e3
    output = sum(output_tokens.tolist())  # Python's integers: a sum of hostile counts does not wrap around
    good = int(np.count_nonzero((ttft <= slo_ttft_ms) & (tpot_all <= slo_tpot_ms)))
    out |= {
        "request_throughput": done / duration_s,
        "output_tokens_per_s": output / duration_s,
        "total_tokens_per_s": (output + sum(prompt_tokens.tolist())) / duration_s,
        "goodput_requests_per_s": good / duration_s,
    }
    for name, values in (("ttft_ms", ttft), ("tpot_ms", tpot), ("itl_ms", itl), ("e2e_ms", e2e)):
        if len(values):
            ordered = np.sort(values).tolist()
            out |= {
                f"mean_{name}": sum(values.tolist()) / len(values),
                f"median_{name}": _percentile_of_sorted(ordered, 50),
                f"p99_{name}": _percentile_of_sorted(ordered, 99),
            }
    return out


# --- energy -------------------------------------------------------------------------------------------------------
# A run's joules are read from the GPU's own counter (runners/energy.py). Source: NVIDIA Management Library API
# reference, `nvmlDeviceGetTotalEnergyConsumption`: "total energy consumption for this GPU in millijoules (mJ) since
# the driver was last reloaded" (Volta and newer). The counter advances in steps (every ~0.1 s on an H200, measured
# and recorded per run as `hardware.energy.counter_update_s`), so a window's reading can be off by up to one step's
# energy at each end.
ENERGY_MIN_UPDATES = 20
"""The fewest counter updates a run's metered windows must span together for its joules to be published: at 20 the
error from the two ends of each window is at most ±1/20 of a window's energy per window, and averages down over
several windows; fewer, and the figure says more about the counter than about the engine."""


def joules_per_token(energy_j: Any, tokens: Any) -> Any:
    """The GPUs' energy per token over the metered windows: joules ÷ tokens (trained, processed or generated, as the
    run's kind counts them). Floats or polars expressions alike."""
    return energy_j / tokens


def tokens_per_joule(energy_j: Any, tokens: Any) -> Any:
    """Tokens per joule, the reciprocal of `joules_per_token`: higher is better, as on the boards' other columns."""
    return tokens / energy_j


def mean_power_w(energy_j: Any, seconds: Any) -> Any:
    """The GPUs' mean power over the metered windows: joules ÷ seconds."""
    return energy_j / seconds


def energy_resolved(seconds: Any, counter_update_s: Any) -> Any:
    """Whether the metered windows span at least `ENERGY_MIN_UPDATES` updates of the counter."""
    return seconds >= ENERGY_MIN_UPDATES * counter_update_s


# What a GPU can draw, to refuse a record whose joules no GPU could have used (generator/derive/checks.py). Sources:
# the record's own power limit (nvidia-smi's `enforced.power.limit`, runners/provenance.py; 700 W on an H100 or H200
# SXM) and, where it names none, a bound above every data-centre GPU's board power to date (NVIDIA's B200 datasheet
# lists up to 1,000 W).
GPU_POWER_MARGIN = 1.5
"""How far above its power limit a GPU's mean power over the metered windows may read: each window's two ends are read
at the counter's updates, so windows spanning `ENERGY_MIN_UPDATES` updates together can read up to one update's
energy high per window (a quarter over a test's five windows), and a GPU may draw past its limit for a moment."""
GPU_POWER_MAX_W = 2_000.0
"""The most one GPU may be said to draw where its record names no power limit, or names a larger one."""
GPU_POWER_MIN_W = 1.0
"""The least one powered GPU may be said to draw, at rest or at work (an H100 at rest reads about 70 W): below it, the
counter did not move or the joules are wrong."""


def gpu_power_ceiling_w(gpus: int, power_limit_w: float | None) -> float:
    """The most `gpus` GPUs whose largest recorded power limit is `power_limit_w` (None: not recorded) may be said to
    draw: each its limit × `GPU_POWER_MARGIN`, at most `GPU_POWER_MAX_W`."""
    each = GPU_POWER_MAX_W if power_limit_w is None else min(power_limit_w * GPU_POWER_MARGIN, GPU_POWER_MAX_W)
    return gpus * each
