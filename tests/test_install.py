"""A new user's first five minutes: `pip install .` into a fresh virtual environment, then the `fairfight` command
from outside the checkout — its version names the commit it was built from, it lists the suites, validates the
committed data, builds a site from the templates it carries, and explains `compare`. pip fetches the build backend
and any dependency not in its cache from the package index, as it would for the user."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.install


def _run(cmd: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FAIRFIGHT_HARNESS_COMMIT", "VIRTUAL_ENV")}
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env | {"NO_MKDOCS_2_WARNING": "1"},
                          timeout=900)  # fmt: skip
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def test_pip_install_gives_a_working_fairfight_command(tmp_path) -> None:
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    bin_dir = env / ("Scripts" if sys.platform == "win32" else "bin")
    lock = tmp_path / "constraints.txt"  # the lock, as the nox sessions use it (noxfile.py _constraints)
    packages = tomllib.loads((ROOT / "pylock.toml").read_text())["packages"]
    lock.write_text("".join(f"{p['name']}=={p['version']}" + (f" ; {p['marker']}" if "marker" in p else "") + "\n"
                            for p in packages))  # fmt: skip
    _run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", "-c", str(lock), f"{ROOT}[site]"], cwd=tmp_path)
    fairfight = str(bin_dir / "fairfight")
    outside = tmp_path / "elsewhere"
    outside.mkdir()

    head = _run(["git", "rev-parse", "HEAD"], cwd=ROOT).stdout.strip()
    version = _run([fairfight, "--version"], cwd=outside).stdout
    assert version.startswith("fairfight 0.") and head in version  # baked in when pip built the wheel

    assert "h100:" in _run([fairfight, "list"], cwd=outside).stdout
    checked = _run([fairfight, "validate", str(ROOT / "data")], cwd=outside).stdout
    assert "0 with problems" in checked
    assert "usage: fairfight compare" in _run([fairfight, "compare", "--help"], cwd=outside).stdout

    data = outside / "data"  # a small real data folder: the seed's claims, imported by the installed command
    _run([fairfight, "claim", str(ROOT / "runners" / "claims" / "seed.toml"), "--data-dir", str(data)], cwd=outside)
    _run([fairfight, "site"], cwd=outside)  # defaults are relative to where it runs: data/ → site/, build/
    home = (outside / "site" / "index.html").read_text()
    assert "21.7" in home and (outside / "site" / "cli.html").exists()  # the command reference, from the parser


def test_the_sdist_carries_the_tool_not_the_results(tmp_path) -> None:
    """data/ grows with every run: the source distribution leaves it (and the sweeps' local folders) out, and keeps
    what a wheel is built from. Its version comes from git, and `pip install` of it without extras is the light
    install: no polars, no site stack; `validate` then says what to install. With `[validate]` (polars added),
    `validate` and `compare` run without the site's stack, and `site` says what to install."""
    import tarfile

    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    python = str(env / ("Scripts" if sys.platform == "win32" else "bin") / "python")
    _run([python, "-m", "pip", "install", "--quiet", "hatchling>=1.26"], cwd=tmp_path)
    _run([python, "-m", "hatchling", "build", "-t", "sdist", "-d", str(tmp_path / "dist")], cwd=ROOT)
    (sdist,) = (tmp_path / "dist").glob("fairfight-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = [n.split("/", 1)[1] for n in tar.getnames() if "/" in n]
    assert names and not any(n.startswith(("data/", ".llsrc/", ".whl/", "build/", "site/")) for n in names)
    assert {"pyproject.toml", "runners/bench.py", "generator/build.py", "site_src/mkdocs.yml"} <= set(names)

    # its version is the checkout's, from git (runners/version.py): 0.1.1.dev<commit time>+g<sha> between tags
    from runners import version

    expected = version.from_git(ROOT)
    assert expected and sdist.name == f"fairfight-{expected}.tar.gz"
    assert re.fullmatch(r"\d+\.\d+\.\d+(\.dev\d+\+g[0-9a-f]{7}(\.dirty)?)?", expected)

    # installed from the sdist without extras: the light install (bench, list), no polars nor the site's stack
    light = tmp_path / "light"
    venv.create(light, with_pip=True)
    bin_dir = light / ("Scripts" if sys.platform == "win32" else "bin")
    _run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(sdist)], cwd=tmp_path)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    missing = _run([str(bin_dir / "python"), "-c", "import importlib.util as u; print([m for m in ('polars', 'altair', "
                    "'mkdocs', 'jinja2', 'yaml') if u.find_spec(m)])"], cwd=outside).stdout  # fmt: skip
    assert missing.strip() == "[]"
    fairfight = str(bin_dir / "fairfight")
    assert _run([fairfight, "--version"], cwd=outside).stdout.startswith(f"fairfight {expected} ")  # from PKG-INFO
    assert "cpu-smoke:" in _run([fairfight, "list"], cwd=outside).stdout
    assert "usage: fairfight bench" in _run([fairfight, "bench", "--help"], cwd=outside).stdout
    refused = _run([fairfight, "validate", str(ROOT / "data")], cwd=outside, check=False)
    assert (
        refused.returncode == 2 and "pip install '.[validate]'" in refused.stderr and "Traceback" not in refused.stderr
    )

    # with [validate] (polars alone added): validate and compare run, still without the site's stack
    _run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", f"{sdist}[validate]"], cwd=tmp_path)
    checked = _run([fairfight, "validate", str(ROOT / "data")], cwd=outside)
    assert "0 with problems" in checked.stdout and "Traceback" not in checked.stderr
    missing = _run([str(bin_dir / "python"), "-c", "import importlib.util as u; print([m for m in ('altair', "
                    "'mkdocs', 'jinja2', 'yaml', 'vl_convert') if u.find_spec(m)])"], cwd=outside).stdout  # fmt: skip
    assert missing.strip() == "[]"
    runs = sorted(p.stem for p in (ROOT / "data" / "h100").glob("*-train-gpt-1.27b-mb4-ddp-tuned-*.parquet"))[:2]
    shown = _run([fairfight, "compare", "--data-dir", str(ROOT / "data"), *runs, "--format", "json"], cwd=outside,
                 check=False)  # fmt: skip
    assert shown.returncode in (0, 1), shown.stderr[-2000:]  # 1: a slowdown past the threshold
    assert json.loads(shown.stdout)["a"]["runs"] == runs[:1]
    refused = _run([fairfight, "site"], cwd=outside, check=False)
    assert refused.returncode == 2 and "pip install '.[site]'" in refused.stderr and "Traceback" not in refused.stderr
