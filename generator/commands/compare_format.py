"""How `compare` writes a figure, and the comparison as one table for `--format csv|md` (`runners/formats.py`
writes it), from the report's own JSON (`compare.Report.to_json`: the rows, each with whether it fails, and the
summary), so that every format says the same.

CSV holds each figure in full (a program reads it); Markdown holds what the text table shows (a person reads it in a
pull-request comment), with the sides and the summary under it.
"""

from __future__ import annotations

import math
from typing import Any

from runners import formats

CSV_COLUMNS = ("suite", "workload", "kind", "variant", "settings_hash", "figure", "a", "a_lo", "a_hi", "b", "b_lo",
               "b_hi", "ratio", "ratio_lo", "ratio_hi", "change", "floor", "verdict", "beyond_threshold", "lost",
               "fails", "flags", "a_runs", "b_runs")  # fmt: skip


def num(v: float | None) -> str:
    """Four significant digits, thousands grouped."""
    if v is None:
        return "—"
    digits = max(0, 3 - math.floor(math.log10(abs(v)))) if v else 3
    return f"{v:,.{digits}f}"


def cell(side: dict[str, Any]) -> str:
    """A side's figure with its interval, as the text table shows it."""
    if side["value"] is None:
        return "no figure"
    if side["lo"] is None or side["lo"] == side["hi"]:
        return num(side["value"])
    return f"{num(side['value'])} [{num(side['lo'])}, {num(side['hi'])}]"


def ratio(row: dict[str, Any]) -> str:
    """B/A with its interval, B/A alone where a side has no interval, or a dash."""
    if row["ratio"] is None:
        return "—"
    if row["ratio_lo"] is None:
        return f"{row['ratio']:.3f} [no interval]"
    return f"{row['ratio']:.3f} [{row['ratio_lo']:.3f}, {row['ratio_hi']:.3f}]"


def change(row: dict[str, Any]) -> str:
    return "—" if row["change"] is None else f"{row['change']:+.1%}"


def _test(row: dict[str, Any]) -> str:
    test = f"{row['suite']} · {row['workload']}"
    return test + (f" · {row['variant']} ({row['settings_hash']})" if row["settings_hash"] else "")


def table(report: dict[str, Any]) -> formats.Table:
    rows = []
    for row in report["rows"]:
        a, b = row["a"], row["b"]
        rows.append((
            row["suite"], row["workload"], row["kind"], row["variant"], row["settings_hash"], row["figure"],
            a["value"], a["lo"], a["hi"], b["value"], b["lo"], b["hi"], row["ratio"], row["ratio_lo"],
            row["ratio_hi"], row["change"], row["floor"], row["verdict"], row["beyond_threshold"], row["lost"],
            row["fails"], row["flags"], a["runs"], b["runs"],
        ))  # fmt: skip
    return formats.Table(columns=CSV_COLUMNS, rows=rows)


def md_table(report: dict[str, Any]) -> formats.Table:
    rows = []
    for row in report["rows"]:
        verdict = row["verdict"] or ("lost: B has no figure" if row["lost"] else "no figure")
        verdict += "; flagged: " + "; ".join(row["flags"]) if row["flags"] else ""
        rows.append(("yes" if row["fails"] else "", _test(row), row["figure"], cell(row["a"]), cell(row["b"]),
                     ratio(row), change(row), verdict))  # fmt: skip
    notes = [f"A: {report['a']['label']}", f"B: {report['b']['label']}", report["summary"]]
    columns = ("fails", "test", "figure", "A", "B", "B/A [interval]", "change", "verdict")
    return formats.Table(columns=columns, rows=rows, notes=notes)
