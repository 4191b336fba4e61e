"""The verdict: the seed's question ("If tuned DDP closes the gap to 1.1x, I'll say so") answered at the shape it
was asked, from the records alone.

The seed's claims (imported claim records) give the fight: suite, workload, device count and the two figures,
21.7 steps/s for the sparse-first trainer and 14.1 for stock PyTorch DDP. The seed never states its batch, so the
matched shape is where our stock bf16 DDP (`STOCK`) runs the claim's stock figure, interpolated between the two
micro-batches that bracket it (`metrics.crossing`); there, tuned over stock against the claim's ratio, and tuned's
own steps/s against the sparse-first figure. Every formula comes from `runners.metrics`; this module groups,
interpolates and words.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from generator import pages
from runners import metrics, schema

STOCK = "ddp-amp-stock"
"""The seed's "stock PyTorch DDP": the DDP tutorial with bf16 autocast. fp32 stock cannot have been it (at the
claimed 14.1 steps/s the seed's GPUs would have run at over 600% of their fp32 peak: see the claims page)."""
SWEEP_MIN_STEPS = 300
"""Shortest run that counts as a sweep point (issue 22: each point at least 300 steps)."""
GAP_ASKED = 1.1
"""The seed's threshold: "If tuned DDP closes the gap to 1.1x, I'll say so"."""
DDP_TUNED = "ddp-tuned"
"""Tuned DDP in the seed's own sense: DDP with every setting a performance engineer would reach for, no FSDP."""


@dataclass(frozen=True, slots=True)
class Fight:
    """The seed's two claims and the fight they describe."""

    suite: str
    workload: str
    devices: int
    challenger: dict[str, Any]
    """The sparse-first trainer's claim record (summary row)."""
    stock: dict[str, Any]
    """Stock PyTorch DDP's claim record."""

    @property
    def claimed_ratio(self) -> float:
        return self.challenger["steps_per_s"] / self.stock["steps_per_s"]


SEED_CLAIMS = Path(__file__).resolve().parent.parent / "runners" / "claims" / "seed.toml"
"""The seed's claims as the project states them: only claim records that match one of these (id and figure) can
define the fight, so a submitted claim file cannot move the question."""


def _seed_claims() -> dict[str, float]:
    return {f"claim-{c['id']}": c["steps_per_s"] for c in tomllib.loads(SEED_CLAIMS.read_text())["claims"]}


def fight(summary: pl.DataFrame) -> Fight | None:
    """The fight the seed's claims describe: its torch claim (stock DDP) and its other engine's, on one suite and
    workload, each a claim record whose id and figure match runners/claims/seed.toml."""
    seed = _seed_claims()
    claims = summary.filter(
        (pl.col("origin") == "claim") & pl.col("retracted_by").is_null() & pl.col("run_id").is_in(list(seed))
    ).sort("run_id")
    claims = claims.filter(
        pl.col("steps_per_s") == pl.col("run_id").replace_strict(seed, default=None, return_dtype=pl.Float64)
    )
    for (suite, workload), group in claims.group_by("suite", "workload", maintain_order=True):
        stock = group.filter(pl.col("engine") == "torch")
        other = group.filter(pl.col("engine") != "torch")
        if stock.height and other.height:
            s, c = stock.row(0, named=True), other.row(0, named=True)
            return Fight(str(suite), str(workload), int(s["accelerator_count"]), c, s)
    return None


def sweep(
    summary: pl.DataFrame, the_fight: Fight, spreads: dict[tuple[str, int, bool], float] | None = None
) -> pl.DataFrame:
    """Per variant and micro-batch: our measured runs, by the stock claim's engine, of the fight's model on its device
    count (any workload of the suite training the same model), of a variant the suite file gives the fight's
    workload, verified, unretracted, loss parity passed, at least `SWEEP_MIN_STEPS` steps.
    Where a point has full-length runs only those count. steps/s is the median over runs; the interval spans the
    runs' intervals (lowest low to highest high), so a point repeated on two hosts shows their spread; a point of one
    run has its interval widened to the A/A spread of its hardware (`spreads`: `configurations.aa_spreads`), as a
    board's one-run row is, so that what varies between repeats is in it (`interval_basis` says which)."""
    model = pl.col("model_name")
    optional = (
        ("mfu_datasheet_reference", pl.Float64),
        ("reference_precision", pl.String),
        ("shared_host", pl.Boolean),
    )
    for name, dtype in optional:
        if name not in summary.columns:  # only float8 runs have the first two; a summary of bf16 runs may lack them
            summary = summary.with_columns(pl.lit(None, dtype=dtype).alias(name))
    fight_model = summary.filter(
        (pl.col("suite") == the_fight.suite)
        & (pl.col("workload") == the_fight.workload)
        & (pl.col("origin") == "measured")
    ).select(model.alias("m"))["m"]
    if not fight_model.len():
        return _empty_sweep()
    points = (
        summary.filter(
            (pl.col("suite") == the_fight.suite)
            & (model == fight_model[0])
            & (pl.col("origin") == "measured")
            & (pl.col("engine") == the_fight.stock["engine"])  # the question is about the stock claim's engine
            & (pl.col("accelerator_count") == the_fight.devices)
            & pl.col("retracted_by").is_null()
            & pl.col("unverified").is_null()
            & pl.col("steps_per_s_lo").is_not_null()
            & (pl.col("loss_parity_ok") == True)  # noqa: E712 (null: no baseline, not a pass)
            & (pl.col("steps_completed") >= SWEEP_MIN_STEPS)
            & pl.col("variant").is_in(_defined_variants(the_fight))  # pinned variants only, no sweep settings
        )
        .with_columns(any_full=pl.col("full_length").any().over("variant", "micro_batch"))
        .filter(pl.col("full_length") | ~pl.col("any_full"))
        .group_by("variant", "micro_batch")
        .agg(
            tier=pl.col("tier").first(),
            tokens_per_step=pl.col("tokens_per_step").first(),
            steps_per_s=pl.col("steps_per_s").median(),
            steps_per_s_lo=pl.col("steps_per_s_lo").min(),
            steps_per_s_hi=pl.col("steps_per_s_hi").max(),
            tokens_per_s_per_device=pl.col("tokens_per_s_per_device").median(),
            mfu_datasheet=pl.col("mfu_datasheet").median(),
            compute_precision=pl.col("compute_precision").first(),
            # a float8 run's MFU against the bf16 peak too, so it reads beside bf16 runs' (null for bf16 runs)
            mfu_datasheet_reference=pl.col("mfu_datasheet_reference").median(),
            reference_precision=pl.col("reference_precision").first(),
            peak_mem_gib=pl.col("peak_mem_gib").max(),
            runs=pl.len(),
            full_length=pl.col("full_length").any(),
            run_id=pl.col("run_id").sort_by("started_at").last(),
            accelerator=pl.col("accelerator").first(),
            shared_host=pl.col("shared_host").any(),
        )
        .sort("variant", "micro_batch")
    )
    return _widened(points, the_fight.devices, spreads or {})


def _widened(points: pl.DataFrame, devices: int, spreads: dict[tuple[str, int, bool], float]) -> pl.DataFrame:
    """One-run points' intervals widened to half the A/A spread each side of their median, with the basis named."""
    lows, highs, bases = [], [], []
    for row in points.iter_rows(named=True):
        lo, hi, median = row["steps_per_s_lo"], row["steps_per_s_hi"], row["steps_per_s"]
        spread = spreads.get((row["accelerator"], devices, bool(row["shared_host"])))
        if row["runs"] >= 2:
            basis = f"{row['runs']} runs: lowest low to highest high"
        elif spread is None:
            basis = "one run; no A/A spread measured on this hardware"
        else:
            lo, hi = metrics.widened(median, lo, hi, spread)
            basis = f"one run, widened to the A/A spread of {devices} × {row['accelerator']} ({spread:.2%})"
        lows.append(lo)
        highs.append(hi)
        bases.append(basis)
    return points.with_columns(
        steps_per_s_lo=pl.Series(lows, dtype=pl.Float64),
        steps_per_s_hi=pl.Series(highs, dtype=pl.Float64),
        interval_basis=pl.Series(bases, dtype=pl.String),
    )


def _defined_variants(the_fight: Fight) -> list[str]:
    """The variants the suite file gives the fight's workload: no record joins the sweep under a name of its own."""
    defined = schema.suite_workloads(the_fight.suite).get(the_fight.workload)
    return defined["variants"] if defined else []


def _empty_sweep() -> pl.DataFrame:
    return pl.DataFrame(
        schema={"variant": pl.String, "micro_batch": pl.Int64, "tier": pl.String, "tokens_per_step": pl.Float64,
                "steps_per_s": pl.Float64, "steps_per_s_lo": pl.Float64, "steps_per_s_hi": pl.Float64,
                "tokens_per_s_per_device": pl.Float64, "mfu_datasheet": pl.Float64, "compute_precision": pl.String,
                "peak_mem_gib": pl.Float64, "runs": pl.UInt32, "full_length": pl.Boolean, "run_id": pl.String,
                "mfu_datasheet_reference": pl.Float64, "reference_precision": pl.String, "accelerator": pl.String,
                "shared_host": pl.Boolean, "interval_basis": pl.String}
    )  # fmt: skip


def _curve(points: pl.DataFrame, variant: str, column: str) -> list[tuple[float, float]]:
    rows = points.filter(pl.col("variant") == variant).select("micro_batch", column).drop_nulls().rows()
    return [(float(m), float(v)) for m, v in rows]


def answer(points: pl.DataFrame, the_fight: Fight) -> dict[str, Any]:
    """The matched shape and what it says: where `STOCK` runs the claim's stock figure; there, each tuned variant's
    steps/s (interpolated, with its interval), tuned over stock, and the gap to the sparse-first figure."""
    target = the_fight.stock["steps_per_s"]
    stock = _curve(points, STOCK, "steps_per_s")
    out: dict[str, Any] = {
        "target": target,
        "claimed_ratio": the_fight.claimed_ratio,
        "stock_points": stock,
        "tuned": [],
        "best": None,
        "why_not": None,
    }
    matched = metrics.crossing(stock, target) if stock else None
    out["matched_micro_batch"] = matched
    if matched is None:
        out["why_not"] = _why_not(stock, target)
        return out
    rates = ("steps_per_s", "steps_per_s_lo", "steps_per_s_hi")
    stock_lo, stock_hi = (metrics.interpolate(_curve(points, STOCK, c), matched) for c in rates[1:])
    seq = (
        points.filter(pl.col("variant") == STOCK)
        .select(pl.col("tokens_per_step") / pl.col("micro_batch"))
        .to_series()
        .drop_nulls()
    )
    out["matched_tokens_per_step"] = matched * seq[0] if seq.len() else None
    tuned = []
    for variant in points.filter(pl.col("tier") == "tuned")["variant"].unique().sort():
        rate, lo, hi = (metrics.interpolate(_curve(points, variant, c), matched) for c in rates)
        if rate is None or lo is None or hi is None or stock_lo is None or stock_hi is None:
            continue
        tuned.append(
            {
                "variant": variant,
                "steps_per_s": rate,
                "steps_per_s_lo": lo,
                "steps_per_s_hi": hi,
                "ratio": rate / target,
                "ratio_lo": lo / stock_hi,
                "ratio_hi": hi / stock_lo,
                "gap": the_fight.challenger["steps_per_s"] / rate,
                "gap_lo": the_fight.challenger["steps_per_s"] / hi,
                "gap_hi": the_fight.challenger["steps_per_s"] / lo,
            }
        )
    tuned.sort(key=lambda t: -t["steps_per_s"])
    out["tuned"] = tuned
    out["best"] = tuned[0] if tuned else None
    for t in tuned:
        t["closes"] = "yes" if t["gap_hi"] <= GAP_ASKED else "no" if t["gap_lo"] > GAP_ASKED else "undecided"
    if tuned:
        best, claimed = tuned[0], the_fight.challenger["steps_per_s"]
        out["gap_lo"], out["gap_hi"] = best["gap_lo"], best["gap_hi"]
        out["closes"] = best["closes"]
        out["beats_claim"] = best["steps_per_s_lo"] >= claimed
        # the seed's words are "tuned DDP": the DDP variant alone, without FSDP or float8, answers them literally
        out["ddp"] = next((t for t in tuned if t["variant"] == DDP_TUNED), None)
    else:
        out["why_not"] = "no tuned variant has been measured at both micro-batches around the matched shape yet"
    return out


def owed(summary: pl.DataFrame, the_fight: Fight, verdict: dict[str, Any]) -> list[dict[str, Any]]:
    """The seed's list of what it still owes, each with a status and where its evidence is (`href` relative to
    the docs root; None where there is none yet)."""
    ok = summary.filter(  # finished, or stopped by its time budget with a steady-state figure
        (pl.col("origin") == "measured")
        & ((pl.col("status") == "ok") | pl.col("steps_per_s_lo").is_not_null())
        & pl.col("retracted_by").is_null()
    )

    def board(frame: pl.DataFrame) -> str | None:
        if not frame.height:
            return None
        row = frame.sort("started_at").row(-1, named=True)
        return f"leaderboards/{pages.slug(row['suite'], row['workload'])}.md"

    fight_board = f"leaderboards/{pages.slug(the_fight.suite, the_fight.workload)}.md"
    metal = ok.filter(pl.col("device") == "metal")
    mlx_here = ok.filter((pl.col("engine") == "mlx") & (pl.col("workload") == the_fight.workload))
    tp = ok.filter((pl.col("engine") == "vllm") & (pl.col("tensor_parallel_size") > 1))
    big = ok.filter((pl.col("engine") == "llamacpp") & (pl.col("total_params") >= 13e9))
    challenger = ok.filter(pl.col("engine") == the_fight.challenger["engine"])
    answered = verdict.get("best") is not None
    return [
        {
            "item": "A tuned PyTorch, same hardware, model and data, every advantage",
            "status": "answered" if answered else "measuring",
            "detail": "at the matched shape, below" if answered else verdict.get("why_not", ""),
            "href": fight_board,
        },
        {
            "item": "MLX on Metal",
            "status": "measured" if metal.height else "not yet",
            "detail": f"{pages.counted(metal.height, 'run')} on Apple Silicon"
            if metal.height
            else "needs an Apple Silicon Mac (nox -s bench-apple); meanwhile MLX trained the same model on the same "
            f"data on the fight's GPUs through its CUDA backend ({pages.counted(mlx_here.height, 'run')} of "
            f"{the_fight.workload})",
            "href": board(metal) or board(mlx_here),
        },
        {
            "item": "vLLM tensor-parallel serving",
            "status": "measured" if tp.height else "not yet",
            "detail": f"{pages.counted(tp.height, 'run')} at tensor-parallel size 2 or more; each board says which "
            "ran beside vllm bench",
            "href": board(tp),
        },
        {
            "item": "llama.cpp at 14B+, where memory pressure and the KV cache matter",
            "status": "one side measured" if big.height else "not yet",
            "detail": f"{pages.counted(big.height, 'run')} of "
            + ", ".join(
                f"{name} ({p / 1e9:.1f}B)"
                for p, name in sorted(set(big.select("total_params", "model_name").drop_nulls().iter_rows()))
            )
            + f" on one GPU, at KV-cache depths up to {max(big['depth'].drop_nulls().to_list(), default=0):,}"
            " (F16 and Q8_0 caches),"
            " beside vLLM and MLX where they ran; the seed's own engine did not run here"
            if big.height
            else "",
            "href": "side-by-side.md" if big.height else None,
        },
        {
            "item": "The sparse-first trainer itself",
            "status": "measured" if challenger.height else "claim only",
            "detail": f"{pages.counted(challenger.height, 'run')}"
            if challenger.height
            else "not reproduced: its author can run it here through the external-runner contract",
            "href": board(challenger) or "add-an-engine.md",
        },
    ]


def _why_not(stock: list[tuple[float, float]], target: float) -> str:
    if not stock:
        return f"{STOCK} has no sweep point on this hardware yet"
    lowest, highest = min(stock), max(stock)
    if lowest[1] < target:
        return (
            f"{STOCK} runs {lowest[1]:.3g} steps/s at the smallest micro-batch measured ({lowest[0]:g}), below the "
            f"claim's {target:g}: the matched shape lies at a smaller micro-batch, not measured yet"
        )
    return (
        f"{STOCK} runs {highest[1]:.3g} steps/s at the largest micro-batch measured ({highest[0]:g}), above the "
        f"claim's {target:g}: the matched shape lies at a larger micro-batch, not measured yet"
    )
