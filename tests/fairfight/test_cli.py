"""The `fairfight` command: one entry point whose commands are the modules' own parsers, a version that names the
harness commit, and a clear error where a command's libraries are missing."""

from __future__ import annotations

import importlib
import subprocess

import pytest

from fairfight import cli
from tests.conftest import ROOT, run_module


def test_every_command_is_a_module_with_its_own_arguments() -> None:
    wanted = {"bench", "list", "import", "claim", "retract", "validate", "site", "release", "compare", "submit",
              "wanted", "publish", "wheelhouse"}  # fmt: skip
    assert wanted <= set(cli.BY_NAME)
    for command in cli.COMMANDS:
        module = importlib.import_module(command.module)
        assert callable(getattr(module, command.add_args)), command
        assert callable(getattr(module, command.run)), command
    reference = cli.reference_markdown()
    for command in cli.COMMANDS:  # the reference page is made from each command's own parser
        assert f"## fairfight {command.name}" in reference
        assert f"usage: fairfight {command.name}" in reference
    assert "Not available" not in reference
    assert "### fairfight wheelhouse install" in reference and "--skip-present" in reference  # actions too


def test_the_reference_does_not_depend_on_the_terminal(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    narrow = cli.reference_markdown()
    monkeypatch.setenv("COLUMNS", "240")
    assert cli.reference_markdown() == narrow  # the same data and code give the same site, whatever built it


def test_version_names_the_harness_commit() -> None:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    out = run_module("fairfight", "--version").stdout
    assert out.startswith("fairfight 0.") and head in out
    named = run_module("fairfight", "--version", FAIRFIGHT_HARNESS_COMMIT="c0ffee1" * 5 + "c0ffe").stdout
    assert "harness c0ffee1" in named  # what a bench host is told it runs wins over a stale .git
    short = run_module("fairfight", "--version", FAIRFIGHT_HARNESS_COMMIT="c0ffee1").stdout
    assert "is not a full commit id" in short and "harness c0ffee1" not in short


def test_a_command_whose_libraries_are_missing_says_what_to_install(monkeypatch, capsys) -> None:
    """A bench host has torch but not the site's libraries: the command says so instead of a traceback. (The module
    is made missing by pointing the command at a name that does not exist; nothing else is faked.)"""
    gone = cli.Command(name="site", module="generator.no_such_module", help="build", needs="the site's libraries")
    monkeypatch.setattr(cli, "BY_NAME", cli.BY_NAME | {"site": gone})
    monkeypatch.setattr(cli, "COMMANDS", tuple(gone if c.name == "site" else c for c in cli.COMMANDS))
    assert cli.main(["site"]) == 2
    err = capsys.readouterr().err
    assert "generator.no_such_module is not installed here" in err and "the site's libraries" in err


def test_unknown_commands_and_bad_arguments_exit_2(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        cli.main(["no-such-command"])
    assert e.value.code == 2 and "invalid choice" in capsys.readouterr().err
    assert cli.main(["bench", "--suite", "no-such-suite"]) == 2
    assert "no-such-suite" in capsys.readouterr().err


def test_list_runs_from_the_checkout_without_installing() -> None:
    out = run_module("fairfight", "list").stdout
    assert "cpu-smoke:" in out and "h100:" in out
