"""What a person types at a command, read the same way by every command: a file that must be there, a name among
known ones (with a did-you-mean), a run id, and a module's `main(argv)`.

Standard library only, and in `runners/` (which the generator may import): `retract` on a bench host and `compare` on
the site's machine read a run id by the same rule, and `bench`, `slurm`, `import` and `list` name a suite the same
way. Each rule is one function, so that two commands cannot drift apart on it.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Callable, Iterable
from pathlib import Path


def command(
    prog: str,
    doc: str | None,
    add_cli_args: Callable[[argparse.ArgumentParser], None],
    run: Callable[[argparse.Namespace], int],
    argv: list[str] | None,
) -> int:
    """A module's `main(argv)` run as `python -m <module>`: its parser (`prog`, the first line of `doc` as the
    description) given the module's `add_cli_args`, and the parsed arguments handed to its `run`."""
    p = argparse.ArgumentParser(prog=prog, description=(doc or "").partition("\n")[0])
    add_cli_args(p)
    return run(p.parse_args(argv))


def add_data_dir(parser: argparse.ArgumentParser) -> None:
    """`--data-dir DIR` (or `--data`) as the commands that read committed results name it (`args.data`)."""
    parser.add_argument(
        "--data-dir",
        "--data",
        dest="data",
        type=Path,
        default=Path("data"),
        metavar="DIR",
        help="result files (default: data/ in the current directory)",
    )


def existing_file(text: str) -> Path:
    """An argparse `type` for an input file: a missing or unreadable one is refused while the arguments are read, with
    a sentence naming it (argparse prints it after `error:` and exits 2), never a traceback from deep in the command."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text}: no such file")
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"{text}: not a file (a folder or a device)")
    try:
        with path.open("rb"):
            pass
    except OSError as e:
        raise argparse.ArgumentTypeError(f"{text}: cannot be read ({e.strerror or e})") from None
    return path


def existing_folder(text: str) -> Path:
    """An argparse `type` for an input folder, refused like `existing_file`: a missing path or a file where a folder
    belongs is named in a sentence while the arguments are read, not met as a traceback from a directory listing."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text}: no such folder")
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: not a folder (give the folder that holds the parts)")
    return path


def unknown(kind: str, name: str, known: Iterable[str]) -> str:
    """What to say when `name` is not one of `known`: "no suite 'h10'; did you mean 'h100'?", or the known names where
    none is close (difflib's ratio, as Python's own "did you mean" for names)."""
    names = sorted(set(known))
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if close:
        return f"no {kind} {name!r}; did you mean {close[0]!r}?"
    if not names:
        return f"no {kind} {name!r}; there are none"
    return f"no {kind} {name!r}; the {kind}s are {', '.join(names)}"


def run_id(text: str) -> str:
    """The run id `text` names: the id itself, or a result file's path (`data/h100/2026-12/ID.parquet`), whose name is
    the id."""
    return Path(text).stem if text.endswith(".parquet") else text


def matching_runs(text: str, ids: Iterable[str]) -> list[str]:
    """The run ids `text` names among `ids`: the one it is exactly (or whose file it is), else every id it begins (a
    unique prefix names one run; several mean "give more of it", which the caller says)."""
    key = run_id(text)
    ids = list(ids)
    if key in ids:
        return [key]
    return sorted({i for i in ids if i.startswith(key)})
