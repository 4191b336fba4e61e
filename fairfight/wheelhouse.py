"""Wheelhouses for hosts without a network: made from the lock where there is one, installed offline where there is not.

    fairfight wheelhouse build GROUP --python 3.12 --platform manylinux_2_28_x86_64 [--part-size 50M] [--out DIR]
    fairfight wheelhouse install DIR [--target SITE] [--skip-present]

`build` (run in a checkout, with a network) takes the dependency group's packages at the versions pinned in
pylock.hosts.toml (or pylock.toml), one wheel each for that Python and platform, checks each against the lock's
sha256, writes a manifest (name, version, file, sha256, size) and packs the lot into a tar split into parts small
enough for the transfers that reach the host (64 MiB a call on our GPU hosts). `install` (on the host) joins the
parts, checks every wheel against the manifest, and installs them with pip without an index and without resolving
(the lock already did). Only the standard library is needed on the host: `python3 -m fairfight wheelhouse install`
runs from a checkout with nothing installed.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import urllib.request
from pathlib import Path

from runners import arguments, cache

CHECKOUT = Path(__file__).resolve().parent.parent
LOCKS = ("pylock.hosts.toml", "pylock.toml")
"""Where a group's pins are looked up, in order: the hosts' lock (groups locked for one host, without their
dependencies) first, then the development lock."""
MANIFEST = "manifest.json"
PART = re.compile(r"^(?P<stem>.+)\.tar\.part(?P<index>\d{3,})-of-(?P<count>\d{3,})$")
"""A part's name says which it is and how many there are (`...tar.part001-of-003`), so a missing one is named."""


class WheelhouseError(Exception):
    """A wheelhouse that cannot be made or trusted; the message says which package or file and what to do."""


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_size(text: str) -> int:
    """`50M`, `45MiB`, `1G`, `1048576` → bytes (binary units)."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)(i?B)?\s*", text, re.IGNORECASE)
    if not m or int(m.group(1)) == 0:
        raise WheelhouseError(f"--part-size {text!r}: give a size such as 50M (MiB), 1G or a number of bytes")
    return int(m.group(1)) * {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[m.group(2).upper()]


def group_names(pyproject: Path, group: str) -> list[str]:
    """The normalised package names a dependency group lists (its own requirements, includes followed)."""
    try:
        groups = tomllib.loads(pyproject.read_text()).get("dependency-groups", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise WheelhouseError(f"{pyproject}: unreadable ({e}); give a Fair Fight checkout's pyproject.toml") from None
    if group not in groups:
        raise WheelhouseError(f"no dependency group {group!r} in {pyproject}; groups: {', '.join(sorted(groups))}")
    names: list[str] = []
    for item in groups[group]:
        if isinstance(item, dict):
            names += group_names(pyproject, item["include-group"])
        else:
            names.append(_norm(re.split(r"[\s\[<>=!~;@]", item.strip(), maxsplit=1)[0]))
    return names


def supported_tags(python: str, platform: str) -> list[str]:
    """Wheel tags a CPython `python` (3.12) on `platform` (manylinux_2_28_x86_64, ...) installs, best first."""
    from packaging import tags

    major, minor = (int(x) for x in python.split(".")[:2])
    m = re.fullmatch(r"manylinux_(\d+)_(\d+)_(\w+)", platform)
    if m:  # a manylinux_2_Y host also takes every older manylinux and the legacy aliases
        glibc_minor, arch = int(m.group(2)), m.group(3)
        platforms = [f"manylinux_2_{y}_{arch}" for y in range(glibc_minor, 4, -1)]
        platforms += [f"manylinux2014_{arch}", f"manylinux2010_{arch}", f"manylinux1_{arch}", f"linux_{arch}"]
    else:
        platforms = [platform]
    found = [*tags.cpython_tags((major, minor), platforms=platforms)]
    found += tags.compatible_tags((major, minor), f"cp{major}{minor}", platforms=platforms)
    return [str(t) for t in found]


def _wheel_tags(filename: str) -> set[str]:
    from packaging.utils import parse_wheel_filename

    return {str(t) for t in parse_wheel_filename(filename)[3]}


def _lock_packages(lock: Path) -> dict[str, dict]:
    return {_norm(p["name"]): p for p in tomllib.loads(lock.read_text()).get("packages", [])}


def _choose_wheel(package: dict, ranked: list[str], lock: Path) -> dict:
    rank = {t: i for i, t in enumerate(ranked)}
    best, best_rank = None, len(rank)
    for wheel in package.get("wheels", []):
        name = wheel.get("name") or Path(wheel.get("url") or wheel.get("path") or "").name
        r = min((rank[t] for t in _wheel_tags(name) if t in rank), default=len(rank))
        if r < best_rank:
            best, best_rank = wheel | {"name": name}, r
    if best is None:
        raise WheelhouseError(
            f"{lock}: {package['name']} {package['version']} has no wheel for this Python and platform; "
            "relock for the host (`nox -s lock`) or pick another --platform"
        )
    return best


def _fetch(wheel: dict, lock: Path, dest: Path) -> Path:
    target = dest / wheel["name"]
    if wheel.get("path"):
        source = Path(wheel["path"])
        shutil.copyfile(source if source.is_absolute() else lock.parent / source, target)
    else:
        with urllib.request.urlopen(wheel["url"], timeout=120) as r, target.open("wb") as f:
            shutil.copyfileobj(r, f)
    expected = (wheel.get("hashes") or {}).get("sha256")
    got = cache.file_sha256(target)
    if expected != got:
        target.unlink()
        raise WheelhouseError(f"{wheel['name']}: sha256 {got}, the lock says {expected}; refusing it")
    return target


def build(
    group: str, python: str, platform: str, out: Path, part_size: int, pyproject: Path, locks: list[Path]
) -> list[Path]:
    """Make GROUP's wheelhouse under `out`: the parts of `<group>-py<python>-<platform>.tar`; returns them."""
    absent = [str(f) for f in (pyproject, *locks) if not f.is_file()]
    if not pyproject.is_file() or all(not lk.is_file() for lk in locks):
        # `pip install` carries the tool, not the checkout's pyproject.toml and locks that a wheelhouse is made from
        raise WheelhouseError(
            f"{', '.join(absent)}: not found; `wheelhouse build` reads a checkout's dependency groups and locks, "
            "which an installed fairfight does not carry: run it in a checkout of Fair Fight (`python -m fairfight "
            "wheelhouse build ...` there, or `nox -s wheelhouse -- GROUP`), or name them with --pyproject and --lock"
        )
    names = group_names(pyproject, group)
    lock = next((lk for lk in locks if lk.exists() and set(names) <= set(_lock_packages(lk))), None)
    if lock is None:
        raise WheelhouseError(
            f"group {group!r} is not pinned in {' or '.join(str(lk) for lk in locks)}; run `nox -s lock` to relock"
        )
    pinned = _lock_packages(lock)
    ranked = supported_tags(python, platform)
    stem = f"{group}-py{python}-{platform}"
    with tempfile.TemporaryDirectory() as tmp:
        house = Path(tmp) / stem
        (house / "wheels").mkdir(parents=True)
        wheels = []
        for name in dict.fromkeys(names):
            package = pinned[name]
            path = _fetch(_choose_wheel(package, ranked, lock), lock, house / "wheels")
            wheels.append({"name": package["name"], "version": package["version"], "file": path.name,
                           "sha256": cache.file_sha256(path), "size": path.stat().st_size})  # fmt: skip
            print(f"  {package['name']} {package['version']}: {path.name} ({path.stat().st_size / 2**20:.1f} MiB)")
        manifest = {"group": group, "python": python, "platform": platform, "lock": lock.name,
                    "lock_sha256": cache.file_sha256(lock), "wheels": wheels}  # fmt: skip
        (house / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        out.mkdir(parents=True, exist_ok=True)
        for old in out.glob(f"{stem}.tar.part*"):
            old.unlink()
        buffer = Path(tmp) / f"{stem}.tar"
        with tarfile.open(buffer, "w") as tar:
            tar.add(house, arcname=stem)
        count = -(-buffer.stat().st_size // part_size)
        parts = []
        with buffer.open("rb") as f:
            for i, block in enumerate(iter(lambda: f.read(part_size), b"")):
                part = out / f"{stem}.tar.part{i:03d}-of-{count:03d}"
                part.write_bytes(block)
                parts.append(part)
    return parts


def _join(source: Path, into: Path) -> Path:
    """The wheelhouse folder unpacked from the parts in `source` (all of one wheelhouse, none missing)."""
    found = [(m, p) for p in source.iterdir() if (m := PART.match(p.name))]
    if not found:
        raise WheelhouseError(
            f"{source}: neither a wheelhouse folder ({MANIFEST}) nor its parts (*.tar.partNNN-of-NNN)"
        )
    stems = {m["stem"] for m, _ in found}
    counts = {int(m["count"]) for m, _ in found}
    if len(stems) != 1 or len(counts) != 1:
        raise WheelhouseError(f"{source}: parts of more than one wheelhouse ({', '.join(sorted(stems))})")
    count = counts.pop()
    have = {int(m["index"]): p for m, p in found}
    missing = sorted(set(range(count)) - set(have))
    if missing:
        raise WheelhouseError(f"{source}: part(s) {', '.join(map(str, missing))} of {count} missing; carry them too")
    joined = into / "joined.tar"
    with joined.open("wb") as out:
        for i in range(count):
            with have[i].open("rb") as f:
                shutil.copyfileobj(f, out)
    try:
        with tarfile.open(joined) as tar:
            tar.extractall(into, filter="data")
    except (tarfile.TarError, OSError) as e:
        raise WheelhouseError(f"{source}: the joined parts are not a whole wheelhouse ({e}); carry them again") from e
    joined.unlink()
    return into / stems.pop()


def _present(name: str) -> str | None:
    """The version of distribution `name` this Python already has, or None."""
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def install(
    source: Path, target: Path | None, python: str = sys.executable, skip_present: bool = False
) -> tuple[list[str], list[str]]:
    """Join the parts in `source` (or take an unpacked wheelhouse folder), check every wheel against the manifest
    and install them offline. With `skip_present`, a package the image already has (any version) is left to the
    image, which a copy under `target` would otherwise shadow. Returns the files installed and the lines skipped."""
    with tempfile.TemporaryDirectory() as tmp:
        house = source if (source / MANIFEST).exists() else _join(source, Path(tmp))
        try:
            manifest = json.loads((house / MANIFEST).read_text())
            wheels = [(str(w["name"]), str(w["version"]), str(w["file"]), str(w["sha256"])) for w in manifest["wheels"]]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise WheelhouseError(f"{house / MANIFEST}: unreadable ({e}); rebuild the wheelhouse") from e
        files, skipped = [], []
        for name, version, file, sha256 in wheels:
            path = house / "wheels" / Path(file).name
            if not path.exists() or cache.file_sha256(path) != sha256:
                raise WheelhouseError(f"{path.name}: missing or not the file the manifest names (sha256); rebuild it")
            have = _present(name) if skip_present else None
            if have is not None:
                skipped.append(f"{name} {version} (this Python has {have})")
                continue
            files.append(str(path))
        if not files:
            return [], skipped
        cmd = [python, "-m", "pip", "install", "--no-index", "--no-deps", "--no-compile", "--quiet"]
        cmd += ["--target", str(target)] if target else []
        proc = subprocess.run([*cmd, *files], capture_output=True, text=True)
        if proc.returncode != 0:
            raise WheelhouseError(f"pip install failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
        return [Path(f).name for f in files], skipped


def add_cli_args(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    b = sub.add_parser("build", help="make a group's wheelhouse from the lock (needs a network)")
    b.add_argument("group", help="a dependency group of pyproject.toml, e.g. host-torch, host-vllm, host-mlx")
    b.add_argument("--python", default="3.12", help="the host's Python (default: 3.12)")
    b.add_argument("--platform", default="manylinux_2_28_x86_64", help="the host's platform tag (default: %(default)s)")
    b.add_argument("--part-size", default="50M", help="largest part (default: 50M, MiB); parts travel one per call")
    b.add_argument("--out", type=Path, default=Path("build/wheelhouse"), help="where parts go (default: %(default)s)")
    b.add_argument(
        "--lock",
        type=Path,
        action="append",
        default=None,
        help="lock file(s) to read (default: the checkout's pylock.hosts.toml, then pylock.toml)",
    )
    b.add_argument("--pyproject", type=Path, default=CHECKOUT / "pyproject.toml",
                   help="the pyproject.toml whose dependency groups are read (default: the checkout's)")  # fmt: skip
    i = sub.add_parser("install", help="install a wheelhouse offline (from its parts or an unpacked folder)")
    i.add_argument(
        "source", type=arguments.existing_folder, help="the folder holding the parts (*.tar.part000-of-NNN, ...)"
    )
    i.add_argument("--target", type=Path, default=None, help="install into this folder (put it on PYTHONPATH)")
    i.add_argument(
        "--skip-present", action="store_true", help="leave out packages this Python already has (any version)"
    )


def run(args: argparse.Namespace) -> int:
    try:
        if args.action == "build":
            locks = args.lock or [CHECKOUT / name for name in LOCKS]
            print(f"wheelhouse {args.group} for Python {args.python} on {args.platform}:")
            parts = build(args.group, args.python, args.platform, args.out, parse_size(args.part_size),
                          args.pyproject, locks)  # fmt: skip
            for part in parts:
                print(f"{part} ({part.stat().st_size / 2**20:.1f} MiB)")
            print(f"{len(parts)} part(s); on the host: python3 -m fairfight wheelhouse install DIR --target SITE")
        else:
            files, skipped = install(args.source, args.target, skip_present=args.skip_present)
            print(f"installed {len(files)} wheel(s) offline" + (f" into {args.target}" if args.target else ""))
            for name in files:
                print(f"  {name}")
            for line in skipped:
                print(f"  skipped {line}")
    except WheelhouseError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0
