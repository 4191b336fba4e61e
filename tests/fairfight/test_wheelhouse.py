"""Wheelhouses for hosts without a network: built from a lock with every wheel's sha256 checked, split into parts,
joined and installed offline by pip. The wheel is made here (a real, installable wheel of a one-module package) so
that nothing is downloaded; the locks themselves are checked against pyproject.toml."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from fairfight import wheelhouse
from tests.conftest import ROOT, run_module


def _wheel(folder: Path, name: str = "ffprobe_pkg", tag: str = "py3-none-any", payload: int = 40_000) -> Path:
    """A real wheel: one module (with a large constant so that it spans several parts), metadata and RECORD."""
    dist = f"{name}-1.0"
    files = {
        f"{name}/__init__.py": f"VALUE = 42\nPADDING = {'x' * payload!r}\n".encode(),
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode(),
        f"{dist}.dist-info/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: {tag}\n".encode(),
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    files[f"{dist}.dist-info/RECORD"] = ("\n".join([*record, f"{dist}.dist-info/RECORD,,"]) + "\n").encode()
    out = folder / f"{dist}-{tag}.whl"
    with zipfile.ZipFile(out, "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
    return out


def _project(tmp_path: Path, wheel: Path, sha256: str | None = None) -> tuple[Path, Path]:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[dependency-groups]\nhost-probe = ["ffprobe-pkg==1.0"]\n')
    lock = tmp_path / "pylock.test.toml"
    digest = sha256 or hashlib.sha256(wheel.read_bytes()).hexdigest()
    lock.write_text(
        'lock-version = "1.0"\ncreated-by = "test"\n[[packages]]\nname = "ffprobe-pkg"\nversion = "1.0"\n'
        f'wheels = [{{ path = "{wheel.name}", hashes = {{ sha256 = "{digest}" }} }}]\n'
    )
    return pyproject, lock


def test_a_wheelhouse_travels_in_parts_and_installs_offline(tmp_path) -> None:
    pyproject, lock = _project(tmp_path, _wheel(tmp_path))
    parts = tmp_path / "parts"
    run_module("fairfight", "wheelhouse", "build", "host-probe", "--python", "3.12", "--platform",
               "manylinux_2_28_x86_64", "--part-size", "16K", "--out", str(parts), "--lock", str(lock),
               "--pyproject", str(pyproject))  # fmt: skip
    made = sorted(parts.iterdir())
    assert len(made) >= 3 and all(p.stat().st_size <= 16 * 1024 for p in made)
    assert made[0].name == f"host-probe-py3.12-manylinux_2_28_x86_64.tar.part000-of-{len(made):03d}"
    site = tmp_path / "site"
    out = run_module("fairfight", "wheelhouse", "install", str(parts), "--target", str(site)).stdout
    assert "installed 1 wheel(s) offline" in out
    check = subprocess.run([sys.executable, "-c", "import ffprobe_pkg; print(ffprobe_pkg.VALUE)"],
                           env={"PYTHONPATH": str(site)}, capture_output=True, text=True)  # fmt: skip
    assert check.stdout.strip() == "42"
    # a package the image already has is left to it (the image's is on the path before the target)
    again = run_module("fairfight", "wheelhouse", "install", str(parts), "--target", str(tmp_path / "s2"),
                       "--skip-present", PYTHONPATH=str(site)).stdout  # fmt: skip
    assert "installed 0 wheel(s)" in again and "skipped ffprobe-pkg 1.0 (this Python has 1.0)" in again


def test_a_wheel_that_is_not_the_locked_one_is_refused(tmp_path) -> None:
    pyproject, lock = _project(tmp_path, _wheel(tmp_path), sha256="0" * 64)
    with pytest.raises(wheelhouse.WheelhouseError, match=r"sha256 .* the lock says 0000"):
        wheelhouse.build("host-probe", "3.12", "manylinux_2_28_x86_64", tmp_path / "o", 1 << 20, pyproject, [lock])


def test_a_missing_or_altered_part_is_refused(tmp_path) -> None:
    pyproject, lock = _project(tmp_path, _wheel(tmp_path, payload=200))
    parts = wheelhouse.build("host-probe", "3.12", "manylinux_2_28_x86_64", tmp_path / "o", 4096, pyproject, [lock])
    assert len(parts) >= 2
    last = parts[-1].name
    parts[1].unlink()
    with pytest.raises(wheelhouse.WheelhouseError, match=r"part\(s\) 1 of \d+ missing"):
        wheelhouse.install(tmp_path / "o", tmp_path / "site")
    for part in parts[2:]:  # the last parts lost too: the names still say how many there were
        part.unlink()
    with pytest.raises(wheelhouse.WheelhouseError, match="missing"):
        wheelhouse.install(tmp_path / "o", tmp_path / "site")
    assert last.endswith(f"-of-{len(parts):03d}")
    parts = wheelhouse.build("host-probe", "3.12", "manylinux_2_28_x86_64", tmp_path / "o", 1 << 20, pyproject, [lock])
    data = bytearray(parts[0].read_bytes())
    at = data.index(b"VALUE = 42")  # a wheel stores small files uncompressed: change one byte of the module
    data[at + 8] = ord("7")
    parts[0].write_bytes(bytes(data))
    with pytest.raises(wheelhouse.WheelhouseError, match="not the file the manifest names"):
        wheelhouse.install(tmp_path / "o", tmp_path / "site")


def test_a_wheel_for_another_platform_is_not_taken(tmp_path) -> None:
    pyproject, lock = _project(tmp_path, _wheel(tmp_path, tag="cp312-cp312-macosx_14_0_arm64"))
    with pytest.raises(wheelhouse.WheelhouseError, match="no wheel for this Python and platform"):
        wheelhouse.build("host-probe", "3.12", "manylinux_2_28_x86_64", tmp_path / "o", 1 << 20, pyproject, [lock])
    with pytest.raises(wheelhouse.WheelhouseError, match="no dependency group 'host-nothing'"):
        wheelhouse.build("host-nothing", "3.12", "manylinux_2_28_x86_64", tmp_path / "o", 1 << 20, pyproject, [lock])


def _requirements(project: dict, *, groups: list[str], extras: bool) -> list[Requirement]:
    reqs = [Requirement(r) for r in project["project"]["dependencies"]] if extras else []
    if extras:
        reqs += [Requirement(r) for rs in project["project"]["optional-dependencies"].values() for r in rs]
    for group in groups:
        reqs += [Requirement(r) for r in project["dependency-groups"][group] if isinstance(r, str)]
    return reqs


def test_the_locks_pin_what_pyproject_asks_for() -> None:
    """pylock.toml holds the project, every extra, tests, lint and types; pylock.hosts.toml every host group, each
    with a wheel for the GPU hosts' Python 3.12 on x86-64 Linux. A requirement changed without relocking fails here."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for lock_name, groups, extras in (
        ("pylock.toml", ["tests", "lint", "types"], True),
        ("pylock.hosts.toml", [g for g in project["dependency-groups"] if g.startswith("host-")], False),
    ):
        pinned = {canonicalize_name(p["name"]): p for p in tomllib.loads((ROOT / lock_name).read_text())["packages"]}
        for req in _requirements(project, groups=groups, extras=extras):
            name = canonicalize_name(req.name)
            assert name in pinned, f"{lock_name} lacks {req}: run `nox -s lock`"
            assert req.specifier.contains(pinned[name]["version"], prereleases=True), (lock_name, str(req))
    hosts = tomllib.loads((ROOT / "pylock.hosts.toml").read_text())["packages"]
    ranked = set(wheelhouse.supported_tags("3.12", "manylinux_2_35_x86_64"))
    for package in hosts:
        names = [w["url"].rsplit("/", 1)[1] for w in package.get("wheels", [])]
        assert any(wheelhouse._wheel_tags(n) & ranked for n in names), package["name"]
