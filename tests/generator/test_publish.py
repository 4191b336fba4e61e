"""`fairfight publish`: the site rebuilt from data/ into a folder (never over someone's files), or committed to a
gh-pages branch of a real git repository and pushed to a real (local, bare) remote."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from generator import publish
from tests.conftest import ROOT, run_module


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


@pytest.mark.bench
def test_publish_rebuilds_the_site_into_a_folder_and_never_over_other_files(tmp_path, built_site) -> None:
    data = tmp_path / "data"
    run_module("runners", "claim", "runners/claims/seed.toml", "--data-dir", str(data))  # a small real data folder
    target = tmp_path / "www"
    out = run_module("fairfight", "publish", str(target), "--data", str(data), "--work", str(tmp_path / "w"),
                     "--site-url", "https://fairfight.example/ff/").stdout  # fmt: skip
    assert f"→ {target}" in out and (target / "index.html").exists() and (target / publish.MARKER).exists()
    sitemap = (target / "sitemap.xml").read_text()  # every page, under the address given (empty without one)
    assert "<loc>https://fairfight.example/ff/methodology.html</loc>" in sitemap and sitemap.count("<url>") > 5
    assert 'href="/ff/assets/' in (target / "404.html").read_text()  # under the subpath, at any depth
    # a second publish replaces what the first left, nothing of it survives
    (target / "stale.html").write_text("from an older edition")
    run_module("fairfight", "publish", str(target), "--site", str(built_site))
    assert not (target / "stale.html").exists() and (target / "runs").is_dir()
    # a folder holding anything else is refused, and left as it was
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "thesis.tex").write_text("years of work")
    proc = run_module("fairfight", "publish", str(theirs), "--site", str(built_site), check=False)
    assert proc.returncode == 2 and "not empty and not published here before" in proc.stderr
    assert sorted(p.name for p in theirs.iterdir()) == ["thesis.tex"]
    proc = run_module("fairfight", "publish", "--site", str(built_site), check=False)
    assert proc.returncode == 2 and "name a folder" in proc.stderr


@pytest.mark.bench
def test_publish_to_a_gh_pages_branch_and_push(tmp_path, built_site) -> None:
    remote = tmp_path / "remote.git"
    _git(tmp_path, "init", "--bare", "-q", str(remote))
    repo = tmp_path / "checkout"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "--allow-empty", "-m", "start")
    _git(repo, "remote", "add", "origin", str(remote))
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "PYTHONPATH": str(ROOT)}  # fmt: skip
    proc = run_module("fairfight", "publish", "--gh-pages", "--site", str(built_site), cwd=repo, **env)
    assert "branch gh-pages, pushed to origin" in proc.stdout
    files = _git(remote, "ls-tree", "-r", "--name-only", "gh-pages").split()
    assert "index.html" in files and ".nojekyll" in files and any(f.startswith("runs/") for f in files)
    assert _git(repo, "branch", "--show-current").strip() == "main"  # the checkout itself is untouched
    # the same site again adds nothing: no commit here, none pushed
    again = run_module("fairfight", "publish", "--gh-pages", "--site", str(built_site), cwd=repo, **env)
    assert "nothing to publish" in again.stdout
    assert _git(remote, "rev-list", "--count", "gh-pages").strip() == "1"
    assert _git(repo, "rev-list", "--count", "gh-pages").strip() == "1"
    # a changed site is one more commit, pushed
    changed = tmp_path / "changed"
    subprocess.run(["cp", "-r", str(built_site), str(changed)], check=True)
    (changed / "errata.html").write_text("<p>one page changed</p>")
    run_module("fairfight", "publish", "--gh-pages", "--site", str(changed), cwd=repo, **env)
    assert _git(remote, "rev-list", "--count", "gh-pages").strip() == "2"


def test_republishing_the_same_data_to_gh_pages_adds_no_commit(tmp_path) -> None:
    """The whole path a user takes: `publish --gh-pages` rebuilds the site from data/ from scratch each time (no
    `--site`), so the rebuild must give the same bytes for the same data, or every republish would add a commit. A
    real git repository and real builds; nothing is pushed (`--no-push`)."""
    data = tmp_path / "data"
    run_module("runners", "claim", "runners/claims/seed.toml", "--data-dir", str(data))  # a small real data folder
    repo = tmp_path / "checkout"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "--allow-empty", "-m", "start")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "PYTHONPATH": str(ROOT)}  # fmt: skip
    work = str(tmp_path / "w")
    publish_args = ("fairfight", "publish", "--gh-pages", "--no-push", "--data", str(data), "--work", work)
    first = run_module(*publish_args, cwd=repo, **env)
    assert "published" in first.stdout and "branch gh-pages" in first.stdout
    assert _git(repo, "rev-list", "--count", "gh-pages").strip() == "1"
    tree = _git(repo, "rev-parse", "gh-pages^{tree}")
    again = run_module(*publish_args, cwd=repo, **env)
    assert "nothing to publish" in again.stdout
    assert _git(repo, "rev-list", "--count", "gh-pages").strip() == "1"
    assert _git(repo, "rev-parse", "gh-pages^{tree}") == tree
    # other data is another site: one more commit
    files = sorted(data.rglob("*.parquet"))  # flat or in month folders
    assert len(files) > 1
    files[-1].unlink()
    run_module(*publish_args, cwd=repo, **env)
    assert _git(repo, "rev-list", "--count", "gh-pages").strip() == "2"


def test_a_bad_target_is_refused_before_anything_is_built(tmp_path) -> None:
    """Each target publish cannot use is refused in a sentence, and the build (minutes on real data) never starts: its
    work folder is not made. Real folders and real git repositories."""
    data = tmp_path / "data"
    run_module("runners", "claim", "runners/claims/seed.toml", "--data-dir", str(data))  # a small real data folder
    work = tmp_path / "work"
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "thesis.tex").write_text("years of work")
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    repo = tmp_path / "checkout"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "--allow-empty", "-m", "start")
    outside = tmp_path / "not-a-checkout"
    outside.mkdir()
    env = {"PYTHONPATH": str(ROOT), "GIT_CEILING_DIRECTORIES": str(tmp_path)}  # tmp_path may sit in a repository
    cases = [
        ((str(theirs),), ROOT, "not empty and not published here before"),
        ((str(a_file / "www"),), ROOT, "is not a folder this user may write in"),
        ((str(work / "publish" / "site" / "www"),), ROOT, "inside the site being published"),
        (("--gh-pages",), outside, "not in a git checkout"),
        (("--gh-pages",), repo, "--remote origin: no such remote in this repository (it has none)"),
        (("--gh-pages", "--no-push", "--branch", "a..b"), repo, "--branch 'a..b': not a name git takes"),
        (("--gh-pages", "--no-push", "--branch", "main"), repo, "--branch main: checked out here"),
    ]
    for target, cwd, said in cases:
        argv = ("fairfight", "publish", *target, "--data", str(data), "--work", str(work))
        proc = run_module(*argv, cwd=cwd, check=False, **env)
        assert proc.returncode == 2 and said in proc.stderr and "Traceback" not in proc.stderr, (target, proc.stderr)
        assert not work.exists(), target  # nothing was built
    assert sorted(p.name for p in theirs.iterdir()) == ["thesis.tex"]
    assert _git(repo, "branch", "--list").split() == ["*", "main"]  # no branch made
