"""The config is parsed in one place: generator/load/columns.py flattens it into typed columns right after loading, and
no other generator module reads a record's config JSON (they read columns, or columns.parsed for a page that shows a
config as it is)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_no_generator_module_parses_the_config_but_the_flattening_step() -> None:
    for path in sorted((ROOT / "generator").glob("*.py")):
        if path.name == "columns.py":
            continue
        text = path.read_text()
        assert "json_path_match" not in text, (
            f"{path.name} reads JSON fields: flatten them in generator/load/columns.py"
        )
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "json.loads":
                arg = ast.unparse(node.args[0]) if node.args else ""
                assert "config" not in arg, f"{path.name}: json.loads({arg}) parses a config outside columns.py"
