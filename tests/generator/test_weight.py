"""A site's weight and reach (issue 59, item 7): a gzipped copy beside each shared text file (the same bytes every
build), the 404 page's links without a site address, and the site address from the project's metadata."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

from generator import build
from generator.load import packages, repository


def _site(root: Path) -> dict[str, bytes]:
    files = {
        "assets/js/vega.js": b"var vega = 1;\n" * 500,
        "assets/javascripts/bundle.min.js": b"function f(){return 1}\n" * 300,
        "assets/stylesheets/main.css": b".md-typeset{color:red}\n" * 300,
        "search/search_index.json": b'{"docs": [' + b'{"text": "steps per second"},' * 300 + b"{}]}",
        "assets/js/tiny.js": b"1",  # gzip would make it larger: no copy
        "leaderboards/board.html": b"<p>page</p>\n" * 300,  # a page: none
        "assets/charts/chart.svg": b"<svg></svg>\n" * 300,  # a chart of one page: none
    }
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return files


def test_shared_text_files_get_a_gzipped_copy_of_the_same_bytes_every_build(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    files = _site(first)
    _site(second)
    for path in second.rglob("*"):  # the second build's files written a day later
        os.utime(path, (1_900_000_000, 1_900_000_000))
    made = sorted(p.relative_to(first).as_posix() for p in build.precompress(first))
    build.precompress(second)
    assert made == [
        "assets/javascripts/bundle.min.js.gz", "assets/js/vega.js.gz", "assets/stylesheets/main.css.gz",
        "search/search_index.json.gz",
    ]  # fmt: skip
    for name in made:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
        assert gzip.decompress((first / name).read_bytes()) == files[name.removesuffix(".gz")]
    assert sorted(p.name for p in first.rglob("*.gz")) == sorted(Path(n).name for n in made)


def test_the_404_page_links_relatively_without_a_site_address(tmp_path: Path) -> None:
    page = tmp_path / "404.html"
    page.write_text(
        '<link href="/assets/stylesheets/main.css"><script src="/assets/javascripts/bundle.js"></script>'
        '<a href="/leaderboards/x.html">x</a><a href="//other.example/y">y</a>'
        '<script id="__config" type="application/json">{"base": "/", "search": "/assets/w.js"}</script>'
    )
    build._relative_404(page)
    text = page.read_text()
    assert 'href="assets/stylesheets/main.css"' in text and 'src="assets/javascripts/bundle.js"' in text
    assert 'href="leaderboards/x.html"' in text and 'href="//other.example/y"' in text  # another host: as it was
    assert '"base": "."' in text


def test_the_site_address_comes_from_the_projects_documentation_url(tmp_path: Path) -> None:
    project = tmp_path / "pyproject.toml"
    project.write_text('[project]\nname = "x"\n[project.urls]\nDocumentation = "https://d.example/ff/"\n')
    assert repository.documentation_url(project) == "https://d.example/ff/"
    assert repository.project_url(project) is None  # a documentation address is not the repository's
    project.write_text('[project]\nname = "x"\n')
    assert repository.documentation_url(project) is None
    built_with = packages.built_with()
    assert build.mkdocs_config([], built_with, "https://d.example/ff/")["site_url"] == "https://d.example/ff/"
    assert "site_url" not in build.mkdocs_config([], built_with, None)
