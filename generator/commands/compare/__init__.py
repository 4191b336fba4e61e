"""B against A, as `asv compare` and `pytest-benchmark compare` do for their results:

    fairfight compare A B [--data-dir data] [--threshold 5%] [--fail-on slower|faster|both] [--only-changed]
                          [--format text|json|csv|md]                 (or python -m generator.commands.compare)

A and B are each a run, a configuration (pooling its runs), an edition or a harness commit (every configuration in
both: `compare @A @B`, selected by generator/derive/commit_pairs.py). Each
row holds the figure its kind of test is ranked by on the boards, A's and B's with their intervals (a run's 95%
interval; a configuration's median of its runs' figures, from its runs' lowest low to highest high), B/A with the
interval those give (`metrics.ratio_interval`), the A/A floor (the spread between identical runs, or the largest of
its kind on that hardware, as the boards widen one-run rows: `Results.kind_floors`) and the verdict
(`metrics.compare_verdict`). The runs, their figures and the floors are the site's own `derive.results`
(`derive.runs.every_run`), and only finished, verified, unretracted runs count (the boards' own reasons, less those
about a board's shape).

One module per job: `data` (what compare selects from, kept between runs by `cache`), `sides` (what A and B select),
`rows` (one row per pair), `report` (which rows fail, the summary), `output` (text, JSON, CSV, Markdown) and `cli`
(the arguments and the exit status). The names below are what the rest of the generator and the tests call.
"""

import generator.commands.compare.cache as cache
import generator.commands.compare.output as output
from generator.commands.compare.cli import SELECTORS, add_cli_args, main, threshold
from generator.commands.compare.data import SIDE_KEYS, TEST_KEYS, Dataset, dataset, keep, load_dataset
from generator.commands.compare.output import commit_list, render
from generator.commands.compare.report import FAIL_ON, Report, changed, fails
from generator.commands.compare.rows import compare, compare_sides
from generator.commands.compare.sides import MANY, Side, UsageError, select

__all__ = [
    "FAIL_ON",
    "MANY",
    "SELECTORS",
    "SIDE_KEYS",
    "TEST_KEYS",
    "Dataset",
    "Report",
    "Side",
    "UsageError",
    "add_cli_args",
    "cache",
    "changed",
    "commit_list",
    "compare",
    "compare_sides",
    "dataset",
    "fails",
    "keep",
    "load_dataset",
    "main",
    "output",
    "render",
    "select",
    "threshold",
]
