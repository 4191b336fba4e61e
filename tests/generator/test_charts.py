"""Every chart says what it shows: each value axis is titled, the same in every layer (Vega-Lite drops a title the
layers disagree on), and rows of runs are sorted by their value, not alphabetically."""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl
import pytest

from generator.render import charts, model_charts

RUNS = pl.DataFrame(
    {
        "variant": ["ddp-tuned", "fsdp2-compile", "ddp-amp-stock"],
        "run_id": ["r1", "r2", "r3"],
        "tier": ["tuned", "tuned", "stock"],
        "engine": ["llamacpp", "mlx", "llama-bench"],
        "accelerator": ["NVIDIA H200"] * 3,
        "accelerator_count": [2, 2, 2],
        "micro_batch": [4, 4, 4],
        "steps_per_s": [13.9, 14.9, 10.9],
        "steps_per_s_lo": [13.8, 14.8, 10.8],
        "steps_per_s_hi": [14.0, 15.0, 11.0],
        "rate_med": [200.0, 190.0, 210.0],
        "rate_lo": [199.0, 188.0, 208.0],
        "rate_hi": [201.0, 192.0, 212.0],
        "speedup": [1.28, 1.37, 1.0],
        "mfu_datasheet": [0.4, 0.44, 0.32],
        "mfu_calibrated": [0.52, 0.57, 0.41],
        **{f"step_ms_p{q}": [60.0 + q, 55.0 + q, 75.0 + q] for q in (5, 25, 50, 75, 95)},
    }
)
POINTS = pl.DataFrame(
    {
        "variant": ["v", "v"],
        "weights_label": ["fp16", "fp16"],
        "tier": ["tuned", "tuned"],
        "accelerator_count": [1, 2],
        "efficiency": [1.0, 0.9],
        "tokens_per_s_per_device": [1e5, 9e4],
        "shared_host": [False, False],
        "speedup": [1.0, 1.8],
        "out_rate": [100.0, 180.0],
        "base_gpus": [1, 1],
        "micro_batch": [2, 4],
        "tokens_per_step": [4096.0, 8192.0],
        "steps_per_s": [20.0, 11.0],
        "steps_per_s_lo": [19.0, 10.5],
        "steps_per_s_hi": [21.0, 11.5],
        "runs": [1, 2],
    }
)
CHARTS = {
    "throughput": lambda: charts.throughput(RUNS, "steps/s"),
    "speedup": lambda: charts.speedup(RUNS),
    "mfu": lambda: charts.mfu(RUNS),
    "step_time_distribution": lambda: charts.step_time_distribution(RUNS),
    "scaling": lambda: charts.scaling(POINTS),
    "tp_scaling": lambda: model_charts.tp_scaling(POINTS),
    "engine_throughput": lambda: charts.engine_throughput(RUNS, "tokens/s"),
    "sweep": lambda: charts.sweep(
        POINTS, pl.DataFrame({"label": ["claim"], "steps_per_s": [14.1]}), matched_tokens=6000.0
    ),
    "sweep_narrow": lambda: charts.sweep(
        POINTS,
        pl.DataFrame({"label": ["claim"], "steps_per_s": [14.1]}),
        6000.0,
        pl.DataFrame({"label": ["v"], "steps_per_s": [15.0]}),
        narrow=True,
    ),
    "engine_throughput_unranked": lambda: charts.engine_throughput(
        RUNS.with_columns(ranked=pl.Series([True, False, True])), "tokens/s"
    ),
    "latency_throughput": lambda: model_charts.latency_throughput(
        pl.DataFrame(
            {
                "accelerator_count": [1, 1, 2],
                "accelerator": ["NVIDIA H200", "NVIDIA H200", "NVIDIA H200"],
                "weights_label": ["fp16", "fp16", "FP8, vLLM's own random values"],
                "concurrency": [1, 8, 1],
                "runs": [2, 1, 1],
                **{k: [200.0, 1300.0, 140.0] for k in ("per_gpu", "per_gpu_lo", "per_gpu_hi")},
                **{k: [4.9, 5.2, 3.5] for k in ("tpot_ms", "tpot_lo", "tpot_hi")},
            }
        )
    ),
    "loss_curves": lambda: charts.loss_curves(
        pl.DataFrame({"variant": ["v"] * 3, "run_id": ["r1"] * 3, "step": [0, 5, 10], "value": [6.0, 5.0, 4.5]})
    ),
}


def _layers(spec: dict) -> Iterator[dict]:
    yield spec
    for key in ("layer", "vconcat", "hconcat"):
        for inner in spec.get(key, []):
            yield from _layers(inner)


@pytest.mark.parametrize("name", sorted(CHARTS))
def test_value_axes_are_titled_alike_and_rows_sorted_by_value(name: str) -> None:
    spec = CHARTS[name]().to_dict(validate=False)
    titles: dict[str, set] = {"x": set(), "y": set()}
    sorts = set()
    for layer in _layers(spec):
        for channel in ("x", "y"):
            enc = (layer.get("encoding") or {}).get(channel)
            if not isinstance(enc, dict) or "field" not in enc:
                continue
            if enc.get("type") == "quantitative":
                assert enc.get("title"), f"{name}: a {channel} axis of {enc['field']} has no title"
                titles[channel].add(enc["title"])
            elif enc.get("field") == "run":  # rows of runs: sorted by a value, every layer alike
                sort = enc.get("sort")
                assert isinstance(sort, dict) and sort.get("field"), f"{name}: runs sorted alphabetically"
                sorts.add(repr(sort))
    assert all(len(t) <= 1 for t in titles.values()), f"{name}: layers title an axis differently: {titles}"
    assert len(sorts) <= 1, f"{name}: layers sort the runs differently"


def test_an_unranked_run_is_a_hollow_bar_named_so() -> None:
    """A run that does not rank is drawn as an outline (no fill) and its row's label starts with "unranked"."""
    spec = CHARTS["engine_throughput_unranked"]().to_dict(validate=False)
    bars = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "bar")
    assert bars["encoding"]["fillOpacity"]["condition"]["test"] == "datum.ranked"
    assert bars["encoding"]["fillOpacity"]["value"] == 0.0 and bars["encoding"]["stroke"]["field"] == "engine"
    rows = {r["run"]: r["ranked"] for r in next(iter(spec["datasets"].values()))}
    assert [r for r, ranked in rows.items() if not ranked] == ["unranked: fsdp2-compile · mlx · r2"]
    assert "hollow" in bars["encoding"]["x"]["title"]
    plain = charts.engine_throughput(RUNS, "tokens/s").to_dict(validate=False)  # all ranked: nothing hollow
    plain_bars = next(layer for layer in plain["layer"] if layer["mark"]["type"] == "bar")
    assert "hollow" not in plain_bars["encoding"]["x"]["title"]


def test_the_verdict_chart_marks_each_crossing_of_the_matched_shape() -> None:
    """One diamond per curve where it crosses the matched shape, with its figure; the phone drawing has a fixed
    narrow width and the same marks."""
    from generator.derive.verdict.said import Answer, Reading, Tuned, crossings

    tuned = tuple(Tuned(variant=v, label=v, curve_hash=v, steps_per_s=r, ratio=r / 14.1, gap=21.7 / r)
                  for v, r in (("a", 24.6), ("b", 19.9)))  # fmt: skip
    reading = Reading(column="steps_per_s", stock_points=(), matched_micro_batch=2.5, matched_tokens_per_step=6000.0,
                      tuned=tuned, best=tuned[0], ddp=None, why_not=None)  # fmt: skip
    said = Answer(target=14.1, claimed_ratio=21.7 / 14.1, headline="steady", readings={"steady": reading})
    crossed = crossings(said)
    assert crossed["steps_per_s"].to_list() == [14.1, 24.6, 19.9]
    claims = pl.DataFrame({"label": ["claim"], "steps_per_s": [21.7]})
    for narrow in (False, True):
        spec = charts.sweep(POINTS, claims, 6000.0, crossed, narrow=narrow).to_dict(validate=False)
        marks = [layer for layer in spec["layer"] if layer["mark"].get("shape") == "diamond"]
        assert len(marks) == 1
        data = spec["datasets"][marks[0]["data"]["name"]]
        assert [d["text"] for d in data] == ["14.1", "24.6", "19.9"]
        assert {d["tokens_per_step"] for d in data} == {6000.0}
        assert spec["width"] == (250 if narrow else "container")


def _engine_colours(chart: object) -> dict[str, str]:
    """The colour each engine gets in a chart's spec: its colour scale's domain against its range (an empty map where
    the chart leaves the colours to Vega's default scheme, which hands them out in the order the data has them)."""
    spec = chart.to_dict(validate=False)  # type: ignore[attr-defined]
    found: dict[str, str] = {}
    for layer in [spec, *spec.get("layer", [])]:
        scale = layer.get("encoding", {}).get("color", {}).get("scale", {})
        if "domain" in scale and "range" in scale:
            found |= dict(zip(scale["domain"], scale["range"], strict=True))
    return found


def test_an_engine_is_one_colour_on_every_chart() -> None:
    """Issue 59: blue was llama.cpp on one chart, MLX or vLLM on another. Every chart that colours by engine takes the
    registry's map (`engines.colours`): the inference test chart (engines by record name, beside their own tools) and
    the side-by-side chart (engines by title), whichever engines each holds and in whatever order."""
    from runners import engines

    def side(names: list[str]) -> dict[str, str]:
        same = {"decode": 50.0, "decode_lo": 49.0, "decode_hi": 51.0, "limit_tokens_per_s": 1e2, "decode_checked": True}
        rows = pl.DataFrame([{"variant": f"v-{n}", "engine_name": n} | same for n in names])
        return _engine_colours(model_charts.side_by_side(rows))

    tests = _engine_colours(charts.engine_throughput(RUNS, "tokens/s"))  # llamacpp, mlx and llama-bench
    three = side(["vLLM", "MLX", "llama.cpp"])
    title = engines.titles()
    assert tests["llamacpp"] == three[title["llamacpp"]] and tests["mlx"] == three[title["mlx"]]
    assert side(["vLLM"]) == {"vLLM": three["vLLM"]} and side(["llama.cpp"])["llama.cpp"] == tests["llamacpp"]
    assert len(set(three.values())) == 3 and tests["llama-bench"] not in three.values()  # a tool is not its engine
    assert set(tests) == {"llamacpp", "mlx", "llama-bench"}  # the legend lists the engines drawn, no others


@pytest.mark.parametrize("name", ["engine_throughput", "side_by_side"])
def test_a_chart_coloured_by_engine_has_its_legend(name: str) -> None:
    """The outline of a hollow bar had no legend, and Vega-Lite then drew none for the fill either: the reader could
    not tell llama-bench's grey from the engine's colours. The outline carries the fill's field, scale and title, so
    the two make one legend."""
    rows = pl.DataFrame({"variant": ["a", "b"], "engine_name": ["MLX", "vLLM"], "decode": [1.0, 2.0],
                         "decode_lo": [0.9, 1.9], "decode_hi": [1.1, 2.1], "limit_tokens_per_s": [3.0, 3.0],
                         "decode_checked": [True, False]})  # fmt: skip
    throughput = name == "engine_throughput"
    chart = charts.engine_throughput(RUNS, "tokens/s") if throughput else model_charts.side_by_side(rows)
    spec = chart.to_dict(validate=False)
    (bars,) = [layer for layer in spec["layer"] if "stroke" in layer.get("encoding", {})]
    colour, stroke = bars["encoding"]["color"], bars["encoding"]["stroke"]
    assert colour.get("legend", {}) is not None and stroke.get("legend", {}) is not None
    assert (stroke["field"], stroke["scale"], stroke["title"]) == (colour["field"], colour["scale"], colour["title"])


def test_a_rows_label_says_in_words_what_sets_it_apart_from_rows_of_its_name() -> None:
    """Issue 59: two configurations of one variant are labelled by their differing settings as the ranking writes
    them ("compile_loss on"), not by a hash; a variant alone on its board by its name; the hash only where the words
    would not tell two rows apart. The labels feed every board chart (`throughput` shown here)."""
    board = pl.DataFrame(
        {
            "variant": ["fsdp2-float8", "fsdp2-float8", "ddp-tuned", "twin", "twin"],
            "settings_hash": ["aaaaaa111111", "bbbbbb222222", "cccccc333333", "dddddd444444", "eeeeee555555"],
            "differs": ["settings.compile_loss=true", "settings.compile_loss=false", "", "same", "same"],
            "tier": ["tuned"] * 5,
            "accelerator": ["NVIDIA H200"] * 5,
            "accelerator_count": [1] * 5,
            "steps_per_s": [11.1, 10.9, 9.0, 5.0, 4.0],
            "steps_per_s_lo": [11.0, 10.8, 8.9, 4.9, 3.9],
            "steps_per_s_hi": [11.2, 11.0, 9.1, 5.1, 4.1],
        }
    )
    labels = board.select(charts._row_label(board))["run"].to_list()
    assert labels == [
        "fsdp2-float8 · compile_loss on",
        "fsdp2-float8 · compile_loss off",
        "ddp-tuned",
        "twin · same · dddddd",
        "twin · same · eeeeee",
    ]
    spec = charts.throughput(board, "steps/s").to_dict()
    drawn = {row["run"] for rows in spec["datasets"].values() for row in rows}
    assert drawn == set(labels)
