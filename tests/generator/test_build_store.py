"""One build store (issue 56): a build publishes nothing until its site is whole, and a failed one leaves the
previous site byte for byte. Built in this process, through the real build (MkDocs included), from a few committed
H200 records copied into a folder of their own: a training run of each kind, a generation test and a served point."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from generator import build, derive

ROOT = Path(__file__).resolve().parents[2]
RUNS = (
    "20261129T174656Z-train-gpt-1.27b-mb4-ddp-fp32-stock-4660e7",
    "20261129T174951Z-train-gpt-1.27b-mb4-ddp-amp-stock-d615cb",
    "20261129T200656Z-train-gpt-1.27b-mb4-fsdp2-compile-19b4d3",
    "20261201T055847Z-llama-8b-pp512-d0-mlx-f16-d1e193",
    "20261130T225839Z-llama-8b-serve-c32-i512-o128-vllm-tp1-36240e",
)


def small_data(folder: Path) -> Path:
    """A data folder holding `RUNS`' committed files."""
    data = folder / "data"
    (data / "h100").mkdir(parents=True)
    for run_id in RUNS:
        shutil.copy2(ROOT / "data" / "h100" / f"{run_id}.parquet", data / "h100")
    return data


def snapshot(site: Path) -> dict[str, bytes | None]:
    """Every path under `site`: a file's bytes, None for a folder."""
    return {
        str(p.relative_to(site)): p.read_bytes() if p.is_file() else None for p in sorted(site.rglob("*"))
    }


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
