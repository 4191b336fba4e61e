"""Plain mistakes at the `fairfight` command get one sentence and exit 2, never a traceback: a missing input file, a
suite named with a typo, a command run where its libraries or its checkout are missing. Each runs the real command in
a child process, as a user would."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runners import arguments
from tests.conftest import ROOT, run_module


def _refused(proc: subprocess.CompletedProcess[str], *said: str) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "Traceback" not in out, out
    for text in said:
        assert text in proc.stderr, out


@pytest.mark.parametrize(
    "args",
    [
        ("claim", "{missing}"),
        ("import", "llama-bench", "{missing}", "--suite", "cpu-smoke", "--inference", "llama-tiny",
         "--variant", "llamacpp-f16", "--source", "a test"),
        ("bench", "--suite", "cpu-smoke", "--variants", "{missing}", "--dry-run"),
    ],
    ids=["claim", "import", "bench --variants"],
)  # fmt: skip
def test_a_missing_input_file_is_named_in_one_sentence(tmp_path: Path, args: tuple[str, ...]) -> None:
    missing = str(tmp_path / "no-such-file.toml")
    argv = [a.format(missing=missing) for a in args]
    proc = run_module("fairfight", *argv, "--data-dir", str(tmp_path / "data"), check=False)
    _refused(proc, f"{missing}: no such file")
    assert not (tmp_path / "data").exists()


def test_a_claims_file_that_is_not_toml_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "claims.toml"
    bad.write_bytes(b"\xff\xfe not text")
    _refused(run_module("fairfight", "claim", str(bad), "--data-dir", str(tmp_path), check=False), f"{bad}: not valid")


def test_a_mistyped_suite_gets_a_did_you_mean_wherever_a_suite_is_named(tmp_path: Path) -> None:
    for args in (("bench", "--suite", "h10", "--dry-run"), ("list", "--suite", "h10"),
                 ("slurm", "--suite", "h10", "--dry-run"),
                 ("import", "llama-bench", str(ROOT / "pyproject.toml"), "--suite", "h10", "--variant", "x",
                  "--source", "a test", "--data-dir", str(tmp_path))):  # fmt: skip
        _refused(run_module("fairfight", *args, check=False), "no suite 'h10'; did you mean 'h100'?")
    far = run_module("fairfight", "list", "--suite", "zzzz", check=False)
    _refused(far, "no suite 'zzzz'; the suites are apple, cpu-smoke, h100")
    only = run_module("fairfight", "list", "--suite", "cpu-smoke").stdout
    assert only.startswith("cpu-smoke: ") and "\nh100: " not in only


def test_did_you_mean_is_one_helper() -> None:
    said = arguments.unknown("suite", "cpu-smok", ["h100", "cpu-smoke"])
    assert said == "no suite 'cpu-smok'; did you mean 'cpu-smoke'?"
    assert arguments.unknown("variant", "q", ["b", "a"]) == "no variant 'q'; the variants are a, b"


def test_publish_without_the_site_libraries_says_which_install(tmp_path: Path) -> None:
    """The light install (`pip install .`) has no altair. altair is installed here, so the child process is made
    unable to import it (sys.modules['altair'] = None, which is how Python marks a module as not importable);
    everything else is real."""
    script = (
        "import sys; sys.modules['altair'] = None\n"
        "from fairfight.cli import main\n"
        f"sys.exit(main(['publish', {str(tmp_path / 'www')!r}, '--data', {str(ROOT / 'data')!r}, "
        f"'--work', {str(tmp_path / 'work')!r}]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    _refused(proc, "altair is not installed here", "`pip install '.[site]'`")
    assert not (tmp_path / "www").exists()


def test_wheelhouse_build_outside_a_checkout_says_to_run_it_in_one(tmp_path: Path) -> None:
    """`pip install` puts the fairfight and runners packages in site-packages, without the checkout's pyproject.toml
    and locks around them. That layout is made by copying the two packages into a folder (a real pip install is
    tests/test_install.py's, minutes long); the command then runs from there."""
    installed = tmp_path / "site-packages"
    for package in ("fairfight", "runners"):
        shutil.copytree(ROOT / package, installed / package, ignore=shutil.ignore_patterns("__pycache__"))
    proc = run_module("fairfight", "wheelhouse", "build", "host-torch", "--out", str(tmp_path / "out"),
                      cwd=tmp_path, check=False, PYTHONPATH=str(installed))  # fmt: skip
    _refused(proc, "pyproject.toml", "not found", "run it in a checkout of Fair Fight")
    assert not (tmp_path / "out").exists()


def test_wheelhouse_install_from_a_missing_or_non_folder_source_is_named(tmp_path: Path) -> None:
    """The parts' folder is checked while the arguments are read (it stopped on os.listdir's traceback)."""
    missing, a_file = tmp_path / "no-such-folder", tmp_path / "a-file"
    a_file.write_text("not a wheelhouse")
    _refused(run_module("fairfight", "wheelhouse", "install", str(missing), check=False), f"{missing}: no such folder")
    _refused(run_module("fairfight", "wheelhouse", "install", str(a_file), check=False), f"{a_file}: not a folder")
