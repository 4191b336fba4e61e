"""`python -m runners COMMAND`: run a suite (`bench`), import claims (`claim`) or other tools' results (`import`),
retract a run (`retract`) or list what the suites hold (`list`): the runners' half of the `fairfight` command
(fairfight/cli.py), for a bench host's checkout with neither the package installed nor the site's libraries."""

from __future__ import annotations

import argparse
import sys

from runners import bench, claims, imports, retract, spec


def add_list_args(_: argparse.ArgumentParser) -> None:
    """`list` takes no arguments."""


def list_suites(_: argparse.Namespace) -> int:
    for path in sorted(spec.SUITES_DIR.glob("*.toml")):
        if path.stem == "variants":
            continue
        suite = spec.load_suite(path)
        print(f"{suite.name}: {suite.description}")
        for w in suite.workloads:
            print(f"  {w.name}: {', '.join(w.variants)}")
        entries: tuple[spec.Inference | spec.Serving, ...] = (*suite.inference, *suite.serving)
        for entry in entries:  # a pp/tg or serving entry: its tests share the variants
            kind = "inference" if entry in suite.inference else "serving"
            print(f"  {entry.name} ({kind}, {len(entry.tests())} tests): {', '.join(entry.variants)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runners", description="Fair Fight benchmark runners")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("bench", help="run a suite and append one result file per run under data/")
    bench.add_cli_args(p)
    p.set_defaults(func=bench.run_suite)
    p = sub.add_parser("claim", help="import claims (numbers reported elsewhere) from a TOML file into data/")
    claims.add_cli_args(p)
    p.set_defaults(func=claims.main)
    p = sub.add_parser(
        "import", help="import an engine's own benchmark output (llama-bench JSON, mlx_lm.benchmark text) into data/"
    )
    imports.add_cli_args(p)
    p.set_defaults(func=imports.main)
    p = sub.add_parser("retract", help="retract a run: a new record pointing at it, with the reason (nothing deleted)")
    retract.add_cli_args(p)
    p.set_defaults(func=retract.main)
    sub.add_parser("list", help="list suites, workloads and variants").set_defaults(func=list_suites)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except spec.SpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
