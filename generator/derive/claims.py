"""The claims' plausibility checks: the MFU a claimed steps/s implies at each tokens per step, against each datasheet
peak of its hardware and against our best measured MFU at each precision (the claims page)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

import generator.derive.counting as counting
from runners import metrics

TOKENS_PER_STEP = [2**k for k in range(9, 18)]  # 512 … 131072: every plausible global batch for this model
PRECISIONS = ("fp8", "bf16", "tf32", "fp32")


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimCheck:
    """One claim against what we measured on its workload."""

    claim: dict[str, Any]
    """The claim's record (summary row)."""
    flops_per_token: float
    our_tokens_per_step: int
    matched_tokens_per_step: float | None
    """The verdict's matched shape, in tokens a step, where the claim is the fight's (None otherwise)."""
    at_our_shape: pl.DataFrame
    """Per precision, the implied MFU at our runs' tokens per step, our best measured MFU, its variant and run."""
    accelerator: str
    curves: pl.DataFrame
    """The implied MFU at every tokens per step (`plausibility`)."""
    our_best: dict[str, float]
    """Per precision, our best configuration's MFU against the datasheet peak."""


def plausibility(claim: dict[str, Any], flops_per_token: float) -> pl.DataFrame:
    """The MFU a claimed steps/s implies at each tokens-per-step, against each datasheet peak of its hardware."""
    out = []
    for precision in PRECISIONS:
        peak = metrics.datasheet_peak_flops(claim["accelerator"], precision)
        if peak is None:
            continue
        for tokens in TOKENS_PER_STEP:
            implied = metrics.mfu(flops_per_token, claim["steps_per_s"] * tokens, peak, claim["accelerator_count"])
            out.append((claim["variant"], precision, tokens, implied))
    schema = {"claim": pl.String, "precision": pl.String, "tokens_per_step": pl.Int64, "implied_mfu": pl.Float64}
    return pl.DataFrame(out, schema=schema, orient="row")


def checks(summary: pl.DataFrame, matched: dict[tuple[str, str], float]) -> list[ClaimCheck]:
    """Every claim on a workload we measured, checked (`ClaimCheck`); `matched`: the verdict's matched shape in
    tokens a step, by (suite, workload) (`verdict.Verdict.matched`)."""
    measured = summary.filter(counting.MEASURED)
    out = []
    for claim in summary.filter(pl.col("origin") == "claim").sort("run_id").to_dicts():
        ours = measured.filter((pl.col("suite") == claim["suite"]) & (pl.col("workload") == claim["workload"]))
        if ours.height:
            out.append(_check(claim, ours, matched.get((claim["suite"], claim["workload"]))))
    return out


def _check(claim: dict[str, Any], ours: pl.DataFrame, matched_tokens: float | None) -> ClaimCheck:
    flops = ours["flops_per_token"][0]
    best = (  # headline runs only (derive's `headline`), whose loss agreed with their baseline; a configuration's
        # figure is the median of its runs', as on its board, and the best configuration of each precision shows
        ours.filter(
            pl.col("mfu_datasheet").is_not_null()
            & pl.col("headline")
            & pl.col("retracted_by").is_null()
            & pl.col("unverified").is_null()
            & pl.col("loss_parity_ok").fill_null(False)
        )
        .sort("started_at", "run_id")
        .group_by("compute_precision", "settings_hash")
        .agg(pl.col("mfu_datasheet").median(), pl.col("variant").last(), pl.col("run_id").last())
        .sort("mfu_datasheet", "settings_hash", descending=[True, False])
        .group_by("compute_precision", maintain_order=True)
        .first()
    )
    our_best = dict(best.select("compute_precision", "mfu_datasheet").iter_rows())
    best_runs = {r["compute_precision"]: r for r in best.to_dicts()}
    curves = plausibility(claim, flops)
    at_our_shape = curves.filter(pl.col("tokens_per_step") == int(ours["tokens_per_step"][0])).with_columns(
        our_best=pl.col("precision").replace_strict(our_best, default=None, return_dtype=pl.Float64),
        our_best_variant=pl.col("precision").replace_strict(
            {p: r["variant"] for p, r in best_runs.items()}, default=None, return_dtype=pl.String
        ),
        our_best_run=pl.col("precision").replace_strict(
            {p: r["run_id"] for p, r in best_runs.items()}, default=None, return_dtype=pl.String
        ),
    )
    if matched_tokens is not None:  # the same formula at the verdict's matched shape (interpolated tokens/step)
        implied = {
            p: metrics.mfu(flops, claim["steps_per_s"] * matched_tokens, peak, claim["accelerator_count"])
            for p in PRECISIONS
            if (peak := metrics.datasheet_peak_flops(claim["accelerator"], p)) is not None
        }
        at_our_shape = at_our_shape.with_columns(
            implied_matched=pl.col("precision").replace_strict(implied, default=None, return_dtype=pl.Float64)
        )
    return ClaimCheck(
        claim=claim,
        flops_per_token=flops,
        our_tokens_per_step=int(ours["tokens_per_step"][0]),
        matched_tokens_per_step=matched_tokens,
        at_our_shape=at_our_shape,
        accelerator=ours["accelerator"][0],
        curves=curves,
        our_best=our_best,
    )


def hardware_note(claim: dict[str, Any], ours: dict[str, Any] | None) -> str | None:
    """One plain sentence on how the claim's GPUs and ours differ, from the datasheets in `metrics`; None where there is
    no run of ours to set beside it or a datasheet does not know either GPU."""
    if ours is None:
        return None
    theirs_mem, ours_mem = metrics.datasheet_memory(claim["accelerator"]), metrics.datasheet_memory(ours["accelerator"])
    theirs_bf16 = metrics.datasheet_peak_flops(claim["accelerator"], "bf16")
    ours_bf16 = metrics.datasheet_peak_flops(ours["accelerator"], "bf16")
    if not (theirs_mem and ours_mem and theirs_bf16 and ours_bf16):
        return None
    same = "the same" if theirs_bf16 == ours_bf16 else "a different"
    return (
        f"{claim['accelerator']} and {ours['accelerator']} have {same} dense bf16 peak by their datasheets "
        f"({theirs_bf16 / 1e12:.0f} and {ours_bf16 / 1e12:.0f} TFLOP/s), but {theirs_mem[0]:.0f} GB at "
        f"{theirs_mem[1] / 1e12:.2f} TB/s against {ours_mem[0]:.0f} GB at {ours_mem[1] / 1e12:.2f} TB/s of memory: "
        "compute-bound steps should run alike, memory-bound parts faster on the latter."
    )
