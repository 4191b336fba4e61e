"""`--format text|json|csv|md`: one way for every command (`list`, `bench`'s summary, `validate`, `compare`) to print
what it found for a reader, a program, a spreadsheet or a pull-request comment.

A command hands `emit` its text (as it prints today), its data (what `json` prints, whole) and one `Table` (what
`csv` and `md` print: a header and one row per item). `csv` is RFC 4180 (CRLF line ends, a header line, quotes only
where a field needs them); `md` is a GitHub-flavoured Markdown table whose cells are escaped, since every value that
came from a result file is hostile until checked (a `|` would split a cell, a `<` open a tag). Lives in `runners/`
because both halves print through it, and `runners/` never imports `generator/`.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

FORMATS = ("text", "json", "csv", "md")


def add_format_arg(parser: argparse.ArgumentParser, what: str = "the result") -> None:
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help=f"how to print {what}: text (for people, the default), json (one document), csv (RFC 4180, a header "
        "line) or md (a Markdown table, for a pull-request comment)",
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class Table:
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]
    """One sequence per row, a value per column: str, int, float, bool or None (an empty cell); a list is joined."""
    title: str | None = None
    """md: a line above the table."""
    notes: Sequence[str] = field(default_factory=tuple)
    """md: lines below the table (a summary, what was left out)."""


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    if isinstance(value, list | tuple):
        return "; ".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def to_csv(table: Table) -> str:
    """RFC 4180: a header line, then one record per row, CRLF line ends. A text cell a spreadsheet would run as a
    formula (starting with = + - @) gets a leading `'` (OWASP's advice); numbers are written as numbers."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(table.columns)
    for row in table.rows:
        cells = []
        for value in row:
            text = _cell(value)
            if isinstance(value, str) and text.startswith(_FORMULA):
                text = "'" + text
            cells.append(text)
        writer.writerow(cells)
    return out.getvalue()


_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def md_escape(text: str) -> str:
    """One line of text that renders as itself in a Markdown table cell: emphasis, code, links and cell breaks
    backslash-escaped (CommonMark's escapes), `&`, `<` and `>` as HTML entities (no tag can open)."""
    escaped = _MD_SPECIAL.sub(r"\\\1", " ".join(text.split()))
    return escaped.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def to_markdown(table: Table) -> str:
    lines = [md_escape(table.title), ""] if table.title else []
    lines.append("| " + " | ".join(md_escape(c) for c in table.columns) + " |")
    lines.append("|" + "|".join(" --- " for _ in table.columns) + "|")
    for row in table.rows:
        lines.append("| " + " | ".join(md_escape(_cell(v)) for v in row) + " |")
    for note in table.notes:  # a paragraph each
        lines += ["", md_escape(note)]
    return "\n".join(lines) + "\n"


def to_json(data: Any) -> str:
    """One JSON document; a float that JSON cannot hold (inf, nan) becomes null rather than an unparseable token."""
    return json.dumps(_finite(data), indent=1, default=str) + "\n"


def _finite(data: Any) -> Any:
    if isinstance(data, float) and not math.isfinite(data):
        return None
    if isinstance(data, dict):
        return {str(k): _finite(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_finite(v) for v in data]
    return data


Part = Callable[[], Any]


def render(fmt: str, *, text: str | Part, data: Any, table: Table | Part, md: Table | Part | None = None) -> str:
    """What `--format fmt` prints. `md` is the table for Markdown where it differs from the CSV one (figures
    formatted for reading rather than written in full); each part may be a function, called only when asked for."""
    if fmt == "text":
        out = text() if callable(text) else text
        return out if out.endswith("\n") else out + "\n"
    if fmt == "json":
        return to_json(data() if callable(data) else data)
    if fmt == "csv":
        return to_csv(table() if callable(table) else table)
    if fmt == "md":
        chosen = table if md is None else md
        return to_markdown(chosen() if callable(chosen) else chosen)
    raise ValueError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")
