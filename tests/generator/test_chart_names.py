"""Each chart is named by its title and its one-line finding (issue 59): the accessible name of its container, the
alt text of its static SVG and the description Vega makes the interactive chart's name, never Vega's generic one."""

from __future__ import annotations

import re

import pytest

from generator.render import chart_names
from tests.generator.test_charts import CHARTS

GENERIC = re.compile(r"^(chart|vega visualization|.*static svg.*)?$", re.IGNORECASE)


@pytest.mark.parametrize("name", sorted(CHARTS))
def test_every_chart_is_named_by_its_title_and_a_finding_from_the_rows_it_draws(name: str) -> None:
    """Each chart function has a title (`chart_names.NAMES`), and its spec, with the rows it draws, gives a finding."""
    draw = name.removesuffix("_narrow").removesuffix("_unranked")
    title, better = chart_names.NAMES[draw]
    spec = CHARTS[name]().to_dict(validate=False)
    named = chart_names.accessible_name(title, spec, better)
    assert named.startswith(f"{title}: ") and not GENERIC.match(named), named


def test_a_board_charts_name_gives_its_leader_figure_and_count() -> None:
    """The fastest row of the rows drawn, with its figure and axis, and how many rows the chart draws."""
    # the leader is named by its row's label as the chart draws it ("fsdp2-compile · r2…r2")
    spec = CHARTS["throughput"]().to_dict(validate=False)
    found = chart_names.finding(spec) or ""
    assert re.fullmatch(r"fsdp2-compile\S* .*highest at 14\.9 steps/s of 3 configurations", found)
    step_times = CHARTS["step_time_distribution"]().to_dict(validate=False)
    found = chart_names.finding(step_times, "min") or ""  # the median tick (55 + 50 ms), not a whisker's end
    assert re.fullmatch(r"fsdp2-compile.* lowest at 105 steady step time \(ms\) of 3 configurations", found)
    speedup = CHARTS["speedup"]().to_dict(validate=False)
    found = chart_names.finding(speedup, "max") or ""
    assert re.fullmatch(r"fsdp2-compile.* highest at 1\.37× speedup over the stock baseline of 3 configurations", found)
    assert chart_names.finding({"mark": "bar"}, "max") is None  # nothing drawn per label: the title alone
    assert chart_names.accessible_name("A title", {"mark": "bar"}) == "A title"
