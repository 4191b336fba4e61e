"""Each chart's name: its title (`NAMES`, by the function that draws it) and its one-line finding from the rows its
spec draws (`finding`), together its accessible name and alt text (`accessible_name`), which `pages.Charts` gives every
chart it places."""

from __future__ import annotations

NAMES: dict[str, tuple[str, str]] = {
    "throughput": ("Steps per second of each configuration", "max"),
    "speedup": ("Speed-up over the stock baseline", "max"),
    "mfu": ("Model FLOPs utilisation of each configuration", "max"),
    "step_time_distribution": ("Steady step time of each configuration", "min"),
    "loss_curves": ("Training loss per step", "min"),
    "scaling": ("Scaling efficiency by device count", "max"),
    "tp_scaling": ("Tensor-parallel scaling efficiency", "min"),
    "engine_throughput": ("Tokens per second of each configuration", "max"),
    "latency_throughput": ("Time per output token against output tokens/s per GPU", "min"),
    "side_by_side": ("Decode tokens/s of each engine beside its copy bound", "max"),
    "kv_depth": ("Generation tokens/s by KV-cache depth", "max"),
    "sweep": ("Steps/s against tokens per step", "max"),
    "plausibility_chart": ("Implied MFU of the claim against tokens per step", "max"),
}
"""Each chart function's title, and which end of its value leads its one-line finding (`finding`): "max" (the
highest is the news: throughput) or "min" (the lowest: step time, loss, the efficiency where scaling falls most)."""

_NOUNS = {"run": "configurations", "engine": "engines", "variant": "variants", "weights": "weights files",
          "precision": "precisions", "tp": "set-ups", "label": "curves"}  # fmt: skip


def accessible_name(title: str, spec: dict, better: str = "max") -> str:
    """A chart's accessible name and alt text: its title, then its one-line finding (`finding`) from the rows the
    spec draws, e.g. "Steps per second of each configuration: fsdp2-float8 highest at 11.0 steps/s of 4
    configurations". Vega's own name for every chart ("Vega visualization") tells a screen-reader user nothing."""
    found = finding(spec, better)
    return f"{title}: {found}" if found else title


def finding(spec: dict, better: str = "max") -> str | None:
    """The leading row of the first layer of `spec` that draws a quantity per label: the label whose value is the
    highest (`better` "max") or lowest ("min"), its value and axis, and how many labels there are; None where the
    spec has no such layer or no rows."""
    for encoding, rows in _layers(spec, spec.get("datasets") or {}, _rows(spec.get("data"), spec)):
        picked = _value_and_label(encoding)
        if picked is None:
            continue
        value, label = picked
        usable = [r for r in rows if isinstance(r.get(value["field"]), int | float) and label["field"] in r]
        if not usable:
            continue
        lead = (max if better == "max" else min)(usable, key=lambda r: r[value["field"]])
        labels = {str(r[label["field"]]) for r in usable}
        count = len(labels)
        noun = _NOUNS.get(label["field"], "points") if count != 1 else "shown"
        word = "highest" if better == "max" else "lowest"
        of = f" of {count:,} {noun}" if count != 1 else ""
        return f"{_label_text(lead[label['field']], label)} {word} at {_figure(lead[value['field']], value)}{of}"
    return None


def _rows(data: object, spec: dict) -> list[dict]:
    datasets = spec.get("datasets") or {}
    if isinstance(data, dict):
        if isinstance(data.get("values"), list):
            return [r for r in data["values"] if isinstance(r, dict)]
        if data.get("name") in datasets:
            return [r for r in datasets[data["name"]] if isinstance(r, dict)]
    return []


def _layers(spec: dict, datasets: dict, inherited: list[dict]) -> list[tuple[dict, list[dict]]]:
    """Every (encoding, rows) of `spec` and its layers, in drawing order; a layer without data draws its parent's."""
    rows = _rows(spec.get("data"), {"datasets": datasets}) or inherited
    out = [(spec["encoding"], rows)] if isinstance(spec.get("encoding"), dict) else []
    for key in ("layer", "hconcat", "vconcat", "concat"):
        for part in spec.get(key) or []:
            if isinstance(part, dict):
                out += _layers(part, datasets, rows)
    return out


def _value_and_label(encoding: dict) -> tuple[dict, dict] | None:
    """The channel holding the figure and the one naming its row: a quantity across a nominal axis (a bar chart),
    else a quantity on y per colour (a line chart), else y per x (a single line). A layer drawing a range (x2, y2:
    a whisker, a box) is not the figure: its median's tick or bar is."""
    if "x2" in encoding or "y2" in encoding:
        return None
    x, y, colour = (_channel(encoding, k) for k in ("x", "y", "color"))
    if x.get("type") == "quantitative" and y.get("type") == "nominal":
        return x, y
    if y.get("type") == "quantitative" and x.get("type") == "nominal":
        return y, x
    if y.get("type") == "quantitative" and colour.get("field") and colour.get("type") == "nominal":
        return y, colour
    if y.get("type") == "quantitative" and x.get("type") == "quantitative" and x.get("field"):
        return y, x
    return None


def _channel(encoding: dict, key: str) -> dict:
    found = encoding.get(key)
    return found if isinstance(found, dict) else {}


def _short_title(channel: dict) -> str:
    """An axis title without its explanations: "steps/s (median, 95% interval)" → "steps/s"."""
    title = channel.get("title")
    text = str(title[0] if isinstance(title, list) and title else title or channel.get("field", ""))
    text = text.split(";")[0].split(":")[0]
    head, _, rest = text.partition(" (")
    unit = rest.split(",")[0].rstrip(")")
    return f"{head} ({unit})" if rest and len(unit) <= 3 else head


def _figure(value: float, channel: dict) -> str:
    """`value` as the finding prints it, with its axis's short title: a share as a percentage, else three figures."""
    axis = _channel(channel, "axis")
    title = _short_title(channel)
    if "%" in str(axis.get("format", "")):
        return f"{value:.0%} {title}"
    if title.endswith(" (×)"):  # a ratio: "1.47× speed-up over the stock baseline"
        return f"{value:.3g}× {title.removesuffix(' (×)')}"
    if abs(value) >= 100:
        return f"{value:,.0f} {title}"
    return f"{value:.3g} {title}" if abs(value) >= 1 else f"{value:.2g} {title}"


def _label_text(value: object, channel: dict) -> str:
    """A row's label: a name as it is, a number with its axis ("4 GPUs")."""
    if channel.get("type") == "quantitative" and isinstance(value, int | float):
        return f"{value:g} {_short_title(channel)}"
    return str(value)
