"""A suite's name on the site (generator/render/suite_names.py): its file's title, else its name; a record's suite name
is never a path to a file."""

from __future__ import annotations

import polars as pl

from generator.render import suite_names


def test_the_title_of_a_suite_file_else_its_name() -> None:
    assert suite_names.title("h100") == "H200 bench"
    assert suite_names.title("cpu-smoke") == "cpu-smoke"  # no title: its name
    assert suite_names.title("no-such-suite") == "no-such-suite"
    assert suite_names.title("../suites/h100") == "../suites/h100"  # a path finds nothing
    assert suite_names.title("h100.toml") == "h100.toml"
    frame = suite_names.with_titles(pl.DataFrame({"suite": ["h100", "cpu-smoke", None]}))
    assert frame["suite_title"].to_list() == ["H200 bench", "cpu-smoke", None]
