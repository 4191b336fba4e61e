"""The rendering half: pages written from a `derive.Results` (generator/derive/), never deriving a figure of their
own (tests/generator/test_halves.py holds each half to its job).

- `boards`: every leaderboard (of every kind), the home page, side-by-side, served models, and the order of the rest;
- `catalog`: claims, failures, hardware, engines and downloads;
- `editions`: the editions index and each edition's page;
- `runs`: one page per run (rendered apart, by worker processes).
"""

import generator.render.boards as boards
import generator.render.catalog as catalog
import generator.render.editions as editions
import generator.render.runs as runs

__all__ = ["boards", "catalog", "editions", "runs"]
