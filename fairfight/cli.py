"""The `fairfight` command: one entry point for everything Fair Fight does.

    fairfight --version
    fairfight list | bench | slurm | claim | import | retract        (runners/: run suites, write result files)
    fairfight validate | site | release | compare | wanted | submit | publish   (generator/: check, build, ship)
    fairfight wheelhouse build | install                     (fairfight/wheelhouse.py: hosts without a network)

Each command's arguments belong to its module (`add_cli_args`, and a function that runs it), which is imported
only when that command runs: a bench host with torch but without the site's libraries still runs `fairfight bench`.
`nox` sessions call the same commands; `python -m fairfight` works from a checkout that is not installed.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType

import fairfight


@dataclass(frozen=True, kw_only=True, slots=True)
class Command:
    name: str
    module: str
    """The module that owns the command's arguments (`add_args`) and runs it (`run`, args -> exit status)."""
    help: str
    add_args: str = "add_cli_args"
    run: str = "main"
    needs: str = "`pip install .` in a checkout"
    """What to install when the module cannot be imported here."""
    builds_site: bool = False
    """It builds the site: it is handed the pages this command supplies (`args.supplied`, the command reference)."""


_SITE_NEEDS = (
    "the site's libraries (polars, altair, MkDocs Material): `pip install '.[site]'` in a checkout, or `nox -s site`"
)
_VALIDATE_NEEDS = "polars: `pip install '.[validate]'` in a checkout (or '.[site]', which has it)"
COMMANDS: tuple[Command, ...] = (
    Command(name="list", module="runners.__main__", help="list suites, workloads and variants",
            add_args="add_list_args", run="list_suites"),
    Command(name="bench", module="runners.bench", run="run_suite",
            help="run a suite and append one result file per run under data/",
            needs="the engine's packages: `pip install '.[torch]'` (or [mlx], [llama]) in a checkout; see `nox -l`"),
    Command(name="slurm", module="runners.slurm",
            help="write the batch script of a suite slice over several nodes and submit it with sbatch (or print it)"),
    Command(name="claim", module="runners.claims",
            help="import claims (numbers reported elsewhere) from a TOML file into data/"),
    Command(name="import", module="runners.imports",
            help="import an engine's own benchmark output (llama-bench, mlx_lm.benchmark, vllm bench) into data/"),
    Command(name="retract", module="runners.retract",
            help="retract a run: a new record pointing at it, with the reason (nothing is deleted)"),
    Command(name="validate", module="generator.commands.validate", run="run", needs=_VALIDATE_NEEDS,
            help="check result files with every check the site build makes (exit 1 when any is rejected)"),
    Command(name="site", module="generator.build", run="run", needs=_SITE_NEEDS, builds_site=True,
            help="build the static site from data/ into site/"),
    Command(name="release", module="generator.load.editions", run="run", needs=_VALIDATE_NEEDS,
            help="freeze data/ into an immutable edition (data/editions/NAME.json)"),
    Command(name="compare", module="generator.commands.compare", needs=_VALIDATE_NEEDS,
            help="compare two runs, configurations or editions: ratio, interval, A/A floor, faster/slower/same"),
    Command(name="submit", module="generator.commands.submit", run="run", needs=_VALIDATE_NEEDS,
            help="make a pull request's folder of new result files: validated, compared with the boards they join, "
                 "with a Markdown summary (no network)"),
    Command(name="wanted", module="generator.commands.wanted", run="run", needs=_VALIDATE_NEEDS,
            help="list the runs that would settle the verdict's undecided answers and unreplicated board rows "
                 "(those this host's hardware fits; --all every one)"),
    Command(name="publish", module="generator.publish", run="run", needs=_SITE_NEEDS, builds_site=True,
            help="rebuild the site and copy it into a folder (empty, or published there before), or commit it to a "
                 "gh-pages branch and push"),
    Command(name="wheelhouse", module="fairfight.wheelhouse", run="run",
            help="build a wheelhouse from the lock for a host without a network, or install from one"),
)  # fmt: skip
BY_NAME = {c.name: c for c in COMMANDS}
OWN_PACKAGES = ("fairfight", "runners", "generator")


def version_line() -> str:
    """`fairfight --version`: the version and the harness commit (from the checkout, FAIRFIGHT_HARNESS_COMMIT, or
    baked in when the package was built)."""
    from runners import provenance

    try:
        commit, dirty = provenance.harness()
    except ValueError as e:
        return f"fairfight {fairfight.version()} ({e})"
    state = {True: ", with uncommitted changes", False: "", None: ""}[dirty]
    where = f"harness {commit}{state}" if commit else "harness commit unknown (set FAIRFIGHT_HARNESS_COMMIT)"
    return f"fairfight {fairfight.version()} ({where})"


class _Version(argparse.Action):
    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and the harness commit, then exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(version_line())
        parser.exit()


def _module(command: Command) -> ModuleType:
    return importlib.import_module(command.module)


def build_parser(load: Iterable[str] = ()) -> tuple[argparse.ArgumentParser, dict[str, str]]:
    """The parser, with the arguments of the commands named in `load` (importing their modules); the others are
    listed with their help only. Returns it and, per command that could not be imported, why."""
    parser = argparse.ArgumentParser(
        prog="fairfight",
        description="Fair Fight: run ML engines on the same shapes, data and hardware, and publish an honest "
        "leaderboard. `fairfight COMMAND --help` explains a command.",
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    missing: dict[str, str] = {}
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help, description=command.help)
        if command.name not in load:
            continue
        try:
            module = _module(command)
        except ModuleNotFoundError as e:
            missing[command.name] = f"{e.name} is not installed here; `fairfight {command.name}` needs {command.needs}"
            p.epilog = f"Not available here: {missing[command.name]}."
            continue
        getattr(module, command.add_args)(p)
    return parser, missing


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    chosen = next((a for a in argv if not a.startswith("-")), None)
    parser, missing = build_parser([chosen] if chosen in BY_NAME else [])
    if chosen in missing and not {"-h", "--help"} & set(argv):  # its arguments are unknown here: say why, not "usage"
        print(f"error: {missing[chosen]}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    if args.command in missing:
        print(f"error: {missing[args.command]}", file=sys.stderr)
        return 2
    command = BY_NAME[args.command]
    if command.builds_site:
        args.supplied = {"cli.md": reference_markdown()}
    run: Callable[[argparse.Namespace], int] = getattr(_module(command), command.run)
    from runners import spec

    try:
        return int(run(args) or 0)
    except spec.SpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as e:
        # A library the command imports only when it gets that far (publish builds the site with altair; the light
        # install has none of it): say what to install, as for a module missing at the start. A module of our own
        # missing is a defect, and keeps its traceback.
        if e.name is None or e.name.partition(".")[0] in OWN_PACKAGES:
            raise
        print(f"error: {e.name} is not installed here; `fairfight {command.name}` needs {command.needs}",
              file=sys.stderr)  # fmt: skip
        return 2
    except BrokenPipeError:  # `fairfight list | head`: the reader left; nothing is wrong
        sys.stderr.close()
        return 0


def reference_markdown() -> str:
    """The CLI reference page, made from the parser itself (every command's `--help`), at a fixed width so that the
    page does not depend on the terminal it was built in."""
    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps help to the terminal's width
    try:
        return _reference_markdown()
    finally:
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns


def _reference_markdown() -> str:
    parser, missing = build_parser([c.name for c in COMMANDS])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = [
        "# Command reference",
        "",
        "Made from the `fairfight` command's own parser when the site is built, so it cannot drift from the tool. "
        "In a checkout that is not installed, `python -m fairfight` is the same command.",
        "",
        "```text",
        parser.format_help().rstrip(),
        "```",
    ]
    for command in COMMANDS:
        out += ["", f"## fairfight {command.name}", "", command.help[:1].upper() + command.help[1:] + ".", ""]
        if command.name in missing:
            out += [f"(Not available where this site was built: {missing[command.name]}.)"]
            continue
        command_parser = sub.choices[command.name]
        out += ["```text", command_parser.format_help().rstrip(), "```"]
        for action in command_parser._actions:  # a command with actions of its own (wheelhouse build | install)
            if isinstance(action, argparse._SubParsersAction):
                for name, action_parser in action.choices.items():
                    out += ["", f"### fairfight {command.name} {name}", "", "```text"]
                    out += [action_parser.format_help().rstrip(), "```"]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
