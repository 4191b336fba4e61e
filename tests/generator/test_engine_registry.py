"""The registry owns what the site shows of an engine (runners/engines `Engine.title`, `colour`, `pages`): an inference
engine registered for "One GPU, every engine" is on that page's rows, boards, decision card and charts under its own
name and in its own colour, with no list in generator/ to edit. Faked: no second inference engine runs here, so its
rows are the committed MLX rows of one model on one GPU under its name, taken from the boards as
tests/generator/test_side_by_side.py takes them, and the engine is registered for this test only."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from generator import derive, load
from generator.derive import checks, copy_bound, side_by_side
from generator.render import model_charts, pages
from runners import engines

ROOT = Path(__file__).resolve().parents[2]
NAME, TITLE, COLOUR = "fakeinfer", "FakeInfer", "#a61e4d"
MODEL, GPU = "llama-32b", "NVIDIA H200"


@pytest.fixture(scope="module")
def board_rows() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    results = derive.results(*checks.checked(load.load(ROOT / "data")))
    boards = [(b.ranked, b.unranked) for b in results.boards.values() if b.kind != "train"]
    return *side_by_side.stacked_boards(boards), results.runs


def _as_fake(frame: pl.DataFrame) -> pl.DataFrame:
    """MLX's one-GPU rows of `MODEL` on `GPU` under the fake engine's name, ten times as fast (so it leads its family
    and the card's swatch is its colour)."""
    mine = (pl.col("engine") == "mlx") & (pl.col("model_name") == MODEL) & (pl.col("accelerator") == GPU)
    return frame.filter(mine & (pl.col("accelerator_count") == 1)).with_columns(
        pl.lit(NAME).alias("engine"),
        pl.col("variant").str.replace("mlx", NAME, literal=True),
        pl.col("run_id").str.replace("mlx", NAME, literal=True),
        *(pl.col(c) * 10 for c in ("value", "lo", "hi")),
    )


def test_a_registered_inference_engine_is_on_the_side_by_side_page(
    board_rows: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ranked, unranked, summary = board_rows
    fake = engines.Engine(name=NAME, title=TITLE, colour=COLOUR, about="a second inference engine (test)",
                          kinds=("inference",), pages=frozenset({"side_by_side"}), packages=())  # fmt: skip
    monkeypatch.setattr(engines, "ENGINES", engines.ENGINES | {NAME: fake})  # the registry as it is, restored after
    fakes = _as_fake(ranked)
    assert fakes.filter(pl.col("kind") == "tg").height > 0
    bandwidths = copy_bound.copy_bandwidths(summary)
    derived = side_by_side.derive(pl.concat([ranked, fakes], how="diagonal_relaxed"), unranked, bandwidths)

    rows = derived.rows.filter(pl.col("engine") == NAME)
    assert rows.height > 0 and set(rows["engine_name"]) == {TITLE}
    assert set(rows["model_name"]) == {MODEL} and set(rows["accelerator"]) == {GPU}
    here = [b for b in side_by_side.boards(derived.rows) if NAME in {r["engine"] for r in b["rows"]}]
    assert here and all(TITLE in b["engines"] for b in here)
    elsewhere = [b for b in side_by_side.boards(derived.rows) if b not in here]
    assert elsewhere and all(TITLE in b["missing"] for b in elsewhere)  # a page engine that did not run there

    (card,) = [c for c in derived.cards if (c.model_name, c.accelerator) == (MODEL, GPU)]
    led = [f for f in card.families if f.fastest.engine == NAME]
    assert led and all(f.fastest.engine_name == TITLE for f in led)

    chart = model_charts.side_by_side(pl.DataFrame(here[0]["rows"], schema=side_by_side.ROW_SCHEMA)).to_dict()
    scale = next(layer["encoding"]["color"]["scale"] for layer in chart["layer"] if "color" in layer["encoding"])
    assert dict(zip(scale["domain"], scale["range"], strict=True))[TITLE] == COLOUR

    page = pages.render(
        pages.environment(), "side_by_side.md.j2", tmp_path / "side-by-side.md",
        models=[{"title": "m", "boards": [b | {"chart": ""} for b in here], "card": card}], depths=[], bandwidths={},
        colours=engines.colours(),
    ).read_text()  # fmt: skip
    assert f"| {TITLE} · {NAME}-" in page and f"background: {pages.md_text(COLOUR)}" in page and f"**{TITLE}**" in page


def test_the_pages_name_an_engine_and_its_device_as_the_registry_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """A board row's engine is named by its title, and its device shown beside the hardware where the registry says
    (`Engine.device_shown`), not where a template compares the engine's name."""
    fake = engines.Engine(name=NAME, title=TITLE, about="x", kinds=("inference",), packages=(), device_shown=True)
    monkeypatch.setattr(engines, "ENGINES", engines.ENGINES | {NAME: fake})
    cell = pages.environment().from_string(
        "{{ e | engine_title }}{% if e is device_shown %} ({{ e | engine_title }} on {{ d | upper }}){% endif %}"
    )
    assert cell.render(e=NAME, d="cuda") == f"{TITLE} ({TITLE} on CUDA)"
    assert cell.render(e="llama-bench", d="cuda") == "llama-bench"  # a name the registry does not know, as it is
