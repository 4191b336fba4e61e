"""A suite's name as the site shows it: the suite file's `title` (the suite named "h100" holds H200 runs), else its
name, read here from the suite file (`derive.results` puts each suite's into `Results.suite_titles`). The name itself
stays what records, paths and commands use; only what a reader sees changes."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from runners import spec

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


@functools.cache
def title(suite: str) -> str:
    """The suite file's title, or `suite` itself where it has none, has no file here, or its file does not load (a
    record names its suite; that name is never trusted to find anything but a file of that name)."""
    if not _NAME.fullmatch(suite):  # a path or anything but a plain name finds no file
        return suite
    try:
        return spec.load_suite(suite).title or suite
    except (spec.SpecError, OSError, ValueError):
        return suite


def titles(suites: Iterable[str | None]) -> dict[str, str]:
    """Each suite named (a record's), by name, with its title (`title`), in name order."""
    return {name: title(name) for name in sorted({s for s in suites if s is not None})}
