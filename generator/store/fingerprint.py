"""What makes the site's bytes besides its data, as one digest: a cached output's key starts here, never from a
hand-kept list of the files or libraries it depends on (such a list missed `words.py`, which formats every number,
and a download's writer; asv drops a result whose benchmark's version changed, Hugo keys its file caches likewise).

Two halves, read once per process (the code and the installed packages do not change under a build):
- the code: every file under `CODE` (the generator, the runners' schema, formulas, suites and registry, the templates
  and the theme overrides, MkDocs' configuration), by path and bytes; the hand-written pages and the copied assets are
  not code (the site shows them as they are, and no cache holds them);
- the libraries: the installed version of every distribution the site's install brings (`EXTRAS` of the checkout's
  pyproject.toml and what each of those requires, through every level), so polars, pyarrow, numpy, vl-convert,
  MkDocs and whatever they pull in are all named without anyone listing them.
"""

from __future__ import annotations

import functools
import hashlib
import platform
import re
import tomllib
import zlib
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

TOP = Path(__file__).resolve().parents[2]
CODE = ("generator", "runners", "site_src/templates", "site_src/overrides", "site_src/mkdocs.yml")
"""The code that makes output, relative to the checkout (a folder: every file under it)."""
EXTRAS = ("validate", "site")
"""The extras of the project that the generator runs with, besides its own dependencies."""


def fingerprint() -> str:
    """The code's and the libraries' digest (`code`, `libraries`)."""
    return _fingerprint()


@functools.cache
def _fingerprint() -> str:
    digest = hashlib.sha256(code().encode())
    # the interpreter and the zlib it compresses with (gzip's bytes and Parquet's are theirs)
    digest.update(f"python {platform.python_version()} zlib {zlib.ZLIB_RUNTIME_VERSION}\n".encode())
    for name, version in libraries():
        digest.update(f"{name}=={version}\n".encode())
    return digest.hexdigest()


@functools.cache
def code() -> str:
    """The sha256 of every file under `CODE`, by its path and bytes (caches, compiled files and hidden files aside)."""
    digest = hashlib.sha256()
    for root in CODE:
        top = TOP / root
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for path in files:
            rel = path.relative_to(TOP)
            if "__pycache__" in rel.parts or path.suffix == ".pyc" or any(p.startswith(".") for p in rel.parts):
                continue
            digest.update(f"{rel.as_posix()}\0{path.stat().st_size}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def libraries() -> list[tuple[str, str]]:
    """(name, installed version or "absent") of every distribution the generator's install brings, sorted."""
    found: dict[str, str] = {}
    todo = list(_roots())
    while todo:
        name = _canonical(todo.pop())
        if name in found:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            found[name] = "absent"
            continue
        found[name] = dist.version
        for text in dist.requires or []:
            requirement = _requirement(text)
            # the base requirements that apply here, not an extra's
            if requirement is not None and (requirement.marker is None or requirement.marker.evaluate({"extra": ""})):
                todo.append(requirement.name)
    return sorted(found.items())


def _roots() -> list[str]:
    """The distributions the generator's install names: the project's dependencies and its `EXTRAS`, from the
    checkout's pyproject.toml (the tree being built), else from the installed project's metadata."""
    try:
        project = tomllib.loads((TOP / "pyproject.toml").read_text())["project"]
        texts = [*project.get("dependencies", [])]
        for extra in EXTRAS:
            texts += project.get("optional-dependencies", {}).get(extra, [])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        try:
            texts = metadata.requires("fairfight") or []
        except metadata.PackageNotFoundError:
            texts = []
        texts = [t for t in texts if (r := _requirement(t)) is not None and _wanted(r)]
    return [r.name for t in texts if (r := _requirement(t)) is not None]


def _wanted(requirement: Requirement) -> bool:
    marker = requirement.marker
    return marker is None or any(marker.evaluate({"extra": extra}) for extra in ("", *EXTRAS))


def _requirement(text: str) -> Requirement | None:
    try:
        return Requirement(text)
    except InvalidRequirement:
        return None


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503
