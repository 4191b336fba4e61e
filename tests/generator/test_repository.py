"""The repository a Reproduce block clones (generator/load/repository.py): the builder's --repo-url, else the
project's [project.urls], else the building checkout's git remote (never with its credentials), else that checkout's
own path; never a placeholder. The checkouts here are real temporary git repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path

from generator.load import repository


def test_the_builders_address_wins_then_the_projects_then_none(tmp_path: Path, monkeypatch) -> None:
    project = tmp_path / "pyproject.toml"
    project.write_text(
        '[project]\nname = "x"\n[project.urls]\nHomepage = "https://h.example"\nRepository = "https://r.example/ff"\n'
    )
    assert repository.project_url(project) == "https://r.example/ff"  # Repository before Homepage
    project.write_text('[project]\nname = "x"\n')
    assert repository.project_url(project) is None
    project.write_text("not toml [")
    assert repository.project_url(project) is None
    monkeypatch.setattr(repository, "project_url", lambda: "https://r.example/ff")
    assert repository.resolve("https://given.example/ff") == repository.Source("https://given.example/ff", "given")
    assert repository.resolve(None) == repository.Source("https://r.example/ff", "metadata")


def _checkout(path: Path, origin: str | None = None) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    if origin is not None:
        subprocess.run(["git", "-C", str(path), "remote", "add", "origin", origin], check=True)
    return path


def test_without_metadata_the_checkouts_remote_then_its_own_path(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(repository, "project_url", lambda: None)
    bare = _checkout(tmp_path / "upstream")
    plain = _checkout(tmp_path / "plain")
    assert repository.resolve(None, plain) == repository.Source(str(plain.resolve()), "checkout")
    assert repository.resolve("https://given.example/ff", plain).kind == "given"  # --repo-url still wins
    cloned = _checkout(tmp_path / "cloned", "../upstream")  # a relative path that exists: made absolute
    assert repository.resolve(None, cloned) == repository.Source(str(bare.resolve()), "remote")
    gone = _checkout(tmp_path / "gone", str(tmp_path / "nowhere"))  # an origin that is not there: the checkout
    assert repository.resolve(None, gone) == repository.Source(str(gone.resolve()), "checkout")
    outside = tmp_path / "not-a-checkout"
    outside.mkdir()
    assert repository.resolve(None, outside) is None


def test_a_remote_never_reaches_the_page_with_its_credentials(tmp_path: Path) -> None:
    cases = {
        "https://alice:s3cret@git.example/ff.git": "https://git.example/ff.git",
        "https://ghp_token@github.com/o/ff": "https://github.com/o/ff",
        "https://git.example:8443/o/ff.git": "https://git.example:8443/o/ff.git",
        "ssh://git:pw@git.example/o/ff.git": "ssh://git@git.example/o/ff.git",
        "git@github.com:o/ff.git": "git@github.com:o/ff.git",
    }
    for n, (origin, shown) in enumerate(cases.items()):
        top = _checkout(tmp_path / str(n), origin)
        assert repository.remote_url(top) == shown, origin
    assert repository.Source("https://github.com/o/ff").web == "https://github.com/o/ff"
    assert repository.Source("/home/a b/ff", "checkout").web is None  # a path is never a link
    assert repository.Source("/home/a b/ff", "checkout").shell == "'/home/a b/ff'"


def test_this_projects_metadata_is_read_as_it_stands() -> None:
    """pyproject.toml has no [project.urls] today: no address is invented."""
    import tomllib

    urls = tomllib.loads(repository.PYPROJECT.read_text()).get("project", {}).get("urls", {})
    expected = next((urls[k] for k in repository.KEYS if k in urls), None)
    assert repository.project_url() == expected
