"""The catalogue pages around the leaderboards: claims (with a plausibility check), failures, hardware and
calibration, engines, and downloads of everything (Parquet and CSV)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import altair as alt
import jinja2
import polars as pl

from generator import columns as columns_table
from generator import pages, verdict
from runners import metrics, schema

TOKENS_PER_STEP = [2**k for k in range(9, 18)]  # 512 … 131072: every plausible global batch for this model
PRECISIONS = ("fp8", "bf16", "tf32", "fp32")


def plausibility(claim: dict, flops_per_token: float) -> pl.DataFrame:
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


def plausibility_chart(curves: pl.DataFrame, our_best: dict[str, float]) -> alt.LayerChart:
    """Implied MFU against tokens per step (log-log), with the physical limit and our best measured MFU at each
    precision (same colour as that precision's curve)."""
    base = alt.Chart(curves).encode(
        x=alt.X("tokens_per_step:Q", scale=alt.Scale(type="log", base=2), title="tokens per step (not stated)"),
        y=alt.Y("implied_mfu:Q", scale=alt.Scale(type="log"), title="implied MFU (fraction of datasheet peak)"),
        color=alt.Color("precision:N", title="if it ran in"),
        strokeDash=alt.StrokeDash("claim:N", title="claim"),
        tooltip=[
            alt.Tooltip("claim:N"),
            alt.Tooltip("precision:N"),
            alt.Tooltip("tokens_per_step:Q"),
            alt.Tooltip("implied_mfu:Q", format=".1%"),
        ],
    )
    lines = base.mark_line(point=True)
    limit = (
        alt.Chart(alt.Data(values=[{"label": "physical limit (100% of peak)", "mfu": 1.0}]))
        .mark_rule(color="black", strokeWidth=2)
        .encode(y="mfu:Q", tooltip=[alt.Tooltip("label:N"), alt.Tooltip("mfu:Q", format=".0%")])
    )
    best = pl.DataFrame(
        {"precision": list(our_best), "mfu": list(our_best.values())},
        schema={"precision": pl.String, "mfu": pl.Float64},
    )
    rules = (
        alt.Chart(best)
        .mark_rule(strokeDash=[4, 3])
        .encode(
            y="mfu:Q",
            color=alt.Color("precision:N"),
            tooltip=[alt.Tooltip("precision:N", title="our best measured, in"), alt.Tooltip("mfu:Q", format=".1%")],
        )
    )
    return (lines + limit + rules).properties(width="container", height=320)


def write_catalog_pages(
    env: jinja2.Environment,
    docs: Path,
    summary: pl.DataFrame,
    loaded_rows: pl.DataFrame,
    chart_sink: pages.Charts,
    built_with: list[dict[str, str]] | None = None,
    matched: dict[tuple[str, str], float] | None = None,
) -> None:
    measured = summary.filter(pl.col("origin") == "measured")
    claims = summary.filter(pl.col("origin") == "claim").sort("run_id").to_dicts()
    claim_sections = []
    if matched is None:  # the verdict's matched shape, in tokens a step, for the seed's fight (point figures suffice)
        matched = {}
        the_fight = verdict.fight(summary)
        if the_fight is not None:
            said = verdict.answer(verdict.sweep(summary, the_fight), the_fight)
            if said.get("matched_tokens_per_step") is not None:
                matched[(the_fight.suite, the_fight.workload)] = said["matched_tokens_per_step"]
    for claim in claims:
        ours = measured.filter((pl.col("suite") == claim["suite"]) & (pl.col("workload") == claim["workload"]))
        if not ours.height:
            continue
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
            our_best_href=pl.col("precision").replace_strict(
                {p: pages.run_href(r["run_id"]) for p, r in best_runs.items()}, default=None, return_dtype=pl.String
            ),
        )
        matched_tokens = matched.get((claim["suite"], claim["workload"]))
        if matched_tokens is not None:  # the same formula at the verdict's matched shape (interpolated tokens/step)
            implied = {
                p: metrics.mfu(flops, claim["steps_per_s"] * matched_tokens, peak, claim["accelerator_count"])
                for p in PRECISIONS
                if (peak := metrics.datasheet_peak_flops(claim["accelerator"], p)) is not None
            }
            at_our_shape = at_our_shape.with_columns(
                implied_matched=pl.col("precision").replace_strict(implied, default=None, return_dtype=pl.Float64)
            )
        claim_sections.append(
            dict(
                claim=claim,
                flops_per_token=flops,
                our_tokens_per_step=int(ours["tokens_per_step"][0]),
                matched_tokens_per_step=matched_tokens,
                at_our_shape=at_our_shape.to_dicts(),
                accelerator=ours["accelerator"][0],
                chart=chart_sink.html(
                    pages.chart_id(pages.slug(claim["run_id"]), "plausibility"), plausibility_chart(curves, our_best)
                ),
            )
        )
    pages.render(env, "claims.md.j2", docs / "claims.md", sections=claim_sections)
    failures = (
        summary.filter(pl.col("status") != "ok")
        .sort("started_at", descending=True)
        .with_columns(
            href=pl.col("run_id").map_elements(pages.run_href, return_dtype=pl.String),
        )
    )
    pages.render(env, "failures.md.j2", docs / "failures.md", failures=failures.to_dicts())
    hardware = (
        measured.filter(pl.col("calibrated_matmul_flops").is_not_null())
        .with_columns(
            copy=pl.col("copy_bytes_per_s"),
            busbw=pl.col("busbw_bytes_per_s"),
        )
        .group_by("accelerator", "accelerator_count", "compute_precision", "interconnect", "driver", "cuda")
        .agg(
            runs=pl.len(),
            matmul_median=pl.col("calibrated_matmul_flops").median(),
            matmul_min=pl.col("calibrated_matmul_flops").min(),
            matmul_max=pl.col("calibrated_matmul_flops").max(),
            copy_median=pl.col("copy").median(),
            busbw_median=pl.col("busbw").median(),
        )
        .sort("accelerator", "accelerator_count", "compute_precision")
    )
    peaks = [
        {"device": device, **{p: peaks.get(p) for p in PRECISIONS}}
        for device, peaks in metrics.DATASHEET_PEAK_FLOPS.items()
    ]
    used = (  # the calibrated peak each run's calibrated MFU divides by (derive: one per hardware model and precision)
        measured.filter(pl.col("model_matmul_flops").is_not_null())
        .group_by("accelerator", "matmul_precision")
        .agg(peak=pl.col("model_matmul_flops").first(), runs=pl.col("calibrated_matmul_flops").is_not_null().sum())
        .sort("accelerator", "matmul_precision")
    )
    pages.render(
        env, "hardware.md.j2", docs / "hardware.md", rows=hardware.to_dicts(), peaks=peaks, used=used.to_dicts()
    )
    engines = (
        summary.group_by("engine", "engine_version", "origin", "device")
        .agg(runs=pl.len(), variants=pl.col("variant").unique().sort(), hardware=pl.col("accelerator").unique().sort())
        .sort("engine", "engine_version", "origin", "device", nulls_last=True)
    )
    sections = [
        dict(name=name, **about, versions=engines.filter(pl.col("engine") == name).to_dicts())
        for name, about in schema.ENGINE_ABOUT.items()
    ]
    others = engines.filter(~pl.col("engine").is_in(list(schema.ENGINE_ABOUT)))  # tools, claims, retractions
    pages.render(env, "engines.md.j2", docs / "engines.md", sections=sections, others=others.to_dicts())
    write_downloads(env, docs, summary, loaded_rows, built_with or [])


STAGED_DOWNLOADS = "downloads-staged"


def write_downloads(
    env: jinja2.Environment,
    docs: Path,
    summary: pl.DataFrame,
    rows: pl.DataFrame,
    built_with: list[dict[str, str]] | None = None,
) -> None:
    """Everything as files: per-run summary as Parquet and CSV, every measurement row as Parquet (and as one CSV
    per run, written beside each run's page by `run_pages`); the page also lists the generator's versions that built
    the site (`built_with`, `versions.generator`).

    The samples file is large (millions of rows on a busy site), so it is staged next to `docs` (in
    `STAGED_DOWNLOADS`) and moved into the built site after MkDocs, instead of being copied by it."""
    out = docs / "downloads"
    out.mkdir(parents=True, exist_ok=True)
    staged = docs.parent / STAGED_DOWNLOADS
    if staged.exists():
        shutil.rmtree(staged)
    staged.mkdir(parents=True)
    flat = summary.select(
        [c for c, t in summary.schema.items() if not isinstance(t, pl.List | pl.Struct | pl.Object)]
    ).sort("run_id")
    files = []
    # samples in load order: files sorted by path, each file's rows as its runner wrote them (deterministic)
    for name, frame, fmt, where in (
        ("runs", flat, "parquet", out),
        ("runs", flat, "csv", out),
        ("samples", rows, "parquet", staged),
    ):
        path = where / f"{name}.{fmt}"
        if fmt == "parquet":
            frame.write_parquet(path, compression="zstd", statistics=False)
        else:
            text = [c for c, t in frame.schema.items() if t == pl.String]
            frame.with_columns(
                pl.col(pl.Datetime).dt.to_string("%Y-%m-%dT%H:%M:%S%.6fZ"), *(pages.csv_inert(pl.col(c)) for c in text)
            ).write_csv(path)
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(1 << 22):
                digest.update(chunk)
        files.append(dict(name=path.name, rows=frame.height, size=path.stat().st_size, sha256=digest.hexdigest()))
    # what each column holds: the record's own columns (runners/schema.py), the config flattened (generator/columns.py)
    said = schema.COLUMN_DOCS | {c.name: f"{c.what} ({c.source} {c.path})" for c in columns_table.COLUMNS}
    columns = {name: (json.dumps(str(dtype)), said.get(name, "")) for name, dtype in flat.schema.items()}
    pages.render(
        env, "downloads.md.j2", docs / "downloads.md", files=files, columns=columns, built_with=built_with or []
    )
