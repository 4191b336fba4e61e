"""File-name-safe names of record values: pages, charts and run files are named by them (no Jinja here: the
derivation half names the boards it links too)."""

import re

UNSAFE = re.compile(r"[^A-Za-z0-9.-]")
"""One character that is not an ASCII letter or digit, '-' or '.' (a regex: tens of thousands of slugs a build)."""


def slug(*parts: str) -> str:
    """A file-name-safe slug of record values (ASCII letters and digits, '-' and '.'). Different names can give
    one slug (`a_b`, `a+b` and `a-b`; names differing in case, on a file system that ignores it): the loader rejects
    every file of such names (generator/load/ `collisions`), so no page or asset is ever made twice."""
    return "-".join(UNSAFE.sub("-", p) for p in parts)


def run_href(run_id: str) -> str:
    """Where a run's page lives, relative to the docs root."""
    return f"runs/{slug(run_id)}.html"  # rendered straight to HTML, not by MkDocs (generator/render/runs.py)
