"""The result-record schema: one Parquet file per run, tidy rows, run-level fields stored once per file.

This module is the single definition of the format. Bump `SCHEMA_VERSION` when the format changes and add an
upgrade function to `MIGRATIONS` (asv's `update_to_N` pattern): old files are never rewritten, the loader
upgrades them in memory.

A record, in memory, is one table of `SCHEMA`: the measurement rows (trial, step, phase, metric, value, unit) beside
the run-level columns (`RUN_COLUMNS`), constant down the table. How a file stores it is its layout:

- Schema 1 and 2 (every file committed before 2026-12-02): the record's table as it is, the run-level columns
  repeated on every row. Parquet's dictionary encoding keeps that small on disk, but a plain reader expands it: the
  93,154-byte `data/h100/20261130T165119Z-llama-14b-serve-c32-i512-o128-vllm-tp1-vllm-bench-d6c601.parquet` (4,225
  rows) is 722,149,217 bytes of Arrow memory to `pyarrow.parquet.read_table`, its 170 KB config JSON (the tool's own
  output, imported) copied onto every row.
- Schema 3 (`runners/layout.py`): the file's columns are the rows alone (`layout.FILE_COLUMNS`: run_id, trial,
  step, phase, metric, value, unit) and the run-level fields are stored once, as one JSON object under the Parquet
  key-value metadata key `fairfight.run` (`layout.RUN_KEY`), the JSON columns (config, hardware, ...) as their text.
  That file's record written so reads as 495,976 bytes (1/1,456); the largest committed file (67,394 rows) as
  7.1 MB instead of 242.9 MB; a cpu-smoke training run's as 12.5 KB instead of 429 KB (tests/runners/test_layout.py
  holds a real run's to 1/20 of its old layout's). On disk the 501 committed files would take 11.1 MB instead of
  19.0 MB; only the imported vllm-bench records, whose config is mostly that 170 KB of text, grow (93 KB to 205 KB:
  Parquet does not compress key-value metadata). `run_id` stays on the rows, so files concatenated by a plain
  reader (`pl.read_parquet("data/**/*.parquet")`) still tell their runs apart.

Why key-value metadata rather than a one-row layout (every run-level field a column of one row, the measurements
list columns of that row): the rows stay a flat tidy table that any Parquet reader (pyarrow, polars, DuckDB,
pandas) reads as it is, with no list columns to explode; the run-level fields are read from the file's footer alone
(`pq.read_metadata`), without decompressing a page, which is what a loader bounded by what a question needs wants
of 50,000 files; and the Parquet file's own schema says nothing that the record's schema does not. What that costs:
the metadata is text, not typed columns, so `layout.record` checks every field's JSON type as strictly as the
columns' types are checked and names the field at fault (`fairfight.run.<field>`); and it is not compressed.

`layout.record(table, metadata)` is the reading side: any version's file, as read, back to the record's table
(schema 3's run-level values expanded as dictionary-encoded columns: one value and an index per row, so checking
them costs what it did). A file in schema 3's layout that says it is another version, or a column-layout file that
says it is schema 3 or later, is refused: each version has one layout.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from runners import bounds, engines

SCHEMA_VERSION = 3
LAYOUT_VERSION = 3
"""The first version whose files store the run-level fields once, in the file's metadata (`to_file`)."""

STATUSES = ("ok", "failed", "oom", "timeout", "unsupported")
ORIGINS = ("measured", "imported", "claim", "retraction")
TIERS = ("stock", "tuned", "claim")
MAX_ABS_VALUE = 1e18
"""Largest magnitude of a row's value: no measurement here comes near it (a 70B model's bytes are 1.4e11), and a
value of 1e308 overflows the arithmetic and the text of every page that shows it (`inf` axis labels, 300-digit
headings, chart specs that are not JSON)."""
PHASES = ("warmup", "steady", "run")
"""`warmup` and `steady` steps; `run` for run-level values (startup time, peak memory, steps completed)."""

UTC_TS = pa.timestamp("us", tz="UTC")
CLOCK_SKEW = timedelta(hours=1)
"""How far a run's start may lie past this machine's clock (hosts' clocks differ a little)."""
IN_THE_FUTURE = "is in the future"
"""The one verdict of `check_run` that time undoes: a table that kept it (compare's) holds only until then."""


def changes_with_time(problem: str) -> bool:
    """Whether a problem `check_run` found may be gone later with the file unchanged (a start in the future)."""
    return problem.endswith(IN_THE_FUTURE)


# name, type, nullable, what it holds
_COLUMNS: list[tuple[str, pa.DataType, bool, str]] = [
    ("schema_version", pa.int32(), False, "version of this format the file was written with"),
    ("run_id", pa.string(), False, "unique id of the run: UTC start, variant and a random suffix"),
    ("suite", pa.string(), False, "suite name, e.g. cpu-smoke"),
    ("workload", pa.string(), False, "workload name within the suite"),
    ("engine", pa.string(), False, "runner engine, e.g. torch"),
    ("engine_version", pa.string(), False, "engine package version"),
    ("variant", pa.string(), False, "variant name (engine + settings)"),
    ("tier", pa.string(), False, "stock | tuned | claim"),
    ("status", pa.string(), False, "ok | failed | oom | timeout | unsupported"),
    ("error", pa.string(), True, "error text when status is not ok"),
    ("origin", pa.string(), False, "measured | imported | claim | retraction (points at a run that no longer counts)"),
    ("source", pa.string(), True, "where an imported or claimed number comes from"),
    ("started_at", UTC_TS, False, "UTC start of the run"),
    ("ended_at", UTC_TS, False, "UTC end of the run"),
    ("harness_commit", pa.string(), True, "git commit of Fair Fight that ran it"),
    ("harness_dirty", pa.bool_(), True, "whether that checkout had uncommitted changes outside data/"),
    ("accelerator", pa.string(), False, "device model that ran it (CPU model for CPU runs)"),
    ("accelerator_count", pa.int32(), False, "devices used"),
    ("config", pa.string(), False, "JSON: suite, workload, model and variant, every setting"),
    (
        "hardware",
        pa.string(),
        False,
        "JSON: accelerators, driver, CUDA, interconnect, CPU, cores, RAM; on NVIDIA GPUs each GPU's clocks, power "
        "limits, ECC and persistence mode (gpus)",
    ),
    (
        "software",
        pa.string(),
        False,
        "JSON: Python, platform, the engine's packages' versions, every installed distribution (packages)",
    ),
    ("environment", pa.string(), False, "JSON: allowlisted environment variables (never secrets)"),
    ("calibration", pa.string(), True, "JSON: peaks measured in the same job (matmul, copy, all-reduce)"),
    ("trial", pa.int32(), False, "trial index within the run, from 0"),
    ("step", pa.int32(), True, "optimizer step, from 0; null for run-level values"),
    ("phase", pa.string(), False, "warmup | steady | run"),
    ("metric", pa.string(), False, "metric name, unit in the name where it has one (step_time_s)"),
    ("value", pa.float64(), False, "the measurement"),
    ("unit", pa.string(), False, "unit of value"),
]

SCHEMA = pa.schema([pa.field(name, dtype, nullable=nullable) for name, dtype, nullable, _ in _COLUMNS])
COLUMN_DOCS = {name: doc for name, _, _, doc in _COLUMNS}
RUN_COLUMNS = [name for name, *_ in _COLUMNS if name not in ("trial", "step", "phase", "metric", "value", "unit")]


@dataclass(frozen=True, slots=True)
class Metric:
    """What a metric's rows must hold: its unit, the lowest possible value, and whether it counts things."""

    unit: str
    low: float = 0.0
    strict: bool = False
    """True: the value must be above `low` (a rate or a step's time cannot be zero); False: at least `low`."""
    whole: bool = False


# Metric names the runners and importers use, with their fixed meanings. A record may carry others (they get the
# generic checks: finite, and no negative `*_s` time); these are checked for their unit and range.
METRIC_RULES: dict[str, Metric] = {
    "step_time_s": Metric("s", strict=True),
    "loss": Metric("nats"),  # cross-entropy: never negative
    "steps_completed": Metric("steps", whole=True),
    "startup_s": Metric("s"),
    "setup_s": Metric("s"),
    "warmup_s": Metric("s"),
    "peak_mem_gib": Metric("GiB"),
    "peak_mem_steady_gib": Metric("GiB"),  # device memory's peak over the steady steps alone (no compile transient)
    "peak_rss_gib": Metric("GiB"),
    # the GPUs' own energy over one timed window (runners/energy.py): a training segment ending at `step`, or one
    # repetition of an inference test; summed over the GPUs the run used
    "energy_j": Metric("J"),
    "idle_power_w": Metric("W"),  # the same GPUs at rest, in the same process, before the run's work
    "steps_per_s": Metric("steps/s", strict=True),  # claims and imports, which carry no per-step times
    "retracted_runs": Metric("runs", low=1, whole=True),  # a retraction record's one row (runners/retract.py)
    "test_time_s": Metric("s", strict=True),  # one repetition of an inference test (runners/engines/llamacpp/runner.py)
    "tokens_per_s": Metric("tokens/s", strict=True),
    "llama_time_s": Metric("s"),  # llama.cpp's own counters for the same repetition
    "llama_tokens": Metric("tokens", whole=True),
    # MLX: the same weights timed along mlx-lm's own generate path, as mlx_lm.benchmark times them (the cross-check)
    "tool_path_tokens_per_s": Metric("tokens/s", strict=True),
    "tests_completed": Metric("tests", whole=True),
    # vLLM (runners/engines/vllm/runner.py): offline repetitions, and a served point's raw samples per request
    "output_tokens_per_s": Metric("tokens/s", strict=True),
    "total_tokens_per_s": Metric("tokens/s", strict=True),
    "request_throughput": Metric("requests/s", strict=True),
    "duration_s": Metric("s", strict=True),
    "request_ok": Metric("bool", whole=True),
    "ttft_s": Metric("s", strict=True),
    "e2e_s": Metric("s", strict=True),
    "itl_s": Metric("s"),
    "prompt_tokens": Metric("tokens", whole=True),
    # recorded for an answered request alone, which received at least its first token (`_answered_without_tokens`)
    "output_tokens": Metric("tokens", low=1, whole=True),
}
METRICS = {name: rule.unit for name, rule in METRIC_RULES.items()}

# From the engine registry (runners/engines/__init__.py): the engines Fair Fight runs (origin `measured`), their own
# benchmark tools, whose output it imports (origin `imported`), and which tool is whose. Claims and retractions name
# any engine.
RUNNER_ENGINES = engines.RUNNER_ENGINES
IMPORTED_ENGINES = engines.IMPORTED_ENGINES
OWN_TOOLS = engines.OWN_TOOLS
TOOL_TIMES_MORE = tuple(e.name for e in engines.ENGINES.values() if e.tool_times_more)
ENGINE_ABOUT = {e.name: {"about": e.about, "tool": e.tool, "kinds": e.kinds} for e in engines.ENGINES.values()}
"""What each engine is, its own tool and what it runs, for the site's engines page."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a result file: where (row, field) and what."""

    row: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = []
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.field is not None:
            where.append(f"field {self.field!r}")
        return f"{', '.join(where)}: {self.message}" if where else self.message


def _set_version(table: pa.Table, version: int) -> pa.Table:
    at = table.column_names.index("schema_version")
    return table.set_column(at, table.schema.field(at), pa.repeat(pa.scalar(version, pa.int32()), table.num_rows))


MLX_TF32_NOTE = (
    "schema 2: MLX ran float32 matmuls in TF32 here (MLX_ENABLE_TF32 unset: its default on an NVIDIA GPU), which "
    "harnesses before schema 2 did not record"
)
"""At most 200 characters, as every string of a list in a record (runners/bounds.py)."""
MLX_TF32_SETTING_NOTE = (
    "schema 2: the tf32 setting MLX applied by default (MLX_ENABLE_TF32 unset), which harnesses before schema 2 did "
    "not record; this run's matmuls were not float32, so its precision stands"
)


def update_to_2(table: pa.Table) -> pa.Table:
    """Schema 1 → 2. MLX training runs on an NVIDIA GPU recorded before the harness wrote MLX's TF32 default down:
    the variant said float32 while MLX, with MLX_ENABLE_TF32 unset (as the record's own environment shows), ran its
    float32 matmuls in TF32 (seen in data/: an H200 run at 271% of the fp32 datasheet peak, 37% of TF32's). Such a
    record gets the setting that applied (`tf32 = true`), its precision (`tf32` where it said `fp32`, in its config
    and in its calibration, whose matmul ran in the same process with the same default) and a note in
    `config.migrated` (which a file itself may never carry: `upgrade` refuses one that does); the file is never
    rewritten. Apple GPUs before the M5 have no TF32, so only NVIDIA accelerators qualify. Every other record is
    only relabelled version 2."""
    if {"config", "accelerator"} <= set(table.column_names) and table.num_rows:
        import json

        raw = table.column("config")[0].as_py()
        if isinstance(raw, str) and "Device(gpu" not in raw and "\\u" not in raw:
            return _set_version(table, 2)  # its text cannot name a GPU device, not even escaped: no JSON parsed
        env = table.column("environment")[0].as_py() if "environment" in table.column_names else None
        accelerator = str(table.column("accelerator")[0].as_py() or "")
        try:
            config, environment = json.loads(raw), json.loads(env or "{}")
        except (TypeError, ValueError):
            config, environment = None, None  # not JSON: the record's checks reject it, not the migration
        variant = config.get("variant") if isinstance(config, dict) else None
        settings = variant.get("settings") if isinstance(variant, dict) else None
        if (
            isinstance(variant, dict)  # as settings implies; said for the type checker
            and isinstance(settings, dict)
            and variant.get("engine") == "mlx"
            and str(config.get("mlx_device", "")).startswith("Device(gpu")
            and accelerator.startswith("NVIDIA ")
            and "tf32" not in settings
            and isinstance(environment, dict)
            and "MLX_ENABLE_TF32" not in environment
        ):
            settings["tf32"] = True
            note = MLX_TF32_SETTING_NOTE
            if config.get("compute_precision") == "fp32":
                config["compute_precision"] = "tf32"
                note = MLX_TF32_NOTE
            config["migrated"] = [note]
            table = _set_json(table, "config", config)
            # the same job's calibration matmul ran in the same MLX process, with the same default
            raw_calibration = table.column("calibration")[0].as_py() if "calibration" in table.column_names else None
            try:
                calibration = json.loads(raw_calibration) if raw_calibration else None
            except ValueError:
                calibration = None
            if isinstance(calibration, dict) and calibration.get("matmul_precision") == "fp32":
                calibration["matmul_precision"] = "tf32"
                table = _set_json(table, "calibration", calibration)
    return _set_version(table, 2)


def _set_json(table: pa.Table, name: str, value: object) -> pa.Table:
    import json

    at = table.column_names.index(name)
    field = table.schema.field(at)
    return table.set_column(at, field, pa.array([json.dumps(value)] * table.num_rows, field.type))


def _claims_a_migration(table: pa.Table) -> bool:
    """Whether a file as stored carries `config.migrated`, which only the loader's migrations may set."""
    if "config" not in table.column_names or not table.num_rows:
        return False
    raw = table.column("config")[0].as_py()
    if not isinstance(raw, str) or '"migrated"' not in raw:
        return False
    import json

    try:
        config = json.loads(raw)
    except ValueError:
        return False  # not JSON: the record's checks reject it
    return isinstance(config, dict) and "migrated" in config


def update_to_3(table: pa.Table) -> pa.Table:
    """Schema 2 → 3 changed the file's layout, not a field (the run-level fields stored once, in the file's metadata:
    runners/layout.py): a schema-2 record, read through its column layout, is only relabelled version 3."""
    return _set_version(table, 3)


# version -> function upgrading a table written by that version to version + 1
MIGRATIONS: dict[int, Callable[[pa.Table], pa.Table]] = {1: update_to_2, 2: update_to_3}


def upgrade(table: pa.Table) -> pa.Table:
    """Bring a table written by any earlier version up to `SCHEMA_VERSION`."""
    if "schema_version" not in table.column_names or table.num_rows == 0:
        return table
    if _claims_a_migration(table):
        raise ValueError(
            "row 0, field 'config.migrated': set only by the loader's migrations (runners/schema.py), never written "
            "in a file"
        )
    version = int(table.column("schema_version")[0].as_py())
    if version > SCHEMA_VERSION:
        raise ValueError(
            f"written by schema version {version}, newer than this Fair Fight ({SCHEMA_VERSION}): update your checkout"
        )
    while version < SCHEMA_VERSION:
        if version not in MIGRATIONS:
            raise ValueError(f"no migration from schema version {version}")
        table = MIGRATIONS[version](table)
        version += 1
    return table


def _distinct_count(col: pa.ChunkedArray) -> int:
    """Distinct values (null included) of a column, plain or dictionary-encoded, without decoding every row."""
    if not pa.types.is_dictionary(col.type):
        return pc.count_distinct(col, mode="all").as_py()
    chunks = [c for c in col.chunks if len(c)]
    if len(chunks) == 1 and not col.null_count and len(chunks[0].dictionary) == 1:
        return 1  # the usual case, one value per file: the chunk's dictionary holds just it
    if chunks and not col.null_count and all(len(c.dictionary) == 1 for c in chunks):
        return len({c.dictionary[0].as_py() for c in chunks})
    seen: set[object] = set()
    for chunk in col.chunks:
        used = pc.unique(chunk.indices)
        seen.update(chunk.dictionary.take(used.drop_null()).to_pylist())
        if used.null_count:
            seen.add(None)
    return len(seen)


def schema_type(name: str) -> pa.DataType:
    return SCHEMA.field(name).type


_TYPES_CHECKED: set[pa.Schema] = set()
"""Table schemas (column names and types, dictionary-encoded or not) that passed the type checks: loading
thousands of files written alike checks their types once."""
_REQUIRED = [name for name, _, nullable, _ in _COLUMNS if not nullable]
_PHASE_SET = pa.array(PHASES)


def _type_problems(table: pa.Table) -> list[Problem]:
    if table.schema in _TYPES_CHECKED:
        return []
    problems: list[Problem] = []
    names = set(table.column_names)
    for name, dtype, _, _ in _COLUMNS:
        if name not in names:
            problems.append(Problem(None, name, "missing column"))
            continue
        col_type = table.schema.field(name).type
        dictionary_of_it = pa.types.is_dictionary(col_type) and col_type.value_type.equals(dtype)
        if not (col_type.equals(dtype) or dictionary_of_it):
            problems.append(Problem(None, name, f"type {col_type}, expected {dtype}"))
    for extra in sorted(names - {c[0] for c in _COLUMNS}):
        problems.append(Problem(None, extra, "unknown column"))
    if not problems and len(_TYPES_CHECKED) < 64:
        _TYPES_CHECKED.add(table.schema)
    return problems


def check_table(table: pa.Table) -> list[Problem]:
    """Structural checks of a (possibly upgraded) table: columns, types, nulls, enumerations, one run per file."""
    return check_run(table)[1]


def check_run(table: pa.Table) -> tuple[dict[str, Any] | None, list[Problem]]:
    """`check_table`'s checks, also returning row 0 as a dict (the run-level values) when the table passes."""
    problems = _type_problems(table)
    if problems:
        return None, problems
    for name in _REQUIRED:
        col = table.column(name)
        if col.null_count:
            first_null = next(i for i, v in enumerate(col.to_pylist()) if v is None)
            problems.append(Problem(first_null, name, "null in a required column"))
    if problems:
        return None, problems
    if table.num_rows == 0:
        return None, [Problem(None, None, "no rows: a run file holds at least its steps_completed row")]
    for key in RUN_COLUMNS:  # one run per file: run-level columns are constant
        col = table.column(key)
        if _distinct_count(col) > 1:
            col = col.cast(schema_type(key))
            first_value = col[0]
            row = pc.index(pc.not_equal(col, first_value).fill_null(True), True).as_py()
            return None, [
                Problem(
                    row,
                    key,
                    f"differs from row 0 ({col[row].as_py()!r} != {first_value.as_py()!r}): one run per file",
                )
            ]
    first = table.slice(0, 1).to_pylist()[0]
    for key, allowed in (("status", STATUSES), ("origin", ORIGINS), ("tier", TIERS)):
        if first[key] not in allowed:
            problems.append(Problem(0, key, f"{first[key]!r} is not one of {list(allowed)}"))
    for key in bounds.NAMES:
        message = bounds.name_problem(key, first[key])
        if message:
            problems.append(Problem(0, key, message))
    for key in bounds.TEXT_LIMITS:
        message = bounds.text_problem(key, first[key])
        if message:
            problems.append(Problem(0, key, message))
    problems += [Problem(0, key, message) for key, message in bounds.json_problems(first)]
    latest = datetime.now(UTC) + CLOCK_SKEW
    if first["started_at"] > latest:
        problems.append(Problem(0, "started_at", f"{first['started_at']:%Y-%m-%d %H:%M} UTC {IN_THE_FUTURE}"))
    engines = {"measured": RUNNER_ENGINES, "imported": IMPORTED_ENGINES}.get(first["origin"])
    if engines is not None and first["engine"] not in engines:
        problems.append(
            Problem(0, "engine", f"{first['engine']!r}: {first['origin']} records come from {list(engines)}")
        )
    owner = variant_engines().get(first["variant"].split("[", 1)[0])
    if owner is not None and first["origin"] in ("measured", "imported"):
        # a variant of ours is one engine's: another engine's rows under its name would pool with its runs
        wanted = owner if first["origin"] == "measured" else OWN_TOOLS.get(owner)
        if first["engine"] != wanted:
            problems.append(
                Problem(
                    0,
                    "engine",
                    f"{first['engine']!r}, but variant {first['variant'].split('[', 1)[0]!r} is {owner}'s "
                    f"(runners/suites/variants.toml; an imported record of it comes from {wanted or 'no tool'}): "
                    "an engine's records never carry another engine's variant",
                )
            )
    if first["suite"] not in known_suites():
        problems.append(
            Problem(
                0,
                "suite",
                f"{first['suite']!r} has no suite file in runners/suites (known: {sorted(known_suites())}); "
                "add the suite's file there to publish its records",
            )
        )
    if not 1 <= first["accelerator_count"] <= bounds.MAX_DEVICES:
        problems.append(
            Problem(0, "accelerator_count", f"{first['accelerator_count']} devices: 1 to {bounds.MAX_DEVICES:,}")
        )
    if first["status"] != "ok" and not first["error"]:
        problems.append(Problem(0, "error", f"status {first['status']!r} needs an error text"))
    if first["ended_at"] < first["started_at"]:
        problems.append(Problem(0, "ended_at", "run ends before it starts"))
    if _rows_may_be_bad(table):
        problems += _row_problems(table)
    problems += _answered_without_tokens(table)
    problems += _energy_row_problems(table)
    return (None if problems else first), problems


def _rows_may_be_bad(table: pa.Table) -> bool:
    """Whether any row can fail a row check, judged from one aggregation per (metric, unit, phase): the usual
    good file costs one group-by instead of a dozen passes over its rows. Never False where `_row_problems`
    finds something (a non-finite value makes its group's sum non-finite); True sends the file there."""
    groups = (
        table.select(["metric", "unit", "phase", "value", "trial", "step"])
        .group_by(["metric", "unit", "phase"], use_threads=False)
        .aggregate(
            [("value", "min"), ("value", "max"), ("value", "sum"), ("trial", "min"), ("step", "min"), ("value", "list")]
        )
    )
    values = groups.column("value_list")
    for i, (metric, unit, phase, low, high, total, trial, step) in enumerate(
        zip(
            *(groups.column(c).to_pylist() for c in ("metric", "unit", "phase", "value_min", "value_max", "value_sum")),
            groups.column("trial_min").to_pylist(),
            groups.column("step_min").to_pylist(),
            strict=True,
        )
    ):
        if phase not in PHASES or not math.isfinite(total) or trial < 0 or (step is not None and step < 0):
            return True
        if max(abs(low), abs(high)) > MAX_ABS_VALUE:
            return True
        if not bounds.METRIC_NAME.fullmatch(metric) or not bounds.UNIT_NAME.fullmatch(unit):
            return True
        if metric.endswith("_s") and low < 0:
            return True
        rule = METRIC_RULES.get(metric)
        if rule is None:
            continue
        if unit != rule.unit or (low <= rule.low if rule.strict else low < rule.low):
            return True
        if rule.whole and any(v != math.floor(v) for v in values[i].values.to_pylist()):
            return True
    return False


def _row_problems(table: pa.Table) -> list[Problem]:
    """The rows that break a row check, up to five per check, each with its row and field."""
    phase, value, metric = table.column("phase"), table.column("value"), table.column("metric")
    checks = [
        (
            pc.invert(pc.is_in(phase, value_set=_PHASE_SET)),
            "phase",
            lambda i: f"{phase[i].as_py()!r} is not one of {list(PHASES)}",
        ),
        (
            pc.invert(pc.is_finite(value)),
            "value",
            lambda i: f"{value[i].as_py()} is not finite (metric {metric[i].as_py()!r})",
        ),
        (
            pc.and_(pc.is_finite(value), pc.greater(pc.abs(value), MAX_ABS_VALUE)),
            "value",
            lambda i: (
                f"{value[i].as_py():.3g} is beyond ±{MAX_ABS_VALUE:.0e} (metric {metric[i].as_py()!r}): not a "
                "measurement"
            ),
        ),
        (
            pc.and_(pc.ends_with(metric, "_s"), pc.less(value, 0)),
            "value",
            # a name ending in _s is a time (step_time_s) or a rate (tokens_per_s): neither is ever below 0
            lambda i: (
                f"{metric[i].as_py()} = {value[i].as_py()}: a {_time_or_rate(metric[i].as_py())} is never negative"
            ),
        ),
        (
            pc.invert(pc.match_substring_regex(metric, "^" + bounds.METRIC_NAME.pattern + "$")),
            "metric",
            lambda i: f"{metric[i].as_py()[:80]!r} is not a plain metric name (letters, digits, _ . : / ( ) % -)",
        ),
        (
            pc.invert(pc.match_substring_regex(table.column("unit"), "^" + bounds.UNIT_NAME.pattern + "$")),
            "unit",
            lambda i: f"{table.column('unit')[i].as_py()[:80]!r} is not a plain unit (at most 32 characters)",
        ),
        *_metric_checks(table),
        (pc.less(table.column("trial"), 0), "trial", lambda i: "negative trial index"),
        (pc.less(table.column("step"), 0).fill_null(False), "step", lambda i: "negative step"),
    ]
    problems = []
    for mask, name, message in checks:
        bad = pc.indices_nonzero(mask.fill_null(True) if hasattr(mask, "fill_null") else mask)
        for i in bad.to_pylist()[:5]:
            problems.append(Problem(i, name, message(i)))
    return problems


def _time_or_rate(name: str) -> str:
    """What a metric named `..._s` is: a rate (tokens_per_s) or a time (step_time_s)."""
    return "rate" if "_per_" in name else "time"


def _answered_without_tokens(table: pa.Table) -> list[Problem]:
    """A served point's answered requests (a `request_ok` row that is not 0) with no `output_tokens` row, up to five,
    each at its `request_ok` row. An answered request received at least its first token (runners/loadgen.py; vllm
    bench serve's records, runners/engines/vllm/tool.py), and its count is what the point's output tokens/s adds up
    (`metrics.served_figures`): a point answered with no token counted would publish 0 output tokens/s, a figure
    no interval or ratio can be taken of (their logarithms)."""
    metric = table.column("metric")
    answered = pc.and_(pc.equal(metric, "request_ok"), pc.not_equal(table.column("value"), 0.0))
    if not pc.any(answered).as_py():  # every file but a served point's: no request answered
        return []
    trial = table.column("trial")
    counted = pc.unique(pc.filter(trial, pc.equal(metric, "output_tokens")))
    missing = pc.and_(answered, pc.invert(pc.is_in(trial, value_set=counted)))
    return [
        Problem(
            i,
            "metric",
            f"request {trial[i].as_py()} is answered (request_ok = {table.column('value')[i].as_py():g}) but has no "
            "output_tokens row: an answered request received at least its first token, and the point's output "
            "tokens/s counts them (runners/serving.py `served_rows`)",
        )
        for i in pc.indices_nonzero(missing).to_pylist()[:5]
    ]


def _energy_row_problems(table: pa.Table) -> list[Problem]:
    """The `energy_j` and `idle_power_w` rows that do not fit the windows the run timed, up to five, each at its row.
    generator/derive/energy.py adds a run's joules up and credits them with its windows' tokens and seconds, so each
    window's joules must be one row (runners/energy.py, runners/record.py `train_rows`, the served point's in
    runners/engines/vllm/runner.py): a training run's at a step it timed, in that step's phase (the segment of steps
    it ends); a test's at a repetition it timed (a `test_time_s` trial); a served point's one window at trial 0. The
    idle power is one run-level row. A second row for one window would be summed; one at a step or a repetition the
    run never timed would be credited with tokens nobody generated."""
    metric = table.column("metric")
    energy_at = pc.indices_nonzero(pc.equal(metric, "energy_j").fill_null(False)).to_pylist()
    idle_at = pc.indices_nonzero(pc.equal(metric, "idle_power_w").fill_null(False)).to_pylist()
    if not energy_at and not idle_at:
        return []
    trial, step, phase = (table.column(c).to_pylist() for c in ("trial", "step", "phase"))
    names = metric.to_pylist()
    steps = {(trial[i], step[i]): phase[i] for i, m in enumerate(names) if m == "step_time_s"}
    tests = {trial[i] for i, m in enumerate(names) if m == "test_time_s"}
    problems = []
    for i in idle_at[1:]:
        once = "a run reads its GPUs' idle power once"
        problems.append(Problem(i, "metric", f"a second idle_power_w row (the first is row {idle_at[0]}): {once}"))
    for i in idle_at:
        if phase[i] != "run" or step[i] is not None:
            problems.append(Problem(i, "phase", f"{phase[i]!r}, step {step[i]}: idle_power_w is a run-level row "
                                    "(phase 'run', no step), read before the work"))  # fmt: skip
    seen: dict[tuple[Any, Any], int] = {}
    for i in energy_at:
        t, s, p = trial[i], step[i], phase[i]
        where = f"trial {t}" + (f", step {s}" if s is not None else "")
        if (t, s) in seen:
            problems.append(Problem(i, "trial" if s is None else "step", f"a second energy_j row for {where} (the "
                                    f"first is row {seen[t, s]}): each timed window's joules are one row"))  # fmt: skip
            continue
        seen[t, s] = i
        if steps:
            if s is None:
                problems.append(Problem(i, "step", "null: a training run's energy_j row names the step its segment of "
                                        "steps ends at"))  # fmt: skip
            elif (t, s) not in steps:
                problems.append(Problem(i, "step", f"{where}: the run timed no such step (no step_time_s row): its "
                                        "joules would be credited with steps it never ran"))  # fmt: skip
            elif steps[t, s] != p:
                problems.append(Problem(i, "phase", f"{p!r}, but {where} is {steps[t, s]!r} (its step_time_s row)"))
        elif s is not None:
            problems.append(Problem(i, "step", f"{s}: the run timed no steps, so its energy_j rows name none"))
        elif p != "steady":
            problems.append(Problem(i, "phase", f"{p!r}: a timed window's energy_j row is 'steady'"))
        elif tests and t not in tests:
            problems.append(Problem(i, "trial", f"{t}: the run timed no such repetition (no test_time_s row): its "
                                    "joules would be credited with tokens it never processed"))  # fmt: skip
        elif not tests and t != 0:
            problems.append(Problem(i, "trial", f"{t}: a served point's energy is one window, trial 0"))
    return problems[:5]


_RULE_NAMES = pa.array(list(METRIC_RULES))
_RULE_UNITS = pa.array([r.unit for r in METRIC_RULES.values()])
_RULE_LOW = pa.array([r.low for r in METRIC_RULES.values()], pa.float64())
_RULE_STRICT = pa.array([r.strict for r in METRIC_RULES.values()])
_RULE_WHOLE = pa.array([r.whole for r in METRIC_RULES.values()])


def _metric_checks(table: pa.Table) -> list[tuple[Any, str, Callable[[int], str]]]:
    """(mask, field, message) for rows of a known metric whose unit or value breaks its rule (METRIC_RULES)."""
    metric, value, unit = table.column("metric"), table.column("value"), table.column("unit")
    rule = pc.index_in(metric, value_set=_RULE_NAMES)  # null for metrics without a rule
    if rule.null_count == len(rule):
        return []
    low, strict = pc.take(_RULE_LOW, rule), pc.take(_RULE_STRICT, rule)
    # unknown metrics give null: not flagged here
    wrong_unit = pc.fill_null(pc.not_equal(unit, pc.take(_RULE_UNITS, rule)), False)
    out_of_range = pc.fill_null(pc.if_else(strict, pc.less_equal(value, low), pc.less(value, low)), False)
    fractional = pc.fill_null(pc.and_(pc.take(_RULE_WHOLE, rule), pc.not_equal(pc.floor(value), value)), False)

    def rule_of(i: int) -> Metric:
        return METRIC_RULES[metric[i].as_py()]

    return [
        (
            wrong_unit,
            "unit",
            lambda i: f"{unit[i].as_py()!r} for metric {metric[i].as_py()!r}, whose unit is {rule_of(i).unit!r}",
        ),
        (
            out_of_range,
            "value",
            lambda i: (
                f"{metric[i].as_py()} = {value[i].as_py()}: must be "
                + (f"above {rule_of(i).low:g}" if rule_of(i).strict else f"at least {rule_of(i).low:g}")
            ),
        ),
        (fractional, "value", lambda i: f"{metric[i].as_py()} = {value[i].as_py()}: must be a whole number"),
    ]


_SUITES: frozenset[str] | None = None


def known_suites() -> frozenset[str]:
    """Names of the suite files in runners/suites (a record's suite must be one of them)."""
    global _SUITES
    if _SUITES is None:
        from runners import spec

        _SUITES = frozenset(p.stem for p in spec.SUITES_DIR.glob("*.toml") if p != spec.VARIANTS_FILE)
    return _SUITES


_VARIANT_ENGINES: dict[str, str] | None = None


def variant_engines() -> dict[str, str]:
    """The engine of each variant Fair Fight ships (runners/suites/variants.toml): a record under one of these names
    comes from that engine (or its own tool), never from another."""
    global _VARIANT_ENGINES
    if _VARIANT_ENGINES is None:
        from runners import spec

        try:
            _VARIANT_ENGINES = {name: v.engine for name, v in spec.load_variants().items()}
        except (spec.SpecError, OSError):
            _VARIANT_ENGINES = {}
    return _VARIANT_ENGINES


_WORKLOADS: dict[str, dict[str, dict[str, Any]]] = {}


def suite_workloads(suite: str) -> dict[str, dict[str, Any]]:
    """Each training workload of a suite file as the suite defines it now (micro_batch, seq_len, steps, world_size and
    its variants, baseline first): what a record is compared with, since a record's own account of its shape
    (`workload.overridden`, `workload.variants`) is the submitter's word. Empty for a suite without a file."""
    if suite not in _WORKLOADS:
        from runners import spec

        try:
            loaded = spec.load_suite(suite)
        except (spec.SpecError, OSError):
            _WORKLOADS[suite] = {}
        else:
            _WORKLOADS[suite] = {
                w.name: {
                    "micro_batch": w.micro_batch,
                    "seq_len": w.seq_len,
                    "steps": w.steps,
                    "world_size": w.world_size,
                    "seed": w.seed,
                    "variants": list(w.variants),
                }
                for w in loaded.workloads
            }
    return _WORKLOADS[suite]


LEGACY_RECIPES = {"data": "markov-successors4-v1", "initial_weights": "gpt2-normal-0.02-v1"}
"""What a training record without `recipes` (written before records named them, 2026-12-01) was made with: the only
token-stream and initial-weights recipes runners/artifacts.py had then. A recipe that changes gets a new name there,
so an absent key never stands for it."""


def work_recipes(config: dict[str, Any]) -> dict[str, Any]:
    """What makes a training run's work (its initial weights and its tokens) besides the model and the steps: the
    workload's seed and the data and initial-weights recipes, as the record states them, an absent recipe read as
    `LEGACY_RECIPES` (an absent seed as 0, the workload's default: runners/spec.py `Workload.seed`)."""
    work = config.get("workload")
    recipes = config.get("recipes")
    recipes = recipes if isinstance(recipes, dict) else {}
    seed = work.get("seed", 0) if isinstance(work, dict) else 0
    return {"seed": seed} | {k: recipes.get(k, v) for k, v in LEGACY_RECIPES.items()}


_DEFAULTS: dict[tuple[str, str], dict[str, Any]] = {}


def settings_with_defaults(engine: str, settings: Any) -> Any:
    """A training variant's settings with every key its engine writes out now (`engines.Engine.settings_defaults`):
    a key the record lacks, written before the setting existed, reads as the engine's default for it (the behaviour
    the engine had before the setting, by the rule that a new setting's default is what the engine did). Settings of
    an engine without such defaults, or that are not a JSON object, are returned as they are."""
    target = engines.ENGINES[engine].settings_defaults if engine in engines.ENGINES else None
    if target is None or not isinstance(settings, dict):
        return settings
    key = (engine, str(settings.get("parallel")))
    if key not in _DEFAULTS:
        _DEFAULTS[key] = engines.call(target, settings)
    return _DEFAULTS[key] | settings


def make_table(run: dict[str, Any], rows: list[dict[str, Any]]) -> pa.Table:
    """Build a table from run-level values and measurement rows (trial, step, phase, metric, value, unit)."""
    n = len(rows)
    data: dict[str, list[Any]] = {name: [run.get(name)] * n for name in RUN_COLUMNS}
    data["schema_version"] = [SCHEMA_VERSION] * n
    for key in ("trial", "step", "phase", "metric", "value", "unit"):
        data[key] = [r.get(key) for r in rows]
    return pa.Table.from_pydict(data, schema=SCHEMA)
