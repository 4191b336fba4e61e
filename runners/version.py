"""Fair Fight's version, from git: `0.1.0` at the tag `v0.1.0`, `0.1.1.devN+g<sha>` N commits after it (with
`.dirty` when the tool's files have uncommitted changes), as setuptools-scm's default scheme (guess-next-dev,
node-and-date) names them.

The build reads it here too (pyproject.toml `[tool.hatch.version]`, hatchling's `code` source runs this file on its
own, so it imports the standard library only): no build plugin to fetch, which a host without a network could not.
Built from an sdist (no `.git`), the version is the one its PKG-INFO carries. Until the first release is tagged,
`LAST_RELEASE` stands for the tag and N counts every commit.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

LAST_RELEASE = "0.1.0"
"""The version released before any tag existed: the base of the development versions until `v0.1.0` is tagged."""
ROOT = Path(__file__).resolve().parent.parent
TAG = re.compile(r"^v(?P<version>\d+(?:\.\d+)*)-(?P<distance>\d+)-g(?P<sha>[0-9a-f]+)$")


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=20, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def next_patch(release: str) -> str:
    """The version after `release` (0.1.0 → 0.1.1): what the commits after it are the development of."""
    parts = [int(p) for p in release.split(".")]
    parts += [0] * (3 - len(parts))
    parts[-1] += 1
    return ".".join(map(str, parts))


def from_git(root: Path = ROOT) -> str | None:
    """The version of the checkout at `root`, or None where `root` is not one (or git is missing)."""
    if not (root / ".git").exists():
        return None
    sha = _git(root, "rev-parse", "--short=7", "HEAD")
    if sha is None:
        return None
    described = _git(root, "describe", "--tags", "--long", "--match", "v[0-9]*")
    found = TAG.match(described or "")
    if found:
        release, distance = found["version"], int(found["distance"])
    else:
        count = _git(root, "rev-list", "--count", "HEAD")
        release, distance = LAST_RELEASE, int(count) if count and count.isdigit() else 0
    status = _git(root, "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)data")
    dirty = bool(status)  # a new result under data/ is not a change to the tool
    if distance == 0 and found and not dirty:
        return release
    local = f"g{sha}" + (".dirty" if dirty else "")
    return f"{next_patch(release)}.dev{distance}+{local}"


def from_pkg_info(root: Path = ROOT) -> str | None:
    """The version an unpacked sdist carries (its PKG-INFO)."""
    try:
        text = (root / "PKG-INFO").read_text()
    except OSError:
        return None
    found = re.search(r"^Version: *(\S+)", text, re.MULTILINE)
    return found[1] if found else None


def version(root: Path = ROOT) -> str:
    """What the build names the package: from git in a checkout, else from the sdist's PKG-INFO."""
    found = from_git(root) or from_pkg_info(root)
    if found is None:
        raise RuntimeError(f"{root}: neither a git checkout nor an unpacked sdist: its version cannot be known")
    return found
