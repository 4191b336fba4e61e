"""What keeps a file out because of the others: a run id in two files, two names that become one page, and a
retraction of a run that no loaded file holds. Each such file is rejected by name, whichever came first: none may take
another's place.
"""

from __future__ import annotations

import polars as pl

import generator.load.columns as columns
import generator.load.slugs as slugs
from generator.load.records import Rejected
from generator.load.worker import MODEL, Read
from runners import retract


def kept(reads: list[Read], heads: pl.DataFrame | None) -> tuple[list[Read], list[Rejected]]:
    """The files a load keeps, and the others rejected, in this order: each bad file (its own problems), a run id in
    two files, names that become one page (`collisions`), a retraction of no loaded run."""
    rejected = [Rejected(read.rel, read.problems) for read in reads if read.run_id is None]
    good = _one_per_run(reads, rejected)
    collided = collisions(good, heads)
    rejected += [Rejected(read.rel, (collided[read.index],)) for read in good if read.index in collided]
    good = [read for read in good if read.index not in collided]
    loaded_ids = {read.run_id for read in good if read.run_id is not None}
    retracting = (
        {}
        if heads is None
        else dict(heads.filter(pl.col("origin") == "retraction").select("_file", "config").iter_rows())
    )
    out = []
    for read in good:
        bad_retraction = _retraction_problem(retracting[read.index], loaded_ids) if read.index in retracting else None
        if bad_retraction:
            rejected.append(Rejected(read.rel, (bad_retraction,)))
        else:
            out.append(read)
    return out, rejected


def _one_per_run(reads: list[Read], rejected: list[Rejected]) -> list[Read]:
    """The good files, one per run id: a run id in files of other contents rejects each of them, and of byte-identical
    copies the first is loaded (each other one added to `rejected`)."""
    copies: dict[str, list[Read]] = {}
    for read in reads:
        if read.run_id is not None:
            copies.setdefault(read.run_id, []).append(read)
    seen: dict[str, str] = {}
    good: list[Read] = []
    for read in reads:
        run_id = read.run_id
        if run_id is None:
            continue
        same = copies[run_id]
        if len(same) > 1 and len({r.sha256 for r in same}) > 1:
            # no file wins: a doctored copy must not displace the genuine run, nor the other way round
            others = ", ".join(r.rel for r in same if r is not read)
            problem = f"row 0, field 'run_id': {run_id!r} is also in {others}, with other contents"
            rejected.append(Rejected(read.rel, (problem,)))
        elif run_id in seen:
            problem = f"row 0, field 'run_id': a byte-identical copy of {seen[run_id]}, loaded once from there"
            rejected.append(Rejected(read.rel, (problem,)))
        else:
            seen[run_id] = read.rel
            good.append(read)
    return good


def _retraction_problem(config: str, loaded_ids: set[str]) -> str | None:
    """A retraction (given its config) must name a run that a loaded (good) file holds, not another retraction."""
    parsed = columns.parsed(config)
    target = ((parsed if isinstance(parsed, dict) else {}).get("retraction") or {}).get("retracts")
    if not isinstance(target, str) or not target:
        return "row 0, field 'config': a retraction must name the run it retracts (retraction.retracts)"
    if target not in loaded_ids:
        return f"row 0, field 'config': retracts {target!r}, which no loaded result file holds"
    if target.startswith(retract.PREFIX):
        return f"row 0, field 'config': retracts {target!r}, itself a retraction"
    return None


def collisions(good: list[Read], heads: pl.DataFrame | None) -> dict[int, str]:
    """One name, one path: each name that becomes a page or a file of the site (a run's page, CSV and SVG; a board;
    a served model's page) is compared with every other of its kind after slugging and case-folding (a
    case-insensitive checkout or browser cannot tell `Run-A` from `run-a`). Two names that become one path reject
    every file of both, by name: neither may take the other's page. Returns each such file's problem by its index."""
    if heads is None or not good:
        return {}
    suspects = _may_collide(heads, [read.index for read in good])
    good = [read for read in good if read.index in suspects]  # the rest have a path to themselves: no problem
    if not good:
        return {}
    names = {
        index: (run_id, suite, workload, model)
        for index, run_id, suite, workload, model in heads.select(
            "_file", "run_id", "suite", "workload", pl.col(MODEL).alias("model_name")
        ).iter_rows()
    }
    paths: dict[tuple[str, str], dict[str, list[Read]]] = {}  # (field, path) -> name -> files
    for read in good:
        run_id, suite, workload, model = names[read.index]
        made = [("run_id", run_id, slugs.run_href(run_id)), ("workload", f"{suite}/{workload}",
                f"leaderboards/{slugs.slug(suite, workload)}.html")]  # fmt: skip
        if model is not None:
            made.append(("config.model.name", f"{suite}/{model}", f"serving/{slugs.slug(suite, model)}.html"))
        for field_name, name, path in made:
            paths.setdefault((field_name, path.casefold()), {}).setdefault(name, []).append(read)
    out: dict[int, str] = {}
    for (field_name, path), by_name in sorted(paths.items()):
        if len(by_name) < 2:
            continue
        for name, reads in by_name.items():
            others = ", ".join(repr(n) for n in sorted(by_name) if n != name)
            for read in reads:
                out.setdefault(
                    read.index,
                    f"row 0, field {field_name!r}: {name!r} and {others} become the same page ({path}, letters "
                    "compared without case), so every file of each is rejected: rename one",
                )
    return out


def _may_collide(heads: pl.DataFrame, indices: list[int]) -> set[int]:
    """The files (by index) whose run, board or served-model path is another name's too, worked out for every file at
    once in polars (`collisions` then words the problem for these few): the same slugs (`slugs.UNSAFE`, applied by
    polars' regex engine, which like Python's replaces one code point at a time), and the paths compared in lower case,
    which for their ASCII letters is `casefold`: not a Python loop over every file of every build."""
    unsafe = slugs.UNSAFE.pattern

    def slug(*parts: pl.Expr) -> pl.Expr:
        return pl.concat_str([p.str.replace_all(unsafe, "-") for p in parts], separator="-")

    files = heads.filter(pl.col("_file").is_in(pl.Series(indices, dtype=pl.Int32).implode())).select(
        "_file", "run_id", "suite", "workload", pl.col(MODEL).alias("model_name")
    )
    made = pl.concat(
        [
            files.select("_file", field=pl.lit("run_id"), name=pl.col("run_id"),
                         path=pl.concat_str(pl.lit("runs/"), slug(pl.col("run_id")), pl.lit(".html"))),
            files.select("_file", field=pl.lit("workload"), name=pl.concat_str("suite", pl.lit("/"), "workload"),
                         path=pl.concat_str(pl.lit("leaderboards/"), slug(pl.col("suite"), pl.col("workload")),
                                            pl.lit(".html"))),
            files.filter(pl.col("model_name").is_not_null()).select(
                "_file", field=pl.lit("config.model.name"), name=pl.concat_str("suite", pl.lit("/"), "model_name"),
                path=pl.concat_str(pl.lit("serving/"), slug(pl.col("suite"), pl.col("model_name")), pl.lit(".html"))),
        ]
    )  # fmt: skip
    shared = made.with_columns(path=pl.col("path").str.to_lowercase()).filter(
        pl.col("name").n_unique().over("field", "path") > 1
    )
    return set(shared["_file"].to_list())
