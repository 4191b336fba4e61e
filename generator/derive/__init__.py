"""The derivation half of the generator: pure polars and frozen dataclasses, no Jinja, no altair, no paths
(tests/generator/test_halves.py). `results(loaded, summary)` (results.py) derives every figure the site, `compare`
and the editions show, once, into a `Results`; `summaries.py` makes the one row per run it starts from,
`training_boards.py` the training boards of those rows.

The names below are what the rest of the generator and the tests call.
"""

from generator.derive.parity import loss_parity
from generator.derive.results import Board, Results, results, with_test_figures
from generator.derive.summaries import repetition_intervals, run_summary, window_intervals, window_rates
from generator.derive.training_boards import CONFIG_KEYS, candidates, leaderboards, loss_windows, repeats, scaling

__all__ = [
    "CONFIG_KEYS",
    "Board",
    "Results",
    "candidates",
    "leaderboards",
    "loss_parity",
    "loss_windows",
    "repeats",
    "repetition_intervals",
    "results",
    "run_summary",
    "scaling",
    "window_intervals",
    "window_rates",
    "with_test_figures",
]
