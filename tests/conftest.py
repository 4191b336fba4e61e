"""Shared fixtures: one real cpu-smoke bench run (torch, gloo, 2 processes) and a site built from it; the committed
data/ loaded and derived once; the engines built or installed apart (llama.cpp, vLLM's CPU environment, MLX), made
when the first test that needs one runs, and the check that such tests carry the `engine` marker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

if TYPE_CHECKING:
    from generator import derive

ROOT = Path(__file__).resolve().parent.parent
SCALING_NOTE = "one-process point for the scaling section (test fixture)"
REPEAT_NOTE = "A/A repeat of the stock baseline (test fixture)"
TRAIN = "train-gpt-tiny-mb4"
TORCH_VARIANTS = ("ddp-fp32-stock", "ddp-amp-stock", "ddp-tuned", "fsdp2-compile")
"""cpu-smoke's training workload (its llama.cpp tests have fixtures of their own, in test_llamacpp.py)."""


def run_module(*args: str, cwd: Path = ROOT, check: bool = True, **env: str) -> subprocess.CompletedProcess[str]:
    """Run `python -m ...` from the repository root in a child process, as a user would."""
    proc = subprocess.run(
        [sys.executable, "-m", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=os.environ | {"NO_MKDOCS_2_WARNING": "1"} | env,
        timeout=900,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-5000:]}")
    return proc


def checked_rows(path: Path) -> list[dict[str, Any]]:
    """A result file's rows, once its table passes the schema's checks (`schema.check_table` finds nothing)."""
    from runners import layout, schema

    table = layout.read(path)
    assert schema.check_table(table) == [], path
    return table.to_pylist()


def processes_with(marker: str) -> list[int]:
    """The processes (but this one) whose command line holds `marker`: a test's runners, found by the folder they write
    to, that must not outlive their bench."""
    out = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                if marker in (proc / "cmdline").read_bytes().decode(errors="replace"):
                    out.append(int(proc.name))
            except OSError:
                continue
    return out


MARKED_FIXTURES = {
    "llama_build": ("engine", "llama.cpp"),
    "vllm_python": ("engine", "vLLM"),
    "mlx_engine": ("engine", "MLX"),
    "torch_engine": ("bench", "torch bench sessions"),
}
"""The fixtures that bring an engine, and the marker a test that asks for one (directly or through another fixture)
must carry, checked at collection: `engine` for an engine built or installed apart from the tests' environment,
`bench` for real torch bench sessions on CPU (seconds to a minute each) and what reads their output. `nox -s
tests-fast` leaves out both."""
BUILD_TIMEOUT_S = {"llama_build": 1800, "vllm_python": 900}
"""Added to the timeout of the first test that makes an engine (not made yet): llama.cpp compiles for 4 to 13
minutes on two cores, vLLM's environment installs in 1 to 4."""


@pytest.fixture(scope="session")
def llama_build() -> Iterator[dict[str, str]]:
    """llama.cpp built from llama-cpp-python's vendored source (libraries and llama-bench) with the Python package
    installed on top: the variables that point the runner and the cross-check at it, set in this process for the
    rest of the session (llama_cpp loads its library from LLAMA_CPP_LIB_PATH here too). Made by the first test that
    needs it, once per machine (the user cache, runners/engines/llamacpp/build.py), and reused after."""
    from runners.engines.llamacpp import build as llamacpp_build

    env = llamacpp_build.env_for() if _llama_made() else llamacpp_build.build()
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        yield env


def _llama_made() -> bool:
    """A finished build in the user cache, and llama-cpp-python's Python half of the same release installed here."""
    from importlib import metadata

    from runners.engines.llamacpp import build as llamacpp_build

    try:
        installed = metadata.version("llama_cpp_python")
    except metadata.PackageNotFoundError:
        return False
    return installed == llamacpp_build.VERSION and llamacpp_build.finished()


@pytest.fixture(scope="session")
def vllm_python() -> Iterator[str]:
    """The python of vLLM's CPU environment (runners/engines/vllm/env.py), made by the first test that needs it,
    once per machine, and set as FAIRFIGHT_VLLM_PYTHON for the rest of the session; a FAIRFIGHT_VLLM_PYTHON already
    set names another one."""
    from runners.engines.vllm import env as vllm_env

    python = os.environ.get("FAIRFIGHT_VLLM_PYTHON") or str(vllm_env.ensure())
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FAIRFIGHT_VLLM_PYTHON", python)
        yield python


def _vllm_made() -> bool:
    from runners.engines.vllm import env as vllm_env

    return bool(os.environ.get("FAIRFIGHT_VLLM_PYTHON")) or vllm_env.ready()


@pytest.fixture(scope="session")
def torch_engine() -> str:
    """torch on CPU (the `torch` extra): its version. Tests that run real torch bench sessions (gloo, 2 processes)
    ask for it, which marks them `bench`; bench_data does, so its readers are `bench` tests too."""
    import torch

    return torch.__version__


@pytest.fixture(scope="session")
def mlx_engine() -> str:
    """MLX's CPU build (the `mlx` extra): its version. Tests that run MLX ask for it, which marks them as engine
    tests."""
    import mlx.core as mx

    return mx.__version__


MADE = {"llama_build": _llama_made, "vllm_python": _vllm_made}
"""Whether the engine a fixture brings is there already (then the first test to ask for it waits for no build)."""


def unmarked_engine_tests(items: list[pytest.Item]) -> list[str]:
    """The tests that ask for a fixture of MARKED_FIXTURES without its marker."""
    return [
        f"{item.nodeid}: @pytest.mark.{marker} (it uses {what} through the {fixture} fixture)"
        for item in items
        for fixture, (marker, what) in MARKED_FIXTURES.items()
        if fixture in getattr(item, "fixturenames", ()) and item.get_closest_marker(marker) is None
    ]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that asks for an engine fixture carries its marker, or the session stops here naming it; the first
    test to make an engine gets the build's time on top of its timeout."""
    unmarked = unmarked_engine_tests(items)
    if unmarked:
        raise pytest.UsageError("mark these tests:\n  " + "\n  ".join(unmarked))
    if not config.pluginmanager.hasplugin("timeout"):
        return
    for fixture, extra_s in BUILD_TIMEOUT_S.items():
        first = next((item for item in items if fixture in getattr(item, "fixturenames", ())), None)
        if first is None or MADE[fixture]():
            continue
        marker = first.get_closest_marker("timeout")
        if marker and (marker.args or "timeout" in marker.kwargs):
            given = marker.args[0] if marker.args else marker.kwargs["timeout"]
        else:  # `--timeout 0` means none: only an absent option falls back to the ini value
            option = config.getoption("timeout")
            given = option if option is not None else config.getini("timeout")
        base = float(given or 0)
        if base > 0:  # 0: no timeout at all
            first.add_marker(pytest.mark.timeout(base + extra_s), append=False)  # the closest marker wins


@pytest.fixture(scope="session")
def bench_data(
    tmp_path_factory: pytest.TempPathFactory, torch_engine: str
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """data/ holding the result of a real `python -m runners bench --suite cpu-smoke` run."""
    data = tmp_path_factory.mktemp("bench") / "data"
    torch_variants = [a for v in TORCH_VARIANTS for a in ("--variant", v)]  # the workload also has MLX (test_mlx.py)
    proc = run_module(
        "runners", "bench", "--suite", "cpu-smoke", "--workload", TRAIN, *torch_variants, "--data-dir", str(data)
    )
    return data, proc


@pytest.fixture(scope="session")
def built_site(
    bench_data: tuple[Path, subprocess.CompletedProcess[str]], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A site built from bench_data plus one corrupt file, which must be reported and kept out, and two more
    stock runs (one process; a repeat) that feed the scaling and A/A sections."""
    data, _ = bench_data
    work = tmp_path_factory.mktemp("site")
    corrupt_data = work / "data"
    corrupt_data.mkdir()
    for path in data.rglob("*.parquet"):
        target = corrupt_data / path.relative_to(data)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    (corrupt_data / "cpu-smoke" / "corrupt-run.parquet").write_bytes(b"PAR1 this is not a parquet file")
    # Two more real runs of the stock baseline: one on a single process (the scaling section's one-device point)
    # and a repeat on two (an A/A pair with bench_data's own), each with an operator's note.
    stock = ("runners", "bench", "--suite", "cpu-smoke", "--workload", TRAIN, "--variant", "ddp-fp32-stock")
    stock += ("--data-dir", str(corrupt_data))
    run_module(*stock, "--world-size", "1", "--note", SCALING_NOTE)
    run_module(*stock, "--note", REPEAT_NOTE)
    # built as a user builds it (`fairfight site`, which also supplies the command reference page)
    run_module(
        "fairfight", "site", "--data", str(corrupt_data), "--out", str(work / "site"), "--work", str(work / "build")
    )
    return work / "site"


@pytest.fixture(scope="session")
def committed_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as `fairfight site` builds it from the repository's own data/ (every kind of board, real runs), built
    once for the session: the browser tests read it and write nothing into it."""
    work = tmp_path_factory.mktemp("committed-site")
    out = ("--out", str(work / "site"), "--work", str(work / "b"))
    run_module("fairfight", "site", "--data", str(ROOT / "data"), *out)
    return work / "site"


@pytest.fixture(scope="session")
def committed_results() -> Iterator[derive.Results]:
    """The committed data/ as the tests of its figures read it: loaded, checked and derived once for the session
    (`derive.results` of `checks.checked` of `load.load`; its `records` and `runs` are what `checks.checked` returns).
    Shared, so read-only: a test that needs other records derives its own. Its frames are polars' and its dataclasses
    frozen, but a list, a dict or `records` (a `load.Loaded`) could still be changed in place: after the session, any
    part replaced, resized or given another schema is named and fails the run."""
    from generator import derive, load
    from generator.derive import checks

    results = derive.results(*checks.checked(load.load(ROOT / "data")))
    before = _layout(results, "committed_results")
    yield results
    after = _layout(results, "committed_results")
    changed = sorted((k for k in before.keys() | after.keys() if before.get(k) != after.get(k)), key=len)  # outermost
    assert not changed, f"a test changed the shared committed_results (copy what you change): {changed[:5]}"


def _layout(obj: object, path: str, out: dict[str, object] | None = None) -> dict[str, object]:
    """Every part of `obj` by its path: which object it is, a container's length, and a frame's shape and schema
    (what polars' in-place calls change, all but a column replaced by one of its own type)."""
    import dataclasses

    import polars as pl

    out = {} if out is None else out
    if isinstance(obj, pl.DataFrame):
        out[path] = (id(obj), obj.shape, tuple(obj.schema.items()))
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out[path] = id(obj)
        for f in dataclasses.fields(obj):
            _layout(getattr(obj, f.name), f"{path}.{f.name}", out)
    elif isinstance(obj, dict):
        out[path] = (id(obj), len(obj))
        for key, value in obj.items():
            _layout(value, f"{path}[{key!r}]", out)
    elif isinstance(obj, list | tuple):
        out[path] = (id(obj), len(obj))
        for n, value in enumerate(obj):
            _layout(value, f"{path}[{n}]", out)
    else:
        out[path] = id(obj)
    return out


def committed(folder: Path, message: str = "data") -> str:
    """`folder` made a git repository (once) with everything in it committed; returns the commit. For tests of what
    git's history anchors (editions, `release`): a data folder is committed before an edition freezes it."""
    git = ["git", "-C", str(folder), "-c", "user.name=Fair Fight tests", "-c", "user.email=tests@invalid"]
    if not (folder / ".git").exists():
        subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", message], check=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


def write_as_submitted(table: pa.Table, path: Path, **options: object) -> Path:
    """A record's table written straight to Parquet, past every check of the store, as a hostile submitter would: in
    the layout of the version it says (schema 3's, runners/layout.py, or an older one's columns as they are)."""
    from runners import layout, schema

    version = table.column("schema_version")[0].as_py() if "schema_version" in table.column_names else None
    if not (isinstance(version, int) and version >= schema.LAYOUT_VERSION):
        pq.write_table(table, path, **options)  # type: ignore[arg-type]
        return path
    # the run-level values of row 0, whatever they are, in the metadata (not layout.to_file, which takes only a whole
    # record): a column the table lacks is a key the metadata lacks; the rest stay rows, run_id with them
    first = table.slice(0, 1).to_pylist()[0] if table.num_rows else {}
    run_fields = {"schema_version", *schema.RUN_COLUMNS}
    run = {
        k: v.isoformat().replace("+00:00", "Z") if isinstance(v, datetime) else v
        for k, v in first.items()
        if k in run_fields
    }
    rows = table.select([c for c in table.column_names if c not in run_fields or c == "run_id"])
    return write_footer_once(rows.replace_schema_metadata({layout.RUN_KEY: json.dumps(run).encode()}), path, **options)


def write_footer_once(table: pa.Table, path: Path, **options: object) -> Path:
    """A table written with its schema's metadata as the footer's key-value entries and no `ARROW:schema`, as the
    store writes (runners/layout.py `write`): a file whose `ARROW:schema` held the run entry a second time is refused
    for that alone (layout.footer_problem), whatever else is wrong with it."""
    with pq.ParquetWriter(path, table.schema.remove_metadata(), store_schema=False, **options) as writer:  # type: ignore[arg-type]
        writer.write_table(table.replace_schema_metadata(None))
        if table.schema.metadata:
            writer.add_key_value_metadata(table.schema.metadata)
    return path
