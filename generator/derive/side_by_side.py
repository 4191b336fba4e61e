"""One model, one GPU, every engine: llama.cpp, MLX and vLLM on the same Llama shape and hardware, by precision family,
and llama.cpp's generation at every KV-cache depth, where the cache's bytes join the weights'.

Derived from the boards' own rows (`inference.board`, `serving.board`: the same eligibility, widening and
cross-checks), never from a second reading of the runs:
- decode: batch-1 generation, tokens/s. llama.cpp and MLX: the tg test at depth 0; vLLM: its served point at one
  request in flight (1000 / median TPOT), its interval scaled to it where the point has one (one served run has none).
- prefill: the pp test at depth 0 (llama.cpp, MLX); vLLM measures no prefill apart from its TTFT.
- TTFT at one request: vLLM's median, measured as served; llama.cpp and MLX serve nothing here, so theirs is computed
  (the pp test's time for the prompt plus one tg token: no queue, no tokenizer, no HTTP) and is a lower bound, said so.
- MBU, the site's one definition: against the datasheet bandwidth (`metrics.mbu`), and beside it the fraction of the
  measured copy bound (`metrics.copy_bound_fraction`) against the copy bandwidth calibrated on the same hardware model
  (`copy_bound.copy_bandwidths`, derived once a build and handed in): each its board row's, of that row's own figure
  (`ladder.with_bandwidth_use`), taken as it is, never worked out again here; and that bound: the tokens/s at which a
  decoded token's bytes take exactly the copy time (`metrics.bandwidth_bound_tokens_per_s`). A copy reads and writes,
  so a decode can pass it.
A row is a variant's newest configuration that ranks (cross-checked against its own tool); a variant with none shows
its newest finished run, marked "not cross-checked" with the board's reason. Precision families are named by bits per
weight read (`precision_family`): rows of one family read weights within ~10% of each other's bytes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

import generator.derive.decision as decision
import generator.derive.serving as serving
from runners import engines, metrics

FAMILIES = (4, 8, 16)
"""Bits per weight that name a precision family: 4-bit (Q4_K_M, ~4.8), 8-bit (Q8_0, ~8.5; FP8), 16-bit (F16, fp16)."""

ROW_SCHEMA = {
    "suite": pl.String,
    "model_name": pl.String,
    "total_params": pl.Float64,
    "accelerator": pl.String,
    "family_bits": pl.Int64,
    "engine": pl.String,
    "engine_name": pl.String,
    "variant": pl.String,
    "weights": pl.String,
    "weights_label": pl.String,
    "bits_per_weight": pl.Float64,
    "tokens_per_joule": pl.Float64,
    "mean_power_w": pl.Float64,
    "energy_note": pl.String,
    "weight_gib": pl.Float64,
    "decode_bytes_per_token": pl.Float64,
    "decode": pl.Float64,
    "decode_lo": pl.Float64,
    "decode_hi": pl.Float64,
    "decode_basis": pl.String,
    "decode_run": pl.String,
    "decode_checked": pl.Boolean,
    "decode_reason": pl.String,
    "prefill": pl.Float64,
    "prefill_lo": pl.Float64,
    "prefill_hi": pl.Float64,
    "prefill_run": pl.String,
    "ttft_ms": pl.Float64,
    "ttft_measured": pl.Boolean,
    "peak_mem_gib": pl.Float64,
    "copy_bytes_per_s": pl.Float64,
    "mbu_datasheet": pl.Float64,
    "copy_fraction": pl.Float64,
    "limit_tokens_per_s": pl.Float64,
}
"""One engine's row of a side-by-side board (decode and prefill tokens/s with intervals, each from its own board)."""


def precision_family(bits_per_weight: float | None) -> int | None:
    """The family (`FAMILIES`) nearest on a log scale to a model's bits per weight read per token."""
    if bits_per_weight is None or not math.isfinite(bits_per_weight) or bits_per_weight <= 0:
        return None
    return min(FAMILIES, key=lambda f: abs(math.log2(bits_per_weight / f)))


def _newest_per_variant(ranked: pl.DataFrame, unranked: pl.DataFrame) -> dict[tuple[str, str], dict]:
    """(engine, variant) → its newest ranked configuration's row, else its newest finished unranked run with its
    reason (`checked` False)."""
    out: dict[tuple[str, str], dict] = {}
    for row in ranked.sort("started_at").iter_rows(named=True):
        out[(row["engine"], row["variant"])] = row | {"checked": True, "reason": None}
    for row in unranked.filter(pl.col("status") == "ok").sort("started_at").iter_rows(named=True):
        key = (row["engine"], row["variant"])
        if row["value"] is not None and not out.get(key, {}).get("checked"):
            out[key] = row | {"checked": False, "reason": row["unranked"]}
    return out


_GROUP = ("suite", "model_name", "accelerator")
_CHOSEN_BY: dict[str, pl.DataType | type[pl.DataType]] = {
    **dict.fromkeys(("suite", "model_name", "accelerator", "engine", "kind", "status"), pl.String),
    **dict.fromkeys(("accelerator_count", "depth", "concurrency"), pl.Int64),
    "started_at": pl.Datetime("us", "UTC"),
    "value": pl.Float64,
}


def stacked_boards(boards: list[tuple[pl.DataFrame, pl.DataFrame]]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The ranked rows and the unranked runs of test boards (each `(ranked, unranked)` as `inference.board` and
    `serving.board` give them), each kind in one frame: what this page's rows are taken from."""
    frames = []
    for part in ([r for r, _ in boards], [u for _, u in boards]):
        frame = pl.concat([f for f in part if f.height] or [pl.DataFrame()], how="diagonal_relaxed")
        # every column the rows are chosen by, null where no board of a kind has it
        missing = [c for c, t in _CHOSEN_BY.items() if c not in frame.columns]
        frames.append(frame.with_columns(pl.lit(None, dtype=_CHOSEN_BY[c]).alias(c) for c in missing))
    return frames[0], frames[1]


def _where(ranked: pl.DataFrame, unranked: pl.DataFrame, which: pl.Expr) -> tuple[pl.DataFrame, pl.DataFrame]:
    return ranked.filter(which), unranked.filter(which)


def engine_names() -> dict[str, str]:
    """The engines this page sets side by side and how it names them: those the registry puts on it
    (`Engine.pages`), with their titles (its charts' colours are keyed by them, `charts.engine_colour`), in the order
    of their names. Read when called, so an engine registered later is on the page."""
    return dict(sorted(engines.titles("side_by_side").items()))


def _one_gpu(frame: pl.DataFrame, page: str = "side_by_side") -> pl.DataFrame:
    """The rows on one GPU of the engines the registry puts on `page` (`engines.PAGES`)."""
    return frame.filter((pl.col("accelerator_count") == 1) & pl.col("engine").is_in(list(engines.titles(page))))


def engine_rows(ranked: pl.DataFrame, unranked: pl.DataFrame, copy_bandwidth: Mapping[str, float]) -> pl.DataFrame:
    """Every engine's row on every model it ran on one GPU (`ROW_SCHEMA`), sorted by suite, model, hardware, family
    and decode rate. `ranked`, `unranked`: every inference and serving board's ranked rows and unranked runs
    (`stacked_boards`); `copy_bandwidth`: per hardware model, the calibrated copy bandwidth the copy bound is drawn at
    (`copy_bound.copy_bandwidths`)."""
    out: list[dict] = []
    ranked, unranked = _one_gpu(ranked), _one_gpu(unranked)
    both = pl.concat(
        [ranked.select(*_GROUP, "kind", "depth"), unranked.select(*_GROUP, "kind", "depth")], how="vertical_relaxed"
    )
    groups = both.filter((pl.col("depth") == 0) | pl.col("kind").is_in(list(serving.TEST_KINDS)))
    groups = groups.select(*_GROUP).unique().sort(pl.all())
    for suite, model, accelerator in groups.iter_rows():
        here = (pl.col("suite") == suite) & (pl.col("model_name") == model) & (pl.col("accelerator") == accelerator)
        at = here & (pl.col("depth") == 0)
        decode = _newest_per_variant(*_where(ranked, unranked, at & (pl.col("kind") == "tg")))
        prefill = _newest_per_variant(*_where(ranked, unranked, at & (pl.col("kind") == "pp")))
        c1 = here & (pl.col("kind") == "serve") & (pl.col("concurrency") == 1)
        vllm = _newest_per_variant(*_where(ranked, unranked, c1))
        for key, row in decode.items():
            pp = prefill.get(key)
            ttft = None
            if pp is not None and pp["value"] and row["value"]:  # the prompt's time plus one token's
                ttft = metrics.computed_ttft_ms(pp["n_tokens"], pp["value"], row["value"])
            out.append(_row(row, pp, ttft, False, copy_bandwidth.get(accelerator)))
        for row in vllm.values():
            rate = row["decode_rate"]
            scale = rate / row["value"] if rate and row["value"] else None
            decoded = row | {
                "value": rate,
                "lo": None if scale is None or row["lo"] is None else row["lo"] * scale,
                "hi": None if scale is None or row["hi"] is None else row["hi"] * scale,
                "peak_mem_gib": None,  # vLLM reserves its share of the GPU up front (gpu_memory_utilization)
            }
            out.append(_row(decoded, None, row["median_ttft_ms"], True, copy_bandwidth.get(accelerator)))
    frame = pl.DataFrame(out, schema=ROW_SCHEMA)
    return frame.sort(
        "suite", "model_name", "accelerator", "family_bits", "decode", descending=[False, False, False, True, True]
    )


def _row(decode: dict, prefill: dict | None, ttft_ms: float | None, measured: bool, copy: float | None) -> dict:
    weight_bytes = decode.get("weight_bytes_per_token")
    params = decode.get("non_embedding_params")
    bits = metrics.bits_per_weight(weight_bytes, params) if weight_bytes and params else None
    per_token = decode.get("decode_bytes_per_token")
    return {
        "suite": decode["suite"],
        "model_name": decode["model_name"],
        "total_params": decode.get("total_params"),
        "accelerator": decode["accelerator"],
        "family_bits": precision_family(bits),
        "engine": decode["engine"],
        "engine_name": engine_names()[decode["engine"]],
        "variant": decode["variant"],
        "weights": decode["weights"],
        "weights_label": decode.get("weights_label"),  # as the run's own record names them (`weights.label`)
        "bits_per_weight": bits,
        "weight_gib": None if weight_bytes is None else weight_bytes / 2**30,
        "decode_bytes_per_token": per_token,
        "decode": decode["value"],
        "decode_lo": decode["lo"],
        "decode_hi": decode["hi"],
        "decode_basis": decode.get("interval_basis"),  # its board row's: why it has no interval (unreplicated)
        "decode_run": decode["run_id"],
        "decode_checked": decode["checked"],
        "decode_reason": decode["reason"],
        "prefill": None if prefill is None else prefill["value"],
        "prefill_lo": None if prefill is None else prefill["lo"],
        "prefill_hi": None if prefill is None else prefill["hi"],
        "prefill_run": None if prefill is None else prefill["run_id"],
        "ttft_ms": ttft_ms,
        "ttft_measured": measured if ttft_ms is not None else None,
        "peak_mem_gib": decode.get("peak_mem_gib"),
        # generated tokens per GPU joule (derive/energy.py); a served point's counts its prompts' energy too
        "tokens_per_joule": decode.get("tokens_per_joule"),
        "mean_power_w": decode.get("mean_power_w"),
        "energy_note": decode.get("energy_note"),
        "copy_bytes_per_s": copy,
        # its board row's, of that row's figure (`ladder.with_bandwidth_use`): the one value, never worked out again
        "mbu_datasheet": decode.get("mbu_datasheet"),
        "copy_fraction": decode.get("copy_fraction"),
        "limit_tokens_per_s": metrics.bandwidth_bound_tokens_per_s(per_token, copy) if copy and per_token else None,
    }


def boards(rows: pl.DataFrame) -> list[dict]:
    """The side-by-side boards: one per suite, model, hardware and precision family, each with its rows, the engines
    it has, the range of its rows' weight bytes and how far apart they are (`spread`: highest over lowest, less one,
    which the page prints beside the family's name). A row whose weights' bytes are not known has no family and no
    board (it is listed apart: `uncounted`)."""
    out, names = [], engine_names()
    counted = rows.filter(pl.col("family_bits").is_not_null() & pl.col("weight_gib").is_not_null())
    for key, group in counted.partition_by("suite", "model_name", "accelerator", "family_bits", as_dict=True).items():
        suite, model, accelerator, bits = key
        gib = [g for g in group["weight_gib"].to_list() if g is not None]
        out.append(
            {
                "suite": suite,
                "model_name": model,
                "total_params": group["total_params"].max(),
                "accelerator": accelerator,
                "family_bits": bits,
                "rows": group.to_dicts(),
                "engines": sorted({names[e] for e in group["engine"].to_list()}),
                "missing": [name for e, name in names.items() if e not in set(group["engine"].to_list())],
                "weight_gib_lo": min(gib),
                "weight_gib_hi": max(gib),
                "spread": max(gib) / min(gib) - 1,
            }
        )
    return sorted(out, key=lambda b: (b["suite"], b["total_params"] or 0, b["model_name"], b["accelerator"],
                                      -(b["family_bits"] or 0)))  # fmt: skip


KV_DEPTH_SCHEMA = {
    "suite": pl.String, "model_name": pl.String, "accelerator": pl.String, "variant": pl.String, "weights": pl.String,
    "kv_type": pl.String, "cache_pair": pl.String, "depth": pl.Int64, "n_tokens": pl.Int64, "run_id": pl.String,
    "checked": pl.Boolean, "reason": pl.String, "rate": pl.Float64, "rate_lo": pl.Float64, "rate_hi": pl.Float64,
    "weight_gib": pl.Float64, "kv_gib": pl.Float64, "kv_share": pl.Float64, "mbu_datasheet": pl.Float64,
    "copy_fraction": pl.Float64,
}  # fmt: skip
"""One generation test's row of the KV-cache table."""


def kv_depth_rows(ranked: pl.DataFrame, unranked: pl.DataFrame) -> pl.DataFrame:
    """The generation tests at every KV-cache depth on one GPU of the engines the registry puts in this table
    (`Engine.pages` holds `kv_depth`), one row per variant and depth, each the variant's row of that test's board as
    the decode rows above are (`_newest_per_variant`: the same figure and interval as the board, and whether it was
    cross-checked): tokens/s, the weight bytes and KV-cache bytes a decoded token reads
    (`metrics.kv_bytes_read_per_token`), the cache's share of them, MBU (datasheet) and the fraction of the calibrated
    copy bound (both its board row's). `cache_pair` names the variant's settings but for its KV cache's types, so a
    variant and the same one with another cache pair up (`cache_ratios`)."""
    tg = pl.col("kind") == "tg"
    ranked, unranked = _one_gpu(ranked, "kv_depth").filter(tg), _one_gpu(unranked, "kv_depth").filter(tg)
    keys = ("suite", "model_name", "accelerator", "depth")
    groups = pl.concat([ranked.select(keys), unranked.select(keys)], how="vertical_relaxed").unique(maintain_order=True)
    out: list[dict] = []
    for suite, model, accelerator, depth in groups.iter_rows():
        at = (
            (pl.col("suite") == suite)
            & (pl.col("model_name") == model)
            & (pl.col("accelerator") == accelerator)
            & (pl.col("depth") == depth)
        )
        for row in _newest_per_variant(*_where(ranked, unranked, at)).values():
            kv = metrics.kv_bytes_read_per_token(row["kv_bytes_per_token_of_depth"], row["depth"], row["n_tokens"])
            per_token = row["decode_bytes_per_token"]
            out.append(
                {
                    "suite": suite, "model_name": model, "accelerator": accelerator, "variant": row["variant"],
                    "weights": row["weights"], "kv_type": row["type_k"], "cache_pair": _cache_pair(row["settings"]),
                    "depth": row["depth"], "n_tokens": row["n_tokens"], "run_id": row["run_id"],
                    "checked": row["checked"], "reason": row["reason"], "rate": row["value"], "rate_lo": row["lo"],
                    "rate_hi": row["hi"], "weight_gib": row["weight_bytes_per_token"] / 2**30,
                    "kv_gib": kv / 2**30, "kv_share": kv / per_token if per_token else None,
                    "mbu_datasheet": row["mbu_datasheet"], "copy_fraction": row["copy_fraction"],  # its board row's
                }
            )  # fmt: skip
    return pl.DataFrame(out, schema=KV_DEPTH_SCHEMA).sort("suite", "model_name", "accelerator", "variant", "depth")


def _cache_pair(settings: str | None) -> str | None:
    """A configuration's settings (canonical JSON, `columns._settings`) without its name and its KV cache's types."""
    if not settings:
        return None
    config = json.loads(settings)
    inner = config.get("settings") if isinstance(config.get("settings"), dict) else {}
    rest = {k: v for k, v in inner.items() if k not in ("type_k", "type_v")}
    # what varies from test to test (how a depth was filled) is not the variant's
    others = {k: v for k, v in config.items() if k not in ("variant", "settings", "engine_version", "depth_fills")}
    return json.dumps(others | {"settings": rest}, sort_keys=True)


def cache_ratios(rows: pl.DataFrame) -> list[dict]:
    """Per pair of variants that differ only in their KV cache (F16 and Q8_0), at the deepest depth both reached: the
    Q8_0 cache's tokens/s over the F16 cache's, and the bytes of cache each read (what the page says of the two caches,
    from the data)."""
    out = []
    paired = rows.filter(pl.col("cache_pair").is_not_null())
    for (_pair,), group in paired.partition_by("cache_pair", as_dict=True).items():
        f16, q8 = group.filter(pl.col("kv_type") == "f16"), group.filter(pl.col("kv_type") == "q8_0")
        both = set(f16["depth"].to_list()) & set(q8["depth"].to_list())
        if not both or f16["variant"].n_unique() != 1 or q8["variant"].n_unique() != 1:
            continue
        deepest = max(both)
        a = f16.filter(pl.col("depth") == deepest).row(0, named=True)
        b = q8.filter(pl.col("depth") == deepest).row(0, named=True)
        out.append({"weights": a["weights"], "f16": a["variant"], "q8": b["variant"], "depth": deepest,
                    "ratio": b["rate"] / a["rate"], "f16_kv_gib": a["kv_gib"], "q8_kv_gib": b["kv_gib"]})  # fmt: skip
    return sorted(out, key=lambda r: (r["weights"], r["f16"]))


def depth_order(rows: pl.DataFrame) -> list[tuple[str, str, str]]:
    """(suite, model, hardware) of `kv_depth_rows` smallest model first, as the boards are ordered."""
    sizes = rows.group_by("suite", "model_name", "accelerator").agg(pl.col("weight_gib").max())
    sizes = sizes.sort("suite", "weight_gib")
    return [tuple(r) for r in sizes.select("suite", "model_name", "accelerator").iter_rows()]


@dataclass(frozen=True, slots=True, kw_only=True)
class SideBySide:
    """The side-by-side page's figures, derived once (`derive`)."""

    rows: pl.DataFrame
    """Every engine's row on every model it ran on one GPU (`engine_rows`)."""
    boards: list[dict]
    """Per suite, model, hardware and precision family, its rows (`boards`)."""
    depths: list[tuple[tuple[str, str, str], pl.DataFrame, list[dict]]]
    """Per (suite, model, hardware) with generation at two or more KV-cache depths: its rows (`kv_depth_rows`) and
    the ratios between variants that differ only in their cache (`cache_ratios`), in `depth_order`."""
    bandwidths: dict[str, float]
    """The calibrated copy bandwidth of each hardware model the rows ran on."""
    cards: list[decision.DecisionCard]
    """Per (suite, model, hardware), which engine to pick at batch 1 in each precision family (`decision.cards`)."""


def derive(ranked: pl.DataFrame, unranked: pl.DataFrame, copy_bandwidth: Mapping[str, float]) -> SideBySide:
    """The side-by-side page's figures from the test boards' rows (`stacked_boards`) and the copy bandwidth
    calibrated on each hardware model (`copy_bound.copy_bandwidths`)."""
    rows = engine_rows(ranked, unranked, copy_bandwidth)
    depth_rows = kv_depth_rows(ranked, unranked)
    by_model = depth_rows.partition_by("suite", "model_name", "accelerator", as_dict=True)
    depths = []
    for key in depth_order(depth_rows):
        group = by_model[key]
        if group["depth"].n_unique() >= 2:
            depths.append((key, group, cache_ratios(group)))
    used = set(rows["accelerator"].to_list())
    bandwidths = {acc: bw for acc, bw in copy_bandwidth.items() if acc in used}
    cards = decision.cards(rows.iter_rows(named=True), engine_names(), generation_depths(ranked, unranked, rows))
    return SideBySide(rows=rows, boards=boards(rows), depths=depths, bandwidths=bandwidths, cards=cards)


_STRINGS = ("suite", "model_name", "accelerator", "engine", "kind")


def generation_depths(
    ranked: pl.DataFrame, unranked: pl.DataFrame, rows: pl.DataFrame
) -> dict[tuple[str, str, str, int, str], set[int]]:
    """Per (suite, model, hardware, precision family, engine), the KV-cache depths at which the engine generated on
    one GPU (a finished tg test, ranked or not); each of the page's decode rows counts at depth 0 (vLLM's served point
    at one request carries a short prompt and no cache to speak of). What a decision card says was not measured is
    the depths some engine reached there and another did not."""
    tg = pl.concat([_one_gpu(ranked), _one_gpu(unranked).filter(pl.col("status") == "ok")], how="diagonal_relaxed")
    out: dict[tuple[str, str, str, int, str], set[int]] = {}
    columns = ("suite", "model_name", "accelerator", "engine", "kind", "value", "depth", "weight_bytes_per_token",
               "non_embedding_params")  # fmt: skip
    if not set(columns) <= set(tg.columns):  # no inference test ran (a training-only data set): no column of theirs
        tg = pl.DataFrame(schema={c: pl.String if c in _STRINGS else pl.Float64 for c in columns})
    tg = tg.filter((pl.col("kind") == "tg") & pl.col("value").is_not_null() & pl.col("depth").is_not_null())
    cells = tg.select("suite", "model_name", "accelerator", "engine", "depth", "weight_bytes_per_token",
                      "non_embedding_params")  # fmt: skip
    for suite, model, accelerator, engine, depth, weight_bytes, params in cells.iter_rows():
        bits = metrics.bits_per_weight(weight_bytes, params) if weight_bytes and params else None
        family = precision_family(bits)
        if family is not None:
            out.setdefault((suite, model, accelerator, family, engine), set()).add(depth)
    for suite, model, accelerator, family, engine in rows.select(*_GROUP, "family_bits", "engine").iter_rows():
        if family is not None:
            out.setdefault((suite, model, accelerator, family, engine), set()).add(0)
    return out
