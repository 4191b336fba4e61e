"""The bench's check of what an outside engine changed in the checkout (runners/footprint.py), on real files: a link
made or removed elsewhere is not a change, a rewrite whose writer set the mtime back is, whatever the links do."""

from __future__ import annotations

import base64
import hashlib
import os
import time
from pathlib import Path

import pytest

from runners import footprint

BYTES = b"def peak_tflops():\n    return 989.4\n"
FORGED = b"def peak_tflops():\n    return 100.0\n"  # the same size: only the bytes tell
assert len(FORGED) == len(BYTES)


def _checkout(tmp_path: Path, links: int) -> tuple[footprint.Watch, Path, list[Path]]:
    """A checkout with one module, `links` links to it in all (the others outside the checkout, as uv's cache links
    each installed file into `.nox`), and a data folder; a Watch on it, started once the clock has moved on (the
    kernel stamps a ctime at a timer tick's grain: a change in the tick the file was made would not show)."""
    code = tmp_path / "checkout"
    module = code / ".nox" / "tests" / "site-packages" / "peaks.py"
    module.parent.mkdir(parents=True)
    (code / "data").mkdir()
    module.write_bytes(BYTES)
    (tmp_path / "cache").mkdir()
    others = [tmp_path / "cache" / f"peaks-{i}.py" for i in range(links - 1)]
    for other in others:
        os.link(module, other)
    time.sleep(0.05)
    watch = footprint.Watch(code / "data", code)
    watch.start()
    time.sleep(0.05)
    return watch, module, others


@pytest.mark.parametrize("links", [2, 3])
@pytest.mark.parametrize("how", ["a link made elsewhere", "a link removed", "one made and one removed"])
def test_a_link_made_or_removed_elsewhere_is_not_a_change(tmp_path: Path, links: int, how: str) -> None:
    """What other work on the host does to a hardlinked installed file (uv making or deleting another environment
    from its cache): its ctime and link count move, its bytes do not. Before: every such file was `changed`, and a
    CI run refused two bench runs for thousands of `.nox/tests/.../site-packages` files."""
    watch, module, others = _checkout(tmp_path, links)
    before = os.lstat(module)
    if how != "a link removed":
        os.link(module, tmp_path / "another-environment.py")
    if how != "a link made elsewhere":
        others[0].unlink()
    assert os.lstat(module).st_ctime_ns != before.st_ctime_ns, "the test made no change the check could see"
    assert watch.finish() == []


@pytest.mark.parametrize(
    ("links", "through"),
    [(1, "its path"), (1, "its path, then a link made"), (2, "its path"), (2, "its other link"),
     (2, "its path, then a link made"), (3, "its other link")],
)  # fmt: skip
def test_a_rewrite_with_its_mtime_set_back_is_caught(tmp_path: Path, links: int, through: str) -> None:
    """An engine rewrites a module in place with bytes of the same size and sets its mtime back (os.utime): only
    the ctime shows it, and for a linked file the bytes, whether the write went through the checkout's path or
    through a link outside it (which read-only views of the checkout do not cover), and whether the engine also
    made a link to pass the write off as link churn."""
    watch, module, others = _checkout(tmp_path, links)
    st = os.lstat(module)
    target = others[0] if through == "its other link" else module
    with open(target, "r+b") as f:
        f.write(FORGED)
    os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns))
    if through == "its path, then a link made":
        os.link(module, tmp_path / "cover.py")
    after = os.lstat(module)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)
    assert watch.finish() == [f"{watch.code}/.nox/tests/site-packages/peaks.py (changed)"]


def test_a_file_of_one_link_that_gains_one_is_a_change(tmp_path: Path) -> None:
    """Its bytes were not hashed at the start (it had no other link), so nothing shows the link was all that
    happened: the check errs on the side of a change. Other work on a host links only files that already have
    more than one link (uv links from its cache), so this is not what link churn looks like."""
    watch, module, _ = _checkout(tmp_path, 1)
    os.link(module, tmp_path / "another-environment.py")
    assert watch.finish() == [f"{watch.code}/.nox/tests/site-packages/peaks.py (changed)"]


def test_only_the_linked_files_are_hashed_and_only_when_their_ctime_moved(tmp_path: Path) -> None:
    """What keeps the snapshot cheap: at the start, the bytes of files with more than one link alone; at the end,
    only those whose ctime or link count moved with everything else equal."""
    watch, module, _ = _checkout(tmp_path, 2)
    alone = module.with_name("alone.py")
    alone.write_bytes(BYTES)
    start = footprint.snapshot(watch.code)
    assert start[".nox/tests/site-packages/alone.py"].sha256 is None
    assert start[".nox/tests/site-packages/peaks.py"].sha256 is not None
    assert footprint.snapshot(watch.code, before=start)[".nox/tests/site-packages/peaks.py"].sha256 is None
    os.link(module, tmp_path / "another-environment.py")
    again = footprint.snapshot(watch.code, before=start)[".nox/tests/site-packages/peaks.py"]
    assert again.sha256 == start[".nox/tests/site-packages/peaks.py"].sha256 and again.nlink == 3


def _installed(tmp_path: Path, listed: bytes) -> tuple[footprint.Watch, Path]:
    """A checkout with a package installed as uv installs it: its module linked from a cache outside the checkout,
    and a RECORD (written into the checkout, one link) that lists the module's sha256 as `listed`'s."""
    code = tmp_path / "checkout"
    site = code / ".nox" / "tests" / "lib" / "python3.11" / "site-packages"
    (site / "peaks").mkdir(parents=True)
    (site / "peaks-1.0.dist-info").mkdir()
    (tmp_path / "cache").mkdir()
    module = site / "peaks" / "__init__.py"
    module.write_bytes(BYTES)
    os.link(module, tmp_path / "cache" / "__init__.py")
    digest = base64.urlsafe_b64encode(hashlib.sha256(listed).digest()).rstrip(b"=").decode()
    (site / "peaks-1.0.dist-info" / "RECORD").write_text(
        f"peaks/__init__.py,sha256={digest},{len(listed)}\npeaks-1.0.dist-info/RECORD,,\n"
    )
    time.sleep(0.05)
    watch = footprint.Watch(code / "data", code)
    watch.start()
    time.sleep(0.05)
    return watch, module


def test_an_installed_file_is_noted_by_its_record_not_read(tmp_path: Path) -> None:
    """The first snapshot takes a linked installed file's sha256 from its RECORD, without reading the file (what
    keeps it cheap where an environment's 2 GB are linked): link churn on it is no change, a rewrite with the mtime
    set back is one (the RECORD was read before the run, so rewriting it too changes nothing)."""
    watch, module = _installed(tmp_path, BYTES)
    noted = watch._code[os.path.relpath(module, watch.code)].sha256
    assert noted == hashlib.sha256(BYTES).digest()
    os.link(module, tmp_path / "another-environment.py")
    (tmp_path / "cache" / "__init__.py").unlink()
    assert watch.finish() == []

    watch, module = _installed(tmp_path / "again", BYTES)
    st = os.lstat(module)
    module.write_bytes(FORGED)
    os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.link(module, tmp_path / "again" / "cover.py")
    assert watch.finish() == [f"{watch.code}/{os.path.relpath(module, watch.code)} (changed)"]


def test_an_installed_file_that_differs_from_its_record_errs_on_a_change(tmp_path: Path) -> None:
    """A linked file whose bytes no longer match its RECORD at the start (edited in place before the run): its
    sha256 was taken from the RECORD, so after link churn its bytes do not match and it counts as changed. (The one
    write the rule lets by is the reverse: bytes put back to exactly what the RECORD listed before the run.)"""
    watch, module = _installed(tmp_path, FORGED)
    os.link(module, tmp_path / "another-environment.py")
    assert watch.finish() == [f"{watch.code}/{os.path.relpath(module, watch.code)} (changed)"]


def test_a_record_vouches_only_for_its_own_files(tmp_path: Path) -> None:
    """A RECORD's line for a path outside its site-packages (`..`), or whose size is not the file's, is not taken:
    that file's bytes are hashed instead."""
    code = tmp_path / "checkout"
    (code / "site-packages" / "x-1.dist-info").mkdir(parents=True)
    (code / "runners").mkdir()
    (code / "runners" / "metrics.py").write_bytes(BYTES)
    (code / "site-packages" / "x.py").write_bytes(BYTES)
    for path in ("runners/metrics.py", "site-packages/x.py"):
        os.link(code / path, tmp_path / path.replace("/", "-"))
    digest = base64.urlsafe_b64encode(hashlib.sha256(FORGED).digest()).rstrip(b"=").decode()
    (code / "site-packages" / "x-1.dist-info" / "RECORD").write_text(
        f"../runners/metrics.py,sha256={digest},{len(BYTES)}\nx.py,sha256={digest},{len(BYTES) + 1}\n"
    )
    start = footprint.snapshot(code)
    assert start["runners/metrics.py"].sha256 == start["site-packages/x.py"].sha256 == hashlib.sha256(BYTES).digest()


def test_a_symbolic_link_of_two_links_is_noted_by_its_target(tmp_path: Path) -> None:
    """A hardlinked symbolic link (`cp -al` of an environment links its `bin/python`): link churn is no change."""
    code = tmp_path / "checkout"
    (code / "bin").mkdir(parents=True)
    os.symlink("/usr/bin/python3", code / "bin" / "python")
    os.link(code / "bin" / "python", tmp_path / "python", follow_symlinks=False)
    time.sleep(0.05)
    watch = footprint.Watch(code / "data", code)
    watch.start()
    time.sleep(0.05)
    (tmp_path / "python").unlink()
    assert watch.finish() == []
