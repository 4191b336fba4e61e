"""Model shapes, workloads, variants and suites: frozen dataclasses loaded from `runners/suites/*.toml`.

A suite file names its models and workloads; variants (an engine plus every setting it uses) live in
`runners/suites/variants.toml` so that every suite runs the very same variant definitions. Loading is strict:
an unknown key, a missing key or a wrong type is a `SpecError` that names the file and the key.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

from runners import arguments, engines, metrics

SUITES_DIR = Path(__file__).parent / "suites"
VARIANTS_FILE = SUITES_DIR / "variants.toml"

Family = Literal["gpt", "llama"]
Tier = Literal["stock", "tuned", "claim"]
WorkloadKind = Literal["train"]


class SpecError(ValueError):
    """A suite or variant file is malformed; the message names the file and the key."""


SETUP_ALLOWANCE_S = 120.0
"""How long a trial may take before its first step (a training workload's `time_budget_s` starts there): an outside
engine that has written no step by then is stopped, and the bench allows it per trial on top of the budgets."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelSpec:
    """One description of a model's shapes that every engine builds from."""

    name: str
    """Short name used in workloads, e.g. `gpt-1.27b`."""
    family: Family
    """`gpt`: learned positions, LayerNorm, GELU MLP. `llama`: RoPE, RMSNorm, SwiGLU MLP, GQA."""
    vocab: int
    """Vocabulary size (rows of the embedding table and of the LM head)."""
    dim: int
    """Model width d."""
    layers: int
    """Number of transformer blocks L."""
    heads: int
    """Attention heads; `dim` must divide evenly."""
    kv_heads: int
    """Key/value heads (equal to `heads` without grouped-query attention)."""
    ffn_dim: int
    """Hidden width of the MLP (4·d for GPT-style)."""
    context: int
    """Maximum sequence length (rows of the position table for GPT-style)."""
    norm: Literal["layernorm", "rmsnorm"]
    """Normalisation; both are used without bias."""
    activation: Literal["gelu", "swiglu"]
    """MLP activation."""
    tied_embeddings: bool
    """Whether the LM head shares the token embedding's weights."""
    norm_eps: float = 1e-5
    """Epsilon of every normalisation layer."""

    def __post_init__(self) -> None:
        for name in ("vocab", "dim", "layers", "heads", "kv_heads", "ffn_dim", "context"):
            if getattr(self, name) <= 0:
                raise SpecError(f"model {self.name!r}: {name} must be positive, got {getattr(self, name)}")
        if self.dim % self.heads:
            raise SpecError(f"model {self.name!r}: dim {self.dim} is not divisible by heads {self.heads}")
        if self.heads % self.kv_heads:
            raise SpecError(f"model {self.name!r}: heads {self.heads} not divisible by kv_heads {self.kv_heads}")
        if self.family == "gpt" and (self.kv_heads != self.heads or self.activation != "gelu"):
            raise SpecError(f"model {self.name!r}: a gpt-family model has kv_heads == heads and gelu")

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads

    @property
    def embedding_params(self) -> int:
        """Parameters of lookup tables (token embedding, and learned positions for GPT-style)."""
        positions = self.context * self.dim if self.family == "gpt" else 0
        return self.vocab * self.dim + positions

    @property
    def non_embedding_params(self) -> int:
        """Every parameter that takes part in a matmul or a norm: blocks, final norm and an untied LM head."""
        return metrics.non_embedding_params(self)

    @property
    def total_params(self) -> int:
        return self.embedding_params + self.non_embedding_params

    def flops_per_token(self, seq_len: int) -> float:
        """Training FLOPs per token (forward + backward), PaLM appendix B; see `metrics.train_flops_per_token`."""
        return metrics.train_flops_per_token(self, seq_len)


@dataclass(frozen=True, kw_only=True, slots=True)
class Workload:
    """A measured task: a model, its shapes and how long and where to run it."""

    name: str
    """Unique within its suite, e.g. `train-gpt-1.27b-mb4`."""
    kind: WorkloadKind
    """What is measured: `train` (optimizer steps per second)."""
    model: str
    """Key of a model in the same suite file."""
    variants: tuple[str, ...]
    """Variant names (from variants.toml) run on this workload."""
    seq_len: int
    """Tokens per sequence."""
    micro_batch: int
    """Sequences per device per step."""
    steps: int
    """Optimizer steps per trial, warm-up included."""
    warmup_steps: int
    """Leading steps recorded but kept out of steady-state figures (compilation happens here)."""
    window_steps: int
    """Steady steps per timing window; the interval comes from the spread across windows."""
    world_size: int
    """Processes (one per device)."""
    device: Literal["cpu", "cuda", "metal"]
    """Where tensors live (`metal`: an Apple GPU, MLX only)."""
    dist_backend: Literal["gloo", "nccl", "none"]
    """torch.distributed backend (`none`: one device, no collectives; MLX runs one device per process)."""
    trials: int = 1
    """Independent trials per run, each from the same initial weights and data."""
    time_budget_s: float = 600.0
    """Wall-clock budget of one trial's steps, from its first step: set-up (building the model, loading weights,
    compiling before step 0) is not counted, for built-in and outside engines alike (`SETUP_ALLOWANCE_S` bounds it);
    a trial that reaches the budget stops and records the steps it completed."""
    seed: int = 0
    """Seed of the initial weights and of the token stream."""

    def __post_init__(self) -> None:
        for name in ("seq_len", "micro_batch", "steps", "window_steps", "world_size", "trials"):
            if getattr(self, name) <= 0:
                raise SpecError(f"workload {self.name!r}: {name} must be positive")
        if not 0 <= self.warmup_steps < self.steps:
            raise SpecError(f"workload {self.name!r}: warmup_steps must be in [0, steps)")
        if (self.steps - self.warmup_steps) < self.window_steps:
            raise SpecError(f"workload {self.name!r}: fewer steady steps than one window of {self.window_steps}")
        if self.dist_backend == "none" and self.world_size != 1:
            raise SpecError(f"workload {self.name!r}: dist_backend 'none' (no collectives) needs world_size 1")


@dataclass(frozen=True, kw_only=True, slots=True)
class Inference:
    """Prompt processing and generation of a Llama-shaped model, as llama-bench measures them: each test
    processes `n_prompt` tokens (pp) or generates `n_gen` tokens one at a time (tg) after `depth` tokens already
    fill the KV cache, repeated; every (test, depth) is its own workload, named `{name}-pp512-d4096`."""

    name: str
    """Unique within its suite, e.g. `llama-8b`."""
    model: str
    """Key of a llama-family model in the same suite file."""
    variants: tuple[str, ...]
    """Variant names (from variants.toml) run on every test."""
    device: Literal["cpu", "cuda", "metal"]
    """Where the layers run (`metal`: an Apple GPU, MLX only)."""
    n_prompt: int = 512
    """Tokens of a prompt-processing test (llama-bench's pp512)."""
    n_gen: int = 128
    """Tokens of a generation test (llama-bench's tg128)."""
    depths: tuple[int, ...] = (0,)
    """KV-cache depths (tokens already in context) at which both tests run."""
    repetitions: int = 5
    """Timed repetitions of each test, after one untimed warm-up."""
    seed: int = 0
    """Seed of the random weights."""
    time_budget_s: float = 1800.0
    """Wall-clock budget of one variant's whole set of tests (model files made on first use not included)."""

    def __post_init__(self) -> None:
        for name in ("n_prompt", "n_gen", "repetitions"):
            if getattr(self, name) <= 0:
                raise SpecError(f"inference {self.name!r}: {name} must be positive")
        if not self.depths or any(d < 0 for d in self.depths) or len(set(self.depths)) != len(self.depths):
            raise SpecError(f"inference {self.name!r}: depths must be distinct and non-negative")

    def tests(self) -> list[InferenceTest]:
        """Every test in llama-bench's order: for each depth, prompt processing then generation."""
        out = []
        tests: tuple[tuple[Literal["pp", "tg"], int], ...] = (("pp", self.n_prompt), ("tg", self.n_gen))
        for depth in self.depths:
            for kind, n in tests:
                name = f"{self.name}-{kind}{n}-d{depth}"
                out.append(InferenceTest(workload=name, kind=kind, n_tokens=n, depth=depth))
        return out


@dataclass(frozen=True, kw_only=True, slots=True)
class InferenceTest:
    """One test of an `Inference`: a workload of its own on the site."""

    workload: str
    kind: Literal["pp", "tg"]
    n_tokens: int
    depth: int


@dataclass(frozen=True, kw_only=True, slots=True)
class Serving:
    """Offline throughput and served latency of a Llama-shaped model (vLLM): fixed input and output lengths, EOS
    ignored, random token-id prompts. The offline test generates `num_prompts` requests in one batch per repetition;
    each served point drives the engine's OpenAI-compatible server with `serve_prompts` streamed requests (a
    closed-loop point at least `serve_waves` times its concurrency), either
    closed-loop at a fixed concurrency or open-loop at a Poisson request rate. Every test is its own workload, named
    `{name}-throughput-i512-o128`, `{name}-serve-c8-i512-o128` or `{name}-serve-r4-i512-o128`."""

    name: str
    """Unique within its suite; the workloads' prefix, e.g. `llama-8b`."""
    model: str
    """Key of a llama-family model in the same suite file."""
    variants: tuple[str, ...]
    """Variant names (from variants.toml) run on every test."""
    device: Literal["cpu", "cuda"]
    """Where the engine runs."""
    input_len: int = 512
    """Prompt tokens of every request."""
    output_len: int = 128
    """Generated tokens of every request (EOS ignored)."""
    num_prompts: int = 1000
    """Requests of the offline test, submitted at once (`vllm bench throughput --num-prompts`)."""
    repetitions: int = 3
    """Timed repetitions of the offline test, each with fresh prompts, after one untimed warm-up batch."""
    concurrencies: tuple[int, ...] = (1,)
    """Closed-loop served points: requests in flight at once."""
    request_rates: tuple[float, ...] = ()
    """Open-loop served points: Poisson arrivals per second."""
    serve_prompts: int = 64
    """Requests per served point (at least the concurrency)."""
    serve_waves: int = 4
    """A closed-loop point sends at least this many times its concurrency in requests, so that the ramp of its first
    wave and the tail of its last do not decide its throughput (on 2xH200 a single wave of 32 measured 4% apart from
    `vllm bench serve`'s single wave, data/h100 2026-11-30)."""
    slo_ttft_ms: float = 1000.0
    """Goodput counts requests whose time to first token is at most this..."""
    slo_tpot_ms: float = 100.0
    """...and whose time per output token is at most this (DistServe's goodput)."""
    seed: int = 0
    """Seed of the weights and of the prompts."""
    time_budget_s: float = 1800.0
    """Wall-clock budget of one variant's whole set of tests (engine starts included)."""

    def __post_init__(self) -> None:
        for name in ("input_len", "output_len", "num_prompts", "repetitions", "serve_prompts", "serve_waves"):
            if getattr(self, name) <= 0:
                raise SpecError(f"serving {self.name!r}: {name} must be positive")
        if any(c <= 0 or c > self.serve_prompts for c in self.concurrencies):
            raise SpecError(f"serving {self.name!r}: concurrencies must be in [1, serve_prompts]")
        if any(r <= 0 for r in self.request_rates):
            raise SpecError(f"serving {self.name!r}: request_rates must be positive")

    def tests(self) -> list[ServingTest]:
        """The offline test, then the served points: concurrencies, then request rates."""
        shape = f"i{self.input_len}-o{self.output_len}"
        out = [ServingTest(workload=f"{self.name}-throughput-{shape}", kind="offline", requests=self.num_prompts)]
        out += [
            ServingTest(
                workload=f"{self.name}-serve-c{c}-{shape}",
                kind="serve",
                concurrency=c,
                requests=max(self.serve_prompts, self.serve_waves * c),
            )
            for c in self.concurrencies
        ]
        out += [
            ServingTest(
                workload=f"{self.name}-serve-r{r:g}-{shape}", kind="serve", request_rate=r, requests=self.serve_prompts
            )
            for r in self.request_rates
        ]
        return out


@dataclass(frozen=True, kw_only=True, slots=True)
class ServingTest:
    """One test of a `Serving` entry: a workload of its own on the site."""

    workload: str
    kind: Literal["offline", "serve"]
    requests: int
    """Requests of one repetition (offline: `num_prompts`) or of the served point."""
    concurrency: int | None = None
    """Closed loop: this many requests in flight (served points)."""
    request_rate: float | None = None
    """Open loop: Poisson arrivals per second (served points)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Variant:
    """An engine plus every setting it uses, written out even where it equals the engine's default."""

    name: str
    """e.g. `ddp-fp32-stock`."""
    engine: str
    """The engine that runs it, one of the registry's (runners/engines/__init__.py; `external`: a command of the
    engine's own, runners/engines/external/runner.py)."""
    tier: Tier
    """`stock`: what the tutorials show; `tuned`: every advantage; `claim`: reported elsewhere."""
    description: str
    """One sentence a reader sees beside the number."""
    settings: dict[str, Any] = field(default_factory=dict)
    """Engine settings, all written out; the runner rejects any it does not know."""

    def __post_init__(self) -> None:
        if self.engine not in engines.ENGINES:
            raise SpecError(
                f"variant {self.name!r}: engine {self.engine!r} is not one of {', '.join(engines.ENGINES)} "
                "(runners/engines/__init__.py)"
            )


@dataclass(frozen=True, kw_only=True, slots=True)
class Suite:
    """A named set of workloads for a class of hardware."""

    name: str
    description: str
    hardware: str
    """The class of machine it is meant for, in words."""
    models: dict[str, ModelSpec]
    workloads: tuple[Workload, ...]
    variants: dict[str, Variant]
    """Every variant used by a workload, resolved from variants.toml."""
    inference: tuple[Inference, ...] = ()
    """Prompt-processing and generation tests (llama-bench style)."""
    serving: tuple[Serving, ...] = ()
    """Offline throughput and served latency tests (vLLM)."""
    title: str = ""
    """The suite's name on the site, where its `name` (kept: records and commands use it) says less than it should:
    the suite named "h100" holds H200 runs. Optional; the site shows `name` without it."""
    path: str = ""

    def workload(self, name: str) -> Workload:
        for w in self.workloads:
            if w.name == name:
                return w
        raise SpecError(f"{self.path}: no workload {name!r}; known: {[w.name for w in self.workloads]}")

    def inference_entry(self, name: str) -> Inference:
        for entry in self.inference:
            if entry.name == name:
                return entry
        raise SpecError(f"{self.path}: no inference entry {name!r}; known: {[e.name for e in self.inference]}")

    def serving_entry(self, name: str) -> Serving:
        for entry in self.serving:
            if entry.name == name:
                return entry
        raise SpecError(f"{self.path}: no serving entry {name!r}; known: {[e.name for e in self.serving]}")


# --- strict loading -----------------------------------------------------------------------------------------


def check_written_out(
    where: str, settings: dict[str, Any], defaults: dict[str, Any], choices: dict[str, tuple[Any, ...]]
) -> dict[str, Any]:
    """An engine's settings checked against its defaults: every one written out, none unknown, each of its
    default's type (an int where a float is expected becomes a float) and within its choices. `where` names the
    variant in the errors."""
    s = dict(settings)
    unknown = sorted(set(s) - set(defaults))
    if unknown:
        raise SpecError(f"{where}: unknown key {unknown[0]!r}; expected {sorted(defaults)}")
    missing = sorted(set(defaults) - set(s))
    if missing:
        raise SpecError(f"{where}: missing key {missing[0]!r}: write every setting out, defaults included")
    for key, default in defaults.items():
        value = s[key]
        if isinstance(default, float):
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            s[key] = float(value) if ok else value
        else:
            ok = isinstance(value, type(default))
        if not ok:
            raise SpecError(f"{where}: key {key!r}: expected {type(default).__name__}, got {value!r}")
        if key in choices and value not in choices[key]:
            raise SpecError(f"{where}: key {key!r}: {value!r} is not one of {list(choices[key])}")
    return s


def _check_type(value: Any, hint: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if hint is Any:
        return value
    if origin is Literal:
        if value not in typing.get_args(hint):
            raise SpecError(f"{where}: {value!r} is not one of {list(typing.get_args(hint))}")
        return value
    if origin is tuple:
        (inner, _ellipsis) = typing.get_args(hint)
        if not isinstance(value, list):
            raise SpecError(f"{where}: expected a list, got {type(value).__name__}")
        return tuple(_check_type(v, inner, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is dict or hint is dict:
        if not isinstance(value, dict):
            raise SpecError(f"{where}: expected a table, got {type(value).__name__}")
        return dict(value)
    if origin in (typing.Union, types.UnionType):
        raise SpecError(f"{where}: unions are not supported in specs")  # pragma: no cover - programming error
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SpecError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if hint is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise SpecError(f"{where}: expected an integer, got {value!r}")
    if not isinstance(value, hint):
        raise SpecError(f"{where}: expected {hint.__name__}, got {type(value).__name__} {value!r}")
    return value


def build(cls: type, data: dict[str, Any], where: str, **extra: Any) -> Any:
    """Build a spec dataclass from a TOML table, rejecting unknown, missing and mistyped keys."""
    if not isinstance(data, dict):
        raise SpecError(f"{where}: expected a table")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise SpecError(f"{where}: unknown key {unknown[0]!r}; allowed keys: {sorted(set(fields) - set(extra))}")
    kwargs: dict[str, Any] = dict(extra)
    for name, f in fields.items():
        if name in extra:
            continue
        if name not in data:
            no_default = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            if no_default:
                raise SpecError(f"{where}: missing key {name!r}")
            continue
        kwargs[name] = _check_type(data[name], hints[name], f"{where}: key {name!r}")
    try:
        return cls(**kwargs)
    except SpecError as e:
        raise SpecError(f"{where}: {e}") from None


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file's tables, or a SpecError naming the file and what is wrong with it."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{path}: not valid TOML: {e}") from None
    except UnicodeDecodeError as e:
        raise SpecError(f"{path}: not valid TOML: not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise SpecError(f"{path}: cannot be read ({e.strerror or e})") from None


def load_variants(path: Path = VARIANTS_FILE) -> dict[str, Variant]:
    raw = read_toml(path)
    unknown = sorted(set(raw) - {"variants"})
    if unknown:
        raise SpecError(f"{path}: unknown top-level key {unknown[0]!r}; expected only [variants.NAME] tables")
    return {
        name: build(Variant, table, f"{path}: [variants.{name}]", name=name)
        for name, table in raw.get("variants", {}).items()
    }


def suite_names() -> list[str]:
    """The suites Fair Fight ships (runners/suites/NAME.toml), by name."""
    return sorted(p.stem for p in SUITES_DIR.glob("*.toml") if p.stem != "variants")


def load_suite(name_or_path: str | Path, variants_path: Path = VARIANTS_FILE, external: Path | None = None) -> Suite:
    """Load `runners/suites/NAME.toml` (or an explicit path) and resolve its models and variants. `external` is a
    variants file of engines Fair Fight does not ship (engine `external`): its variants join every training
    workload."""
    path = Path(name_or_path)
    if not path.suffix:
        if not path.parent.parts and str(name_or_path) in suite_names():
            path = SUITES_DIR / f"{name_or_path}.toml"
        else:
            raise SpecError(arguments.unknown("suite", str(name_or_path), suite_names()))
    if not path.is_file():
        raise SpecError(f"{path}: no such suite file; the suites are {', '.join(suite_names())}")
    raw = read_toml(path)
    unknown = sorted(set(raw) - {"suite", "models", "workloads", "inference", "serving"})
    if unknown:
        raise SpecError(
            f"{path}: unknown top-level key {unknown[0]!r}; expected [suite], [models.*], [[workloads]], [[inference]],"
            " [[serving]]"
        )
    head = raw.get("suite")
    if head is None:
        raise SpecError(f"{path}: missing [suite] table")
    head_keys = {"name", "description", "hardware"}
    for key in sorted(set(head) - head_keys - {"title"}):
        raise SpecError(f"{path}: [suite]: unknown key {key!r}; allowed keys: {sorted(head_keys | {'title'})}")
    for key in sorted(head_keys - set(head)):
        raise SpecError(f"{path}: [suite]: missing key {key!r}")
    models = {
        name: build(ModelSpec, table, f"{path}: [models.{name}]", name=name)
        for name, table in raw.get("models", {}).items()
    }
    workloads = tuple(
        build(Workload, table, f"{path}: [[workloads]] #{i + 1}") for i, table in enumerate(raw.get("workloads", []))
    )
    inference = tuple(
        build(Inference, table, f"{path}: [[inference]] #{i + 1}") for i, table in enumerate(raw.get("inference", []))
    )
    serving = tuple(
        build(Serving, table, f"{path}: [[serving]] #{i + 1}") for i, table in enumerate(raw.get("serving", []))
    )
    all_variants = load_variants(variants_path)
    if external is not None:
        added = load_variants(Path(external))
        for name, variant in added.items():
            if variant.engine != "external":
                raise SpecError(
                    f"{external}: [variants.{name}]: engine must be 'external' in a file of outside engines"
                )
            if name in all_variants:
                raise SpecError(f"{external}: [variants.{name}]: {name!r} is already a variant of {variants_path}")
            command = variant.settings.get("command")
            if not (isinstance(command, list) and command and all(isinstance(c, str) for c in command)):
                raise SpecError(f"{external}: [variants.{name}]: settings.command must be a list of strings")
        all_variants |= added
        workloads = tuple(dataclasses.replace(w, variants=(*w.variants, *added)) for w in workloads)
    seen: set[str] = set()
    for what, entry in [("inference", e) for e in inference] + [("serving", e) for e in serving]:
        if entry.model not in models:
            raise SpecError(f"{path}: {what} {entry.name!r}: key 'model': unknown model {entry.model!r}")
        if models[entry.model].family != "llama":
            raise SpecError(f"{path}: {what} {entry.name!r}: key 'model': {entry.model!r} is not a llama model")
        for v in entry.variants:
            if v not in all_variants:
                raise SpecError(f"{path}: {what} {entry.name!r}: key 'variants': {v!r} is not in {variants_path}")
        for test in entry.tests():
            if test.workload in seen:
                raise SpecError(f"{path}: workload name {test.workload!r} appears twice")
            seen.add(test.workload)
    for w in workloads:
        if w.name in seen:
            raise SpecError(f"{path}: workload name {w.name!r} appears twice")
        seen.add(w.name)
        if w.model not in models:
            raise SpecError(f"{path}: workload {w.name!r}: key 'model': unknown model {w.model!r}")
        if w.seq_len > models[w.model].context:
            raise SpecError(
                f"{path}: workload {w.name!r}: key 'seq_len': {w.seq_len} exceeds the model's context "
                f"{models[w.model].context}"
            )
        for v in w.variants:
            if v not in all_variants:
                raise SpecError(f"{path}: workload {w.name!r}: key 'variants': {v!r} is not in {variants_path}")
    used = {v for w in workloads for v in w.variants} | {v for e in (*inference, *serving) for v in e.variants}
    return Suite(
        name=_check_type(head["name"], str, f"{path}: [suite] key 'name'"),
        description=_check_type(head["description"], str, f"{path}: [suite] key 'description'"),
        hardware=_check_type(head["hardware"], str, f"{path}: [suite] key 'hardware'"),
        title=_check_type(head.get("title", ""), str, f"{path}: [suite] key 'title'"),
        models=models,
        workloads=workloads,
        variants={k: v for k, v in all_variants.items() if k in used},
        inference=inference,
        serving=serving,
        path=str(path),
    )


def to_json(obj: Any) -> str:
    """Canonical JSON of a spec (sorted keys) for the record's `config` column."""
    return json.dumps(dataclasses.asdict(obj), sort_keys=True, default=list)


def inference_cli(prog: str, description: str, *, tool: bool = False) -> Any:
    """The command line the bench session gives an inference runner (llama.cpp, MLX), or with `tool` the module
    that runs the engine's own benchmark beside it: the entry, variant and run stamp, the tests to run, where the
    model files are cached, and where the records go (JSON Lines the bench writes result files from)."""
    import argparse
    import os

    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--suite", required=True)
    p.add_argument("--inference", required=True, help="name of an [[inference]] entry of the suite")
    p.add_argument("--variant", required=True)
    p.add_argument("--run-stamp", required=True, help="UTC start and random suffix, `STAMP~HEX` (from bench)")
    p.add_argument("--out", type=Path, required=True, help="JSON Lines: one test's record per line, as it ends")
    if not tool:
        p.add_argument("--note", default=None)
    p.add_argument("--cache-dir", type=Path, default=Path(os.environ.get("FAIRFIGHT_CACHE", "build/cache")) / "models")
    p.add_argument("--workload", action="append", help="only these tests (workload names)")
    return p


class InferenceRun(NamedTuple):
    """What an inference runner's command line (`inference_cli`) asks it to run."""

    args: Any
    suite: Suite
    entry: Inference
    variant: Variant
    model: ModelSpec
    """The entry's model."""


def inference_run(parser: Any, argv: list[str] | None) -> InferenceRun:
    """Parse an inference runner's command line (`parser`: `inference_cli`, with any arguments of its own) and load
    the suite, entry, variant and model it names."""
    args = parser.parse_args(argv)
    suite = load_suite(args.suite)
    entry = suite.inference_entry(args.inference)
    return InferenceRun(args, suite, entry, suite.variants[args.variant], suite.models[entry.model])


def sweep_points(items: list[str] | None) -> list[list[str]]:
    """`--set key=a,b,c`: the `--set` items of each run of the sweep they ask for, one value of each key a run (every
    combination when several keys have several values, in the order given). Commas inside brackets, braces or quotes
    are a value's own (`--set sizes=[1,2]` is one run); no `--set` is one run with none."""
    import itertools

    choices = []
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise SpecError(f"--set {item!r}: expected KEY=VALUE (KEY=A,B,C for a sweep)")
        values = _split_top_level(raw, item)
        if any(not v for v in values) and len(values) > 1:
            raise SpecError(f"--set {item!r}: an empty value in the list; write KEY=A,B,C")
        choices.append([f"{key}={v}" for v in values])
    keys = [c[0].partition("=")[0] for c in choices]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise SpecError(f"--set {repeated[0]} given more than once: give one --set {repeated[0]}=A,B,C for a sweep")
    return [list(point) for point in itertools.product(*choices)]


def _split_top_level(raw: str, item: str) -> list[str]:
    """`raw` split at the commas outside brackets, braces and double quotes."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(raw):
        if ch == '"' and (i == 0 or raw[i - 1] != "\\"):
            quoted = not quoted
        elif not quoted and ch in "[{":
            depth += 1
        elif not quoted and ch in "]}":
            depth -= 1
        elif not quoted and depth == 0 and ch == ",":
            parts.append(raw[start:i])
            start = i + 1
    if quoted or depth:
        raise SpecError(f"--set {item!r}: an unclosed quote or bracket")
    return [*parts, raw[start:]]


def parse_overrides(items: list[str] | None) -> dict[str, Any]:
    """`--set key=value` pairs for sweeps; values parse as JSON where they can (25 → 25, true → True)."""
    import json

    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise SpecError(f"--set {item!r}: expected KEY=VALUE")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out
