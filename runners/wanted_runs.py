"""`fairfight bench --wanted FILE`: run the wanted runs (`fairfight wanted --format json`, or the site's
downloads/wanted.json) that this host's hardware fits, each as many times as the entry says.

Each entry's command is `fairfight bench` with the run's own suite, workload, variant and settings; it is parsed by
the bench's own parser, so it is checked as a typed command is. A point that several answers want is run once, as
many times as the most of them asks. Lives in `runners/` (which never imports `generator/`): it reads the list as a
file, and the rule for which hardware fits (`Host`) is the one `fairfight wanted` lists by.
"""

from __future__ import annotations

import argparse
import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIELDS = {"command": (str, type(None)), "runs": (int, type(None)), "device": (str, type(None)), "accelerator": (str,),
          "accelerator_count": (int,)}  # fmt: skip
"""What `--wanted` reads of each entry, and the types it takes."""


@dataclass(frozen=True, slots=True)
class Host:
    """The hardware a wanted run needs, as this host has it."""

    cpu_model: str
    gpus: tuple[str, ...]
    """One name per GPU (nvidia-smi's, which is what a CUDA record's accelerator says)."""

    def fits(self, device: str | None, accelerator: str, count: int) -> bool:
        """A CPU run fits the same CPU model (only identical hardware pools a spread); any other, as many GPUs of its
        name as it used."""
        if device == "cpu":
            return accelerator == self.cpu_model
        return self.gpus.count(accelerator) >= count

    def __str__(self) -> str:
        if not self.gpus:
            return f"CPU: {self.cpu_model}"
        return ", ".join(f"{self.gpus.count(n)} × {n}" for n in sorted(set(self.gpus)))


def this_host() -> Host:
    """This host as a record names its hardware (runners/provenance.py): its GPUs by nvidia-smi, its CPU model."""
    from runners import provenance

    return Host(provenance.cpu_model(), tuple(row[0] for row in provenance.nvidia_smi_query("gpu=name") if row))


def read(path: Path) -> list[dict[str, Any]]:
    """The entries of a wanted list, each with the fields `FIELDS` names; a mistake is one sentence naming the file,
    the entry and the field (SystemExit)."""
    try:
        entries = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SystemExit(f"bench --wanted {path}: not a wanted list (`fairfight wanted --format json`): {e}") from None
    if not isinstance(entries, list):
        raise SystemExit(f"bench --wanted {path}: not a wanted list: a JSON list of entries was expected")
    for i, entry in enumerate(entries):
        for name, types in FIELDS.items():
            if not isinstance(entry, dict) or name not in entry:
                raise SystemExit(f"bench --wanted {path}: entry {i} has no field {name!r}")
            if not isinstance(entry[name], types) or isinstance(entry[name], bool):
                raise SystemExit(
                    f"bench --wanted {path}: entry {i}, field {name!r}: {entry[name]!r} is not of its type"
                )
    return entries


def fitting(entries: list[dict[str, Any]], host: Host) -> dict[str, int]:
    """Command -> how many runs, for the entries this host fits that have a command and a number of runs."""
    out: dict[str, int] = {}
    for e in entries:
        if e["command"] and e["runs"] and host.fits(e["device"], e["accelerator"], e["accelerator_count"]):
            out[e["command"]] = max(out.get(e["command"], 0), e["runs"])
    return out


def bench_args(command: str, parser: argparse.ArgumentParser, outer: argparse.Namespace) -> argparse.Namespace:
    """A wanted command as the bench's arguments, with the session's own data folder, dry run, format and note."""
    tokens = shlex.split(command)
    if tokens[:2] != ["fairfight", "bench"] or "--wanted" in tokens:
        raise SystemExit(f"bench --wanted {outer.wanted}: {command!r} is not a fairfight bench command")
    extra = ["--data-dir", str(outer.data_dir), "--format", getattr(outer, "format", "text")]
    extra += ["--dry-run"] if outer.dry_run else []
    extra += ["--note", outer.note] if outer.note else []
    return parser.parse_args(tokens[2:] + extra)


SESSION_ONLY = ("suite", "workload", "variant", "steps", "micro_batch", "world_size", "time_budget", "set", "env",
                "variants")  # fmt: skip
"""The bench's arguments a wanted entry's command gives itself: `--wanted` takes none of them."""
