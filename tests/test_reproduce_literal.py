"""A run page's Reproduce block, run as printed: a real torch CPU run (cpu-smoke's one-device stock baseline, 60 steps
of the tiny GPT) made from a temporary commit of this checkout, a site built from it in that commit (`fairfight
site`, no --repo-url and no [project.urls] address: the block clones the checkout that built it), and the block's
lines taken from the built page's HTML and run in a shell in an empty folder: clone, checkout, the engine's set-up
line, and the bench command as many times as a configuration needs to rank. The records it writes are loaded with
the project's loader and their configuration ranks on its board by the site's own rules. Nothing is mocked; the
shell's `python` is this test's interpreter, which has torch (so the set-up line installs nothing)."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, committed, run_module

WORKLOAD = "train-gpt-tiny-1dev"
VARIANT = "ddp-fp32-stock"


def _temporary_commit(target: Path) -> str:
    """This checkout's files as they stand (tracked and untracked, less what git ignores), committed in a repository
    of their own at `target`; data/ is left out (the block's records then make a board of their own)."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        source = ROOT / name
        if name.startswith("data/") or not source.is_file():  # data, or a tracked file deleted in the work tree
            continue
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target / name)
    return committed(target, "a temporary commit of the work tree (tests/test_reproduce_literal.py)")


def reproduce_block(page: str) -> str:
    """The shell lines of a run page's Reproduce block, as a reader copies them from the page."""
    section = page.split('<h2 id="reproduce">', 1)[1].split("<h2", 1)[0]
    found = re.search(r"<pre><code>(.*?)</code></pre>", section, re.S)
    assert found, f"the Reproduce section holds no command block:\n{section[:2000]}"
    return html.unescape(found.group(1))


@pytest.mark.bench
def test_a_reproduce_block_runs_literally_from_a_fresh_clone_and_its_record_ranks(
    tmp_path: Path, torch_engine: str
) -> None:
    checkout = tmp_path / "checkout"
    commit = _temporary_commit(checkout)
    env = {"PYTHONPATH": str(checkout)}  # this commit's code, not the checkout the tests run from
    data = tmp_path / "data"
    run_module("runners", "bench", "--suite", "cpu-smoke", "--workload", WORKLOAD, "--variant", VARIANT,
               "--data-dir", str(data), cwd=checkout, **env)  # fmt: skip
    run_module("fairfight", "site", "--data", str(data), "--out", str(tmp_path / "site"),
               "--work", str(tmp_path / "work"), cwd=checkout, **env)  # fmt: skip
    (page,) = (tmp_path / "site" / "runs").glob(f"*{WORKLOAD}-{VARIANT}*.html")
    block = reproduce_block(page.read_text())
    assert f"git clone {checkout.resolve()} fairfight" in block and f"git checkout {commit}" in block, block

    reader = tmp_path / "reader"
    reader.mkdir()
    shell_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # as a reader's shell: no path of ours
    shell_env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{shell_env.get('PATH', '')}"
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=reader, env=shell_env,
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    assert proc.returncode == 0, f"the block failed ({proc.returncode}):\n{block}\n{proc.stderr[-5000:]}"

    from generator import derive, load
    from generator.derive import checks

    made = tmp_path / "reader" / "fairfight" / "data"
    files = sorted(made.rglob("*.parquet"))
    loaded, summary = checks.checked(load.load(made, files=files))
    assert not loaded.rejected, [r.problems for r in loaded.rejected]
    board = derive.results(loaded, summary).boards[("cpu-smoke", WORKLOAD)]
    reasons = board.unranked.select("run_id", "unranked").rows() if board.unranked.height else []
    ranked = board.ranked.filter(board.ranked["variant"] == VARIANT)
    assert ranked.height == 1 and ranked["rank"][0] == 1, f"{len(files)} record(s); not ranked: {reasons}"
    assert ranked["runs"][0] == len(files) >= 2, ranked.select("runs", "interval_basis").rows()


def test_submitting_gives_each_engines_set_up_line_and_one_workload() -> None:
    """Submitting's step 1 runs one workload of each engine that has a set-up line, and its lines by hand are the
    registry's (the ones the run pages print), so the two never drift apart."""
    import tomllib

    from runners import engines

    text = (ROOT / "site_src" / "docs" / "submitting.md").read_text()
    variants = tomllib.loads((ROOT / "runners" / "suites" / "variants.toml").read_text())["variants"]
    shown = re.findall(r"nox -s bench-cpu -- --workload \S+ --variant (\S+)", text)
    for engine in engines.ENGINES.values():
        if engine.setup:
            assert engine.setup in text, engine.name
            assert any(variants[v]["engine"] == engine.name for v in shown), (engine.name, shown)
