"""The comparison's rows together: which fail (the exit status), which `--only-changed` keeps, the one-line summary
and the JSON every format is written from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from generator.commands.compare.sides import Side

FAIL_ON = ("slower", "faster", "both")


def fails(row: dict[str, Any], fail_on: str = "slower") -> bool:
    """A row that fails the comparison (exit 1): B lost A's figure (as asv counts a benchmark that started failing),
    or its verdict is `fail_on` (or either, for "both") and B/A is further from 1 than the threshold, or a side is
    flagged (`flags`: a run that measured no steady state, or ran beside other jobs) and B/A itself is beyond the
    threshold that way: a flagged run's width cannot hide a regression."""
    if row["lost"]:
        return fail_on != "faster"
    if row["beyond_threshold"]:
        return fail_on in ("both", row["verdict"])
    return (
        bool(row["flags"])
        and row["change"] is not None
        and abs(row["change"]) > row["threshold"]
        and (fail_on in ("both", "slower" if row["change"] < 0 else "faster"))
    )


def changed(row: dict[str, Any]) -> bool:
    """What `--only-changed` keeps (asv's `--only-changed`: the rows it marks): faster or slower beyond the
    threshold, or a figure on one side only."""
    return bool(row["beyond_threshold"]) or (row["a"]["value"] is None) != (row["b"]["value"] is None)


@dataclass(slots=True)
class Report:
    a: Side
    b: Side
    threshold: float
    rows: list[dict[str, Any]]
    only_in_a: list[str] = field(default_factory=list)
    only_in_b: list[str] = field(default_factory=list)
    fail_on: str = "slower"
    only_changed: bool = False

    @property
    def exit_status(self) -> int:
        return 1 if any(fails(r, self.fail_on) for r in self.rows) else 0

    @property
    def shown(self) -> list[dict[str, Any]]:
        """The rows printed: all of them, or with `only_changed` those that changed (the summary counts all)."""
        return [r for r in self.rows if changed(r)] if self.only_changed else self.rows

    @property
    def summary(self) -> str:
        counts = {v: sum(r["verdict"] == v for r in self.rows) for v in ("faster", "slower", "same", "undecided")}
        text = f"B against A: {counts['faster']} faster, {counts['slower']} slower, {counts['same']} same"
        text += f", {counts['undecided']} undecided" if counts["undecided"] else ""
        flagged = sum(bool(r["flags"]) for r in self.rows)
        text += f", {flagged} flagged" if flagged else ""
        none = sum(r["verdict"] is None for r in self.rows)
        text += f", {none} without a figure" if none else ""
        beyond = sum(r["beyond_threshold"] for r in self.rows)
        lost = sum(r["lost"] for r in self.rows)
        text += f"; {beyond} beyond ±{self.threshold * 100:g}%" + (f", {lost} where B lost A's figure" if lost else "")
        hidden = len(self.rows) - len(self.shown)
        text += f"; {hidden} unchanged not shown" if hidden else ""
        failing = {"slower": "slowdowns fail", "faster": "speed-ups fail", "both": "speed-ups and slowdowns fail"}
        return f"{text} (exit {self.exit_status}: {failing[self.fail_on]})"

    def to_json(self) -> dict[str, Any]:
        sides = {
            k: {"selector": s.text, "what": s.what, "label": s.label, "runs": s.runs["run_id"].to_list(),
                "problems": list(s.problems)}
            for k, s in (("a", self.a), ("b", self.b))
        }  # fmt: skip
        rows = [r | {"fails": fails(r, self.fail_on)} for r in self.shown]
        return {**sides, "threshold": self.threshold, "fail_on": self.fail_on, "rows": rows,
                "only_in_a": self.only_in_a, "only_in_b": self.only_in_b, "rows_not_shown": len(self.rows) - len(rows),
                "summary": self.summary, "exit_status": self.exit_status}  # fmt: skip
