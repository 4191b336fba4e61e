"""How `compare` prints: the text table with its notes and summary (`render`), `--list` (`commit_list`), and the
comparison as one table for `--format csv|md` (`runners/formats.py` writes it), from the report's own JSON
(`Report.to_json`: the rows, each with whether it fails, and the summary), so that every format says the same.

CSV holds each figure in full (a program reads it); Markdown holds what the text table shows (a person reads it in a
pull-request comment), with the sides and the summary under it.
"""

from __future__ import annotations

import math
from typing import Any

import generator.derive.commit_pairs as commit_pairs
from generator.commands.compare.data import Dataset
from generator.commands.compare.report import Report, fails
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


def some(items: Any, n: int = 6) -> str:
    """The first `n` items, and how many more."""
    items = list(items)
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")


def render(report: Report) -> str:
    """The comparison as a table, its notes and a one-line summary."""
    lines = [f"A  {report.a.label}", f"B  {report.b.label}"]
    lines += [f"   {s}: {p}" for s, side in (("A", report.a), ("B", report.b)) for p in side.problems]
    header = ("test", "figure", "A", "B", "B/A [interval]", "change", "A/A floor", "verdict")
    table = [header]
    notes = []
    for row in report.shown:
        test = _test(row)
        ratio_cell, change_cell, floor = ratio(row), change(row), "—"
        if row["verdict"] is None:
            verdict = "lost: B has no figure" if row["lost"] else "no figure"
        else:
            floor = "—" if row["floor"] is None else f"{row['floor']:.2%}"
            verdict = row["verdict"] + (f", beyond {report.threshold * 100:g}%" if row["beyond_threshold"] else "")
        if fails(row, report.fail_on) and not row["lost"] and not row["beyond_threshold"]:
            verdict += f", flagged and beyond {report.threshold * 100:g}%: fails"
        table.append(
            (
                test,
                row["figure"],
                cell(row["a"]),
                cell(row["b"]),
                ratio_cell,
                change_cell,
                floor,
                verdict,
            )
        )
        for side in ("a", "b"):
            for out in row[side]["left_out"]:
                notes.append(f"{test}: {side.upper()} {out['run_id']} does not count: {out['reason']}")
        notes += [f"{test}: {n}" for n in row["notes"]]
        notes += [f"{test}: flagged: {f}" for f in row["flags"]]
        if row["floor_basis"]:
            notes.append(f"{test}: A/A floor: {row['floor_basis']}")
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines.append("")
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table]
    for name, only in (("A", report.only_in_a), ("B", report.only_in_b)):
        if only:
            lines.append(f"only in {name} (not compared): {some(only)}")
    if notes:
        lines += ["", *notes]
    return "\n".join([*lines, "", report.summary])


def commit_list(ds: Dataset, fmt: str) -> str:
    """`compare --list`: the harness commits the data holds, and the pairs of them that share configurations."""
    groups = commit_pairs.commits(ds.runs)
    pairs = commit_pairs.shared(ds.runs)
    listed = [{"commit": g[0], "label": commit_pairs.label(g, ds.runs)} for g in groups]
    shared = [{"a": a[0], "b": b[0], "configurations": n} for a, b, n in pairs]
    data = {"commits": listed, "pairs": shared}

    def text() -> str:
        lines = [f"{len(groups)} harness commits with runs in {ds.data_dir}/ (by their latest run, oldest first):"]
        lines += [f"  {c['label']}" for c in listed]
        lines += ["", f"{len(pairs)} of {len(groups) * (len(groups) - 1) // 2} pairs share configurations"
                  " (`fairfight compare @A @B` has a row for each shared one):"]  # fmt: skip
        lines += [f"  @{a[0][:12]} @{b[0][:12]}: {n} configuration{'s' * (n > 1)}" for a, b, n in pairs]
        return "\n".join(lines)

    table = formats.Table(columns=("a", "b", "configurations"),
                          rows=[(p["a"], p["b"], p["configurations"]) for p in shared])  # fmt: skip
    return formats.render(fmt, text=text, data=data, table=table)
