"""A record's JSON (config, hardware, calibration) flattened once, right after loading, into typed columns declared in
one table (`COLUMNS`), and what needs the suite file or Python to work out (`_derived`: a run's shape against its
workload, the settings that make it one configuration). Every other generator module reads these columns; none
parses a record's config again (`parsed` is the one cached parse that pages showing a config use).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

import polars as pl

import generator.load.weights as weights
import generator.store.runcache as runcache
from runners import energy, engines, metrics, schema

FLAT = runcache.Frames("flat")
"""Each file's flattened columns (`flatten`), by its sha256."""


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    source: str
    """The record's JSON column: config, hardware or calibration."""
    path: str
    dtype: Any
    what: str


COLUMNS: tuple[Column, ...] = (
    # training workloads
    Column("warmup_steps", "config", "$.workload.warmup_steps", pl.Int64, "steps before the timed windows"),
    Column("window_steps", "config", "$.workload.window_steps", pl.Int64, "steps per timing window"),
    Column("steps_requested", "config", "$.workload.steps_requested", pl.Int64, "steps the run asked for"),
    Column("micro_batch", "config", "$.workload.micro_batch", pl.Int64, "sequences per device per step"),
    Column("declared_tokens_per_step", "config", "$.derived.tokens_per_step", pl.Float64, "as the file declares it"),
    Column("declared_flops_per_token", "config", "$.derived.flops_per_token", pl.Float64, "as the file declares it"),
    Column("compute_precision", "config", "$.compute_precision", pl.String, "the precision the matmuls ran in"),
    Column("weights_sha256", "config", "$.initial_weights_sha256", pl.String, "the initial-weights file's sha256"),
    Column("state_sha256", "config", "$.initial_state_sha256", pl.String, "the model's weights as loaded, hashed"),
    Column("data_sha256", "config", "$.data_sha256", pl.String, "the token batches' sha256"),
    Column("hashes_from", "config", "$.hashes_from", pl.String, "what the hashes were computed from"),
    Column("initial_weights_file", "config", "$.initial_weights", pl.String, "the initial-weights file's name"),
    Column("reference_precision", "config", "$.reference_precision", pl.String, "float8: the precision beside"),
    Column("lr", "config", "$.variant.settings.lr", pl.String, "optimizer: learning rate"),
    Column("betas", "config", "$.variant.settings.betas", pl.String, "optimizer: Adam's betas"),
    Column("eps", "config", "$.variant.settings.eps", pl.String, "optimizer: Adam's eps"),
    Column("weight_decay", "config", "$.variant.settings.weight_decay", pl.String, "optimizer: weight decay"),
    Column("variant_description", "config", "$.variant.description", pl.String, "the variant's own words"),
    Column("claim_description", "config", "$.claim.description", pl.String, "a claim's own words"),
    Column("note", "config", "$.note", pl.String, "the operator's note (`--note`)"),
    Column("pairs_with", "config", "$.pairs_with", pl.String, "an own tool's record: the runner record it checks"),
    Column("retracts", "config", "$.retraction.retracts", pl.String, "a retraction: the run it retracts"),
    Column("retraction_reason_text", "config", "$.retraction.reason", pl.String, "a retraction: why"),
    Column("total_params", "config", "$.derived.total_params", pl.Float64, "the model's parameters"),
    Column("model_name", "config", "$.model.name", pl.String, "the model's name in its suite"),
    # inference and serving tests
    Column("kind", "config", "$.workload.kind", pl.String, "train, pp, tg, offline or serve"),
    Column("n_tokens", "config", "$.workload.n_tokens", pl.Int64, "pp/tg: tokens processed or generated"),
    Column("depth", "config", "$.workload.depth", pl.Int64, "pp/tg: tokens already in the KV cache"),
    Column("depth_fills", "config", "$.workload.depth_fills", pl.Int64, "pp/tg: how often the depth was decoded"),
    Column(
        "untimed_repetitions",
        "config",
        "$.workload.untimed_repetitions",
        pl.Int64,
        "pp/tg: whole repetitions run untimed first (null: a record from before they existed)",
    ),
    Column("weights", "config", "$.variant.settings.weights", pl.String, "pp/tg: the weights' format"),
    Column("model_sha256", "config", "$.model_file.sha256", pl.String, "the model file's sha256"),
    Column("model_bytes", "config", "$.model_file.bytes", pl.Float64, "the model file's size"),
    Column("decode_bytes_per_token", "config", "$.derived.decode_bytes_per_token", pl.Float64, "bytes a token reads"),
    Column("weight_bytes_per_token", "config", "$.derived.weight_bytes_per_token", pl.Float64, "of which weights"),
    Column("kv_bytes_per_token_of_depth", "config", "$.derived.kv_bytes_per_token_of_depth", pl.Float64, "KV/token"),
    Column("non_embedding_params", "config", "$.derived.non_embedding_params", pl.Float64, "params read per token"),
    Column("type_k", "config", "$.variant.settings.type_k", pl.String, "pp/tg: the KV cache's type (keys)"),
    Column("concurrency", "config", "$.workload.concurrency", pl.Int64, "served: requests in flight"),
    Column("request_rate", "config", "$.workload.request_rate", pl.Float64, "served: requests per second"),
    Column("input_len", "config", "$.workload.input_len", pl.Int64, "served: prompt tokens"),
    Column("output_len", "config", "$.workload.output_len", pl.Int64, "served: generated tokens"),
    Column("requests", "config", "$.workload.requests", pl.Int64, "served: requests sent"),
    Column("entry", "config", "$.workload.serving.name", pl.String, "served: the suite's serving entry"),
    Column("slo_ttft_ms", "config", "$.workload.serving.slo_ttft_ms", pl.Float64, "served: goodput's TTFT"),
    Column("slo_tpot_ms", "config", "$.workload.serving.slo_tpot_ms", pl.Float64, "served: goodput's TPOT"),
    Column("dtype", "config", "$.variant.settings.dtype", pl.String, "served: vLLM's dtype (the activations')"),
    Column(
        "quantization",
        "config",
        "$.model_files.quantization_config.quant_method",
        pl.String,
        "served: the quantization its model files declare (fp8, awq; null: none)",
    ),
    Column("tensor_parallel_size", "config", "$.variant.settings.tensor_parallel_size", pl.Int64, "vLLM's TP"),
    # the machine
    Column("device", "hardware", "$.device", pl.String, "cpu, cuda or mps"),
    Column("cpu_cores", "hardware", "$.cpu_cores", pl.Int64, "the host's cores"),
    Column("host_accelerator_count", "hardware", "$.host_accelerator_count", pl.Int64, "GPUs on the host"),
    Column("interconnect", "hardware", "$.interconnect", pl.String, "between the GPUs"),
    Column("driver", "hardware", "$.driver", pl.String, "the GPU driver"),
    Column("cuda", "hardware", "$.cuda", pl.String, "the CUDA version"),
    Column("energy_method", "hardware", "$.energy.method", pl.String, "how its GPU energy was measured"),
    Column("load_1m_start", "hardware", "$.host_load.load_1m_start", pl.Float64, "host load average before the run"),
    Column("load_1m_end", "hardware", "$.host_load.load_1m_end", pl.Float64, "host load average after the run"),
    Column("cpu_busy_s", "hardware", "$.host_load.cpu_busy_s", pl.Float64, "host CPUs' busy seconds during the run"),
    Column("cpu_own_s", "hardware", "$.host_load.cpu_own_s", pl.Float64, "the run's own CPU seconds"),
    Column("host_wall_s", "hardware", "$.host_load.wall_s", pl.Float64, "wall seconds between those readings"),
    Column(
        "gpu_processes_start",
        "hardware",
        "$.host_load.gpu_processes_start",
        pl.Int64,
        "compute processes on the host's GPUs before the run",
    ),
    Column(
        "gpu_processes_end",
        "hardware",
        "$.host_load.gpu_processes_end",
        pl.Int64,
        "compute processes on the host's GPUs after the run",
    ),
    Column("energy_counter_update_s", "hardware", "$.energy.counter_update_s", pl.Float64, "energy counter's step"),
    Column("energy_sample_interval_s", "hardware", "$.energy.sample_interval_s", pl.Float64, "power sampled every"),
    Column("energy_idle_read", "hardware", "$.energy.idle_read", pl.String, "when the idle power was read"),
    Column("calibrated_matmul_flops", "calibration", "$.matmul_flops", pl.Float64, "matmul peak, same job"),
    Column("matmul_precision", "calibration", "$.matmul_precision", pl.String, "its precision"),
    Column("reference_matmul_flops", "calibration", "$.reference_matmul_flops", pl.Float64, "float8: bf16's beside"),
    Column("copy_bytes_per_s", "calibration", "$.copy_bytes_per_s", pl.Float64, "device copy bandwidth"),
    Column("busbw_bytes_per_s", "calibration", "$.allreduce_busbw_bytes_per_s", pl.Float64, "all-reduce bus"),
)


def column(name: str) -> pl.Expr:
    """One `COLUMNS` column's expression over the run-level columns: what `flatten` computes, for a frame that is not
    flattened (the loader's, which names pages after `model_name`). A value of another type becomes null (the load
    has already refused files whose declared fields are wrong)."""
    c = next(c for c in COLUMNS if c.name == name)
    return pl.col(c.source).str.json_path_match(c.path).cast(c.dtype, strict=False).alias(c.name)


def flatten(runs: pl.DataFrame) -> pl.DataFrame:
    """The runs with every `COLUMNS` column and `_derived`'s. Each run's are decided by its file alone (its run-level
    columns, the suite files and the engines' defaults), so with a cache in use (generator/store/runcache.py) they are
    kept by the file's sha256 and only new files' are worked out: the same frame, column for column."""
    if runcache.active() is None or "sha256" not in runs.columns or not runs.height:
        return _flatten(runs)
    hashes = runs["sha256"]
    if hashes.null_count() or hashes.is_duplicated().any():
        return _flatten(runs)  # a run without its file's digest, or two of one content: nothing to key them by
    tag = repr(runs.schema)
    cached = FLAT.read_frame(tag, "sha256", hashes.to_list())
    todo = runs if cached is None else runs.join(cached.select("sha256"), on="sha256", how="anti")
    if cached is not None and not todo.height:
        return runs.join(cached, on="sha256", how="left", maintain_order="left")
    fresh = _flatten(todo)
    added = fresh.select("sha256", *(c for c in fresh.columns if c not in runs.columns))
    try:
        table = added if cached is None else pl.concat([cached, added.select(cached.columns)])
    except pl.exceptions.PolarsError:  # a cached column of another type: only a slower run
        FLAT.write_frame(added, tag)
        return _flatten(runs)
    FLAT.write_frame(table, tag)  # earlier files' rows stay: an edition's flattening must not evict the site's
    return runs.join(table, on="sha256", how="left", maintain_order="left")


def _flatten(runs: pl.DataFrame) -> pl.DataFrame:
    """`flatten` worked out for every run."""
    table = _json_columns(runs).with_columns(
        description=pl.coalesce("variant_description", "claim_description"),
        model_gib=pl.col("model_bytes") / 2**30,
        weights_label=weights.label_expr(),  # part of a test's identity, named from its own record
        # the optimizer's hyperparameters as the variant wrote them out: the same work trains with the same ones
        optimizer_settings=pl.concat_str([pl.col(k) for k in OPTIMIZER_KEYS], separator=" ", ignore_nulls=False),
        # other jobs may have used the rest of the host: the operator said something about the run (`--note`)
        # and it used fewer of the host's GPUs than the host has (both recorded by the runner)
        shared_host=pl.col("note").is_not_null()
        & (pl.col("host_accelerator_count") > pl.col("accelerator_count")).fill_null(False),
        # the bench's view of the host around the run (records from before it kept one: not known, so not busy)
        others_cpu_cores=metrics.others_cores(pl.col("cpu_busy_s"), pl.col("cpu_own_s"), pl.col("host_wall_s")),
        busy_host=metrics.busy_host(
            pl.col("cpu_busy_s"), pl.col("cpu_own_s"), pl.col("host_wall_s"), pl.col("cpu_cores")
        ).fill_null(False),
        gpu_processes=pl.max_horizontal("gpu_processes_start", "gpu_processes_end"),
        # when its idle power was read: as it says, else as its engine's runner read it before records said
        idle_read=pl.when(pl.col("energy_method").is_not_null()).then(
            pl.coalesce(
                "energy_idle_read",
                pl.col("engine").replace_strict(energy.IDLE_READ_UNSAID, default=None, return_dtype=pl.String),
            )
        ),
    )
    return (
        table.join(_derived(runs), on="run_id", how="left")
        .join(gpu_hosts(runs), on="run_id", how="left")
        .join(gpu_power(runs), on="run_id", how="left")
    )


def _json_columns(runs: pl.DataFrame) -> pl.DataFrame:
    """The runs with every `COLUMNS` column, each JSON text read once however many runs share it: repeats of a
    configuration carry the same config, and reading the JSON again for each of 60 columns and every run was most of
    a build's time at thousands of runs."""
    for source in dict.fromkeys(c.source for c in COLUMNS):
        texts = runs.select(source).unique().drop_nulls()
        values = texts.with_columns(column(c.name) for c in COLUMNS if c.source == source)
        runs = runs.join(values, on=source, how="left", maintain_order="left")  # a null text: null columns
    return runs


def gpu_hosts(runs: pl.DataFrame) -> pl.DataFrame:
    """`gpu_uuids`: the sorted UUIDs of a run's GPUs (`hardware.gpus[*].uuid`, from nvidia-smi), comma-joined; null
    where the record names none or not every GPU's. Runs on the same physical GPUs share it, so distinct values count
    the hosts behind a set of runs (a new lease of a GPU machine is a new host)."""
    out = []
    for run_id, text in runs.select("run_id", "hardware").iter_rows():
        gpus = array_at(parsed(text) if text else {}, "gpus") if text else []
        uuids = [g.get("uuid") for g in gpus if isinstance(g, dict)]
        named = [u for u in uuids if isinstance(u, str) and u]
        out.append((run_id, ",".join(sorted(named)) if named and len(named) == len(uuids) else None))
    return pl.DataFrame(out, schema={"run_id": pl.String, "gpu_uuids": pl.String}, orient="row")


def gpu_power(runs: pl.DataFrame) -> pl.DataFrame:
    """`metered_gpus`: how many GPUs a run's energy was read from (`hardware.energy.gpus`, runners/energy.py; null
    where it names none), and `power_limit_w`: the largest power limit among its GPUs (`hardware.gpus[*]`,
    nvidia-smi's enforced limit, else its set one; null where none is recorded), what generator/derive/checks.py holds
    its watts to."""
    out = []
    for run_id, text in runs.select("run_id", "hardware").iter_rows():
        hardware = parsed(text) if text else {}
        hardware = hardware if isinstance(hardware, dict) else {}
        uuids = array_at(object_at(hardware, "energy"), "gpus")
        limits = [_watts(g) for g in array_at(hardware, "gpus") if isinstance(g, dict)]
        known = [w for w in limits if w is not None]
        out.append((run_id, len(uuids) or None, max(known) if known else None))
    return pl.DataFrame(
        out, schema={"run_id": pl.String, "metered_gpus": pl.Int64, "power_limit_w": pl.Float64}, orient="row"
    )


def _watts(gpu: dict[str, Any]) -> float | None:
    """One GPU's power limit as recorded: the enforced one, else the one set (a number, never a bool)."""
    for key in ("enforced_power_limit_w", "power_limit_w"):
        value = gpu.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
    return None


OPTIMIZER_KEYS = ("lr", "betas", "eps", "weight_decay")
"""The training hyperparameters every training variant writes out (torch and MLX alike): loss parity requires a run's
to be its baseline's, as its initial weights and data are."""


@functools.lru_cache(maxsize=4096)
def parsed(text: str) -> Any:
    """A record's config (or any of its JSON columns) as Python objects, parsed once per distinct text: for pages that
    show a config as it is. Treat the result as read-only."""
    return json.loads(text)


def object_at(document: dict[str, Any], key: str) -> dict[str, Any]:
    """`document[key]` when it is a JSON object, else {}: pages read a record's JSON leniently (a missing or odd
    section shows as dashes; `runners.bounds` has already refused the records that matter)."""
    value = document.get(key)
    return value if isinstance(value, dict) else {}


def array_at(document: dict[str, Any], key: str) -> list[Any]:
    """`document[key]` when it is a JSON array, else [] (as `object_at`)."""
    value = document.get(key)
    return value if isinstance(value, list) else []


def _derived(runs: pl.DataFrame) -> pl.DataFrame:
    """What each run's config means beyond its fields:

    - how it compares with its workload as the suite file defines it now (`schema.suite_workloads`), never with the
      record's own account of what it changed: `full_length` (all the workload's steps asked), `suite_scale` (its
      device count), `sweep_point` (another micro-batch or sequence), the workload's variants in the suite's order
      (`listed_variants`), its first (`baseline_variant`) and this run's place among them (`variant_order`). A
      workload the suite file does not define (inference and serving tests, claims) falls back on the record's
      `workload.overridden` and `workload.variants`;
    - tokens per step and model FLOPs per token as the site publishes them, computed from the shapes (micro-batch ×
      sequence × devices; `metrics.train_flops_per_token` of config.model), never taken from the figures a file
      declares (which `checks` holds against these). A claim, which has no shapes, keeps its own;
    - `settings` (canonical JSON of everything that ran: `_settings`) and `settings_hash` (its sha256's first 12 hex
      digits): one configuration, one hash; `curve_settings` and `curve_hash`, the same without micro-batch and steps:
      one curve of a sweep;
    - `work_recipe`: a training run's seed and data and initial-weights recipes (`schema.work_recipes`), as JSON, and
      `workload_steps`: the steps its workload defines (what the end-to-end reading is projected to)."""
    out = []
    for row in runs.select(
        "run_id", "suite", "workload", "origin", "variant", "engine", "engine_version", "accelerator",
        "accelerator_count", "config",
    ).iter_rows(named=True):  # fmt: skip
        config = parsed(row["config"])
        config = config if isinstance(config, dict) else {}
        work = object_at(config, "workload")
        defined = schema.suite_workloads(row["suite"]).get(row["workload"])
        if defined is not None:
            steps = work.get("steps_requested", work.get("steps"))
            full = steps == defined["steps"]
            scale = work.get("world_size") == defined["world_size"]
            sweep = work.get("micro_batch") != defined["micro_batch"] or work.get("seq_len") != defined["seq_len"]
            listed = list(defined["variants"])
        else:
            overridden = array_at(work, "overridden")
            full, scale = "steps" not in overridden, "world_size" not in overridden
            sweep = bool({"micro_batch", "seq_len"} & set(overridden))
            listed = [v for v in array_at(work, "variants") if isinstance(v, str)]
        batch, seq, world = (work.get(k) for k in ("micro_batch", "seq_len", "world_size"))
        tokens = None
        if isinstance(batch, int) and isinstance(seq, int) and isinstance(world, int):
            tokens = batch * seq * world
        flops = metrics.train_flops_per_token_of(config.get("model"), seq)
        if row["origin"] == "claim":
            declared = object_at(config, "derived")
            tokens, flops = tokens or declared.get("tokens_per_step"), flops or declared.get("flops_per_token")
        figures = (None if v is None else float(v) for v in (tokens, flops))
        label = row["variant"]
        order = listed.index(label) if label in listed else None  # a sweep's label (`name[key=value]`) is not listed
        settings = _settings(config, work, row)
        text = json.dumps(settings, sort_keys=True, separators=(",", ":"))
        settings_hash = hashlib.sha256(text.encode()).hexdigest()[:12]
        # one curve of a sweep: the same settings at any micro-batch and length (generator/derive/verdict/)
        curve = json.dumps({k: v for k, v in settings.items() if k not in ("micro_batch", "steps")}, sort_keys=True)
        curve_hash = hashlib.sha256(curve.encode()).hexdigest()[:12]
        recipe = json.dumps(settings["work"], sort_keys=True) if settings.get("work") else None
        baseline = listed[0] if listed else None
        workload_steps = defined["steps"] if defined is not None else None
        out.append((row["run_id"], full, scale, sweep, baseline, order, listed, *figures, text, settings_hash,
                    curve, curve_hash, workload_steps, recipe))  # fmt: skip
    schema_: dict[str, pl.DataType | type[pl.DataType]] = {
        "run_id": pl.String, "full_length": pl.Boolean, "suite_scale": pl.Boolean, "sweep_point": pl.Boolean,
        "baseline_variant": pl.String, "variant_order": pl.Int64, "listed_variants": pl.List(pl.String),
        "tokens_per_step": pl.Float64, "flops_per_token": pl.Float64, "settings": pl.String, "settings_hash": pl.String,
        "curve_settings": pl.String, "curve_hash": pl.String, "workload_steps": pl.Int64, "work_recipe": pl.String,
    }  # fmt: skip
    return pl.DataFrame(out, schema=schema_, orient="row")


def _prompt_form(work: dict[str, Any], engine: str) -> dict[str, Any]:
    """A served point's prompt form (text or token ids) where it is not what its engine's records sent before they
    said it (`engines.unrecorded_prompt_form`): text and token-id points of a runner never pool, while the records
    written before the field keep the configuration (and hash) they had."""
    if work.get("kind") != "serve":
        return {}
    before = engines.unrecorded_prompt_form(engine)
    form = work.get("prompt_form", before)
    return {"prompt_form": form} if form != before else {}


def _settings(config: dict[str, Any], work: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """What makes two runs the same configuration (canonical, hashed by `settings_hash`): the variant and its
    settings (a key the record lacks read as the engine's default: `schema.settings_with_defaults`), the environment
    a sweep changed, micro-batch, sequence, steps asked, device count, hardware and the engine's version; for
    training, the model and everything that makes its work (`work`: the seed and the data and initial-weights
    recipes, `schema.work_recipes`), so a run of other data or weights is never the same configuration; for a served
    point, what its requests carried (`_prompt_form`)."""
    variant = object_at(config, "variant")
    training = "window_steps" in work
    model = object_at(config, "model")
    settings = variant.get("settings")
    return {
        "variant": row["variant"],
        "settings": schema.settings_with_defaults(row["engine"], settings) if training else settings,
        "sweep_env": variant.get("sweep_env") or {},
        "micro_batch": work.get("micro_batch"),
        "seq_len": work.get("seq_len"),
        "steps": work.get("steps_requested", work.get("steps")),
        "world_size": work.get("world_size"),
        "engine": row["engine"],
        "engine_version": row["engine_version"],
        "accelerator": row["accelerator"],
        "accelerator_count": row["accelerator_count"],
        # inference and serving tests: how a depth was filled (older llama.cpp records, without the field, decoded
        # it on every repetition; at depth 0 nothing is filled) and how many requests a served point sent
        **({"depth_fills": work.get("depth_fills")} if work.get("depth") else {}),
        # llama.cpp's tests: whole repetitions run untimed first (none before the runner had them)
        **({"untimed_repetitions": work.get("untimed_repetitions", 0)} if work.get("kind") in ("pp", "tg") else {}),
        **({"requests": work["requests"]} if "requests" in work else {}),
        **_prompt_form(work, row["engine"]),
        **({"model": model.get("name"), "work": schema.work_recipes(config)} if training else {}),
    }
