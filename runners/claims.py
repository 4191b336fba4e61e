"""Claims: numbers reported elsewhere, imported as records with origin `claim` and tier `claim`.

A claim file is declarative TOML (`[[claims]]` tables, see runners/claims/seed.toml); each claim becomes one
record, `data/<suite>/<YYYY-MM>/claim-<id>.parquet`, validated like any other and never rewritten. The site shows a
claim beside measured runs, marked as not reproduced, and never ranks it.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

from runners import arguments, bounds, schema, spec, store

MAX_STEPS_PER_S = 1e9
"""Most steps per second a claim may report: a step of any model that trains does not take a nanosecond."""
MAX_STEPS = 10**12


@dataclass(frozen=True, kw_only=True, slots=True)
class Claim:
    """One reported number and everything known (and not known) about how it was made."""

    id: str
    """Stable id; the record is `claim-<id>`."""
    suite: str
    workload: str
    """The workload of ours it is compared with."""
    engine: str
    variant: str
    description: str
    accelerator: str
    accelerator_count: int
    interconnect: str
    steps: int
    """Steps the claimed run made."""
    steps_per_s: float
    source: str
    """Where the number was published."""
    quote: str
    """The claim in the source's own words."""
    unknown: tuple[str, ...] = field(default_factory=tuple)
    """What the source does not say that a reproduction would need."""

    def __post_init__(self) -> None:
        # `isalnum` alone takes Arabic-Indic digits and other scripts' letters, which no plain name holds
        if not (self.id.isascii() and self.id.replace("-", "").isalnum()) or len(self.id) > 100:
            raise spec.SpecError(
                f"claim {self.id[:80]!r}, field 'id': ASCII letters, digits and '-' only, at most 100 characters"
            )
        # each of these names a folder, a page or a chart label: refused here, by name, not by the store's traceback
        for name in ("suite", "workload", "engine", "variant"):
            value = getattr(self, name)
            problem = bounds.name_problem(name, value) if isinstance(value, str) else f"{value!r} is not a string"
            if problem:
                raise spec.SpecError(f"claim {self.id!r}, field {name!r}: {problem}")
        for name, value, high in (
            ("steps_per_s", self.steps_per_s, MAX_STEPS_PER_S),
            ("steps", self.steps, MAX_STEPS),
            ("accelerator_count", self.accelerator_count, bounds.MAX_DEVICES),
        ):
            # TOML has inf and nan, and `nan <= 0` is False: each is refused here, by name, never by a traceback
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise spec.SpecError(f"claim {self.id!r}, field {name!r}: {value!r} is not a finite number")
            if not 0 < value <= high:
                raise spec.SpecError(
                    f"claim {self.id!r}, field {name!r}: {value!r} must be above 0 and at most {high:g}"
                )


def load_claims(path: Path) -> list[Claim]:
    raw = spec.read_toml(Path(path))
    if set(raw) != {"claims"}:
        raise spec.SpecError(f"{path}: expected only [[claims]] tables, found {sorted(raw)}")
    return [spec.build(Claim, table, f"{path}: [[claims]] #{i + 1}") for i, table in enumerate(raw["claims"])]


def claim_table(claim: Claim, now: datetime) -> pa.Table:
    config = {"claim": asdict(claim), "suite": claim.suite, "workload": {"name": claim.workload}}
    run = {
        "run_id": f"claim-{claim.id}",
        "suite": claim.suite,
        "workload": claim.workload,
        "engine": claim.engine,
        "engine_version": "unknown",
        "variant": claim.variant,
        "tier": "claim",
        "status": "ok",
        "error": None,
        "origin": "claim",
        "source": claim.source,
        "started_at": now,
        "ended_at": now,
        "harness_commit": None,
        "harness_dirty": None,
        "accelerator": claim.accelerator,
        "accelerator_count": claim.accelerator_count,
        "config": json.dumps(config, sort_keys=True),
        "hardware": json.dumps(
            {"accelerator": claim.accelerator, "count": claim.accelerator_count, "interconnect": claim.interconnect},
            sort_keys=True,
        ),
        "software": json.dumps({}),
        "environment": json.dumps({}),
        "calibration": None,
    }
    rows = [
        dict(trial=0, step=None, phase="run", metric="steps_per_s", value=claim.steps_per_s, unit="steps/s"),
        dict(trial=0, step=None, phase="run", metric="steps_completed", value=float(claim.steps), unit="steps"),
    ]
    return schema.make_table(run, rows)


def import_claims(path: Path, data_dir: Path) -> list[str]:
    """Write a record for each claim not yet in data_dir; returns a line per claim saying what happened."""
    lines, now = [], datetime.now(UTC)
    for claim in load_claims(path):
        target = store.find(data_dir, claim.suite, f"claim-{claim.id}")
        if target is not None:
            lines.append(f"{claim.id}: already imported ({target}); records are never rewritten")
            continue
        try:
            written = store.write_run(data_dir, claim_table(claim, now))
        except ValueError as e:  # a record the store's checks refuse: a sentence naming the claim, not a traceback
            raise spec.SpecError(f"{path}: claim {claim.id!r}: {e}") from None
        lines.append(f"{claim.id}: wrote {written}")
    return lines


def add_cli_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=arguments.existing_file, help="a claims TOML file, e.g. runners/claims/seed.toml")
    p.add_argument("--data-dir", type=Path, default=Path("data"))


def main(args: argparse.Namespace) -> int:
    for line in import_claims(args.file, args.data_dir):
        print(line)
    return 0
