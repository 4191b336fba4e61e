"""`fairfight compare A B` (or `python -m generator.commands.compare A B`): its arguments, what A and B may be, and
its exit status.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import generator.commands.compare.output as output
from generator.commands.compare.data import load_dataset
from generator.commands.compare.report import FAIL_ON
from generator.commands.compare.rows import compare
from generator.commands.compare.sides import UsageError
from runners import arguments, formats

SELECTORS = """\
A and B are each one of:
  RUN_ID            a run: its id, or a unique prefix of it (a result file's path works too)
  HASH              a configuration: its 12-hex settings hash (as on the boards, or a unique prefix), pooling its
                    finished, verified runs; the engine version is part of the hash (another version is another
                    configuration). Narrow it with one or more of:
    HASH@COMMIT           only its runs made at a harness commit (a prefix: HASH@c0ffee1; also @commit=c0ffee1)
    HASH@workload=NAME    only one of the tests it ran (an inference configuration runs several)
  edition:NAME      every configuration of edition NAME (data/editions/NAME.json) that the other side also has
  @COMMIT           every configuration measured at harness commit COMMIT (a hex prefix; a prefix alone works
                    when it names no run or hash): `compare @A @B` compares every configuration measured at both
                    commits, one row each, as `asv compare A B` does

Rows pair A and B on their suite and workload (editions and commits: and configuration). Only finished, verified,
unretracted runs count; a row whose side has none says why. "same": the interval of B/A holds 1, or A and B are no
further apart than identical runs of the configurations compared (the A/A floor).

exit status: 0 when no row fails; 1 when a row is slower beyond --threshold (--fail-on faster: faster beyond it;
--fail-on both: either) or B has no figure where A has one (as asv counts a benchmark that started failing); 2 for
a usage error."""


def threshold(text: str) -> float:
    """A relative change: `5%` or `0.05`."""
    t = text.strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: a relative change, as 5% or 0.05") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a relative change of 0 or more, as 5% or 0.05")
    if not t.endswith("%") and value >= 1:
        raise argparse.ArgumentTypeError(f"{text!r}: write {t}% for {t} percent, or a fraction below 1 (0.05)")
    return value


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    if parser.description is None:
        parser.description = "Compare two runs, configurations or editions: B against A."
    if parser.epilog is None:
        parser.epilog = SELECTORS
        parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument(
        "a", metavar="A", nargs="?", help="the baseline: RUN_ID, HASH[@COMMIT][@workload=NAME], @COMMIT or edition:NAME"
    )
    parser.add_argument("b", metavar="B", nargs="?", help="compared with A: the same forms")
    parser.add_argument(
        "--list",
        action="store_true",
        help="instead of comparing, list the harness commits with runs and the pairs of them that share "
        "configurations (what `compare @A @B` has rows for)",
    )
    arguments.add_data_dir(parser)
    parser.add_argument(
        "--threshold",
        type=threshold,
        default="5%",
        metavar="CHANGE",
        help="a slower row fails (exit 1) when B/A is further than this from 1 (default: 5%%; or 0.05)",
    )
    parser.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default="slower",
        help="which rows beyond the threshold fail (exit 1): slower (the default), faster, or both",
    )
    parser.add_argument(
        "--only-changed", action="store_true", help="print only the rows beyond the threshold or with one side's figure"
    )
    formats.add_format_arg(parser, "the comparison")
    parser.add_argument("--json", dest="format", action="store_const", const="json", help="the same as --format json")


def main(args: argparse.Namespace) -> int:
    fmt = getattr(args, "format", "text")
    try:
        listing = getattr(args, "list", False)
        if (listing and args.a is not None) or (not listing and args.b is None):
            raise UsageError("give A and B to compare, or --list (and neither A nor B) to see which commits can be")
        if not Path(args.data).is_dir():
            raise UsageError(f"--data-dir {args.data}: no such folder (run from the repository root, or pass it)")
        ds = load_dataset(args.data)
        if listing:
            sys.stdout.write(output.commit_list(ds, fmt))
            return 0
        report = compare(args.a, args.b, ds, args.threshold, getattr(args, "fail_on", "slower"),
                         getattr(args, "only_changed", False))  # fmt: skip
    except UsageError as e:
        print(f"compare: {e}", file=sys.stderr)
        if fmt == "json":
            print(json.dumps({"error": str(e), "exit_status": 2}))
        return 2
    data = report.to_json()
    sys.stdout.write(formats.render(fmt, text=lambda: output.render(report), data=data,
                                    table=lambda: output.table(data),
                                    md=lambda: output.md_table(data)))  # fmt: skip
    return report.exit_status
