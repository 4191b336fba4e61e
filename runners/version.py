"""Fair Fight's version, from git: `0.1.0` at the tag `v0.1.0`, `0.1.1.dev<YYYYMMDDhhmmss>+g<sha>` at any other commit
(the commit's own UTC time; `.dirty` when the tool's files have uncommitted changes).

Everything in it is the commit's own, so every clone of a commit names it alike: a shallow clone (CI's `--depth 1`)
holds neither the commits since the last tag nor, often, the tag itself, so the count setuptools-scm's default scheme
uses (guess-next-dev, `.devN` for N commits since the tag) named one commit two ways, shallow and full. The base is
`LAST_RELEASE`, kept in this file (a release commit sets it to the version it tags), or the release tag on the commit
itself (a clone of that commit fetches the tags that point at it); the dev number is the committer time, which orders
commits as their count did along one branch (setuptools-scm's date-based schemes do the same).

The build reads it here too (pyproject.toml `[tool.hatch.version]`, hatchling's `code` source runs this file on its
own, so it imports the standard library only): no build plugin to fetch, which a host without a network could not.
Built from an sdist (no `.git`), the version is the one its PKG-INFO carries.
"""

from __future__ import annotations

import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path

LAST_RELEASE = "0.1.0"
"""The last version released: the base of the development versions after it. Tagging `vX.Y.Z`, set it to X.Y.Z in the
commit the tag names, so that the commits after it are X.Y.(Z+1)'s development however deep their clone."""
ROOT = Path(__file__).resolve().parent.parent
TAG = re.compile(r"^v(?P<version>\d+(?:\.\d+)*)$")
"""A release tag: `v0.1.0`."""


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
    """The version of the checkout at `root`, or None where `root` is not one (or git is missing). Read from the commit
    alone (its id, its time, the tags on it), never from the history a clone happens to hold."""
    if not (root / ".git").exists():
        return None
    head = _git(root, "show", "-s", "--format=%H %ct", "HEAD")
    if head is None:
        return None
    commit, seconds = head.split()
    tags = _git(root, "tag", "--points-at", "HEAD") or ""
    released = [found["version"] for t in tags.split() if (found := TAG.match(t))]
    status = _git(root, "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)data")
    dirty = bool(status)  # a new result under data/ is not a change to the tool
    if released:
        release = max(released, key=lambda v: [int(p) for p in v.split(".")])
        if not dirty:
            return release
    else:
        release = LAST_RELEASE
    when = datetime.fromtimestamp(int(seconds), UTC).strftime("%Y%m%d%H%M%S")
    local = f"g{commit[:7]}" + (".dirty" if dirty else "")  # 7 digits always: git's --short grows with the clone
    return f"{next_patch(release)}.dev{when}+{local}"


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
