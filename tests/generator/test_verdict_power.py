"""The verdict's "further runs" advice is a power statement with Student's t kept (issue 55): k more full-length runs
at each deciding point settle the gap against 1.1 with the probability `verdict.further_runs_power` says, checked
here against a simulation of the runs themselves: a point's runs drawn around the present figure, the spread
re-estimated from them and the groups pooled before, and the next 95% t interval asked whether it excludes 1.1."""

from __future__ import annotations

import math

import numpy as np
import pytest

from generator.derive import verdict
from runners import metrics


def _simulated(gap: float, sd: float, runs: int, df_before: int, k: int, sims: int = 40_000) -> float:
    """The share of simulated futures that settle: `runs` + k runs at one deciding point, each ln figure normal with
    the true spread `sd` around ln `gap`; the spread pooled from the `df_before` degrees of freedom measured before
    (a chi-square draw) and the point's own runs; the interval mean ± t · s / √(runs + k)."""
    rng = np.random.default_rng(55)
    n = runs + k
    logs = rng.normal(math.log(gap), sd, size=(sims, n))
    mean = logs.mean(axis=1)
    squares = ((logs - mean[:, None]) ** 2).sum(axis=1) + sd**2 * rng.chisquare(df_before, sims)
    df = df_before + n - 1
    half = metrics.student_t_quantile(0.975, df) * np.sqrt(squares / df) / math.sqrt(n)
    log_asked = math.log(verdict.GAP_ASKED)
    return float(np.mean((mean - half > log_asked) | (mean + half <= log_asked)))


@pytest.mark.parametrize(
    ("gap", "sd", "df_before", "k"), [(1.0883, 0.012, 6, 2), (1.0883, 0.012, 6, 5), (1.16, 0.03, 2, 3)]
)
def test_further_runs_settle_it_with_the_probability_the_page_says(
    gap: float, sd: float, df_before: int, k: int
) -> None:
    """One full-length run at the deciding point now, its interval exp(ln gap ± t(0.975, df) · sd) from a spread of
    `df_before` degrees of freedom; the formula's probability and the simulated share agree within the
    simulation's error."""
    half = metrics.student_t_quantile(0.975, df_before) * sd
    lo, hi = gap * math.exp(-half), gap * math.exp(half)
    said = verdict.further_runs_power(gap, lo, hi, df_before, [{"runs": 1, "full_length": True}], k)
    simulated = _simulated(gap, sd, 1, df_before, k)
    assert said == pytest.approx(simulated, abs=0.01)
    # a normal quantile in t's place (the page once did this) promises more than the runs deliver
    delta = abs(math.log(gap / verdict.GAP_ASKED)) / (sd / math.sqrt(1 + k))
    normal = 0.5 * (1 + math.erf((delta - 1.959964) / math.sqrt(2)))
    assert normal > said


def test_t_power_is_the_noncentral_t_by_simulation() -> None:
    rng = np.random.default_rng(7)
    for delta, df in ((0.0, 1), (2.0, 3), (3.0, 10)):
        crit = metrics.student_t_quantile(0.975, df)
        t = (rng.standard_normal(200_000) + delta) / np.sqrt(rng.chisquare(df, 200_000) / df)
        assert metrics.t_power(delta, df) == pytest.approx(float(np.mean(np.abs(t) > crit)), abs=0.005)
