"""The locks per audience (locks/pylock.NAME.toml, noxfile.py AUDIENCES): each pins what its audience asks for at
pylock.toml's versions and nothing another audience needs (the site's has no torch, no CUDA, no test tools), and
`uv pip install -r` installs the site's with every file's hash checked (a changed hash is refused). The install is
real: uv fetches from the index what its cache lacks."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
AUDIENCES = {"site": (["site"], []), "torch": (["torch"], []), "llama": (["llama"], []), "mlx": (["mlx"], []),
             "engines": (["torch", "llama", "mlx"], []),
             "tests": (["site", "torch", "llama", "mlx"], ["tests"])}  # fmt: skip
"""As noxfile.py AUDIENCES (the noxfile imports nothing from the tests, nor they from it)."""


def _packages(path: Path) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for p in tomllib.loads(path.read_text())["packages"]:
        out.setdefault(canonicalize_name(p["name"]), []).append(p)
    return out


def test_each_audience_lock_pins_what_it_asks_for_at_the_dev_locks_versions() -> None:
    dev = _packages(ROOT / "pylock.toml")
    for name, (extras, groups) in AUDIENCES.items():
        lock = ROOT / "locks" / f"pylock.{name}.toml"
        pinned = _packages(lock)
        asked = [Requirement(r) for r in PROJECT["project"]["dependencies"]]
        asked += [Requirement(r) for e in extras for r in PROJECT["project"]["optional-dependencies"][e]]
        asked += [Requirement(r) for g in groups for r in PROJECT["dependency-groups"][g] if isinstance(r, str)]
        for req in asked:
            assert canonicalize_name(req.name) in pinned, f"{lock.name} lacks {req}: run `nox -s lock`"
        for package, entries in pinned.items():
            versions = {e["version"] for e in entries}
            assert versions <= {e["version"] for e in dev.get(package, [])}, f"{lock.name}: {package} {versions}"
            assert all(w["hashes"]["sha256"] for e in entries for w in e.get("wheels", [])), (lock.name, package)
    site = set(_packages(ROOT / "locks" / "pylock.site.toml"))
    assert "polars" in site and not {p for p in site if re.match(r"torch|nvidia-|pytest|ruff|mypy|mlx", p)}
    assert "torch" in _packages(ROOT / "locks" / "pylock.torch.toml")


def _uv(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    uv = shutil.which("uv")
    assert uv, "these tests install with uv (nox's default backend): install it (`pip install uv`)"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "UV_FIND_LINKS")}
    done = subprocess.run([uv, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=900)
    if check and done.returncode != 0:
        raise AssertionError(f"uv {args} exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


@pytest.mark.install
def test_the_site_lock_installs_with_its_hashes_checked(tmp_path: Path) -> None:
    _uv("venv", "-q", "--python", "3.11", str(tmp_path / "v"), cwd=tmp_path)
    python = ["--python", str(tmp_path / "v" / "bin" / "python")]
    _uv("pip", "install", "-q", *python, "-r", str(ROOT / "locks" / "pylock.site.toml"), cwd=tmp_path)
    _uv("pip", "install", "-q", *python, "--no-deps", str(ROOT), cwd=tmp_path)
    listed = json.loads(_uv("pip", "list", *python, "--format", "json", cwd=tmp_path).stdout)
    installed = {canonicalize_name(p["name"]) for p in listed}
    assert {"polars", "altair", "mkdocs-material", "fairfight"} <= installed and "torch" not in installed
    shown = subprocess.run([str(tmp_path / "v" / "bin" / "fairfight"), "validate", str(ROOT / "data" / "h100")],
                           capture_output=True, text=True, cwd=tmp_path, timeout=600)  # fmt: skip
    assert shown.returncode == 0 and "0 with problems" in shown.stdout, shown.stderr[-2000:]

    # one package of that lock with one of its hashes changed: refused, nothing installed
    text = (ROOT / "locks" / "pylock.site.toml").read_text()
    head = text[: text.index("[[packages]]")]
    entry = next(p for p in text.split("[[packages]]")[1:] if p.lstrip().startswith('name = "mergedeep"'))
    tampered = re.sub(r'sha256 = "([0-9a-f])', lambda m: f'sha256 = "{"0" if m[1] != "0" else "1"}', entry)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "pylock.toml").write_text(head + "[[packages]]" + tampered)
    _uv("venv", "-q", "--python", "3.11", str(tmp_path / "w"), cwd=tmp_path)
    refused = _uv("pip", "install", "--no-cache", "--python", str(tmp_path / "w" / "bin" / "python"), "-r",
                  str(tmp_path / "bad" / "pylock.toml"), cwd=tmp_path, check=False)  # fmt: skip
    assert refused.returncode != 0 and "Hash mismatch" in refused.stderr, refused.stderr[-2000:]


@pytest.mark.install
def test_a_nox_session_installs_its_audiences_lock(tmp_path: Path) -> None:
    """`nox -s bench-h100 --install-only`, a real nox into a temporary folder of environments: the torch audience's
    lock goes in through `uv pip install -r` (hashes checked), and everything installed but the project is the lock's,
    at its versions. Where this machine's pip find-links hold torch's CPU build (our CPU machines), the session's copy
    of the lock leaves out only torch and what its CUDA build alone needs (every other entry, hashes and all, as the
    lock has it) and torch comes from that folder at the locked version; the test and site sessions install alike."""
    nox_command = shutil.which("nox")
    assert nox_command, "this test runs nox as a user does: install it (`pip install nox`)"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH") and not k.startswith("NOX_")}
    done = subprocess.run([nox_command, "-f", str(ROOT / "noxfile.py"), "-s", "bench-h100", "--install-only",
                           "--envdir", str(tmp_path / "envs")], capture_output=True, text=True, env=env,
                          timeout=900)  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-3000:]
    lock = ROOT / "locks" / "pylock.torch.toml"
    venv = tmp_path / "envs" / "bench-h100"
    copy = venv / "pylock.torch-cpu.toml"
    assert f"uv pip install -r {copy if copy.exists() else lock}" in said, said[-3000:]
    pinned = {name: {e["version"] for e in entries} for name, entries in _packages(lock).items()}
    listed = json.loads(_uv("pip", "list", "--python", str(venv / "bin" / "python"), "--format", "json",
                            cwd=tmp_path).stdout)  # fmt: skip
    installed = {canonicalize_name(p["name"]): p["version"] for p in listed}
    installed.pop("fairfight")
    assert installed.pop("torch").split("+")[0] in pinned["torch"]
    assert installed and all(v in pinned.get(n, set()) for n, v in installed.items()), installed
    if copy.exists():  # the CPU build in place of the CUDA one
        assert "torch==" in said and "--no-index" in said
        assert not any(n.startswith(("nvidia-", "cuda-", "triton")) for n in installed)
        kept = copy.read_text().split("[[packages]]\n")
        assert set(kept[1:]) < set(lock.read_text().split("[[packages]]\n")[1:])  # entries verbatim, none added
        assert "torch" not in _packages(copy) and set(installed) <= set(_packages(copy))


@pytest.mark.install
def test_without_uv_a_nox_session_checks_the_locks_hashes_with_pip(tmp_path: Path) -> None:
    """`pip install nox && nox -s validate` on a machine without uv: nox makes a virtualenv and pip installs, and pip
    reads no PEP 751 lock. The session still installs the site audience's lock with every file's sha256 checked (pip's
    `--require-hashes`, from the lock's own hashes), and a file whose hash is not the lock's is refused. A real nox
    and pip into a temporary folder (`--force-venv-backend virtualenv` stands for the machine without uv)."""
    nox_command = shutil.which("nox")
    assert nox_command, "this test runs nox as a user does: install it (`pip install nox`)"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH") and not k.startswith("NOX_")}
    done = subprocess.run([nox_command, "-f", str(ROOT / "noxfile.py"), "-s", "validate", "--install-only",
                           "--force-venv-backend", "virtualenv", "--envdir", str(tmp_path / "envs")],
                          capture_output=True, text=True, env=env, timeout=900)  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-3000:]
    venv = tmp_path / "envs" / "validate"
    hashed = venv / "pylock.site-hashes.txt"
    assert f"pip install --require-hashes -r {hashed}" in said, said[-3000:]
    lock = _packages(ROOT / "locks" / "pylock.site.toml")
    text = hashed.read_text()
    for entries in lock.values():  # every file the lock names, by its hash
        for entry in entries:
            for file in [*entry.get("wheels", []), *([entry["sdist"]] if "sdist" in entry else [])]:
                assert f"--hash=sha256:{file['hashes']['sha256']}" in text
    listed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format", "json"],
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    installed = {canonicalize_name(p["name"]): p["version"] for p in json.loads(listed)}
    for name in ("fairfight", "pip", "setuptools", "wheel"):
        installed.pop(name, None)
    assert installed and all(v in {e["version"] for e in lock.get(n, [])} for n, v in installed.items()), installed

    bad = tmp_path / "bad.txt"  # every hash changed (one alone would leave pip the package's other files)
    bad.write_text(re.sub(r"sha256:([0-9a-f])", lambda m: "sha256:" + ("0" if m[1] != "0" else "1"), text))
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "w")], check=True)
    refused = subprocess.run([str(tmp_path / "w" / "bin" / "python"), "-m", "pip", "install", "--require-hashes",
                              "-r", str(bad)], capture_output=True, text=True)  # fmt: skip
    assert refused.returncode != 0 and "DO NOT MATCH THE HASHES" in refused.stderr, refused.stderr[-2000:]


@pytest.mark.skipif(
    os.environ.get("NOX_CURRENT_SESSION") not in ("tests", "tests-fast"),
    reason="checks the environment `nox -s tests` made; this one was made some other way",
)
def test_the_nox_session_left_its_environment_compiled() -> None:
    """The tests' own environment, made by `nox -s tests` (uv compiles nothing at install): every module a test run
    imports from it (torch, polars, altair, jinja2 and the rest) has bytecode as fresh as its source, written by the
    session's compile step (noxfile.py `_compile_bytecode`). Without it, where PYTHONDONTWRITEBYTECODE is set, every
    process the tests start compiles them from source again."""
    import importlib.util
    import sysconfig

    import altair
    import jinja2
    import polars
    import torch

    site = Path(sysconfig.get_path("purelib")).resolve()
    stale = []
    for module in (torch, polars, altair, jinja2, torch.nn.functional):
        source = Path(module.__file__ or "").resolve()
        assert source.is_relative_to(site), f"{module.__name__} is not installed in this environment ({source})"
        cached = Path(importlib.util.cache_from_source(str(source)))
        if not cached.exists() or cached.stat().st_mtime < source.stat().st_mtime:
            stale.append(str(source))
    assert not stale, f"no up-to-date bytecode beside {stale}: the session's compile step did not run"
