"""`fairfight publish`: ship the site, rebuilt from data/ from scratch (asv's `publish`), to a folder or a branch.

    fairfight publish DIR [--site-url URL] [--repo-url URL]        copy the site into DIR (a web server's root)
    fairfight publish --gh-pages [--remote origin] [--branch gh-pages] [--no-push] [--site-url URL]
                                                                  commit it to a gh-pages branch (ghp-import, which
                                                                  MkDocs brings) and push it

`--site` publishes a site already built instead. A folder is only ever replaced when it is empty or holds a site
this command published before (it leaves a marker file), so a mistyped path never loses anyone's files.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from runners import arguments

MARKER = ".fairfight-published"
"""Left in a folder this command published into: the sign that replacing the folder's contents is safe."""


class PublishError(Exception):
    """A publish that cannot go ahead; the message says what to do."""


def check_folder(target: Path, site: Path) -> None:
    """Refuse a folder `to_folder` could not publish into, before a site is built for it: inside or holding the site,
    not a folder, holding someone's files, or where nothing can be written."""
    target, site = target.resolve(), site.resolve()
    if target == site or target.is_relative_to(site) or site.is_relative_to(target):
        raise PublishError(f"{target}: inside the site being published, or holding it; choose a folder outside {site}")
    if target.exists() and not target.is_dir():
        raise PublishError(f"{target}: exists and is not a folder")
    if target.exists() and any(target.iterdir()) and not (target / MARKER).exists():
        raise PublishError(
            f"{target}: not empty and not published here before (no {MARKER}); choose an empty folder or remove it"
        )
    parent = target.parent
    while not parent.exists():  # the folders still to make: the nearest one there must take them
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise PublishError(
            f"{target}: cannot be written ({parent} is not a folder this user may write in); the site is staged beside "
            "the folder and swapped in, so its parent must be writable"
        )


def check_branch(*, remote: str, branch: str, push: bool) -> None:
    """Refuse a branch `to_branch` could not commit to or push, before a site is built for it: outside a git checkout,
    a name git refuses, the branch checked out here (its files would be replaced under the work), a remote that is not
    there, or no ghp-import (MkDocs brings it)."""
    if _run_git("rev-parse", "--git-dir") is None:
        raise PublishError(
            f"{Path.cwd()}: not in a git checkout; --gh-pages commits the site to a branch of the repository it runs "
            "in: run it there, or publish into a folder"
        )
    if _run_git("check-ref-format", "--branch", branch) is None:
        raise PublishError(f"--branch {branch!r}: not a name git takes for a branch")
    if _run_git("symbolic-ref", "--quiet", "--short", "HEAD") == branch:
        raise PublishError(
            f"--branch {branch}: checked out here; publishing would replace this checkout's branch with the site: "
            "switch to another branch, or name another with --branch"
        )
    if push and _run_git("remote", "get-url", remote) is None:
        remotes = (_run_git("remote") or "").split()
        have = f"its remotes: {', '.join(remotes)}" if remotes else "it has none"
        raise PublishError(
            f"--remote {remote}: no such remote in this repository ({have}); name one with --remote, or commit "
            "without pushing (--no-push)"
        )
    import ghp_import  # noqa: F401  (missing: the command says which install has it, before any build)


def to_folder(site: Path, target: Path) -> Path:
    """Replace `target`'s contents with the built `site` (written beside it, then swapped in)."""
    if not (site / "index.html").is_file():
        raise PublishError(f"{site}: not a built site (no index.html); build it with `fairfight site` first")
    check_folder(target, site)
    target, site = target.resolve(), site.resolve()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staged = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        shutil.copytree(site, staged, dirs_exist_ok=True)
        (staged / MARKER).write_text("published by `fairfight publish`; the next publish replaces this folder\n")
        old = None
        if target.exists():
            old = target.with_name(f".{target.name}-old-{os.getpid()}")
            os.replace(target, old)
        os.replace(staged, target)
        if old is not None:
            shutil.rmtree(old)
    except OSError as e:  # no write access beside the folder, a mount point, a full disk
        raise PublishError(
            f"{target}: could not publish there ({e.strerror or e}); the site is staged beside the folder and swapped "
            "in, so its parent must be writable and on the same file system"
        ) from e
    return target


def to_branch(site: Path, *, remote: str, branch: str, push: bool, message: str) -> bool:
    """Commit `site` as the whole of `branch` in the repository of the current folder (ghp-import), then push it.
    A site identical to the branch's last commit adds no commit and pushes nothing (False): each republish of the same
    data would otherwise add a full commit of the site to the branch's history."""
    import ghp_import

    if not (site / "index.html").is_file():
        raise PublishError(f"{site}: not a built site (no index.html); build it with `fairfight site` first")
    try:
        ghp_import.ghp_import(str(site), mesg=message, remote=remote, branch=branch, push=False, nojekyll=True)
        ref = f"refs/heads/{branch}"
        made, parent = _rev(ref), _rev(f"{ref}^1")
        if made is not None and parent is not None and _rev(f"{made}^{{tree}}") == _rev(f"{parent}^{{tree}}"):
            _git("update-ref", ref, parent, made)  # ghp-import always commits: take back the empty one
            return False
        if push:
            _git("push", remote, branch)
    except ghp_import.GhpError as e:
        raise PublishError(f"ghp-import: {e.message} (run this in the git checkout that should hold {branch})") from e
    except subprocess.CalledProcessError as e:
        raise PublishError(
            f"git {' '.join(e.cmd[1:])}: {(e.stderr or '').strip() or f'exit status {e.returncode}'}"
        ) from e
    return True


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout.strip()


def _run_git(*args: str) -> str | None:
    """What `git ARGS` prints in the current folder, or None where it fails (or git is missing)."""
    try:
        done = subprocess.run(["git", *args], capture_output=True, text=True)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _rev(name: str) -> str | None:
    """The object `name` names in the current repository, or None where there is none."""
    done = subprocess.run(["git", "rev-parse", "--verify", "-q", name], capture_output=True, text=True)
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def add_cli_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", nargs="?", type=Path, help="a folder to publish into (replaces what it holds)")
    p.add_argument("--gh-pages", action="store_true", help="commit the site to a branch of this repository instead")
    p.add_argument("--remote", default="origin", help="the remote to push the branch to (default: origin)")
    p.add_argument("--branch", default="gh-pages", help="the branch that holds the site (default: gh-pages)")
    p.add_argument("--no-push", action="store_true", help="commit the branch but do not push it")
    p.add_argument("--site", type=Path, default=None, help="publish this built site instead of building one")
    p.add_argument("--data-dir", "--data", dest="data", type=Path, default=Path("data"),
                   help="result files to build from (default: data/)")  # fmt: skip
    p.add_argument("--work", type=Path, default=Path("build"), help="generated sources and caches (default: build/)")
    p.add_argument("--site-url", default=None, help="where the site will be served (sitemap, canonical links)")
    p.add_argument("--repo-url", default=None, help="the repository's address, for every run's reproduce block")


def run(args: argparse.Namespace) -> int:
    if bool(args.target) == bool(args.gh_pages):
        print("error: name a folder to publish into, or --gh-pages (one of them)", file=sys.stderr)
        return 2
    site = args.site
    try:  # the target first: a bad one is refused before minutes of building, not after
        if args.gh_pages:
            check_branch(remote=args.remote, branch=args.branch, push=not args.no_push)
        else:
            check_folder(args.target, site or args.work / "publish" / "site")
    except PublishError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if site is None:
        import generator.build as build

        if not args.data.is_dir():
            print(f"error: --data {args.data}: no such folder (result files live under data/<suite>/)", file=sys.stderr)
            return 2
        site = args.work / "publish" / "site"
        if site.exists():
            shutil.rmtree(site)  # from scratch: nothing of an earlier build survives into what is published
        build.build(args.data, site, args.work, args.site_url, args.repo_url, getattr(args, "supplied", None))
    try:
        if args.gh_pages:
            message = f"Publish the Fair Fight site built from {args.data if args.site is None else site}"
            if not to_branch(site, remote=args.remote, branch=args.branch, push=not args.no_push, message=message):
                print(f"nothing to publish: the site is the one branch {args.branch} already holds (no commit made)")
                return 0
            where = f"branch {args.branch}" + ("" if args.no_push else f", pushed to {args.remote}")
        else:
            where = str(to_folder(site, args.target))
    except PublishError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"published {site} → {where}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return arguments.command("python -m generator.publish", __doc__, add_cli_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
