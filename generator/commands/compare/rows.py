"""One row per pair of A's and B's runs of one test: each side's figure and interval as its board row has them,
B/A with its interval (`metrics.ratio_interval`), the A/A floor and the verdict (`metrics.compare_verdict`).
"""

from __future__ import annotations

from typing import Any

import polars as pl

import generator.derive.configurations as configurations
import generator.derive.evidence as evidence
from generator.commands.compare.data import SIDE_KEYS, TEST_KEYS, Dataset
from generator.commands.compare.output import some
from generator.commands.compare.report import Report
from generator.commands.compare.sides import MANY, Side, UsageError, select
from runners import metrics


def compare(
    a_text: str, b_text: str, ds: Dataset, threshold: float = 0.05, fail_on: str = "slower", only_changed: bool = False
) -> Report:
    """One row per pair of A's and B's runs of one test: a run or a configuration pairs on suite and workload, an
    edition or a commit with an edition or a commit on suite, workload and configuration."""
    a = select(a_text, ds)
    if a.what not in MANY and b_text.startswith("edition:"):
        raise UsageError("an edition compares with another edition (or a commit): give both as edition:NAME")
    b = select(b_text, ds)
    if (a.what in MANY) != (b.what in MANY):
        raise UsageError(
            f"A is a {a.what}, B a {b.what}: an edition or a commit (every configuration in it) compares with "
            "another edition or commit (@COMMIT, edition:NAME), a run or a configuration with a run or a configuration"
        )
    return compare_sides(a, b, ds, threshold, fail_on, only_changed)


def compare_sides(
    a: Side, b: Side, ds: Dataset, threshold: float = 0.05, fail_on: str = "slower", only_changed: bool = False
) -> Report:
    """`compare` of two sides already selected (`fairfight submit` makes its own: a new run, and the committed runs
    of the configuration it reproduces)."""
    keys = [*TEST_KEYS] if a.what in MANY else ["suite", "workload"]
    cells_a = {k: g for k, g in a.runs.group_by(keys, maintain_order=True)}
    cells_b = {k: g for k, g in b.runs.group_by(keys, maintain_order=True)}
    common = sorted(cells_a.keys() & cells_b.keys(), key=str)
    if not common:
        raise UsageError(_nothing_in_common(a, b, ds))
    rows = [_row(key, cells_a[key], cells_b[key], ds, threshold) for key in common]
    only_in_a, only_in_b = (
        sorted(" · ".join(map(str, k)) for k in x.keys() - y.keys())
        for x, y in ((cells_a, cells_b), (cells_b, cells_a))
    )
    return Report(a, b, threshold, rows, only_in_a, only_in_b, fail_on=fail_on, only_changed=only_changed)


def _nothing_in_common(a: Side, b: Side, ds: Dataset) -> str:
    def tests(side: Side) -> str:
        listed = side.runs.select("suite", "workload", "kind").unique().sort("suite", "workload")
        return some(f"{s} · {w} ({k})" for s, w, k in listed.iter_rows()) or "no runs"

    if a.what in MANY:
        return f"{a.what} {a.text} and {b.what} {b.text} have no configuration in common"
    suite, workload = a.runs.row(0, named=True)["suite"], a.runs.row(0, named=True)["workload"]
    there = ds.runs.filter((pl.col("suite") == suite) & (pl.col("workload") == workload))
    others = there.group_by("settings_hash", maintain_order=True).agg(pl.col("variant").last())
    listed = some(f"{h} ({v})" for h, v in others.iter_rows())
    return (
        f"A ({a.text}) is {tests(a)}, B ({b.text}) is {tests(b)}: runs of different workloads (or kinds) cannot be "
        f"compared. Configurations on {suite} · {workload}: {listed}"
    )


def _row(key: tuple, a_runs: pl.DataFrame, b_runs: pl.DataFrame, ds: Dataset, threshold: float) -> dict[str, Any]:
    first = a_runs.row(0, named=True)
    a_ok, b_ok = (runs.filter(pl.col("excluded").is_null()) for runs in (a_runs, b_runs))
    figure, columns = first["figure"], ("value", "lo", "hi")
    sizes = pl.concat([a_ok, b_ok])["tokens_per_step"].drop_nulls().unique()
    if first["kind"] == "train" and len(sizes) > 1:  # another micro-batch or device count: steps are not alike
        figure, columns = "tokens/s", ("tokens_per_s", "tokens_per_s_lo", "tokens_per_s_hi")
    row: dict[str, Any] = {
        "suite": first["suite"],
        "workload": first["workload"],
        "kind": first["kind"],
        "settings_hash": key[2] if len(key) > 2 else None,
        "variant": first["variant"] if len(key) > 2 else None,
        "figure": figure,
        "a": _side_figure(a_runs, a_ok, columns, ds),
        "b": _side_figure(b_runs, b_ok, columns, ds),
        **dict.fromkeys(("ratio", "ratio_lo", "ratio_hi", "change", "floor", "floor_basis", "verdict"), None),
        "beyond_threshold": False,
        "threshold": threshold,
        "lost": bool(a_ok.height) and not b_ok.height,
        "flags": [],
        "notes": [],
    }
    if figure != first["figure"]:
        listed = " and ".join(f"{s:,.0f}" for s in sizes.sort())
        row["notes"].append(f"tokens/s, not steps/s: A's and B's steps are of {listed} tokens")
    for side, runs in (("A", a_ok), ("B", b_ok)):
        for run_id, note in runs.select("run_id", "note").drop_nulls().iter_rows():
            row["notes"].append(f"{side} {run_id}: not on the board: {note}")
    row["flags"] = [f"{side} {flag}" for side in ("A", "B") for flag in row[side.lower()]["flags"]]
    if row["a"]["value"] is None or row["b"]["value"] is None:
        return row
    (a, a_lo, a_hi), (b, b_lo, b_hi) = ((s["value"], s["lo"], s["hi"]) for s in (row["a"], row["b"]))
    if min(a, b) <= 0:
        row["notes"].append("a figure at or below zero: no ratio")
        return row
    row |= {"ratio": b / a, "change": b / a - 1}
    if a_lo is None or b_lo is None:  # unreplicated, or one measurement: nothing says where another run lands
        identical = row["a"]["runs"] == row["b"]["runs"]  # an edition beside another that kept the same runs
        row["verdict"] = "same" if identical else "undecided"
        row["notes"].append("a side has no interval (its basis says why): the ratio's interval is unknown"
                            + ("; the same runs on both sides" if identical else ""))  # fmt: skip
        return row
    ratio, lo, hi = metrics.ratio_interval(a, a_lo, a_hi, b, b_lo, b_hi)
    floor, basis = evidence.pair_floor(a_ok, b_ok, ds.run_floors, ds.kind_floors)
    verdict = metrics.compare_verdict(a, b, lo, hi, floor)
    row |= {"ratio": ratio, "ratio_lo": lo, "ratio_hi": hi, "change": ratio - 1, "floor": floor}
    row |= {"floor_basis": basis, "verdict": verdict}
    row["beyond_threshold"] = verdict != "same" and abs(ratio - 1) > threshold
    return row


def _side_figure(
    runs: pl.DataFrame, counted: pl.DataFrame, columns: tuple[str, str, str], ds: Dataset
) -> dict[str, Any]:
    """A side's figure and interval as its board row has them (`evidence.interval`: the median of its runs'
    figures, widened by its engine's pooled between-run spread of its kind on its hardware; none where it is
    unreplicated), and its flags: runs that measured no steady state (`metrics.wider_than_figure`: their own span is
    left out), ran beside other jobs on a shared host, were recorded on a busy host (`metrics.busy_host`) or beside
    other processes on its GPUs (the bench's `hardware.host_load`)."""
    left_out = [{"run_id": r, "reason": why} for r, why in runs.filter(pl.col("excluded").is_not_null())
                .select("run_id", "excluded").iter_rows()]  # fmt: skip
    out = {"value": None, "lo": None, "hi": None, "runs": counted["run_id"].to_list(), "left_out": left_out,
           "flags": []}  # fmt: skip
    if not counted.height:
        why = "; ".join(f"{x['run_id']}: {x['reason']}" for x in left_out)
        return out | {"basis": f"no run counts ({why})" if len(left_out) > 1 else left_out[0]["reason"]}
    if counted.select(*SIDE_KEYS).n_unique() != 1:  # an edition's cell is one configuration, a run's one too
        raise AssertionError(f"one side of a row pools {counted.select(*SIDE_KEYS).n_unique()} configurations")
    first = counted.row(0, named=True)
    found, spread = evidence.of_runs(counted, ds.spreads, columns)
    own = list(counted.select(*columns).iter_rows())
    flags = [f"{r}: {evidence.FLAGGED}" for r, (x, low, high) in zip(counted["run_id"], own, strict=True)
             if metrics.wider_than_figure(x, low, high)]  # fmt: skip
    flags += [f"{r}: ran beside other jobs on a shared host" for r in counted.filter(pl.col("shared_host"))["run_id"]]
    flags += [
        f"{r}: recorded on a busy host (other processes took {others:.2g} of its {cores} cores while it ran)"
        for r, others, cores in counted.filter(pl.col("busy_host"))
        .select("run_id", "others_cpu_cores", "cpu_cores")
        .iter_rows()
    ]
    flags += [
        f"{r}: {n} other process(es) on its host's GPUs"
        for r, n in counted.filter(pl.col("gpu_processes") > 0).select("run_id", "gpu_processes").iter_rows()
    ]
    n = counted.height
    hardware = f"{first['accelerator_count']} × {first['accelerator']}"
    if found.unreplicated:
        basis = configurations.unreplicated(first["engine"], hardware, (None, None))
    elif found.lo is None:
        basis = f"{'one run' if n == 1 else f'median of {n} runs'}, one measurement: no interval"
    else:
        basis = configurations.basis(n, spread, f"{hardware} by {first['engine']}" if spread else hardware)
    return out | {"value": found.value, "lo": found.lo, "hi": found.hi, "basis": basis, "flags": flags}
