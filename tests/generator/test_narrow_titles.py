"""A phone's drawing of a chart (`pages.Charts`, NARROW_WIDTH) keeps each axis title whole: a title longer than a
narrow plot takes two lines instead of running past the drawing's edge, where the speedup axis's title was cut at
390 px ("speedup over the stock baseline (×, media")."""

from __future__ import annotations

import re

import altair as alt
import vl_convert

from generator.render import charts, pages


def _speedup_like() -> dict:
    bars = (
        alt.Chart(alt.Data(values=[{"run": "ddp-tuned", "speedup": 1.3}]))
        .mark_bar()
        .encode(y=alt.Y("run:N", title=None), x=alt.X("speedup:Q", title=charts.SPEEDUP_TITLE))
    )
    one = alt.Chart(alt.Data(values=[{"x": 1.0}])).mark_rule().encode(x=alt.X("x:Q", title=charts.SPEEDUP_TITLE))
    return (bars + one).properties(width="container").to_dict(validate=False)


def test_a_long_axis_title_takes_two_lines_on_a_phone_and_a_short_one_stays() -> None:
    spec = pages._wrapped_titles(pages._fixed_width(_speedup_like(), pages.NARROW_WIDTH))
    titles = [layer["encoding"]["x"]["title"] for layer in spec["layer"]]
    assert titles == [["speedup over the stock baseline", "(×, medians)"]] * 2
    assert all(len(line) <= pages.NARROW_TITLE for line in titles[0])
    short = {"encoding": {"x": {"field": "a", "type": "quantitative", "title": "steps/s"}}, "title": "x" * 80}
    assert pages._wrapped_titles(short) == short  # a chart's own title (no field, no type) is left to the chart


def test_the_phone_drawing_draws_the_title_as_two_lines() -> None:
    svg = vl_convert.vegalite_to_svg(pages._wrapped_titles(pages._fixed_width(_speedup_like(), pages.NARROW_WIDTH)))
    lines = re.findall(r"<tspan[^>]*>([^<]*)</tspan>", svg)
    assert lines == ["speedup over the stock baseline", "(×, medians)"]
