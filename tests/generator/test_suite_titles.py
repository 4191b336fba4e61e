"""A suite's name on the site (generator/load/suite_titles.py): its file's title, else its name; a record's suite name
is never a path to a file."""

from __future__ import annotations

import polars as pl

from generator.load import suite_titles
from generator.render import runs


def test_the_title_of_a_suite_file_else_its_name() -> None:
    assert suite_titles.title("h100") == "H200 bench"
    assert suite_titles.title("cpu-smoke") == "cpu-smoke"  # no title: its name
    assert suite_titles.title("no-such-suite") == "no-such-suite"
    assert suite_titles.title("../suites/h100") == "../suites/h100"  # a path finds nothing
    assert suite_titles.title("h100.toml") == "h100.toml"
    titles = suite_titles.titles(["h100", "cpu-smoke", None, "h100"])
    assert titles == {"cpu-smoke": "cpu-smoke", "h100": "H200 bench"}
    frame = runs.with_titles(pl.DataFrame({"suite": ["h100", "cpu-smoke", None]}), titles)
    assert frame["suite_title"].to_list() == ["H200 bench", "cpu-smoke", None]
