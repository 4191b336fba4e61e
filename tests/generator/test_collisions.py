"""`collisions._may_collide` (polars, every file at once) finds exactly the files whose page path another name shares,
as the Python slugs and `casefold` name them: hostile names included (non-ASCII letters, `ß`, control characters,
emoji), so the vectorised pass never lets a colliding file through to the per-file wording."""

from __future__ import annotations

import json

import polars as pl

from generator.load import collisions, columns, slugs, worker


def _reference(rows: list[tuple[int, str, str, str, str | None]]) -> set[int]:
    """The files sharing a path with another name, by the Python slugs (`collisions.collisions`' own rule)."""
    paths: dict[tuple[str, str], dict[str, set[int]]] = {}
    for index, run_id, suite, workload, model in rows:
        made = [("run_id", run_id, slugs.run_href(run_id)),
                ("workload", f"{suite}/{workload}", f"leaderboards/{slugs.slug(suite, workload)}.html")]  # fmt: skip
        if model is not None:
            made.append(("model", f"{suite}/{model}", f"serving/{slugs.slug(suite, model)}.html"))
        for field, name, path in made:
            paths.setdefault((field, path.casefold()), {}).setdefault(name, set()).add(index)
    return {i for by_name in paths.values() if len(by_name) > 1 for files in by_name.values() for i in files}


def test_the_vectorised_pass_finds_what_the_python_slugs_find() -> None:
    names = ["run-a", "run_a", "RUN-A", "run+a", "rün-a", "run-ä", "straße", "STRASSE", "strasse", "ß-x", "ss-x",
             "tab\tname", "tab name", "line\nname", "emoji-🚀", "emoji-🛸", "ok.name", "ok-name", "Ω", "ω",
             "unique"]  # fmt: skip
    rows = []
    for i, name in enumerate(names):
        model = None if i % 3 else name.upper()
        rows.append((i, f"id-{name}", "suite", f"w-{name}" if i % 2 else "w", model))
    heads = pl.DataFrame(
        {
            "_file": pl.Series([r[0] for r in rows], dtype=pl.Int32),
            "run_id": [r[1] for r in rows],
            "suite": [r[2] for r in rows],
            "workload": [r[3] for r in rows],
            "config": [json.dumps({"model": {"name": r[4]}} if r[4] else {}) for r in rows],
        }
    ).with_columns(columns.column("model_name").alias(worker.MODEL))  # as the load reads each file's (`as_frames`)
    expected = _reference(rows)
    assert expected and expected != set(range(len(rows)))  # the case has collisions and files without one
    assert collisions._may_collide(heads, [r[0] for r in rows]) == expected
    # a subset of the files: only their names are compared
    some = [0, 6, 7, 20]
    assert collisions._may_collide(heads, some) == _reference([rows[i] for i in some])
