"""The engine registry (runners/engines/__init__.py) and the layout it stands for: an engine is one folder and one
entry, the bench reaches engines only through the registry, and the imports run one way."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from runners import engines, schema, spec

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "runners" / "engines"


def test_every_engine_is_one_folder_and_one_entry() -> None:
    folders = {p.name for p in FOLDER.iterdir() if p.is_dir() and not p.name.startswith("_")}
    assert folders == set(engines.ENGINES), "a folder without an entry, or an entry without a folder"
    for name, engine in engines.ENGINES.items():
        assert (FOLDER / name / "__init__.py").exists()
        modules = [engine.train_runner, engine.test_runner, engine.tool_runner]
        targets = [engine.launch_env, engine.failure_config, engine.importer]
        for module in filter(None, modules + [t.partition(":")[0] for t in targets if t]):
            assert module.startswith(f"runners.engines.{name}."), (name, module)  # its own folder only
            importlib.import_module(module)  # every engine imports without its engine installed
        for target in filter(None, targets):
            module, _, function = target.partition(":")
            assert callable(getattr(importlib.import_module(module), function)), target
        # what it runs, it has a runner for
        assert ("train" in engine.kinds) == (engine.train_runner is not None), name
        assert bool({"inference", "serving"} & set(engine.kinds)) == (engine.test_runner is not None), name
        if "inference" in engine.kinds and engine.tool:
            assert engine.tool_runner is not None and engine.failure_config is not None, name
        assert (engine.tool is None) == (engine.importer is None), name  # a tool's output elsewhere can come in


def test_spec_and_schema_read_the_registry() -> None:
    assert tuple(engines.ENGINES) == schema.RUNNER_ENGINES
    assert set(schema.IMPORTED_ENGINES) == {e.tool for e in engines.ENGINES.values() if e.tool}
    for suite in ("cpu-smoke", "h100"):
        for variant in spec.load_suite(suite).variants.values():
            assert variant.engine in engines.ENGINES
    with pytest.raises(spec.SpecError, match="is not one of torch, mlx"):
        spec.Variant(name="x", engine="tensorflow", tier="stock", description="d")
    with pytest.raises(KeyError, match="runs no serving tests"):
        engines.get("torch", "serving")


def test_pages_are_known_page_kinds() -> None:
    """An engine's pages (`Engine.pages`) are kinds the generator draws (`engines.PAGES`): a misspelt one would leave
    the engine off its page without a word, so it raises, as asking for a page kind that does not exist does."""
    with pytest.raises(ValueError, match=re.escape("pages ['side-by-side'] not in")):
        engines.Engine(name="x", about="x", kinds=("inference",), packages=(), pages=frozenset({"side-by-side"}))
    with pytest.raises(KeyError, match="no page kind 'sidebyside'"):
        engines.titles("sidebyside")
    for engine in engines.ENGINES.values():  # both page kinds show inference and serving tests
        assert not engine.pages or {"inference", "serving"} & set(engine.kinds), engine.name


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth (function-level imports too)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return out


def test_the_bench_imports_no_engine() -> None:
    imported = _imports(ROOT / "runners" / "bench.py")
    assert not {m for m in imported if m.startswith("runners.engines.")}, "bench.py must reach engines via the registry"


def test_imports_run_one_way_without_a_circle() -> None:
    """runners never imports generator; neither imports the front door (fairfight/, the CLI above both); no module
    imports, at any depth, a module that imports it back."""
    modules = {}
    for package in ("runners", "generator", "fairfight"):
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {name: {m for m in _imports(path) if m in modules and m != name} for name, path in modules.items()}
    for name, deps in graph.items():
        if name.startswith("runners"):
            assert not any(d.startswith("generator") for d in deps), name
        if not name.startswith("fairfight"):
            assert not any(d.startswith("fairfight") for d in deps), name
    # a circle is a module reachable from itself
    for start in graph:
        seen, todo = set(), list(graph[start])
        while todo:
            m = todo.pop()
            assert m != start, f"import circle through {start}"
            if m not in seen:
                seen.add(m)
                todo += graph[m]
