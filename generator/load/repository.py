"""Which repository a site's Reproduce blocks clone: the builder's `--repo-url`, else the project's own metadata
(`[project.urls]` in pyproject.toml, or the installed package's Project-URL), else the git remote `origin` of the
checkout that builds the site, else that checkout itself (`git clone /its/path`), so that the block runs as printed
wherever the site was built from a checkout. Only a build outside any checkout (an installed copy, no address
given) has none, and its run pages say so (site_src/templates/run.html.j2). The page says which of these it is
(`Source.kind`, `FROM`)."""

from __future__ import annotations

import re
import shlex
import subprocess
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"
KEYS = ("Repository", "Source", "Source Code", "Homepage")
"""The `[project.urls]` labels that name where the code lives, in the order they are taken."""
_SCP = re.compile(r"[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^\s]+")
"""git's scp-like address (`git@host:owner/name.git`): a user name, never a password, before the host."""

FROM = {
    "given": "the address the site was built with (fairfight site --repo-url)",
    "metadata": "the project's metadata ([project.urls] in pyproject.toml)",
    "remote": "the git remote origin of the checkout that built this site",
    "checkout": "the checkout that built this site, on the machine that built it",
}
"""How a run page says where its address came from, by `kind`."""


@dataclass(frozen=True, slots=True)
class Source:
    """Where a Reproduce block clones from, and how the build came by it."""

    address: str
    """What follows `git clone`: an address, or the absolute path of the checkout that built the site."""
    kind: str = "given"
    """`given` (--repo-url), `metadata` (pyproject's [project.urls]), `remote` (the building checkout's `origin`) or
    `checkout` (that checkout's own path: only a clone on the machine that built the site finds it)."""

    @property
    def shell(self) -> str:
        """The address as a shell word (a checkout's path may hold a space)."""
        return shlex.quote(self.address)

    @property
    def web(self) -> str | None:
        """The address when a browser opens it (http or https), else None: a path or an ssh address is not linked."""
        return self.address if urlsplit(self.address).scheme in ("http", "https") else None


DOCUMENTATION_KEYS = ("Documentation", "Docs")
"""The `[project.urls]` labels that name where the project's site is served (`documentation_url`)."""


def project_url(pyproject: Path = PYPROJECT, keys: tuple[str, ...] = KEYS) -> str | None:
    """The address the project's metadata names under the first of `keys` it has (by default the repository's),
    or None."""
    urls: dict[str, str] = {}
    if pyproject.is_file():
        try:
            found = tomllib.loads(pyproject.read_text()).get("project", {}).get("urls", {})
        except (OSError, tomllib.TOMLDecodeError):
            found = {}
        urls = {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}
    else:  # an installed copy without its pyproject.toml: the package's own metadata
        try:
            entries = metadata.metadata("fairfight").get_all("Project-URL") or []
        except metadata.PackageNotFoundError:
            entries = []
        urls = dict(tuple(part.strip() for part in e.split(",", 1)) for e in entries if "," in e)
    lowered = {k.lower(): v for k, v in urls.items()}
    return next((lowered[k.lower()] for k in keys if k.lower() in lowered), None)


def checkout(start: Path = ROOT) -> Path | None:
    """The top of the git work tree that holds `start` (this code's own checkout by default), or None outside one
    (an installed copy) or without git."""
    top = _git(start, "rev-parse", "--show-toplevel")
    if not top:
        return None
    # an installed copy inside another repository's ignored folder (a virtualenv under a checkout) is not that checkout
    own = Path(top).resolve() / Path(__file__).resolve().relative_to(ROOT)
    return Path(top).resolve() if start != ROOT or (own.exists() and own.samefile(__file__)) else None


def remote_url(top: Path) -> str | None:
    """The checkout's `origin` as a reader can clone it: an address (any credentials in it dropped: a token or a
    password must never reach a published page) or a folder that exists (made absolute); None when it has no origin
    or the origin is neither."""
    value = _git(top, "remote", "get-url", "origin")
    if not value or any(not c.isprintable() or c.isspace() for c in value):
        return None
    parts = urlsplit(value)
    if parts.scheme and parts.netloc:
        if parts.scheme in ("http", "https"):
            netloc = parts.hostname or ""  # any user name here is an account or a token: none is kept
        else:  # ssh://git@host/...: the user is who logs in; only a password is a secret
            netloc = (f"{parts.username}@" if parts.username else "") + (parts.hostname or "")
        if not parts.hostname:
            return None
        netloc += f":{parts.port}" if parts.port else ""
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    if parts.scheme == "file":
        value = parts.path
    elif _SCP.fullmatch(value):
        return value
    folder = Path(value) if Path(value).is_absolute() else top / value
    return str(folder.resolve()) if folder.exists() else None


def resolve(repo_url: str | None, start: Path = ROOT) -> Source | None:
    """The builder's address when given, else the project's, else the remote or the path of the checkout `start`
    is in (this code's, by default); None only outside any checkout."""
    if repo_url:
        return Source(repo_url, "given")
    if found := project_url():
        return Source(found, "metadata")
    top = checkout(start)
    if top is None:
        return None
    if found := remote_url(top):
        return Source(found, "remote")
    return Source(str(top), "checkout")


def _git(where: Path, *args: str) -> str | None:
    """`git -C where ARGS`'s output, stripped, or None where it fails or git is missing."""
    try:
        proc = subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def documentation_url(pyproject: Path = PYPROJECT) -> str | None:
    """Where the project's metadata says its site is served (`[project.urls] Documentation`), or None: the build's
    `site_url` when no `--site-url` is given."""
    return project_url(pyproject, DOCUMENTATION_KEYS)
