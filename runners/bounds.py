"""Bounds on a record's fields: the declared types and ranges of the paths in its JSON columns, and bounds on its
text: what `schema.check_run` holds a file to before any page code reads it.

A result file comes from anyone who sends one, so every value is hostile until checked here. The JSON columns
(config, hardware, software, environment, calibration) must be objects; each path the site reads has a declared
type and range (`PATHS`); names that become page titles, navigation entries, file names and chart labels match a
plain pattern (`NAMES`); free text has a length bound (`TEXT_LIMITS`); each GPU's state has declared keys
(`GPU_FIELDS`), the installed packages are plain `name==version` entries (`PACKAGE`) and every other software value is
short text. JSON with a repeated key, NaN or Infinity, or nesting past `MAX_DEPTH` is refused: the site's polars
queries and Python's json module would read such a document differently.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from runners import energy


@dataclass(frozen=True, slots=True)
class Field:
    """One JSON path the site reads: its type, its range, and whether null is allowed."""

    kind: str
    """'int' (not bool), 'number' (finite int or float), 'str', 'name' (a plain name, as `NAMES` allow: it becomes a
    page's file name), 'bool', 'object', 'list' or 'list[str]'."""
    low: float | None = None
    """Lowest allowed value (numbers), or shortest length (strings, lists)."""
    strict: bool = False
    """True: the value must be above `low`, not equal to it."""
    high: float | None = None
    """Highest allowed value (numbers), or longest length (strings, lists)."""
    nullable: bool = False


_POS_INT = Field("int", low=1, high=2**53)
_COUNT = Field("int", low=0, high=2**53)
"""Whole numbers up to 2⁵³, which a float holds exactly: a shape of 10³⁰ is no shape, and would overflow the
site's integer columns."""
_POS_NUM = Field("number", low=0, strict=True)
_NAME = Field("str", low=1, high=200)
_TEXT = Field("str", high=4000)

PACKAGE = re.compile(r"[a-z0-9][a-z0-9-]{0,99}==[A-Za-z0-9][A-Za-z0-9.+!_-]{0,63}")
"""An entry of `software.packages`: a normalised distribution name (PEP 503) and its version (`torch==2.11.0+cu130`)."""
MAX_PACKAGES = 2000
PACKAGES_MAX_CHARS = 40_000
"""Most entries and characters of `software.packages` a runner writes (runners/provenance.py `installed_packages`
counts the rest in `packages_omitted`): inside the software column's limit (`JSON_LIMITS`), with room for the rest."""

# (column, path) -> Field. Every path the generator reads from a JSON column is declared here; a path that is
# absent is allowed (the site shows a dash), a path that is present must have its shape.
PATHS: dict[tuple[str, str], Field] = {
    ("config", "workload"): Field("object"),
    ("config", "workload.kind"): _NAME,
    ("config", "workload.micro_batch"): _POS_INT,
    ("config", "workload.seq_len"): _POS_INT,
    ("config", "workload.world_size"): _POS_INT,
    ("config", "workload.warmup_steps"): _COUNT,
    ("config", "workload.window_steps"): _POS_INT,
    ("config", "workload.steps"): _POS_INT,
    ("config", "workload.steps_requested"): _POS_INT,
    ("config", "workload.trials"): _POS_INT,
    ("config", "workload.variants"): Field("list[str]", high=100),
    ("config", "workload.overridden"): Field("list[str]", high=100),
    ("config", "workload.n_tokens"): _COUNT,
    ("config", "workload.depth"): _COUNT,
    ("config", "workload.depth_fills"): Field("int", low=0, nullable=True),
    ("config", "workload.repetitions"): _POS_INT,
    ("config", "workload.concurrency"): Field("int", low=1, nullable=True),
    ("config", "workload.request_rate"): Field("number", low=0, strict=True, nullable=True),
    ("config", "workload.input_len"): _POS_INT,
    ("config", "workload.output_len"): _POS_INT,
    ("config", "workload.requests"): _POS_INT,
    ("config", "workload.prompt_form"): Field("str", low=1, high=40),  # served: text or token ids
    ("config", "workload.serving"): Field("object"),
    ("config", "workload.serving.name"): _NAME,
    ("config", "workload.serving.slo_ttft_ms"): Field("number", low=0, strict=True, nullable=True),
    ("config", "workload.serving.slo_tpot_ms"): Field("number", low=0, strict=True, nullable=True),
    ("config", "suite_description"): _TEXT,
    ("config", "model.family"): Field("str", high=40),
    ("config", "workload.inference"): Field("object"),
    ("config", "model"): Field("object"),
    ("config", "model.name"): Field("name"),  # a served model's page is named after it
    **{("config", f"model.{k}"): _POS_INT for k in ("vocab", "dim", "layers", "heads", "kv_heads", "ffn_dim")},
    ("config", "model.context"): _POS_INT,
    ("config", "model.tied_embeddings"): Field("bool"),
    ("config", "derived"): Field("object"),
    ("config", "derived.tokens_per_step"): _POS_NUM,
    ("config", "derived.flops_per_token"): _POS_NUM,
    ("config", "derived.total_params"): _POS_INT,
    ("config", "derived.non_embedding_params"): _COUNT,
    ("config", "derived.decode_bytes_per_token"): Field("number", low=0, strict=True, nullable=True),
    ("config", "derived.weight_bytes_per_token"): Field("number", low=0, strict=True, nullable=True),
    ("config", "derived.kv_bytes_per_token_of_depth"): Field("number", low=0, nullable=True),
    ("config", "compute_precision"): Field("str", low=1, high=40, nullable=True),
    ("config", "migrated"): Field("list[str]", high=10),
    ("config", "variant"): Field("object"),
    ("config", "variant.name"): _NAME,
    ("config", "variant.description"): _TEXT,
    ("config", "variant.settings"): Field("object"),
    ("config", "variant.settings.weights"): _NAME,
    ("config", "variant.settings.dtype"): _NAME,
    ("config", "variant.settings.type_k"): _NAME,
    ("config", "claim"): Field("object"),
    ("config", "claim.description"): _TEXT,
    ("config", "claim.unknown"): Field("list[str]", high=50),
    ("config", "note"): Field("str", high=2000),
    ("config", "pairs_with"): _NAME,  # an engine's own tool's record: the runner's record of the same test
    ("config", "command"): Field("str", high=4000),  # kept, never shown: a run page builds its own (reproduce.py)
    ("config", "external_variants"): Field("str", low=1, high=1000),
    ("config", "workload.time_budget_s"): Field("number", low=0, strict=True, high=1e7),
    ("config", "variant.overrides"): Field("object"),
    ("config", "variant.sweep_env"): Field("object"),
    ("config", "model_file"): Field("object"),
    ("config", "model_file.sha256"): Field("str", high=64),
    ("config", "model_file.bytes"): _COUNT,
    ("config", "initial_weights_sha256"): Field("str", low=64, high=64),
    ("config", "data_sha256"): Field("str", low=64, high=64),
    ("config", "retraction"): Field("object"),
    ("config", "retraction.retracts"): _NAME,
    ("config", "retraction.reason"): Field("str", low=1, high=2000),
    # null: nvidia-smi missing or failing on the host (runners/provenance.py `hardware`), not known
    ("hardware", "host_accelerator_count"): Field("int", low=1, high=1 << 16, nullable=True),
    ("hardware", "count"): Field("int", low=1, high=1 << 16),
    ("hardware", "cpu_cores"): Field("int", low=1, high=1 << 12),  # a ceiling per core: no host has more
    ("hardware", "device"): Field("str", high=40, nullable=True),
    ("hardware", "interconnect"): Field("str", high=200, nullable=True),
    ("hardware", "driver"): Field("str", high=200, nullable=True),
    ("hardware", "cuda"): Field("str", high=200, nullable=True),
    ("hardware", "gpus"): Field("list", high=1024),  # each entry's keys: GPU_FIELDS
    ("hardware", "nodes"): Field("list", low=2, high=1024),  # a run over nodes: each node's (NODE_FIELDS)
    ("hardware", "gpus_in_run"): Field("object"),  # nvidia-smi asked during the steady steps (provenance.GpuSampler)
    ("hardware", "gpus_in_run.at_step"): _COUNT,
    ("hardware", "gpus_in_run.gpus"): Field("list", high=1024),  # each entry's keys: GPU_FIELDS
    # how the GPUs' energy was measured (runners/energy.py): its joules are rows (`energy_j`), these are the method
    ("hardware", "energy"): Field("object"),
    ("hardware", "energy.method"): Field("str", low=1, high=40),
    ("hardware", "energy.gpus"): Field("list[str]", low=1, high=1024),
    # at least 1 ms: NVML refreshes a GPU's readings every 20-100 ms, and a record claiming finer would pass
    # generator/derive/energy.py's resolution check (`metrics.energy_resolved`) with windows far too short to read
    ("hardware", "energy.counter_update_s"): Field("number", low=1e-3, high=60),
    ("hardware", "energy.sample_interval_s"): Field("number", low=1e-3, high=60),
    ("hardware", "energy.idle_read"): Field("str", low=1, high=40),  # runners/energy.py IDLE_BEFORE_GPU_USE, ...
    # the host's load around the run (runners/provenance.py `host_load`, asked by the bench before the runner starts
    # and after it ends): null where the OS or nvidia-smi could not tell; absent in records from before it was kept
    ("hardware", "host_load"): Field("object"),
    ("hardware", "host_load.load_1m_start"): Field("number", low=0, high=1e6, nullable=True),
    ("hardware", "host_load.load_1m_end"): Field("number", low=0, high=1e6, nullable=True),
    ("hardware", "host_load.gpu_processes_start"): Field("int", low=0, high=1 << 20, nullable=True),
    ("hardware", "host_load.gpu_processes_end"): Field("int", low=0, high=1 << 20, nullable=True),
    ("hardware", "host_load.cpu_mhz_start"): Field("number", low=0, high=1e5, nullable=True),
    ("hardware", "host_load.cpu_mhz_end"): Field("number", low=0, high=1e5, nullable=True),
    # CPU seconds around the run (`provenance.host_load_around`): the host's busy time, the run's own, the wall time
    ("hardware", "host_load.cpu_busy_s"): Field("number", low=0, high=1e12, nullable=True),
    ("hardware", "host_load.cpu_own_s"): Field("number", low=0, high=1e12, nullable=True),
    ("hardware", "host_load.wall_s"): Field("number", low=0, strict=True, high=1e9, nullable=True),
    # the Slurm job the run ran in (runners/slurm.py `facts`); absent outside one
    ("hardware", "slurm"): Field("object"),
    ("hardware", "slurm.job_id"): Field("str", low=1, high=40),
    ("hardware", "slurm.nodelist"): Field("str", high=4000),
    ("hardware", "slurm.nodes"): Field("list[str]", high=1024),
    ("hardware", "slurm.partition"): Field("str", high=200, nullable=True),
    ("hardware", "slurm.gpus_per_node"): Field("int", low=0, high=1 << 12, nullable=True),
    ("hardware", "slurm.node_name"): Field("str", high=253, nullable=True),
    ("software", "packages"): Field("list[str]", high=MAX_PACKAGES),  # each entry: PACKAGE
    ("software", "packages_omitted"): _COUNT,
    ("calibration", "matmul_flops"): _POS_NUM,
    ("calibration", "copy_bytes_per_s"): _POS_NUM,
    ("calibration", "allreduce_busbw_bytes_per_s"): Field("number", low=0, strict=True, nullable=True),
    ("calibration", "matmul_precision"): Field("str", high=40, nullable=True),
    ("calibration", "reference_matmul_flops"): Field("number", low=0, strict=True, nullable=True),
    ("calibration", "reference_matmul_precision"): Field("str", high=40, nullable=True),
    ("config", "reference_precision"): Field("str", low=1, high=40, nullable=True),
}

_MHZ = Field("int", low=0, strict=True, high=100_000)
_WATTS = Field("number", low=0, strict=True, high=100_000)
GPU_FIELDS: dict[str, Field] = {
    "index": Field("int", low=0, high=1 << 16),
    "name": Field("str", low=1, high=200),
    "sm_clock_mhz": _MHZ,
    "max_sm_clock_mhz": _MHZ,
    "memory_clock_mhz": _MHZ,
    "max_memory_clock_mhz": _MHZ,
    "applications_graphics_clock_mhz": _MHZ,
    "applications_memory_clock_mhz": _MHZ,
    "power_limit_w": _WATTS,
    "enforced_power_limit_w": _WATTS,
    "default_power_limit_w": _WATTS,
    "ecc_mode": Field("str", low=1, high=40),
    "persistence_mode": Field("str", low=1, high=40),
    "power_draw_w": _WATTS,
    "temperature_c": Field("int", low=-100, high=1000),
    "clocks_event_reasons": Field("str", low=1, high=40),
    "uuid": Field("str", low=1, high=80),
}
"""The keys of each entry of `hardware.gpus` (runners/provenance.py `GPU_QUERY`, as nvidia-smi reports them when the
record is made) and of `hardware.gpus_in_run.gpus` (`RUN_GPU_QUERY`, during the run), each absent where nvidia-smi
reported none. The run page shows each of them; a key not here is
refused."""

SOFTWARE_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+ -]{0,99}")
"""A key of `software`: a distribution, or a tool as an importer names it (`vllm bench`, `mlx_lm.benchmark`)."""
SOFTWARE_VALUE = Field("str", high=200, nullable=True)
"""Every other key of `software`: a package, tool or platform named plainly, with its version (or null: absent)."""

JSON_LIMITS = {"config": 1 << 20, "hardware": 64 << 10, "software": 64 << 10, "environment": 64 << 10,
               "calibration": 64 << 10}  # fmt: skip
"""Longest JSON text per column, in characters (the largest committed config, an imported tool's, is ~170 KB)."""
MAX_DEPTH = 32
"""Deepest nesting of objects and lists in a JSON column."""

TEXT_LIMITS = {"error": 64 << 10, "source": 2000, "engine_version": 200, "accelerator": 200, "harness_commit": 64}
"""Longest free text per run-level column, in characters: a bounded share of every page that shows it."""
MAX_ROWS = 5_000_000
"""Most rows in one file (a 10⁵-step run has about 2·10⁵; a served point's per-token samples, about 10⁵): a bounded
share of the build's time and memory."""
MAX_DEVICES = 1 << 16
"""Most devices one run may claim (a ceiling is multiplied by the count)."""

_PLAIN = r"[A-Za-z0-9][A-Za-z0-9._+-]{0,99}"
NAMES = {
    "suite": re.compile(_PLAIN),
    "workload": re.compile(_PLAIN),
    "engine": re.compile(_PLAIN),
    # a variant, then the settings a sweep changed: ddp-tuned[bucket_cap_mb=25], fsdp2-compile[reduce_dtype="bf16"]
    "variant": re.compile(_PLAIN + r'(\[(?=[^\]]*=)[A-Za-z0-9_][A-Za-z0-9_.=,"+:/ \[\]-]{0,299}\])?'),
    "run_id": re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,199}"),
}
"""Names that reach page titles, navigation, file names and chart labels: letters, digits and a few marks."""
METRIC_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/()%-]{0,63}")
"""A row's metric: a name with its unit in it (`step_time_s`), shown in tables, charts and CSV headers."""
UNIT_NAME = re.compile(r"[A-Za-z0-9_./%() -]{0,32}")
"""A row's unit (`s`, `tokens/s`, `GiB`)."""


_DEVICE_NAMES = frozenset(
    ["CON", "PRN", "AUX", "NUL"] + [f"{port}{n}" for port in ("COM", "LPT") for n in [*"123456789", "¹", "²", "³"]]
)
"""Names Windows keeps for devices, whatever the extension after them and in any case (`nul.parquet`, `Com1.txt`)."""
_UNPORTABLE = re.compile(r'[<>:"|?*\\\x00-\x1f]')
"""Characters no Windows file name holds (macOS refuses `:` in Finder, and `/` everywhere)."""


def portable_name_problem(name: str) -> str | None:
    """Why a checkout on Windows or macOS cannot hold a file or folder of this name (None when it can): a device name
    (CON, PRN, AUX, NUL, COM1-9, LPT1-9, with any extension, any case), a trailing dot or space, or one of
    `<>:"|?*`, a backslash or a control character."""
    device = name.split(".", 1)[0].rstrip(" ").upper()
    if device in _DEVICE_NAMES:
        return (
            f"{name[:80]!r}: {device} is a device name on Windows, whatever follows it, so no checkout there can "
            "hold it"
        )
    if name.endswith((".", " ")):
        return f"{name[:80]!r}: ends in a dot or a space, which Windows drops, so a checkout there holds another name"
    bad = _UNPORTABLE.search(name)
    if bad:
        return f"{name[:80]!r}: holds {bad.group()!r}, which no Windows file name may hold"
    return None


def name_problem(column: str, value: str) -> str | None:
    """Why a run-level name may not be used (None when it may): not a plain name, or a suite or run id (a folder's
    and a file's name) that no checkout on Windows can hold (`portable_name_problem`)."""
    if NAMES[column].fullmatch(value):
        portable = portable_name_problem(value) if column in ("suite", "run_id") else None
        return None if portable is None else f"{portable}: rename it"
    return (
        f"{value[:80]!r}{'…' if len(value) > 80 else ''} is not a plain name (letters, digits and . _ + -"
        f"{', then [settings]' if column == 'variant' else ''}; at most {100 if column != 'run_id' else 200} "
        "characters)"
    )


def text_problem(column: str, value: str | None) -> str | None:
    """Why a run-level free text may not be shown (too long; an accelerator name that is not plain ASCII, since
    readers compare hardware by eye and a Cyrillic А passes for a Latin A), or None."""
    limit = TEXT_LIMITS.get(column)
    if value is None or limit is None:
        return None
    if len(value) > limit:
        return f"{len(value):,} characters, more than the {limit:,} allowed"
    if column == "accelerator" and not (value.isascii() and value.isprintable()):
        return f"{value[:80]!r}: a device name is printable ASCII (as the driver reports it)"
    return None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        raise ValueError(f"key {repeated[0]!r} appears more than once in one object")
    return dict(pairs)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse(text: str) -> Any:
    """Strict JSON: no repeated keys, no NaN or Infinity (Python's json accepts both; polars and browsers differ)."""
    return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)


def _depth(value: Any, limit: int) -> int:
    """Nesting depth of a parsed document, stopping once past `limit`."""
    stack, deepest = [(value, 1)], 0
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if deepest > limit:
                return deepest
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def _get(document: dict[str, Any], path: str) -> tuple[bool, Any]:
    node: Any = document
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            return False, None
        node = node[key]
    return True, node


def _shape_problem(value: Any, rule: Field) -> str | None:
    if value is None:
        return None if rule.nullable else "null, expected " + rule.kind
    kind = rule.kind
    if kind == "int" and (isinstance(value, bool) or not isinstance(value, int)):
        return f"{_show(value)} is not a whole number"
    if kind == "number" and (
        isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(float(value))
    ):
        return f"{_show(value)} is not a finite number"
    if kind == "str" and not isinstance(value, str):
        return f"{_show(value)} is not a string"
    if kind == "name" and not (isinstance(value, str) and re.fullmatch(_PLAIN, value)):
        return f"{_show(value)} is not a plain name (letters, digits and . _ + -; at most 100 characters)"
    if kind == "bool" and not isinstance(value, bool):
        return f"{_show(value)} is not true or false"
    if kind == "object" and not isinstance(value, dict):
        return f"{_show(value)} is not an object"
    if kind.startswith("list"):
        if not isinstance(value, list):
            return f"{_show(value)} is not a list"
        if kind == "list[str]" and not all(isinstance(v, str) and len(v) <= 200 for v in value):
            return "holds something other than short strings"
    if kind in ("int", "number"):
        if rule.low is not None and (value <= rule.low if rule.strict else value < rule.low):
            return f"{_show(value)}: must be {'above' if rule.strict else 'at least'} {rule.low:g}"
        if rule.high is not None and value > rule.high:
            return f"{_show(value)}: must be at most {rule.high:g}"
    if kind == "str" or kind.startswith("list"):
        if rule.low is not None and len(value) < rule.low:
            return "empty" if rule.low == 1 else f"shorter than {rule.low:g}"
        if rule.high is not None and len(value) > rule.high:
            return f"{len(value):,} {'characters' if kind == 'str' else 'items'}, more than the {rule.high:g} allowed"
    return None


def _show(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:60] + "…"


NODE_FIELDS = {
    "node": Field("int", low=0, high=1 << 16),
    "hostname": Field("str", low=1, high=253),
    "processes": Field("int", low=1, high=1 << 12),
    "hardware": Field("object"),
    "software": Field("object"),
}
"""The keys of each entry of `hardware.nodes` (runners/nodes.py `gather`): its node rank, host name, processes, and
that node's hardware and software as a one-host record has them."""


def _node_problems(entries: list[Any]) -> list[tuple[str, str]]:
    problems = []
    seen: set[Any] = set()
    for i, entry in enumerate(entries):
        where = f"hardware.nodes[{i}]"
        if not isinstance(entry, dict) or set(entry) != set(NODE_FIELDS):
            problems.append((where, f"an object with the keys {sorted(NODE_FIELDS)}"))
            continue
        for key, rule in NODE_FIELDS.items():
            message = _shape_problem(entry[key], rule)
            if message:
                problems.append((f"{where}.{key}", message))
        if isinstance(entry["hostname"], str) and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.-]*", entry["hostname"]):
            problems.append((f"{where}.hostname", f"{_show(entry['hostname'])} is not a host name"))
        if entry["node"] in seen:
            problems.append((f"{where}.node", f"node {entry['node']} is listed twice"))
        seen.add(entry["node"])
    return problems


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _lone_surrogate(document: Any, where: str) -> str | None:
    """The dotted path of the first key or string of a parsed document that is not text (a lone surrogate), or None."""
    stack: list[tuple[Any, str]] = [(document, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return path
        elif isinstance(item, dict):
            for key, value in item.items():
                try:
                    key.encode("utf-8")
                except UnicodeEncodeError:
                    return f"{path}.{key.encode('utf-8', 'backslashreplace').decode()[:60]}"
                stack.append((value, f"{path}.{key[:60]}"))
        elif isinstance(item, list):
            stack.extend((value, f"{path}[{i}]") for i, value in enumerate(item))
    return None


def json_problems(first: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, message) for each JSON column of a run (its row 0) that is not of its declared shape."""
    problems: list[tuple[str, str]] = []
    documents: dict[str, dict[str, Any]] = {}
    for column, limit in JSON_LIMITS.items():
        text = first.get(column)
        if text is None:
            if column != "calibration":
                problems.append((column, "null: expected a JSON object"))
            continue
        if len(text) > limit:
            problems.append((column, f"{len(text):,} characters of JSON, more than the {limit:,} allowed"))
            continue
        try:
            document = parse(text)
        except (ValueError, RecursionError) as e:
            problems.append((column, f"not valid JSON: {e}"))
            continue
        if not isinstance(document, dict):
            problems.append((column, f"a JSON {type(document).__name__}, expected an object"))
            continue
        if _depth(document, MAX_DEPTH) > MAX_DEPTH:
            problems.append((column, f"nested more than {MAX_DEPTH} levels deep"))
            continue
        # JSON may escape half of a UTF-16 pair (`"\ud800"`), which parses to a string no page or file can hold
        lone = _lone_surrogate(document, column) if _SURROGATE_ESCAPE.search(text) else None
        if lone:
            problems.append((lone, "a lone surrogate (half of a UTF-16 pair): not text"))
            continue
        documents[column] = document
        if column == "environment":
            odd = next((k for k, v in document.items() if not isinstance(v, str)), None)
            if odd is not None:
                problems.append((f"{column}.{odd}", "environment values are strings"))
        if column == "software":
            problems += _software_problems(document)
        if column == "hardware" and isinstance(document.get("gpus"), list):
            problems += _gpu_problems(document["gpus"])
        if column == "hardware" and isinstance(document.get("nodes"), list):
            problems += _node_problems(document["nodes"])
        in_run = document.get("gpus_in_run") if column == "hardware" else None
        if isinstance(in_run, dict) and isinstance(in_run.get("gpus"), list):
            problems += _gpu_problems(in_run["gpus"], "hardware.gpus_in_run.gpus")
        for (col, path), rule in PATHS.items():
            if col != column:
                continue
            present, value = _get(document, path)
            message = _shape_problem(value, rule) if present else None
            if message:
                problems.append((f"{column}.{path}", message))
    if not problems and first.get("origin") in ("measured", "imported"):
        problems += _consistency_problems(first, documents)
    return problems


def _software_problems(software: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, message) for a software document's keys that are not plain names, versions that are not short text or
    null, and `packages` entries that are not `name==version` (the declared shapes of `packages` itself and
    `packages_omitted` are checked with `PATHS`)."""
    out = []
    for key, value in software.items():
        if not SOFTWARE_KEY.fullmatch(key):
            out.append(
                (f"software.{key[:80]}", "not a plain package or tool name (letters, digits, space and . _ + -)")
            )
        elif key not in ("packages", "packages_omitted"):
            message = _shape_problem(value, SOFTWARE_VALUE)
            if message:
                out.append((f"software.{key}", message))
    out = out[:5]  # a document of many bad keys: the first few say enough
    packages = software.get("packages")
    if isinstance(packages, list):
        bad = next((i for i, v in enumerate(packages) if not (isinstance(v, str) and PACKAGE.fullmatch(v))), None)
        if bad is not None:
            out.append((f"software.packages[{bad}]", f"{_show(packages[bad])} is not a plain name==version"))
    return out


def _gpu_problems(gpus: list[Any], field: str = "hardware.gpus") -> list[tuple[str, str]]:
    """(field, message) for the first entry of `hardware.gpus` (or the list at `field`) that is not of `GPU_FIELDS`'
    shapes."""
    for i, gpu in enumerate(gpus):
        where = f"{field}[{i}]"
        if not isinstance(gpu, dict):
            return [(where, f"{_show(gpu)} is not an object")]
        for key, value in gpu.items():
            message = gpu_field_problem(key, value)
            if message:
                return [(f"{where}.{key[:80]}", message)]
    return []


def gpu_field_problem(key: str, value: Any) -> str | None:
    """Why a GPU's `key` may not hold `value` (`GPU_FIELDS`; a device name is printable ASCII), or None."""
    rule = GPU_FIELDS.get(key)
    if rule is None:
        return f"not one of {sorted(GPU_FIELDS)}"
    message = _shape_problem(value, rule)
    if message is None and key == "name" and not (value.isascii() and value.isprintable()):
        message = f"{_show(value)}: a device name is printable ASCII (as the driver reports it)"
    return message


def _consistency_problems(first: dict[str, Any], documents: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    """A measured or imported record says the same thing everywhere: as many devices in its workload, its hardware
    and its `accelerator_count`, and the same kind of device in its workload and its hardware (a ceiling is looked
    up by the one and multiplied by the other)."""
    work = documents["config"].get("workload")
    if not isinstance(work, dict):
        work = {}
    hardware, count, out = documents["hardware"], first.get("accelerator_count"), []
    for field, value in (
        ("config.workload.world_size", work.get("world_size")),
        ("hardware.count", hardware.get("count")),
    ):
        if value is not None and value != count:
            out.append((field, f"{value} devices, but accelerator_count says {count}"))
    if work.get("device") is not None and hardware.get("device") is not None and work["device"] != hardware["device"]:
        out.append(("hardware.device", f"{hardware['device']!r}, but the workload ran on {work['device']!r}"))
    return out + _energy_problems(hardware)


def _energy_problems(hardware: dict[str, Any]) -> list[tuple[str, str]]:
    """`hardware.energy` (runners/energy.py `Meter.provenance`): a method runners/energy.py has, and GPUs to have read
    it from. A record with another method's name would have its joules described as NVML's power, sampled; one
    with none would put a figure on the boards that its run page does not explain; one off a GPU has no NVML; one
    naming GPUs the record does not have would be held to their power (generator/derive/checks.py)."""
    how = hardware.get("energy")
    if not isinstance(how, dict):  # absent (not metered), or a wrong shape that `PATHS` names
        return []
    method = how.get("method")
    if method is None:
        return [("hardware.energy.method", f"absent: a metered record says how it measured ({list(energy.METHODS)})")]
    if method not in energy.METHODS:
        return [("hardware.energy.method", f"{_show(method)} is not one of {list(energy.METHODS)}")]
    if hardware.get("device") != "cuda":
        return [("hardware.energy", f"GPU energy on device {_show(hardware.get('device'))}: NVML meters only 'cuda'")]
    gpus = hardware.get("gpus")
    known = [g.get("uuid") for g in gpus if isinstance(g, dict)] if isinstance(gpus, list) else []
    metered = how.get("gpus")
    if known and all(isinstance(u, str) for u in known) and isinstance(metered, list):
        # the meter reads the GPUs of its own node (runners/energy.py `meter`), which `hardware.gpus` lists
        stray = [u for u in metered if u not in known]
        if stray:
            return [("hardware.energy.gpus", f"{_show(stray[0])} is not one of the record's GPUs (hardware.gpus)")]
    return []


# Characters shown as a visible mark rather than obeyed: C0/C1 controls (but tab and line ends), and the Unicode
# format characters that reorder or hide text (bidi embeddings, overrides and isolates, zero-width marks).
_INVISIBLE = (set(range(0x20)) - {0x09, 0x0A, 0x0D}) | set(range(0x7F, 0xA0))


_KEPT_WHITESPACE = dict.fromkeys(map(ord, "\t\n\r"))
"""The controls shown as they are (`_INVISIBLE` leaves them out), removed before asking `str.isprintable`."""


def _is_hidden(ch: str) -> bool:
    return ord(ch) in _INVISIBLE or unicodedata.category(ch) == "Cf"


def neutral(text: str) -> str:
    """Text with control and format characters (bidi overrides, zero-width marks) replaced by a visible
    `⟨U+XXXX⟩`, so what a reader sees is what the file holds."""
    if text.isprintable():  # Python's printable excludes every control and format character: none to show
        return text
    if text.translate(_KEPT_WHITESPACE).isprintable():  # printable but for tabs and line ends: none to show
        return text
    return "".join(f"⟨U+{ord(ch):04X}⟩" if _is_hidden(ch) else ch for ch in text)
