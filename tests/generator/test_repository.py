"""The repository a Reproduce block clones (generator/repository.py): the builder's --repo-url, else the project's
[project.urls], else none, and then the run page says so instead of inventing an address."""

from __future__ import annotations

from pathlib import Path

from generator import repository


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
    assert repository.resolve("https://given.example/ff") == "https://given.example/ff"
    assert repository.resolve(None) == "https://r.example/ff"


def test_this_projects_metadata_is_read_as_it_stands() -> None:
    """pyproject.toml has no [project.urls] today: no address is invented."""
    import tomllib

    urls = tomllib.loads(repository.PYPROJECT.read_text()).get("project", {}).get("urls", {})
    expected = next((urls[k] for k in repository.KEYS if k in urls), None)
    assert repository.project_url() == expected
