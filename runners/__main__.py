"""`python -m runners COMMAND`: run a suite (`bench`), import claims (`claim`) or other tools' results (`import`),
retract a run (`retract`) or list what the suites hold (`list`): the runners' half of the `fairfight` command
(fairfight/cli.py), for a bench host's checkout with neither the package installed nor the site's libraries."""

from __future__ import annotations

import argparse
import sys

from runners import bench, claims, formats, imports, retract, spec


def add_list_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", action="append", metavar="NAME", help="only this suite (repeatable; default: every one)")
    formats.add_format_arg(p, "the suites")


def list_suites(args: argparse.Namespace) -> int:
    suites = []
    for name in getattr(args, "suite", None) or spec.suite_names():
        suite = spec.load_suite(name)  # an unknown name: "no suite 'h10'; did you mean 'h100'?"
        entries: list[dict[str, object]] = [
            {"name": w.name, "kind": "train", "tests": None, "variants": list(w.variants)} for w in suite.workloads
        ]
        for kind, group in (("inference", suite.inference), ("serving", suite.serving)):
            entries += [  # a pp/tg or serving entry: its tests share the variants
                {"name": e.name, "kind": kind, "tests": len(e.tests()), "variants": list(e.variants)} for e in group
            ]
        suites.append({"suite": suite.name, "description": suite.description, "workloads": entries})
    sys.stdout.write(formats.render(getattr(args, "format", "text"), text=lambda: _list_text(suites),
                                    data={"suites": suites}, table=lambda: _list_table(suites)))  # fmt: skip
    return 0


def _list_text(suites: list[dict]) -> str:
    lines = []
    for suite in suites:
        lines.append(f"{suite['suite']}: {suite['description']}")
        for w in suite["workloads"]:
            kind = "" if w["kind"] == "train" else f" ({w['kind']}, {w['tests']} tests)"
            lines.append(f"  {w['name']}{kind}: {', '.join(w['variants'])}")
    return "\n".join(lines)


def _list_table(suites: list[dict]) -> formats.Table:
    rows = [
        (s["suite"], w["name"], w["kind"], w["tests"], " ".join(w["variants"])) for s in suites for w in s["workloads"]
    ]
    return formats.Table(columns=("suite", "workload", "kind", "tests", "variants"), rows=rows)


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
    p = sub.add_parser("list", help="list suites, workloads and variants")
    add_list_args(p)
    p.set_defaults(func=list_suites)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except spec.SpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    from runners import lifetime

    lifetime.leave(main())  # not sys.exit: native thread pools torn down at exit can abort it (lifetime.leave)
