"""`fairfight wanted`: the runs that would settle the verdict's undecided answers and the boards' unreplicated rows
(`derive.wanted`), by default those this host's hardware can make (every one where it can make none).

    fairfight wanted [--all] [--format text|json|csv|md] [--data-dir data]

The data are loaded and derived as the site build derives them (`derive.results`), so the list is the Wanted runs
page's. Which runs this host fits is `runners.wanted_runs.Host`'s rule, the one `bench --wanted` runs by: its GPUs
by nvidia-smi's names, else its CPU model (runners/provenance.py); a run fits where the host has its accelerator as
many times as the run used it (a CPU run: the same CPU model, since only identical hardware pools a spread).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import generator.derive.words as words
from generator.derive.wanted import Wanted
from runners import arguments, formats
from runners.wanted_runs import Host, this_host


def fits_host(host: Host, entry: Wanted) -> bool:
    """Whether `host` has the hardware `entry` needs (`wanted_runs.Host.fits`, the rule `bench --wanted` runs by)."""
    return host.fits(entry.device, entry.accelerator, entry.accelerator_count)


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    if parser.description is None:
        parser.description = (
            "List the runs that would settle the verdict's undecided answers and the boards' unreplicated rows: "
            "hardware, command, how many, and what the answer becomes if the figures hold."
        )
    parser.add_argument("--all", action="store_true", help="list every wanted run, not only those this host fits")
    arguments.add_data_dir(parser)
    formats.add_format_arg(parser, "the wanted runs")


def load_wanted(data_dir: Path) -> list[Wanted]:
    """The wanted runs of the result files under `data_dir`, derived as the site derives them."""
    import generator.derive.checks as checks
    import generator.load.editions as editions
    from generator import derive, load

    canonical = load.canonical(data_dir)
    loaded = load.load(canonical, None, lean=True)
    return derive.results(*checks.checked(editions.audited(loaded, canonical)[0])).wanted


def listed(entries: Sequence[Wanted], host: Host, every: bool) -> list[tuple[Wanted, bool]]:
    """(entry, whether this host fits it) for each entry listed: every one with `every`, else those it fits, and
    every one where it fits none (a contributor on a laptop sees what is wanted, each marked as not for this host;
    `bench --wanted` runs only what fits whatever the list holds)."""
    fitting = [(e, fits_host(host, e)) for e in entries]
    every = every or not any(fits for _, fits in fitting)
    return [(e, fits) for e, fits in fitting if fits or every]


def text(entries: Sequence[Wanted], shown: Sequence[tuple[Wanted, bool]], host: Host, every: bool) -> str:
    fitting = sum(fits_host(host, e) for e in entries)
    head = f"{words.counted(len(entries), 'wanted run')}, {fitting} fit this host ({host})"
    lines = [head + ("" if every else "; every one is listed" if not fitting else "; --all lists every one")]
    settles = None
    for entry, fits in shown:
        if entry.settles != settles:
            settles = entry.settles
            lines += ["", f"{entry.settles} ({entry.href})", f"  {entry.becomes}"]
        runs = "no number of runs" if entry.runs is None else words.counted(entry.runs, "run")
        mb = f", micro-batch {entry.micro_batch}" if entry.micro_batch is not None else ""
        now = (
            f"now {words.counted(entry.runs_now, 'run')}{'' if entry.full_length_now else ' shorter than full length'}"
        )
        lines.append(f"  {runs} on {entry.hardware}{'' if fits else ' (not this host)'}: {entry.label}{mb} ({now})")
        lines.append(f"    {entry.command or 'no command: ' + str(entry.why_no_command)}")
    return "\n".join(lines) + "\n"


COLUMNS = ("kind", "settles", "hardware", "runs", "label", "micro_batch", "command", "if_figures_hold",
           "probability", "fits_host")  # fmt: skip


def rows(shown: Sequence[tuple[Wanted, bool]]) -> list[dict[str, Any]]:
    """The JSON: one object per entry listed, its fields (`Wanted.to_json`) and whether this host fits it."""
    return [entry.to_json() | {"fits_host": fits} for entry, fits in shown]


def run(args: argparse.Namespace) -> int:
    fmt = getattr(args, "format", "text")
    if not Path(args.data).is_dir():
        print(f"wanted: --data-dir {args.data}: no such folder (run from the repository root, or pass it)",
              file=sys.stderr)  # fmt: skip
        return 2
    entries = load_wanted(args.data)
    host = this_host()
    shown = listed(entries, host, args.all)
    data = rows(shown)
    table = formats.Table(columns=COLUMNS, rows=[[row[c] for c in COLUMNS] for row in data])
    sys.stdout.write(formats.render(fmt, text=lambda: text(entries, shown, host, args.all), data=data, table=table))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m generator.commands.wanted")
    add_cli_args(parser)
    sys.exit(run(parser.parse_args()))
