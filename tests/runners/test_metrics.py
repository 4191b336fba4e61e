"""The formulas: intervals, ranks with ties, windows, MFU."""

from __future__ import annotations

import math

import pytest

from runners import metrics


def test_median_ci_exact_order_statistics() -> None:
    # n = 10: P(B <= 1) = 11/1024 ≈ 0.0107 <= 0.025 but P(B <= 2) = 56/1024 > 0.025, so j = 2: [x(2), x(9)]
    ci = metrics.median_ci(range(1, 11))
    assert (ci.median, ci.lo, ci.hi, ci.n) == (5.5, 2, 9, 10)
    assert ci.coverage == pytest.approx(1 - 2 * 11 / 1024)
    assert ci.coverage >= 0.95


def test_median_ci_too_few_samples_reports_true_coverage() -> None:
    ci = metrics.median_ci([3.0, 1.0, 2.0])
    assert (ci.median, ci.lo, ci.hi) == (2.0, 1.0, 3.0)
    assert ci.coverage == pytest.approx(0.75)  # 1 - 2/2^3: below 95%, and the site says so


def test_median_ci_large_n_matches_normal_approximation() -> None:
    n = 1000
    ci = metrics.median_ci(range(n))
    # Le Boudec's approximation: j ≈ 0.5n − 0.98√n
    assert abs(ci.lo - (0.5 * n - 0.98 * math.sqrt(n))) <= 2


def test_ranks_tie_where_intervals_overlap() -> None:
    # a is clearly best; b and c overlap each other; d is below all three (competition ranking)
    intervals = [(10, 11), (5, 7), (6, 8), (3, 4.5)]
    assert metrics.ranks_with_ties(intervals) == [1, 2, 2, 4]
    # an interval overlapping two that do not overlap each other ties with both
    assert metrics.ranks_with_ties([(5, 7), (7.5, 9), (6, 8)]) == [2, 1, 1]


def test_window_rates_drop_partial_window() -> None:
    assert metrics.window_rates([0.5, 0.5, 0.25, 0.25, 1.0], 2) == [2.0, 4.0]


def test_mfu_and_datasheet_peaks() -> None:
    peak = metrics.datasheet_peak_flops("NVIDIA H200", "bf16")
    assert peak == 989.4e12
    assert metrics.datasheet_peak_flops("AMD EPYC 9654", "fp32") is None
    # the seed's stock claim at face value: 14.1 steps/s × 8192 tokens × 7.08 GFLOP/token on 2 GPUs
    value = metrics.mfu(7_078_158_336, 14.1 * 8192, peak, 2)
    assert value == pytest.approx(0.4136, abs=1e-3)


def test_relative_spread_and_scaling_efficiency_by_hand() -> None:
    # A/A: medians 10.0 and 10.5 → range 0.5 over median 10.25
    assert metrics.relative_spread([10.5, 10.0]) == pytest.approx(0.5 / 10.25)
    assert metrics.relative_spread([1.0, 2.0, 4.0]) == pytest.approx(3.0 / 2.0)
    with pytest.raises(ValueError):
        metrics.relative_spread([1.0])
    # a range over a median of mixed signs or of zero is no relative spread: refused, never a negative or infinite one
    for values in ([-1.0, 2.0, 4.0], [0.0, 0.0], [-2.0, -1.0]):
        with pytest.raises(ValueError, match="positive figures"):
            metrics.relative_spread(values)
    with pytest.raises(ValueError, match="positive figures"):
        metrics.repeat_interval([10.0, 0.0], [(None, None)] * 2, metrics.PooledSpread(sd=0.01, df=4, groups=2))
    # 2 GPUs at 7,000 tokens/s each against one GPU at 8,000: 87.5%
    assert metrics.scaling_efficiency(7000.0, 8000.0) == pytest.approx(0.875)
    with pytest.raises(ValueError):
        metrics.scaling_efficiency(1.0, 0.0)
    assert metrics.datasheet_memory("NVIDIA H200") == (141.0, 4.8e12)
    assert metrics.datasheet_memory("NVIDIA H100 80GB HBM3") == (80.0, 3.35e12)
    assert metrics.datasheet_memory("AMD EPYC") is None


def test_ratio_interval_by_hand() -> None:
    # MOVER on logs: A = 10 [9, 11], B = 12 [11, 13]; lower = 1.2·exp(−√(ln(12/11)² + ln(11/10)²)), and so on
    ratio, lo, hi = metrics.ratio_interval(10.0, 9.0, 11.0, 12.0, 11.0, 13.0)
    assert ratio == pytest.approx(1.2)
    assert lo == pytest.approx(1.2 * math.exp(-math.hypot(math.log(12 / 11), math.log(11 / 10))))
    assert hi == pytest.approx(1.2 * math.exp(math.hypot(math.log(13 / 12), math.log(10 / 9))))
    # a figure without an interval adds nothing: the ratio's interval is the other's, mirrored for A
    assert metrics.ratio_interval(10.0, 10.0, 10.0, 12.0, 11.0, 13.0)[1:] == pytest.approx((11 / 10, 13 / 10))
    assert metrics.ratio_interval(10.0, 9.0, 11.0, 12.0, 12.0, 12.0)[1:] == pytest.approx((12 / 11, 12 / 9))
    # swapping A and B inverts the ratio and its interval
    swapped = metrics.ratio_interval(12.0, 11.0, 13.0, 10.0, 9.0, 11.0)
    assert swapped == pytest.approx((1 / ratio, 1 / hi, 1 / lo))
    with pytest.raises(ValueError):
        metrics.ratio_interval(10.0, 11.0, 12.0, 12.0, 11.0, 13.0)  # a figure outside its own interval


def test_compare_verdict_needs_both_a_clear_interval_and_more_than_the_floor() -> None:
    assert metrics.compare_verdict(10.0, 12.0, 1.1, 1.3, 0.05) == "faster"
    assert metrics.compare_verdict(12.0, 10.0, 0.77, 0.9, 0.05) == "slower"
    assert metrics.compare_verdict(10.0, 12.0, 0.95, 1.3, 0.0) == "same"  # the interval holds 1
    assert metrics.compare_verdict(10.0, 12.0, 1.1, 1.3, 0.2) == "same"  # identical runs were as far apart
    # the floor is a relative spread: a pair exactly as far apart as an A/A pair is "same" whichever side is A
    floor = metrics.relative_spread([10.0, 10.5])
    assert metrics.compare_verdict(10.0, 10.5, 1.01, 1.09, floor) == "same"
    assert metrics.compare_verdict(10.5, 10.0, 0.92, 0.99, floor) == "same"


def test_student_t_quantiles_match_the_tables() -> None:
    """NIST/SEMATECH e-Handbook §1.3.6.7.2 (upper critical values of Student's t): the 0.975 quantile."""
    for df, table in ((1, 12.706), (2, 4.303), (5, 2.571), (6, 2.447), (10, 2.228), (30, 2.042), (100, 1.984)):
        assert metrics.student_t_quantile(0.975, df) == pytest.approx(table, abs=1e-3)
    assert metrics.student_t_quantile(0.025, 6) == pytest.approx(-2.447, abs=1e-3)
    assert metrics.student_t_quantile(0.975, 1e7) == pytest.approx(1.95996, abs=1e-4)


def test_the_pooled_spread_is_the_anova_within_groups_mean_square_of_logs() -> None:
    groups = [[10.0, 10.5], [20.0, 20.2, 19.8], [5.0]]  # the last has no spread of its own: it adds nothing
    logs = [[math.log(v) for v in g] for g in groups[:2]]
    squares = sum(sum((x - sum(g) / len(g)) ** 2 for x in g) for g in logs)
    pooled = metrics.pooled_log_sd(groups)
    assert pooled == metrics.PooledSpread(pytest.approx(math.sqrt(squares / 3)), 3, 2)
    assert metrics.pooled_log_sd([[1.0], [2.0]]) is None


def test_a_one_run_interval_is_t_times_the_pooled_spread_each_side_never_narrowed() -> None:
    spread = metrics.PooledSpread(sd=0.01, df=6, groups=4)
    t = metrics.student_t_quantile(0.975, 6)
    lo, hi = metrics.repeat_interval([100.0], [(99.9, 100.1)], spread)
    assert (lo, hi) == (pytest.approx(100 * math.exp(-t * 0.01)), pytest.approx(100 * math.exp(t * 0.01)))
    assert metrics.repeat_interval([100.0], [(90.0, 100.1)], spread)[0] == 90.0  # its own low was lower
    # n runs: t·s/√n about the mean of their logs, and never excluding a run
    wide = metrics.PooledSpread(sd=0.03, df=6, groups=4)
    lo, hi = metrics.repeat_interval([100.0, 104.0], [(None, None), (None, None)], wide)
    centre, half = math.log(100 * 104) / 2, t * 0.03 / math.sqrt(2)
    assert (lo, hi) == (pytest.approx(math.exp(centre - half)), pytest.approx(math.exp(centre + half)))
    assert metrics.repeat_interval([100.0, 104.0], [(None, None), (None, None)], spread) == (100.0, 104.0)
    assert metrics.repeat_interval([100.0], [(None, None)], None) == (100.0, 100.0)  # nothing to widen by


def test_the_moving_block_bootstrap_keeps_neighbours_together() -> None:
    import numpy as np

    series = list(range(27))
    assert metrics.block_length(27) == 3 and metrics.block_length(1) == 1
    draws = metrics.block_resample(series, 200, np.random.default_rng(0))
    assert draws.shape == (200, 27)
    runs = np.diff(draws.reshape(200, 9, 3), axis=2)  # each block of 3 is 3 consecutive values
    assert (runs == 1).all()
    assert metrics.percentile_interval(np.array([1.0, 2.0, 3.0, np.nan, np.inf])) == (pytest.approx(1.05), 2.95)
    assert metrics.three_way(1.0, 1.09, 1.1) == "closes" and metrics.three_way(1.11, 1.2, 1.1) == "does not"
    assert metrics.three_way(1.05, 1.15, 1.1) == "undecided"


def test_the_end_to_end_rate_counts_the_warm_up() -> None:
    # 2000 steps: 20 of warm-up in 30 s, 1980 at 0.05 s: 2000 / 129 s
    assert metrics.end_to_end_steps_per_s(2000, 30.0, 20, 0.05) == pytest.approx(2000 / 129)
