"""The generator's two halves hold to their jobs (issues 36 and 58): `generator/derive/` (and the derivation modules it
is made of) is pure polars and dataclasses, importing no Jinja, altair or rendering module; `generator/render/` writes
pages from a `derive.Results` and neither calls a derivation nor groups or filters records to decide what counts, nor
imports the statistics, formulas, schema or files the figures are derived from.
Read from the source (AST) and, for what the derive half pulls in through its imports, from a fresh interpreter."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GENERATOR = ROOT / "generator"

RENDERING = ("jinja2", "altair", "markupsafe", "mkdocs", "vl_convert", "generator.render", "generator.render.pages",
             "generator.render.charts", "generator.build")  # fmt: skip
"""What the derivation half must never import."""
GROUPING = {"group_by", "filter", "partition_by", "agg", "unique"}
"""Polars methods that decide which records count: the derivation half's job."""
PRESENTATION = {
    ("run_samples.py", "sample_texts"): "thins each run's samples to the points its static chart draws",
    ("run_samples.py", "csv_texts"): "one CSV text per run of its own rows, as they were recorded",
    (
        "runs.py",
        "start_run_pages",
    ): "the rows of the run pages still to render (the others are kept from the last build)",
    ("runs.py", "_feed"): "the rows of a block of the run pages still to render, a block at a time",
    ("runs.py", "_texts_of"): "the rows of a few of a block's runs, for their static charts, a few runs at a time",
    ("runs.py", "_write_csvs"): "the rows of the charted runs, written beside their pages as the charts' data",
    ("parts.py", "samples_parts"): "cuts each suite's runs into download parts by id; every run is in one",
    ("charts.py", "speedup"): "draws the rows that have a speedup (a row with no stock baseline beside it has none)",
    ("charts.py", "mfu"): "draws each row's MFU against each peak it has (a CPU run has no datasheet peak)",
    ("charts.py", "step_time_distribution"): "draws the rows that have step-time percentiles (an import has none)",
    ("charts.py", "scaling"): "draws the scaling points that have an efficiency (`Board.scaling_efficiencies`)",
    ("charts.py", "engine_throughput"): "draws the runs of `Board.drawn` that have a figure to draw",
    ("model_charts.py", "side_by_side"): "draws the engines that have a decode figure on the side-by-side card",
}
"""Render functions allowed such a method, each with why it decides nothing about what counts."""
WORDING = {
    "generator.derive.words": "a number or a count as the pages write it (`fmt`, `counted`)",
    "generator.derive.readable": "a run's settings in words: what its record says",
    "generator.derive.reproduce": "the command line that reproduces a run, rebuilt from its checked fields",
}
"""Modules of derive/ that say checked values in words, which a render module may call as the derive half does: text
in, text out, deciding nothing about which records count (`test_wording_modules_derive_nothing` holds them to it)."""

RENDER_NEVER_IMPORTS = {
    "runners.schema": "what a record holds and what a suite's workloads ask: load reads it, derive decides by it",
    "runners.metrics": "every published formula (intervals, t quantiles, datasheets, tolerances): derive applies them",
    "runners.spec": "the suite files: load reads them (`suite_titles`), derive takes what a board states from them",
    "statistics": "medians and spreads: derive's (`evidence`, `configurations`)",
    "numpy": "the verdict's resamples and any other statistic: derive's",
    "scipy": "statistics: derive's",
    "tomllib": "a file read while pages are written: load reads what the pages show",
    "subprocess": "git (or any program) asked while pages are written: load asks (`history`, `repository`)",
    "generator.load.history": "git's history of the data: load's, and what the pages say of it derive's (`changelog`)",
    "runners.provenance": "Fair Fight's version (git describe) and the packages': load reads them (`packages`)",
}
"""What no module under render/ imports, with why: a page writer reads `Results` (and what it is handed), never the
statistics, the formulas, the schema or the files the figures are derived from (issue 58)."""


def _derive_files() -> list[Path]:
    """Every module of the derivation half: all of generator/derive/, its packages included."""
    return sorted((GENERATOR / "derive").rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(tree: ast.AST) -> set[str]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return out


@pytest.mark.parametrize("path", _derive_files(), ids=lambda p: p.relative_to(GENERATOR).as_posix())
def test_the_derive_half_imports_no_rendering(path: Path) -> None:
    imported = _imported(ast.parse(path.read_text()))
    bad = sorted(name for name in imported for banned in RENDERING if name == banned or name.startswith(banned + "."))
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}: the derivation half renders nothing"


def test_importing_the_derive_half_loads_no_rendering_module() -> None:
    """What the derive half's imports pull in (transitively), in a fresh interpreter."""
    code = (
        "import json, sys; import generator.derive, generator.derive.results; "
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({RENDERING!r}))))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def _derivation_modules() -> dict[str, object]:
    """Every derivation module by the names a render module can import it as (the package itself, `derive`, too:
    its names are derivations), the wording modules (`WORDING`) aside."""
    return {
        _module_name(path): importlib.import_module(_module_name(path))
        for path in _derive_files()
        if _module_name(path) not in WORDING
    }


def _render_violations(path: Path) -> list[str]:
    modules = _derivation_modules()
    tree = ast.parse(path.read_text())
    local: dict[str, object] = {}  # a name bound in this file -> the derivation module it is
    functions: set[str] = set()  # derivation functions imported by name
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                if full in modules:
                    local[a.asname or a.name] = modules[full]
                elif node.module in modules and inspect.isfunction(getattr(modules[node.module], a.name, None)):
                    functions.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in modules and a.asname:
                    local[a.asname] = modules[a.name]
    out = []
    for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        for node in ast.walk(function):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id in functions:
                out.append(f"{function.name} calls the derivation {func.id}")
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in local:
                target = getattr(local[func.value.id], func.attr, None)
                if inspect.isfunction(target):
                    out.append(f"{function.name} calls the derivation {func.value.id}.{func.attr}")
            if (
                isinstance(func, ast.Attribute)
                and func.attr in GROUPING
                and (path.name, function.name) not in PRESENTATION
            ):
                out.append(f"{function.name} calls .{func.attr}(): deciding which records count is the derivation's")
    return out


@pytest.mark.parametrize("path", sorted((GENERATOR / "render").glob("*.py")), ids=lambda p: p.name)
def test_the_render_half_derives_nothing(path: Path) -> None:
    assert _render_violations(path) == [], path.relative_to(ROOT)


def _render_imports(path: Path) -> list[str]:
    imported = _imported(ast.parse(path.read_text()))
    return sorted(
        f"imports {name}: {why}"
        for name in imported
        for banned, why in RENDER_NEVER_IMPORTS.items()
        if name == banned or name.startswith(banned + ".")
    )


@pytest.mark.parametrize("path", sorted((GENERATOR / "render").glob("*.py")), ids=lambda p: p.name)
def test_the_render_half_imports_no_statistics_nor_schema(path: Path) -> None:
    assert _render_imports(path) == [], path.relative_to(ROOT)


def test_the_render_import_rule_can_fail(tmp_path: Path) -> None:
    """The check above finds the schema, the formulas and a statistic imported by a page writer, however imported."""
    bad = tmp_path / "bad.py"
    bad.write_text("import statistics\nfrom runners import metrics, schema\nimport runners.spec as spec\n")
    found = " ".join(_render_imports(bad))
    for name in ("statistics", "runners.metrics", "runners.schema", "runners.spec"):
        assert f"imports {name}:" in found


MODULE_LINES, FUNCTION_LINES = 600, 80
"""The most lines a generator module, and one of its functions, may hold: one job held in one's head (a module that
grows two jobs splits: runs, run_provenance and run_samples; charts, chart_names and model_charts; load/'s seven)."""


@pytest.mark.parametrize("path", sorted(GENERATOR.rglob("*.py")), ids=lambda p: p.relative_to(GENERATOR).as_posix())
def test_every_generator_module_stays_small(path: Path) -> None:
    """Issue 58's limits, for the whole generator: a module over them has a second job to split off."""
    text = path.read_text()
    assert len(text.splitlines()) <= MODULE_LINES, f"{path.relative_to(ROOT)}: split it by job"
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (node.end_lineno or node.lineno) - node.lineno + 1 > FUNCTION_LINES
    ]
    assert not long, f"{path.relative_to(ROOT)}: {long} longer than {FUNCTION_LINES} lines"


def test_the_render_rule_can_fail(tmp_path: Path) -> None:
    """The check above finds a derivation called from a page writer and a filter deciding what counts."""
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import polars as pl\nfrom generator import derive\nfrom generator.derive import inference\n"
        "def page(summary, tests):\n"
        "    ranked, unranked = inference.board(tests)\n"
        "    return derive.repeats(summary.filter(pl.col('origin') == 'measured'))\n"
    )
    found = _render_violations(bad)
    assert any("inference.board" in f for f in found) and any("derive.repeats" in f for f in found)
    assert any(".filter()" in f for f in found)


def test_the_render_rule_finds_settings_beside_defaults_worked_out_on_a_page(tmp_path: Path) -> None:
    """A run page that works out its settings beside its engine's defaults for itself (as run pages did before they
    were a column of `Results.page_runs`) calls a derivation: `derive.defaults` is no wording module."""
    assert "generator.derive.defaults" not in WORDING
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import generator.derive.defaults as defaults\nfrom generator.derive.defaults import beside_defaults\n"
        "def page(config):\n"
        "    return defaults.beside_defaults(config), beside_defaults(config)\n"
    )
    found = _render_violations(bad)
    assert "page calls the derivation defaults.beside_defaults" in found
    assert "page calls the derivation beside_defaults" in found


@pytest.mark.parametrize("name", sorted(WORDING))
def test_wording_modules_derive_nothing(name: str) -> None:
    """A wording module a page writer may call (`WORDING`) holds no frame and no derivation: it imports neither
    polars nor another module of derive/, so what it says is what it was given."""
    path = ROOT / (name.replace(".", "/") + ".py")
    imported = _imported(ast.parse(path.read_text()))
    bad = sorted(n for n in imported if n.split(".")[0] in ("polars", "numpy") or n.startswith("generator."))
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}: a wording module says what it is given"
