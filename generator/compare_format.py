"""`compare --format csv|md`: the comparison as one table (`runners/formats.py` writes it).

CSV holds each figure in full (a program reads it); Markdown holds what the text table shows (a person reads it in a
pull-request comment), with the summary under it. JSON is `compare.Report.to_json`, whole.
"""

from __future__ import annotations

from typing import Any

from generator import compare
from runners import formats

CSV_COLUMNS = ("suite", "workload", "kind", "variant", "settings_hash", "figure", "a", "a_lo", "a_hi", "b", "b_lo",
               "b_hi", "ratio", "ratio_lo", "ratio_hi", "change", "floor", "verdict", "beyond_threshold", "lost",
               "fails", "a_runs", "b_runs")  # fmt: skip


def _test(row: dict[str, Any]) -> str:
    test = f"{row['suite']} · {row['workload']}"
    return test + (f" · {row['variant']} ({row['settings_hash']})" if row["settings_hash"] else "")


def table(report: compare.Report) -> formats.Table:
    rows = []
    for row in report.shown:
        a, b = row["a"], row["b"]
        rows.append((
            row["suite"], row["workload"], row["kind"], row["variant"], row["settings_hash"], row["figure"],
            a["value"], a["lo"], a["hi"], b["value"], b["lo"], b["hi"], row["ratio"], row["ratio_lo"],
            row["ratio_hi"], row["change"], row["floor"], row["verdict"], row["beyond_threshold"], row["lost"],
            compare.fails(row, report.fail_on), a["runs"], b["runs"],
        ))  # fmt: skip
    return formats.Table(columns=CSV_COLUMNS, rows=rows)


def md_table(report: compare.Report) -> formats.Table:
    rows = []
    for row in report.shown:
        if row["verdict"] is None:
            ratio = change = "—"
            verdict = "lost: B has no figure" if row["lost"] else "no figure"
        else:
            ratio = f"{row['ratio']:.3f} [{row['ratio_lo']:.3f}, {row['ratio_hi']:.3f}]"
            change, verdict = f"{row['change']:+.1%}", row["verdict"]
        mark = "yes" if compare.fails(row, report.fail_on) else ""
        rows.append((mark, _test(row), row["figure"], compare._cell(row["a"]), compare._cell(row["b"]), ratio,
                     change, verdict))  # fmt: skip
    notes = [f"A: {report.a.label}", f"B: {report.b.label}", report.summary]
    columns = ("fails", "test", "figure", "A", "B", "B/A [interval]", "change", "verdict")
    return formats.Table(columns=columns, rows=rows, notes=notes)
