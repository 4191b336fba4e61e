"""The declared columns of the results model (issue 36): every column of the run summary, of the inference and
serving tests' rows and of each kind of board's rows, with its type, one line of what it holds, and how a board's
row takes it from its configuration's runs (`Aggregation`). `derive.results` holds its frames to these at its end
(`check`): a column missing, extra or of another type stops the build, naming the column.

A run's record columns are documented in `runners/schema.py` and its config's flattened columns in `generator/
columns.py` (`COLUMNS`, with their types); what is derived from them is declared here, one `Field` a column.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import polars as pl

import generator.load.columns as columns
from runners import schema

Aggregation = Literal["key", "latest", "median", "all", "max", "min", "row"]
AGGREGATIONS: dict[str, str] = {
    "key": "all equal: one of the keys that make the configuration (`configurations.KEYS`)",
    "latest": "the latest run's (a fact of a run, or a figure a row shows as its latest run had it)",
    "median": "the median of its runs'",
    "all": "every run's, as a list (what the row's interval is made from)",
    "max": "the largest of its runs'",
    "min": "the smallest of its runs'",
    "row": "made by the board for the row itself (its runs, interval, rank)",
}
"""How a board's row takes a column from the runs of its configuration."""


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    dtype: Any
    """Its polars type."""
    board: Aggregation
    """How a training board's row takes it (`AGGREGATIONS`)."""
    what: str
    """One line: what it holds, with its unit."""
    tests: Aggregation | None = None
    """How an inference or serving test's board row takes it, where that is not `board` (a test board ranks by its
    own figure, `value`: training's figures are its latest run's there)."""

    @property
    def on_tests(self) -> Aggregation:
        return self.board if self.tests is None else self.tests


class SchemaError(ValueError):
    """A results frame does not have the columns declared for it."""


_UTC = pl.Datetime("us", "UTC")

RECORD_COLUMNS: tuple[tuple[str, Any, Aggregation], ...] = (
    ("schema_version", pl.Int32, "latest"), ("run_id", pl.String, "latest"), ("suite", pl.String, "key"),
    ("workload", pl.String, "key"), ("engine", pl.String, "latest"), ("engine_version", pl.String, "latest"),
    ("variant", pl.String, "latest"), ("tier", pl.String, "latest"), ("status", pl.String, "latest"),
    ("error", pl.String, "latest"), ("origin", pl.String, "latest"), ("source", pl.String, "latest"),
    ("started_at", _UTC, "latest"), ("ended_at", _UTC, "latest"), ("harness_commit", pl.String, "latest"),
    ("harness_dirty", pl.Boolean, "latest"), ("accelerator", pl.String, "latest"),
    ("accelerator_count", pl.Int32, "latest"), ("config", pl.String, "latest"), ("hardware", pl.String, "latest"),
    ("software", pl.String, "latest"), ("environment", pl.String, "latest"), ("calibration", pl.String, "latest"),
)  # fmt: skip
"""The record's run-level columns a run summary keeps (documented in `schema.COLUMN_DOCS`), with their types."""

CONFIG_AGGREGATION: Aggregation = "latest"
"""How a board's row takes a config column (`columns.COLUMNS`): what a run's config says is a fact of that run."""

RUN_METRICS = ("duration_s", "idle_power_w", "peak_mem_gib", "peak_mem_steady_gib", "peak_rss_gib", "setup_s",
               "startup_s", "steps_completed", "steps_per_s", "tests_completed", "warmup_s")  # fmt: skip
"""The run-level metrics (phase `run`, first trial's) that become run summary columns, every one of them whether or
not a record has it; any other run-level row (a retraction's `retracted_runs`) stays in the samples only. The
record's own `steps_per_s` (claims and imports) becomes `reported_steps_per_s`."""

_F, _I, _S, _B = pl.Float64, pl.Int64, pl.String, pl.Boolean

DERIVED: tuple[Field, ...] = (
    Field("path", _S, "latest", "the result file, relative to the data folder's parent"),
    Field("sha256", _S, "latest", "the result file's sha256"),
    Field("description", _S, "latest", "the variant's or the claim's own words"),
    Field("model_gib", _F, "latest", "the model file's size, GiB"),
    Field("weights_label", _S, "latest", "pp/tg/served: its weights as its own record names them (`weights.label`)"),
    Field("optimizer_settings", _S, "latest", "lr, betas, eps and weight decay as the variant wrote them out"),
    Field("shared_host", _B, "latest", "other jobs may have used the host: a note and fewer GPUs than the host has"),
    Field("others_cpu_cores", _F, "latest", "cores' worth of CPU time others took as it ran (`metrics.others_cores`)"),
    Field("busy_host", _B, "latest", "others took CPU time it waited for (`metrics.busy_host`)"),
    Field("gpu_processes", _I, "latest", "compute processes on its host's GPUs before or after it, the more"),
    Field("full_length", _B, "latest", "it asked for all of its workload's steps"),
    Field("suite_scale", _B, "latest", "it ran on its workload's device count"),
    Field("sweep_point", _B, "latest", "another micro-batch or sequence than its workload's"),
    Field("baseline_variant", _S, "latest", "the workload's first variant: its loss-parity baseline"),
    Field("variant_order", _I, "latest", "its variant's place in the suite's list (null: not listed)"),
    Field("listed_variants", pl.List(pl.String), "latest", "the workload's variants in the suite's order"),
    Field("tokens_per_step", _F, "latest", "micro-batch × sequence × devices, from its shapes"),
    Field("flops_per_token", _F, "latest", "model FLOPs a trained token costs, from its shapes"),
    Field("settings", _S, "latest", "canonical JSON of everything that ran: what makes one configuration"),
    Field("settings_hash", _S, "key", "the first 12 hex digits of `settings`' sha256: one configuration"),
    Field("curve_settings", _S, "latest", "`settings` without micro-batch and steps: one curve of a sweep"),
    Field("curve_hash", _S, "latest", "the first 12 hex digits of `curve_settings`' sha256"),
    Field("workload_steps", _I, "latest", "the steps its workload defines (null: not defined by a suite file)"),
    Field("work_recipe", _S, "latest", "training: its seed and data and initial-weights recipes, as JSON"),
    Field("gpu_uuids", _S, "latest", "its GPUs' sorted UUIDs, comma-joined: one physical host"),
    Field("idle_read", _S, "latest", "when its idle power was read: as it says, else as its engine's runner did"),
    Field("metered_gpus", _I, "latest", "how many GPUs its energy was read from (null: not metered)"),
    Field("power_limit_w", _F, "latest", "the largest power limit its GPUs' record names, W"),
    Field("headline", _B, "latest", "finished, full-length, at suite scale, no sweep: a best may name it"),
    Field("retracted_by", _S, "latest", "the retraction record that retracts it (null: counted)"),
    Field("retraction_reason", _S, "latest", "why it was retracted"),
    Field("retracted_at", _UTC, "latest", "when it was retracted"),
    Field("steps_per_s", _F, "median", "median steps/s over steady windows (or as reported)", tests="latest"),
    Field("steps_per_s_lo", _F, "all", "95% interval's low, steps/s (a board row's: its interval)", tests="latest"),
    Field("steps_per_s_hi", _F, "all", "95% interval's high, steps/s (a board row's: its interval)", tests="latest"),
    Field("windows", _I, "latest", "complete steady timing windows"),
    Field("coverage", _F, "min", "the exact coverage of the median's interval", tests="latest"),
    Field("fastest_window_steps_per_s", _F, "latest", "its fastest steady window, steps/s"),
    Field("steady_step_s", _F, "latest", "mean steady step time over its windows, s"),
    Field("duration_s", _F, "latest", "run-level metric: a served point's duration, s"),
    Field("peak_mem_gib", _F, "max", "peak device memory (else peak RSS), GiB", tests="latest"),
    Field("peak_mem_steady_gib", _F, "max", "peak device memory over steady steps, GiB", tests="latest"),
    Field("peak_rss_gib", _F, "latest", "peak resident host memory, GiB"),
    Field("setup_s", _F, "latest", "run-level metric: setup time, s"),
    Field("startup_s", _F, "latest", "run-level metric: startup time, s"),
    Field("steps_completed", _F, "min", "run-level metric: steps it completed", tests="latest"),
    Field("reported_steps_per_s", _F, "latest", "the record's own steps/s (claims and imports)"),
    Field("tests_completed", _F, "latest", "run-level metric: tests a stopped run completed"),
    Field("warmup_s", _F, "latest", "run-level metric: warm-up and compilation time, s"),
    Field("first_loss", _F, "latest", "trial 0's first loss, nats"),
    Field("final_loss", _F, "latest", "trial 0's last loss, nats"),
    Field("parity_baseline", _S, "latest", "the run its loss is held to"),
    Field("loss_first_gap", _F, "latest", "relative gap of its first loss to the baseline's"),
    Field("loss_max_rel_gap", _F, "latest", "largest relative gap of a window's mean loss to the baseline's"),
    Field("loss_parity_tol", _F, "latest", "the tolerance that gap is held to"),
    Field("whole_run_baseline", _S, "latest", "the full-length stock run its whole curve is held to"),
    Field("loss_mean_rel_gap", _F, "latest", "mean relative window gap to that run's"),
    Field("loss_mean_rel_tol", _F, "latest", "the tolerance that mean gap is held to"),
    Field("loss_parity_ok", _B, "latest", "its loss agrees with the baseline's (null: no baseline)"),
    Field("parity_problem", _S, "latest", "why it fails parity whatever its loss says (other work, optimizer)"),
    Field("same_work", _S, "latest", "how the same work as its baseline's was established"),
    Field("env_changes", _S, "latest", "allowlisted variables it set that its suite's other runs did not"),
    Field("step_ms_p5", _F, "latest", "5th percentile of steady step times, ms"),
    Field("step_ms_p25", _F, "latest", "25th percentile of steady step times, ms"),
    Field("step_ms_p50", _F, "latest", "50th percentile of steady step times, ms"),
    Field("step_ms_p75", _F, "latest", "75th percentile of steady step times, ms"),
    Field("step_ms_p95", _F, "latest", "95th percentile of steady step times, ms"),
    Field("error_short", _S, "latest", "the last line of its error, at most 200 characters"),
    Field("tokens_per_s", _F, "median", "steps/s × tokens per step", tests="latest"),
    Field("tokens_per_s_lo", _F, "latest", "interval's low × tokens per step (a board row's: of its interval)"),
    Field("tokens_per_s_hi", _F, "latest", "interval's high × tokens per step (a board row's: of its interval)"),
    Field("tokens_per_s_per_device", _F, "median", "tokens/s ÷ devices", tests="latest"),
    Field("end_to_end_steps_per_s", _F, "median", "the workload's steps over their wall time", tests="latest"),
    Field("datasheet_peak_flops", _F, "latest", "its hardware's datasheet peak at its precision, FLOP/s"),
    Field("reference_peak_flops", _F, "latest", "float8: the datasheet peak at the reference precision"),
    Field("flops_ceiling", _F, "latest", "the most its hardware can do, every device, FLOP/s"),
    Field("unverified", _S, "latest", "why its speed cannot be checked against its hardware (null: checked)"),
    Field("model_matmul_flops", _F, "latest", "the calibrated matmul peak its calibrated MFU divides by"),
    Field("model_reference_matmul_flops", _F, "latest", "float8: the calibrated reference-precision peak"),
    Field("mfu_datasheet", _F, "median", "model FLOPs utilization against the datasheet peak", tests="latest"),
    Field("mfu_calibrated", _F, "median", "model FLOPs utilization against the calibrated peak", tests="latest"),
    Field("ceiling_fraction", _F, "latest", "model FLOP/s ÷ the hardware's ceiling"),
    Field("fastest_window_fraction", _F, "latest", "the fastest window's FLOP/s ÷ the ceiling"),
    Field("mfu_datasheet_reference", _F, "median", "float8: MFU against the reference datasheet peak", tests="latest"),
    Field("mfu_calibrated_reference", _F, "median", "float8: MFU against the calibrated reference peak",
          tests="latest"),
    Field("idle_power_w", _F, "latest", "run-level metric: its GPUs' power at rest before the work, W"),
    Field("energy_j", _F, "latest", "its GPUs' joules over its metered windows (derive/energy.py)"),
    Field("energy_tokens", _F, "latest", "the tokens those windows processed"),
    Field("energy_s", _F, "latest", "the seconds those windows span"),
    Field("joules_per_token", _F, "median", "GPU joules per token (null: not metered or too short)", tests="latest"),
    Field("tokens_per_joule", _F, "median", "tokens per GPU joule (null: not metered or too short)", tests="latest"),
    Field("mean_power_w", _F, "median", "its GPUs' mean power over the metered windows, W", tests="latest"),
    Field("energy_note", _S, "latest", "why a metered run has no energy figure"),
)  # fmt: skip
"""The run summary's derived columns (`derive.run_summary`)."""

_SHARED = (
    Field("datasheet_bandwidth", _F, "latest", "its hardware's datasheet memory bandwidth, bytes/s"),
    Field("repetitions", _I, "latest", "repetitions its figure is made of"),
    Field("copy_bandwidth", _F, "latest", "its hardware model's calibrated copy bandwidth, one GPU's, bytes/s"),
    # a board's row's: of the row's own figure (`ladder.with_bandwidth_use`), never a median of its runs'
    Field("mbu_datasheet", _F, "median", "memory-bandwidth utilization of decoding against the datasheet",
          tests="row"),
    Field("copy_fraction", _F, "median", "decoding's fraction of its hardware's calibrated copy bound (not MBU)",
          tests="row"),
    Field("paired_run", _S, "latest", "an own tool's record: the runner's record it checks"),
    Field("bench_run", _S, "latest", "the own tool's record of the same test"),
    Field("bench_rate", _F, "latest", "that record's throughput, tokens/s"),
    Field("bench_status", _S, "latest", "that record's status"),
    Field("bench_ratio", _F, "latest", "runner / tool throughput"),
)  # fmt: skip
_SHARED_BY_NAME = {f.name: f for f in _SHARED}

_LATENCIES = (("ttft", "time to first token"), ("tpot", "time per output token"), ("itl", "inter-token latency"),
              ("e2e", "end-to-end latency"))  # fmt: skip
_LATENCY_FIELDS = tuple(
    Field(f"{stat}_{what}_ms", _F, "latest", f"served: {stat} {label}, ms")
    for what, label in _LATENCIES
    for stat in ("mean", "median", "p99")
)

INFERENCE_OWN: tuple[Field, ...] = (
    _SHARED_BY_NAME["datasheet_bandwidth"],
    Field("rate_mean", _F, "latest", "mean tokens/s over repetitions"),
    Field("rate_sd", _F, "latest", "standard deviation of tokens/s over repetitions"),
    Field("llama_rate", _F, "latest", "llama.cpp's own counters' median tokens/s"),
    Field("tool_path_rate", _F, "latest", "mean tokens/s timed along the own tool's path (MLX)"),
    Field("rate_med", _F, "latest", "median tokens/s over repetitions"),
    Field("rate_lo", _F, "latest", "its 95% interval's low, tokens/s"),
    Field("rate_hi", _F, "latest", "its 95% interval's high, tokens/s"),
    Field("rate_coverage", _F, "latest", "that interval's exact coverage"),
    _SHARED_BY_NAME["repetitions"],
    Field("tool_path_med", _F, "latest", "median tokens/s along the tool's path"),
    Field("tool_path_lo", _F, "latest", "its 95% interval's low, tokens/s"),
    Field("tool_path_hi", _F, "latest", "its 95% interval's high, tokens/s"),
    Field("tool_path_coverage", _F, "latest", "that interval's exact coverage"),
    _SHARED_BY_NAME["copy_bandwidth"],
    _SHARED_BY_NAME["mbu_datasheet"],
    _SHARED_BY_NAME["copy_fraction"],
    _SHARED_BY_NAME["paired_run"],
    _SHARED_BY_NAME["bench_run"],
    _SHARED_BY_NAME["bench_rate"],
    Field("bench_sd", _F, "latest", "the tool's standard deviation, tokens/s"),
    Field("bench_tool", _S, "latest", "the own tool that made it"),
    _SHARED_BY_NAME["bench_status"],
    _SHARED_BY_NAME["bench_ratio"],
    Field("test_ratio", _F, "latest", "runner / tool of the test's own mean tokens/s"),
    Field(
        "cold_first_dropped",
        pl.Boolean,
        "max",
        "its first repetition, timed cold before the untimed warm-up "
        "existed, left out of its figures (a row: any of its runs')",
    ),
)
"""An inference test's own columns (`inference.per_run_figures`), after the run summary's."""

SERVING_OWN: tuple[Field, ...] = (
    _SHARED_BY_NAME["datasheet_bandwidth"],
    Field("out_mean", _F, "latest", "offline: mean output tokens/s over repetitions"),
    Field("out_sd", _F, "latest", "offline: its standard deviation"),
    Field("total_mean", _F, "latest", "offline: mean total (prompt and output) tokens/s"),
    Field("requests_mean", _F, "latest", "offline: mean requests/s"),
    Field("out_med", _F, "latest", "offline: median output tokens/s over repetitions"),
    Field("out_lo", _F, "latest", "its 95% interval's low"),
    Field("out_hi", _F, "latest", "its 95% interval's high"),
    Field("out_coverage", _F, "latest", "that interval's exact coverage"),
    _SHARED_BY_NAME["repetitions"],
    Field("completed_requests", _F, "latest", "served: requests that finished"),
    Field("failed_requests", _F, "latest", "served: requests that failed"),
    Field("duration_s_right", _F, "latest", "served: the point's duration, s"),
    Field("request_throughput", _F, "latest", "served: requests/s"),
    Field("output_tokens_per_s", _F, "latest", "served: output tokens/s"),
    Field("total_tokens_per_s", _F, "latest", "served: prompt and output tokens/s"),
    Field("goodput_requests_per_s", _F, "latest", "served: requests/s within both SLOs"),
    *_LATENCY_FIELDS,
    Field("out_rate", _F, "latest", "output tokens/s, whichever kind"),
    Field("decode_rate", _F, "median", "at one request in flight: 1000 / median TPOT, tokens/s (a row: its runs')"),
    _SHARED_BY_NAME["paired_run"],
    _SHARED_BY_NAME["copy_bandwidth"],
    _SHARED_BY_NAME["mbu_datasheet"],
    _SHARED_BY_NAME["copy_fraction"],
    _SHARED_BY_NAME["bench_run"],
    _SHARED_BY_NAME["bench_rate"],
    Field("bench_ttft", _F, "latest", "the tool's median TTFT, ms"),
    Field("bench_tpot", _F, "latest", "the tool's median TPOT, ms"),
    _SHARED_BY_NAME["bench_status"],
    _SHARED_BY_NAME["bench_ratio"],
    Field("bench_ttft_ratio", _F, "latest", "runner / tool median TTFT"),
    Field("bench_tpot_ratio", _F, "latest", "runner / tool median TPOT"),
    Field("tol_out", _F, "latest", "the tolerance output tokens/s agree within on its hardware"),
    Field("tol_ttft", _F, "latest", "the tolerance median TTFT agrees within"),
    Field("tol_tpot", _F, "latest", "the tolerance median TPOT agrees within"),
    Field("tool_repeats", pl.UInt32, "latest", "the most unflagged tool records of one served point on its hardware"),
)
"""A serving test's own columns (`serving.per_run_figures`), after the run summary's."""

_ROW = (
    Field("runs", pl.UInt32, "row", "the configuration's ranked runs"),
    Field("run_ids", pl.List(pl.String), "row", "their run ids, latest last"),
    Field("harness_commits", pl.List(pl.String), "row", "each one's harness commit, in the same order"),
)
_RANKED = (
    Field("interval_basis", _S, "row", "how the row's interval was made, in words"),
    Field("differs", _S, "row", "what differs from rows of the same variant name"),
    Field("rank", _I, "row", "one plus the rows whose interval lies wholly above its own"),
)
_UNRANKED = Field("unranked", _S, "latest", "why a run does not rank (null: it ranks)")

TRAINING_BOARD_OWN: tuple[Field, ...] = (
    _UNRANKED,
    Field("speed_baseline", _S, "latest", "the variant speedups are over"),
    Field("baseline_steps_per_s", _F, "latest", "its speed: the median of its ranked runs', steps/s"),
    Field("speedup", _F, "median", "steps/s ÷ the baseline's"),
    *_ROW,
    *_RANKED,
)
"""A training board row's own columns (`derive.leaderboards`), after the run summary's."""

_FIGURE = Field("value", _F, "median", "the figure it ranks by (tokens/s): the median of its runs'")
TEST_BOARD_OWN: tuple[Field, ...] = (
    _UNRANKED,
    *_ROW,
    Field("lo", _F, "all", "the row's 95% interval's low, made from every run's"),
    Field("hi", _F, "all", "the row's 95% interval's high, made from every run's"),
    *_RANKED,
)
"""An inference or serving test board row's own columns (`ladder.rows`, `ladder.rank`), after its test's and its
figure (`value`)."""


def _config_fields() -> tuple[Field, ...]:
    return tuple(Field(c.name, c.dtype, CONFIG_AGGREGATION, f"{c.what} ({c.source} {c.path})") for c in columns.COLUMNS)


def _record_fields() -> tuple[Field, ...]:
    return tuple(Field(name, dtype, agg, schema.COLUMN_DOCS[name]) for name, dtype, agg in RECORD_COLUMNS)


def _union(*groups: Iterable[Field]) -> tuple[Field, ...]:
    """The fields of `groups` in order, each name once (a field two groups share is one declaration)."""
    out: dict[str, Field] = {}
    for group in groups:
        for f in group:
            if f.name in out and out[f.name] != f:
                raise SchemaError(f"column {f.name!r} is declared twice, differently, in generator/load/fields.py")
            out.setdefault(f.name, f)
    return tuple(out.values())


RUN = _union(_record_fields(), _config_fields(), DERIVED)
"""The run summary (`Results.runs`): one row per run of every kind."""
TESTS = _union(RUN, INFERENCE_OWN)
"""Inference tests (`Results.tests`)."""
SERVED = _union(RUN, SERVING_OWN)
"""Serving tests (`Results.served`)."""
STANDING: tuple[Field, ...] = (
    Field("board_rank", _I, "latest", "its configuration's rank on its board (null: none)"),
    Field("standing", _S, "latest", "ranked, or why not, in words (`derive.lead`; null: nothing to say)"),
)
"""A run page's own columns: what its lead line says of its place on its board."""
SETTINGS_BESIDE_DEFAULTS = Field(
    "settings_beside_defaults",
    pl.List(pl.Struct({"key": _S, "value": _S, "default": _S, "changed": _B})),
    "latest",
    "its page's Settings table (`derive.defaults`): each setting of its variant, its value and the engine's default "
    "(canonical JSON; a dash where the engine names none) and whether the variant changed it",
)
"""A run page's settings beside its engine's defaults, derived once per run from its config."""
NOT_ON_PAGES = ("copy_bandwidth",)
"""A test's columns its run page leaves out: the hardware model's calibrated copy bandwidth, which the boards take their
copy fractions of, moves with every calibrated run of that model and no page shows it (a run page shows the fraction);
carried there, it would make every page of that hardware again whenever such a run came in."""
PAGE_RUNS = tuple(
    f
    for f in _union(RUN, INFERENCE_OWN, SERVING_OWN, [SETTINGS_BESIDE_DEFAULTS], STANDING)
    if f.name not in NOT_ON_PAGES
)
"""The runs with their tests' own figures (`Results.page_runs`)."""
BOARDS: dict[str, tuple[Field, ...]] = {
    "train": _union(RUN, TRAINING_BOARD_OWN),
    "inference": _union(TESTS, [_FIGURE], TEST_BOARD_OWN),
    "serving": _union(SERVED, [_FIGURE], TEST_BOARD_OWN),
}
"""Per kind of board, its ranked rows (`Board.ranked`)."""

_ALL = {f.name: f for f in _union(*BOARDS.values(), PAGE_RUNS)}


def aggregation(name: str, tests: bool = False) -> Aggregation:
    """How a board's row takes column `name` (a test board's where `tests`): as declared here; a column declared
    nowhere is an error that names it (a new column is never silently the latest run's)."""
    found = _ALL.get(name)
    if found is None:
        raise SchemaError(
            f"board column {name!r} has no declared aggregation: declare it in generator/load/fields.py, with its "
            "type, what it holds and how a board's row takes it"
        )
    return found.on_tests if tests else found.board


def check(frame: pl.DataFrame, fields: Iterable[Field], what: str) -> None:
    """Hold `frame` (named `what` in the message) to its declared `fields`: every column declared, every declared
    column there, each of its declared type; the first of each that is not stops the build, naming the column."""
    declared: Mapping[str, Field] = {f.name: f for f in fields}
    schema = frame.schema  # polars makes a new Schema at each `frame.schema`: once, not once per column
    problems = [
        *(f"column {n!r} is not declared in generator/load/fields.py" for n in frame.columns if n not in declared),
        *(f"declared column {n!r} is missing" for n in declared if n not in schema),
        *(
            f"column {n!r} is {schema[n]}, declared {f.dtype}"
            for n, f in declared.items()
            if n in schema and schema[n] != f.dtype
        ),
    ]
    if problems:
        raise SchemaError(f"{what}: " + "; ".join(problems))
