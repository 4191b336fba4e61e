"""The decision card of "One GPU, every engine" (generator/derive/decision.py): on the committed H200 records, each
family's named engine is the one with the top batch-1 decode figure, an overlap of intervals is "undecided" (never a
winner), and the page renders the card; on rows written out here, a lead clear of every interval is "settled" and a
rival without an interval leaves it undecided."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from generator import derive
from generator.derive import decision, side_by_side
from generator.render import pages
from runners import engines


@pytest.fixture(scope="module")
def derived(committed_results: derive.Results) -> side_by_side.SideBySide:
    return committed_results.side_by_side


def _overlap(a: tuple[Any, Any], b: tuple[Any, Any]) -> bool:
    return None not in (*a, *b) and a[0] <= b[1] and b[0] <= a[1]


def test_each_family_names_the_engine_with_the_top_figure(derived: side_by_side.SideBySide) -> None:
    rows = derived.rows.filter(pl.col("family_bits").is_not_null() & pl.col("decode").is_not_null())
    keys = rows.select("suite", "model_name", "accelerator", "family_bits").unique()
    said = {(c.suite, c.model_name, c.accelerator, f.family_bits): f for c in derived.cards for f in c.families}
    assert len(said) == keys.height > 0
    for key, family in said.items():
        here = rows.filter(
            (pl.col("suite") == key[0]) & (pl.col("model_name") == key[1]) & (pl.col("accelerator") == key[2])
            & (pl.col("family_bits") == key[3])
        )  # fmt: skip
        top = here.sort("decode", descending=True).row(0, named=True)
        assert (family.fastest.engine, family.fastest.decode) == (top["engine"], top["decode"])
        assert family.mbu_datasheet == top["mbu_datasheet"] and family.copy_fraction == top["copy_fraction"]
        others = here.filter(pl.col("engine") != top["engine"])
        if not others.height:
            assert family.lead == decision.ALONE and family.runner_up is None
            continue
        best_other = others.sort("decode", descending=True).row(0, named=True)
        assert family.runner_up is not None and family.runner_up.decode == best_other["decode"]
        assert family.flip == pytest.approx(top["decode"] / best_other["decode"] - 1)
        mine = (top["decode_lo"], top["decode_hi"])
        if any(_overlap(mine, (r["decode_lo"], r["decode_hi"])) for r in others.iter_rows(named=True)):
            assert family.lead == decision.UNDECIDED  # an overlap is never a winner


def test_an_overlap_on_the_committed_data_is_undecided(derived: side_by_side.SideBySide) -> None:
    """llama-14b in F16 on one H200: MLX's decode interval overlaps vLLM's (vLLM has an interval there since its served
    repeats on one H200, 2026-12-06, gave it a between-run spread), so MLX's higher median names it first but settles
    nothing; llama.cpp's interval lies wholly below vLLM's, so it is not among those that could be first."""
    (card,) = [c for c in derived.cards if c.model_name == "llama-14b" and c.accelerator == "NVIDIA H200"]
    (f16,) = [f for f in card.families if f.family_bits == 16]
    assert f16.fastest.lo is not None and f16.lead == decision.UNDECIDED and f16.overlapping == ("vLLM",)
    runner = f16.runner_up
    assert runner is not None and runner.engine == "vllm" and runner.lo is not None and runner.hi is not None
    assert _overlap((f16.fastest.lo, f16.fastest.hi), (runner.lo, runner.hi))
    # vLLM's served point is its depth 0; llama.cpp also generated deeper on this model: vLLM there is unmeasured
    assert ("vLLM", (4096, 16384)) in f16.unmeasured


def _row(engine: str, decode: float, lo: float | None, hi: float | None, variant: str | None = None) -> dict:
    return {
        "suite": "s", "model_name": "m", "accelerator": "G", "family_bits": 8, "engine": engine,
        "engine_name": side_by_side.engine_names()[engine], "variant": variant or engine, "weights": "w",
        "weights_label": f"{engine} weights", "decode": decode, "decode_lo": lo, "decode_hi": hi,
        "decode_checked": True, "mbu_datasheet": 0.5, "copy_fraction": 0.6, "limit_tokens_per_s": 200.0,
        "ttft_ms": 30.0, "ttft_measured": False, "peak_mem_gib": 9.0,
    }  # fmt: skip


def test_settled_only_clear_of_every_other_engines_interval() -> None:
    names = side_by_side.engine_names()
    clear = [_row("llamacpp", 100, 98, 102), _row("mlx", 90, 88, 92), _row("llamacpp", 95, 93, 99.5, "other")]
    settled = decision.family_decision(clear, names, {"llamacpp": {0, 4096}, "mlx": {0}})
    assert settled is not None and settled.lead == decision.SETTLED and settled.fastest.variant == "llamacpp"
    assert settled.runner_up is not None and settled.runner_up.engine == "mlx"  # another engine, not another variant
    assert settled.absent == ("vLLM",) and settled.unmeasured == (("MLX", (4096,)),)
    overlapping = decision.family_decision([_row("llamacpp", 100, 98, 102), _row("mlx", 99, 97, 101)], names, {})
    assert overlapping is not None and overlapping.lead == decision.UNDECIDED and overlapping.overlapping == ("MLX",)
    unreplicated = decision.family_decision([_row("vllm", 100, 98, 102), _row("mlx", 50, None, None)], names, {})
    assert unreplicated is not None and unreplicated.lead == decision.UNDECIDED
    assert unreplicated.without_interval == ("MLX",) and unreplicated.overlapping == ()
    alone = decision.family_decision([_row("mlx", 50, None, None)], names, {})
    assert alone is not None and alone.lead == decision.ALONE and alone.runner_up is None


def test_the_page_renders_the_card(derived: side_by_side.SideBySide, tmp_path: Path) -> None:
    card = next(c for c in derived.cards if len(c.families) > 1)
    page = pages.render(
        pages.environment(), "side_by_side.md.j2", tmp_path / "side-by-side.md",
        models=[{"title": "m", "boards": [], "card": card}], depths=[], bandwidths={}, colours=engines.colours(),
    ).read_text()  # fmt: skip
    assert '!!! tip "Which engine for one request at a time"' in page
    for family in card.families:
        line = next(x for x in page.splitlines() if f"**{family.family_bits}-bit**" in x)
        assert f"**{pages.md_text(family.fastest.engine_name)}**" in line
        lead = {decision.SETTLED: "**settled**", decision.UNDECIDED: "**undecided**", decision.ALONE: "unopposed"}
        assert pages.pct(family.mbu_datasheet) in line and lead[family.lead] in line
        assert engines.colours()[family.fastest.engine].lstrip("#") in line  # its chart colour
