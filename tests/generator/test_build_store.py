"""One build store (issue 56): a build publishes nothing until its site is whole, and a failed one leaves the
previous site byte for byte; the generator's version is in no run page, so a new one renders none again. Built in
this process, through the real build (MkDocs included), from a few committed H200 records copied into a folder of
their own: a training run of each kind, a generation test and a served point."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from generator import build, derive, render
from generator.load import packages
from generator.render import versions
from tests.conftest import ROOT

RUNS = (
    "20261129T174656Z-train-gpt-1.27b-mb4-ddp-fp32-stock-4660e7",
    "20261129T174951Z-train-gpt-1.27b-mb4-ddp-amp-stock-d615cb",
    "20261129T200656Z-train-gpt-1.27b-mb4-fsdp2-compile-19b4d3",
    "20261201T055847Z-llama-8b-pp512-d0-mlx-f16-d1e193",
    "20261130T225839Z-llama-8b-serve-c32-i512-o128-vllm-tp1-36240e",
)


def count_rendered(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The run ids whose run pages the builds from here on render (each time one is rendered), in a list the caller
    reads and clears."""
    rendered: list[str] = []
    real_render = render.runs._render

    def counted(stage: Path, runs: list[dict[str, object]], *args: object, **kwargs: object) -> int:
        rendered.extend(str(r["run_id"]) for r in runs)
        return real_render(stage, runs, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(render.runs, "_render", counted)
    return rendered


def small_data(folder: Path) -> Path:
    """A data folder holding `RUNS`' committed files."""
    data = folder / "data"
    (data / "h100").mkdir(parents=True)
    for run_id in RUNS:
        shutil.copy2(ROOT / "data" / "h100" / f"{run_id}.parquet", data / "h100")
    return data


def snapshot(site: Path) -> dict[str, bytes | None]:
    """Every path under `site`: a file's bytes, None for a folder."""
    return {str(p.relative_to(site)): p.read_bytes() if p.is_file() else None for p in sorted(site.rglob("*"))}


@pytest.fixture(autouse=True)
def _no_shared_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAIRFIGHT_SITE_CACHE", raising=False)  # each test's cache is its own work folder's


def _fails(*args: object, **kwargs: object) -> None:
    raise RuntimeError("made to fail")


@pytest.mark.parametrize("where", ["derive.results", "mkdocs.commands.build.build"])
def test_a_build_that_raises_leaves_the_previous_site_byte_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A build made to raise while deriving (before any page is made) or in MkDocs (after the run pages were made
    again, for another repository address) leaves every file of the site as it was, says so, and leaves no stage; the
    next build, which does not raise, gives the site the first build gave."""
    data, out, work = small_data(tmp_path), tmp_path / "site", tmp_path / "work"
    build.build(data, out, work)
    before = snapshot(out)
    assert any(name.startswith("runs/") and name.endswith(".html") for name in before)
    with monkeypatch.context() as patch:
        if where == "derive.results":
            patch.setattr(derive, "results", _fails)
        else:
            patch.setattr(where, _fails)
        with pytest.raises(RuntimeError, match="made to fail") as raised:
            build.build(data, out, work, repo_url="https://example.org/another.git")  # every run page made again
    assert snapshot(out) == before
    assert f"{out} is exactly as it was before the build began" in "\n".join(getattr(raised.value, "__notes__", []))
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no stage left beside it
    build.build(data, out, work)
    assert snapshot(out) == before


def _versioned(version: str) -> Callable[[], list[dict[str, str]]]:
    """`packages.built_with` as it would answer with Fair Fight at `version` (as git describe names every commit)."""
    real = packages.built_with

    def generator() -> list[dict[str, str]]:
        return [v | {"version": version} if v["package"] == "fairfight" else v for v in real()]

    return generator


def test_a_new_version_of_the_generator_renders_no_run_page_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two builds whose only difference is the generator's version give byte-identical run pages, a warm build at a
    new version renders none of them again, and the version reaches the run pages' one shared footer script."""
    data = small_data(tmp_path)
    rendered = count_rendered(monkeypatch)
    monkeypatch.setattr(packages, "built_with", _versioned("1.0.0"))
    build.build(data, tmp_path / "one", tmp_path / "work-one")
    monkeypatch.setattr(packages, "built_with", _versioned("1.0.1.dev1+gabcdef0"))
    build.build(data, tmp_path / "two", tmp_path / "work-two")
    assert sorted(rendered) == sorted(RUNS * 2)  # cold builds: every page
    one, two = snapshot(tmp_path / "one" / "runs"), snapshot(tmp_path / "two" / "runs")
    assert one == two
    rendered.clear()
    build.build(data, tmp_path / "one", tmp_path / "work-one")  # warm, at the new version
    assert rendered == []
    assert snapshot(tmp_path / "one" / "runs") == one
    assert "Fair Fight 1.0.1.dev1+gabcdef0 with" in (tmp_path / "one" / versions.FOOTER_SCRIPT).read_text()


def _damaged(entry: Path, how: str, other: Path) -> None:
    """Damage a cached download part as a full disk, another build or a hostile hand might."""
    if how == "truncated":  # in place: the published file it is linked to loses its end too
        with open(entry, "r+b") as f:
            f.truncate(entry.stat().st_size // 2)
        return
    entry.unlink()
    if how == "another entry's bytes":
        entry.write_bytes(other.read_bytes())
    elif how == "a folder":
        entry.mkdir()
        (entry / "x").write_text("x")
    elif how == "a link to a device":
        entry.symlink_to("/dev/null")


@pytest.mark.parametrize(
    ("samples_damage", "csv_damage"), [("truncated", "a link to a device"), ("another entry's bytes", "a folder")]
)
def test_a_warm_build_after_a_damaged_download_part_is_the_cold_build(
    tmp_path: Path, samples_damage: str, csv_damage: str
) -> None:
    """A samples part and a runs.csv part in the cache damaged between two builds: the warm build publishes what a
    cold one does, every file the same bytes (a part is trusted only when its bytes hash to the sha256 noted beside
    it, and never read through a link)."""
    data, warm, cold = small_data(tmp_path), tmp_path / "warm", tmp_path / "cold"
    build.build(data, warm, tmp_path / "work")
    cache = tmp_path / "work" / "cache" / "store" / "downloads"
    entries = sorted(p for p in cache.iterdir() if not p.name.endswith(".note"))
    samples = [p for p in entries if p.read_bytes().startswith(b"PAR1")]
    csvs = [p for p in entries if p.read_bytes().startswith(b"\x1f\x8b")]
    assert samples and csvs
    _damaged(samples[0], samples_damage, csvs[0])
    _damaged(csvs[0], csv_damage, samples[-1])
    build.build(data, warm, tmp_path / "work")
    build.build(data, cold, tmp_path / "cold-work")
    assert snapshot(warm) == snapshot(cold)


def test_an_output_folder_reached_through_a_link_stays_linked(tmp_path: Path) -> None:
    """`--out` a link to the folder served (a web server's root, say): the new site replaces the folder it names, and
    the link stays a link."""
    data, served, out = small_data(tmp_path), tmp_path / "served", tmp_path / "site"
    served.mkdir()
    out.symlink_to(served)
    build.build(data, out, tmp_path / "work")
    assert out.is_symlink() and (served / "index.html").is_file() and (served / build.BUILT_MARKER).is_file()
