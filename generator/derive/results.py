"""Results: every figure the site shows, derived once from the checked records. `results(loaded, summary)` is the
only entry; the page writers, `compare` and the editions read what it returns and derive nothing of their own.

Pure polars and frozen dataclasses: no Jinja, no altair, no paths (a test holds this package to that).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import polars as pl

import generator.derive.catalog as catalog
import generator.derive.chart_rows as chart_rows
import generator.derive.claims as claims
import generator.derive.commit_history as commit_history
import generator.derive.commit_pairs as commit_pairs
import generator.derive.configurations as configurations
import generator.derive.copy_bound as copy_bound
import generator.derive.counting as counting
import generator.derive.defaults as defaults
import generator.derive.energy as energy
import generator.derive.evidence as evidence
import generator.derive.inference as inference
import generator.derive.ladder as ladder
import generator.derive.lead as lead
import generator.derive.runs as every_runs
import generator.derive.serving as serving
import generator.derive.side_by_side as side_by_side
import generator.derive.single_settings as single_settings
import generator.derive.training_boards as training_boards
import generator.derive.tuning as tuning
import generator.derive.verdict as verdict
import generator.derive.verdict.draws as sweep_draws
import generator.derive.wanted as wanted_runs
import generator.load.fields as fields
import generator.load.suite_titles as suite_titles
from generator import load
from runners import engines, llama_files, metrics, schema

BOARD_KINDS = engines.KINDS
"""The kinds of board, in the registry's words for what an engine runs: a training workload ("train"), an inference
test (pp/tg), a serving test (offline or served point)."""


def _empty() -> pl.DataFrame:
    return pl.DataFrame()


@dataclass(frozen=True, slots=True, kw_only=True)
class Board:
    """One board (a suite's workload or test) as its page shows it: what ranks, what does not and why, and the
    records around them. Frames a kind does not have are empty."""

    suite: str
    workload: str
    kind: str
    """One of `BOARD_KINDS`."""
    ranked: pl.DataFrame
    """One row per configuration of its ranked runs, ranked with ties (training: `derive.leaderboards`; tests:
    `ladder.board`)."""
    unranked: pl.DataFrame
    """Every measured, unretracted run that does not rank, with its `unranked` reason."""
    shown_unranked: pl.DataFrame
    """The unranked runs the page lists (tests: those that finished; training: all of them)."""
    unranked_spans: pl.DataFrame
    """Per configuration of unranked runs, its figure and span (`configurations.unranked_spans`): what the board's
    data gives a configuration none of whose runs ranks."""
    measured_runs: int
    """Measured runs on the board, retracted or not (the home page's count)."""
    newest: dict[str, Any]
    """The board's newest measured run (its newest record without one): what names it in the navigation."""
    ran_on: str
    """What its runs ran on, as a reader names it ("2 × H200", "CPU")."""
    config: str | None
    """The config (JSON) of the run whose test the page's header describes; None without a measured run."""
    failures: pl.DataFrame = field(default_factory=_empty)
    claims: pl.DataFrame = field(default_factory=_empty)
    """Training: the unretracted claims about the workload."""
    retracted: pl.DataFrame = field(default_factory=_empty)
    losses: pl.DataFrame = field(default_factory=_empty)
    """Training: the loss curve of each variant's latest run at the workload's shape, as window means."""
    repeats: pl.DataFrame = field(default_factory=_empty)
    scaling: pl.DataFrame = field(default_factory=_empty)
    """Training: device-count scaling (`derive.scaling`); serving: tensor-parallel scaling (`serving.tp_scaling`)."""
    scaling_efficiencies: bool = False
    """Training: whether any scaling point has an efficiency against one device (what its chart draws)."""
    calibrated_mfu: bool = False
    """Training: whether any ranked row has an MFU against its calibrated peak (what the MFU chart is drawn for)."""
    best: dict[str, Any] | None = None
    """Training: the fastest headline configuration; tests: the first ranked row."""
    tier_best: dict[str, tuple[dict[str, Any] | None, dict[str, Any] | None]] = field(default_factory=dict)
    """Training with claims: per tier (stock, tuned), its fastest headline configuration and that one's repeats."""
    hardware_note: str | None = None
    """Training with claims: how the first claim's GPUs and those of our fastest tuned (else stock) headline
    configuration differ by their datasheets (`claims.hardware_note`)."""
    defined_variants: list[str] | None = None
    """Training: the variants its suite file gives the workload now, baseline first (None where the suite file does
    not define the workload)."""
    full_steps: int | None = None
    """Training: the workload's full length in steps as its suite file defines it now (`verdict.full_steps`)."""
    loss_tolerance: dict[str, float] = field(default_factory=dict)
    """Training: the loss-parity tolerances its runs are held to (`metrics.LOSS_PARITY_*`): the first step's, in nats
    (`first`), relative (`rel`), relative for fp32 (`fp32`) and the mean's relative (`mean`)."""
    imported: pl.DataFrame = field(default_factory=_empty)
    """Tests: the engines' own tools' records of the test."""
    drawn: pl.DataFrame = field(default_factory=_empty)
    """Inference: the finished runs the throughput chart draws (unranked runs hollow, no failed run's tool figure),
    the newest `chart_rows.DRAWN_PER_CONFIGURATION` of each configuration."""
    not_drawn: int = 0
    """Inference: the finished runs the chart leaves out, older than its configuration's newest it draws."""
    decoding: pl.DataFrame = field(default_factory=_empty)
    """Serving: the finished measured runs, oldest first (their decoding figures)."""
    beside: pl.DataFrame = field(default_factory=_empty)
    """Serving at one request in flight: llama.cpp's generation on the same model."""
    quantized_weights: list[str] = field(default_factory=list)
    """Tests: the quantized weight formats (`llama_files.QUANT_TYPES`) of every row of every list its page has (an
    inference board's ranked, unranked and tool rows; a served board's llama.cpp rows beside it), each once, in the
    rows' order: its page says their quality is not measured (random weights)."""
    rank_rule: str = ladder.RANK_RULE
    """Inference and serving: the rank rule as the board applied it (`ladder.rank_rule`; a served board names the
    agreement tolerance it held its runs to on each hardware, `serving.agreement_clause`)."""

    @property
    def figure(self) -> tuple[str, str, str]:
        """The columns of its rows' figure, its interval's low and high: `TRAINING_FIGURE` or `TEST_FIGURE`."""
        return TRAINING_FIGURE if self.kind == "train" else TEST_FIGURE

    @property
    def unit(self) -> str:
        """What its figure is in (`UNITS`): steps/s, tokens/s or output tokens/s."""
        return UNITS[self.kind]

    @property
    def answer(self) -> lead.Lead:
        """The board's answer in one line (`lead.board_lead` of its ranking, by its kind's figure)."""
        return lead.board_lead(self.ranked, self.figure)


@dataclass(frozen=True, slots=True, kw_only=True)
class Results:
    """Everything the site shows, derived once (`results`)."""

    records: load.Loaded
    """The checked records (`checks.checked`) the figures are derived from."""
    runs: pl.DataFrame
    """One row per run (`derive.run_summary`), of every kind."""
    samples: pl.DataFrame
    """The loaded record rows (step times, losses, repetitions)."""
    rejected: list[load.Rejected]
    tests: pl.DataFrame
    """Inference tests, one row per run (`inference.per_run_figures`, of `inference.inference_figures`)."""
    served: pl.DataFrame
    """Serving tests, one row per run (`serving.per_run_figures`, of `serving.serving`)."""
    page_runs: pl.DataFrame
    """The runs with their tests' own figures: what the run pages show."""
    every_run: every_runs.EveryRun
    """One row per run of every kind with the figure its kind ranks by, and its repeats' spread: what `compare`
    selects from."""
    boards: dict[tuple[str, str], Board]
    """Every board, by (suite, workload), in that order."""
    repeats: pl.DataFrame
    """Training A/A repeats (`derive.repeats`)."""
    test_repeats: pl.DataFrame
    """A/A repeats of inference and serving tests, of the runs that rank (`ladder.repeats`)."""
    training_spreads: dict[str, configurations.Spreads]
    """Per reading of steps/s (`verdict.READINGS`), the pooled between-run spreads (`configurations.pooled_spreads`)."""
    test_spreads: dict[tuple[str, str, str, int], metrics.PooledSpread]
    """The pooled between-run spreads of inference and serving tests."""
    kind_floors: dict[tuple[str, str, int, bool], float]
    """(kind, accelerator, count, shared host) -> the largest A/A spread of that kind on that hardware, of repeats at
    one harness commit (`runs.at_commit_floors`): the floor a comparison without repeats of its own is held to
    (`compare`, the history across commits)."""
    scaling: pl.DataFrame
    window_losses: pl.DataFrame
    tp_scaling: pl.DataFrame
    latency: dict[tuple[str, str], pl.DataFrame]
    """Per (suite, served model), its served points' latency against throughput (`serving.latency_points`)."""
    verdict: verdict.Verdict | None
    """The answer to the seed's question, with its resamples; None without the seed's claims."""
    claim_checks: list[claims.ClaimCheck]
    tuning: tuning.Tuning
    """What tuning bought: the ladder from stock to the best at each micro-batch of the verdict's sweep."""
    side_by_side: side_by_side.SideBySide
    catalog: catalog.Catalog
    errata: pl.DataFrame
    """Retracted records, newest retraction first."""
    history: commit_history.History
    """Each configuration's figure at each harness commit, the A/A band around its latest and the commits `compare`
    calls faster or slower (`commit_history.history`, of `every_run.runs`): the run pages' history sections."""
    comparable: commit_pairs.Comparable
    """The harness commits and the pairs of them that measured a configuration in common (`commit_pairs.comparable`,
    of `every_run.runs`)."""
    wanted: list[wanted_runs.Wanted]
    """The runs that would settle each undecided answer of the verdict and each unreplicated board row
    (`wanted_runs.wanted`)."""
    measured_count: int
    failed_count: int
    suite_titles: dict[str, str]
    """Each suite of the records, by name, with the title the site shows it by (`suite_titles.title`: its suite
    file's)."""


def results(loaded: load.Loaded, summary: pl.DataFrame) -> Results:
    """Every figure, once, from checked records (`checks.checked`: the loaded records and their run summary)."""
    rows = loaded.rows
    copy_bandwidth = copy_bound.copy_bandwidths(summary)  # per hardware model: what every copy fraction is against
    inference_tests = inference.inference_figures(summary, rows, copy_bandwidth)
    serving_tests = serving.serving(summary, rows, copy_bandwidth, functools.partial(load.full_rows, loaded))
    tests, served = inference_tests.per_run, serving_tests.per_run
    test_spreads = ladder.pooled_spreads(inference_tests.ranked) | ladder.pooled_spreads(serving_tests.ranked)
    training_spreads = {
        reading: configurations.pooled_spreads(summary, column) for reading, column in verdict.READINGS.items()
    }
    repeats = training_boards.repeats(summary)
    scaling = training_boards.scaling(summary)
    window_losses = training_boards.loss_windows(summary, rows)
    tp = serving_tests.tp_scaling
    test_repeats = ladder.repeats(pl.concat([inference_tests.ranked, serving_tests.ranked], how="diagonal_relaxed"))
    boards = _boards(summary, tests, served, test_spreads, repeats, scaling, window_losses, tp, training_spreads)
    trained = {key: board.ranked for key, board in boards.items() if board.kind == "train"}
    the_verdict = sweep_draws.compute(summary, rows, training_spreads, trained)
    every_run = every_runs.every_run(summary, tests, served)
    kind_floors = every_run.kind_floors
    out = Results(
        records=loaded,
        runs=summary,
        samples=rows,
        rejected=loaded.rejected,
        tests=tests,
        served=served,
        page_runs=_with_standing(with_test_figures(summary, tests, served), boards),
        every_run=every_run,
        history=commit_history.history(
            summary,
            every_run.runs,
            kind_floors,
            evidence.spreads(test_spreads, training_spreads["steady"]),
            every_run.run_floors,
        ),
        comparable=commit_pairs.comparable(every_run.runs),
        boards=boards,
        repeats=repeats,
        test_repeats=test_repeats,
        training_spreads=training_spreads,
        test_spreads=test_spreads,
        kind_floors=kind_floors,
        scaling=scaling,
        window_losses=window_losses,
        tp_scaling=tp,
        latency=dict(sorted(serving_tests.latency.partition_by("suite", "model_name", as_dict=True).items())),
        verdict=the_verdict,
        claim_checks=claims.checks(summary, the_verdict.matched if the_verdict else {}),
        tuning=tuning.tuning(the_verdict, summary, single_settings.rows(summary, training_spreads["steady"])),
        side_by_side=side_by_side.derive(
            *side_by_side.stacked_boards([(b.ranked, b.unranked) for b in boards.values() if b.kind != "train"]),
            copy_bandwidth,
        ),
        catalog=catalog.tables(summary),
        errata=summary.filter(pl.col("retracted_by").is_not_null()).sort(
            "retracted_at", "run_id", descending=[True, False]
        ),
        wanted=wanted_runs.wanted(
            the_verdict, [(wanted_runs.board_href(*key), b.ranked, b.unranked) for key, b in boards.items()], summary
        ),
        measured_count=summary.filter(counting.MEASURED).height,
        failed_count=summary.filter(pl.col("status") != "ok").height,
        suite_titles=suite_titles.titles(summary["suite"]),
    )
    return _checked(out)


def _checked(out: Results) -> Results:
    """`out`, its run and board frames held to their declared columns (`fields.check`: one missing, extra or of
    another type stops the build, naming it)."""
    for frame, declared, what in (
        (out.runs, fields.RUN, "the run summary"),
        (out.tests, fields.TESTS, "the inference tests"),
        (out.served, fields.SERVED, "the serving tests"),
        (out.page_runs, fields.PAGE_RUNS, "the run pages' rows"),
    ):
        fields.check(frame, declared, what)
    for (suite, workload), board in out.boards.items():
        fields.check(board.ranked, fields.BOARDS[board.kind], f"the {board.kind} board {suite}/{workload}")
    return out


def with_test_figures(summary: pl.DataFrame, tests: pl.DataFrame, served: pl.DataFrame) -> pl.DataFrame:
    """The summary with each inference and serving run's own figures (tokens/s over repetitions, served latencies,
    the own tool's pair and ratio, MBU), so that its page leads with its result, as a training run's does, and every
    run's settings beside its engine's defaults (`defaults.with_beside_defaults`), its page's Settings table."""
    kept = [c for f in (tests, served) for c in f.columns if c not in (*summary.columns, *fields.NOT_ON_PAGES)]
    frames = [f.select("run_id", *[c for c in f.columns if c in kept]) for f in (tests, served)]
    figures = pl.concat(frames, how="diagonal_relaxed")  # a run is an inference test or a serving test, not both
    # a served point's energy figures are its board's (serving.py, over its requests): the summary has none for it
    points = served.filter(pl.col("kind") == "serve").select("run_id", *energy.FIGURES)
    return (
        defaults.with_beside_defaults(summary)
        .join(figures, on="run_id", how="left")
        .update(points, on="run_id", include_nulls=True, maintain_order="left")
    )


def _with_standing(page_runs: pl.DataFrame, boards: dict[tuple[str, str], Board]) -> pl.DataFrame:
    """The run pages' rows with each run's place on its board (`lead.standings`; for a run no board lists, what its
    own record says: `lead.standing_elsewhere`)."""
    listed = lead.standings([(b.ranked, b.unranked) for b in boards.values()])
    return page_runs.join(listed, on="run_id", how="left").with_columns(
        standing=pl.coalesce(pl.col("standing"), lead.standing_elsewhere())
    )


def _boards(
    summary: pl.DataFrame,
    tests: pl.DataFrame,
    served: pl.DataFrame,
    test_spreads: dict[tuple[str, str, str, int], metrics.PooledSpread],
    repeats: pl.DataFrame,
    scaling: pl.DataFrame,
    window_losses: pl.DataFrame,
    tp: pl.DataFrame,
    training_spreads: dict[str, configurations.Spreads],
) -> dict[tuple[str, str], Board]:
    """Every (suite, workload) with a record, each as the board of its kind."""
    candidates = training_boards.candidates(summary)
    training = training_boards.leaderboards(summary, training_spreads["steady"], candidates)
    ran_on = hardware_of_boards(summary)
    by_board = {k: g for k, g in summary.partition_by("suite", "workload", as_dict=True).items()}
    test_keys = {k for k in tests.select("suite", "workload").unique().iter_rows()}
    served_keys = {k for k in served.select("suite", "workload").unique().iter_rows()}
    out: dict[tuple[str, str], Board] = {}
    for suite, workload in training:
        key = (suite, workload)
        runs = by_board[key]
        measured = runs.filter(counting.MEASURED)
        common = dict(
            suite=suite,
            workload=workload,
            measured_runs=measured.height,
            newest=(measured if measured.height else runs).sort("started_at").row(-1, named=True),
            ran_on=ran_on.get(key, suite),
        )
        here = (pl.col("suite") == suite) & (pl.col("workload") == workload)
        if key in test_keys:
            out[key] = _inference_board(tests.filter(here), test_spreads, common)
        elif key in served_keys:
            out[key] = _serving_board(served.filter(here), tests, tp.filter(here), test_spreads, common)
        else:
            out[key] = _training_board(
                runs, training[key], candidates.filter(here), repeats.filter(here), scaling.filter(here),
                window_losses, common,
            )  # fmt: skip
    return out


def _headline_best(frame: pl.DataFrame, tier: str | None = None) -> dict[str, Any] | None:
    """The fastest ranked configuration (of a tier) among headline runs: a configuration as the suite pins it, run to
    the end (`derive`'s `headline`). Sweep points and short exploratory runs are shown as what they are, never as
    the best."""
    rows = frame.filter(
        pl.col("headline") & pl.col("rank").is_not_null() & (pl.col("tier") == tier if tier else pl.lit(True))
    )  # a row without a rank (unreplicated) is never a best
    rows = rows.sort("steps_per_s", "run_id", descending=[True, False])
    return rows.row(0, named=True) if rows.height else None


def _repeats_of(repeats: pl.DataFrame, run: dict[str, Any] | None) -> dict[str, Any] | None:
    """The A/A figures of a run's configuration, if it was repeated."""
    if run is None:
        return None
    hit = repeats.filter(pl.col("run_id").list.contains(run["run_id"]))
    return hit.row(0, named=True) if hit.height else None


def _training_board(
    runs: pl.DataFrame,
    board: pl.DataFrame,
    candidates: pl.DataFrame,
    repeats: pl.DataFrame,
    scaling: pl.DataFrame,
    window_losses: pl.DataFrame,
    common: dict[str, Any],
) -> Board:
    measured = runs.filter(counting.MEASURED)
    claims_here = runs.filter((pl.col("origin") == "claim") & pl.col("retracted_by").is_null()).sort("run_id")
    counted = measured.filter(pl.col("retracted_by").is_null())
    unranked = candidates.filter(pl.col("unranked").is_not_null()).sort(
        "steps_per_s", "run_id", descending=[True, False], nulls_last=True
    )
    # One curve per variant (its latest run at the workload's shape, full-length where there is one), as means over
    # timing windows: the page stays light however many runs a workload has; every run's own curve is on its run
    # page. Sweep points (another micro-batch) train on other batches, so their curves are not this workload's.
    latest = (
        counted.filter(pl.col("suite_scale") & ~pl.col("sweep_point"))
        .sort("full_length", "started_at")
        .group_by("variant", maintain_order=True)
        .last()
    )
    losses = window_losses.join(latest.select("run_id", "variant"), on="run_id", maintain_order="left").select(
        "run_id", "variant", "step", "value"
    )
    tier_best = {}
    if claims_here.height:
        for tier in ("stock", "tuned"):
            best = _headline_best(board, tier)
            tier_best[tier] = (best, _repeats_of(repeats, best))
    ours = (tier_best["tuned"][0] or tier_best["stock"][0]) if tier_best else None
    defined = schema.suite_workloads(common["suite"]).get(common["workload"])
    return Board(
        **common,
        kind="train",
        ranked=board,
        unranked=unranked,
        shown_unranked=unranked,
        unranked_spans=configurations.unranked_spans(unranked, TRAINING_FIGURE),
        config=measured.sort("started_at", "run_id")["config"][0] if measured.height else None,
        failures=counted.filter(pl.col("steps_per_s_lo").is_null()).sort("started_at", "run_id"),
        claims=claims_here,
        retracted=runs.filter(pl.col("retracted_by").is_not_null()).sort("retracted_at", "run_id"),
        losses=losses,
        repeats=repeats,
        scaling=scaling,
        scaling_efficiencies=scaling.filter(pl.col("efficiency").is_not_null()).height > 0,
        calibrated_mfu=board.height > 0 and board.select(pl.col("mfu_calibrated").is_not_null().any()).item(),
        best=_headline_best(board),
        tier_best=tier_best,
        hardware_note=claims.hardware_note(claims_here.row(0, named=True), ours) if claims_here.height else None,
        defined_variants=defined["variants"] if defined is not None else None,
        full_steps=verdict.full_steps(common["suite"], common["workload"]),
        loss_tolerance=LOSS_TOLERANCE,
    )


LOSS_TOLERANCE = {
    "first": metrics.LOSS_PARITY_FIRST_STEP_NATS,
    "rel": metrics.LOSS_PARITY_REL_TOL,
    "fp32": metrics.LOSS_PARITY_REL_TOL_FP32,
    "mean": metrics.LOSS_PARITY_MEAN_REL_TOL,
}
"""The loss-parity tolerances a training board states (`Board.loss_tolerance`)."""


def _inference_board(
    tests: pl.DataFrame, spreads: dict[tuple[str, str, str, int], metrics.PooledSpread], common: dict[str, Any]
) -> Board:
    ranked, unranked = inference.board(tests, spreads)
    current = tests.filter(pl.col("retracted_by").is_null())
    status = dict(current.select("run_id", "status").iter_rows())
    imported = (
        current.filter(pl.col("origin") == "imported")
        .with_columns(paired_status=pl.col("paired_run").replace_strict(status, default=None, return_dtype=pl.String))
        .sort("workload", "variant", "started_at")
    )
    measured = current.filter(counting.MEASURED)
    drawable = chart_rows.drawable_runs(current, ranked)  # unranked runs hollow; no failed run's tool figure
    drawn = chart_rows.newest_drawn(drawable)
    shown = unranked.filter(pl.col("status") == "ok")
    return Board(
        **common,
        kind="inference",
        ranked=ranked,
        unranked=unranked,
        unranked_spans=configurations.unranked_spans(unranked, TEST_FIGURE),
        shown_unranked=shown,
        # a board whose every run is retracted still names its test (from the retracted runs' own config)
        config=next(f for f in (measured, current, tests) if f.height)["config"][0],
        failures=current.filter(counting.MEASURED & (pl.col("status") != "ok")).sort("started_at"),
        imported=imported,
        drawn=drawn,
        not_drawn=drawable.height - drawn.height,
        quantized_weights=_quantized(ranked, shown, imported),
        best=_best_ranked(ranked),
    )


def _serving_board(
    tests: pl.DataFrame,
    inference_tests: pl.DataFrame,
    tp: pl.DataFrame,
    spreads: dict[tuple[str, str, str, int], metrics.PooledSpread],
    common: dict[str, Any],
) -> Board:
    import generator.load.columns as columns

    current = tests.filter(pl.col("retracted_by").is_null())
    measured = current.filter(counting.MEASURED)
    ranked, unranked = serving.board(tests, spreads)
    # the test as its newest run ran it (a served point's request count has changed; each run's row says its own)
    config = next(f for f in (measured, current, tests) if f.height).sort("started_at")["config"][-1]
    parsed = columns.parsed(config)
    parsed = parsed if isinstance(parsed, dict) else {}
    model = columns.object_at(parsed, "model").get("name")
    one_in_flight = columns.object_at(parsed, "workload").get("concurrency") == 1
    beside = inference_tests.filter(
        (pl.col("suite") == common["suite"])
        & (pl.col("model_name") == model)
        & (pl.col("kind") == "tg")
        & (pl.col("depth") == 0)
        & counting.MEASURED
        & (pl.col("status") == "ok")
        & pl.col("retracted_by").is_null()
    ).sort("weights", "started_at")
    beside = beside if one_in_flight else beside.clear()
    return Board(
        **common,
        kind="serving",
        ranked=ranked,
        unranked=unranked,
        unranked_spans=configurations.unranked_spans(unranked, TEST_FIGURE),
        shown_unranked=unranked.filter(pl.col("status") == "ok"),
        config=config,
        failures=measured.filter(pl.col("status") != "ok").sort("started_at"),
        imported=current.filter(pl.col("origin") == "imported").sort("variant", "started_at"),
        scaling=tp,
        decoding=measured.filter(pl.col("status") == "ok").sort("started_at", "run_id"),
        beside=beside,
        quantized_weights=_quantized(beside),
        best=_best_ranked(ranked),
        rank_rule=ladder.rank_rule(serving.agreement_clause(measured)),
    )


TRAINING_FIGURE = ("steps_per_s", "steps_per_s_lo", "steps_per_s_hi")
"""A training board's figure and its interval's columns."""
TEST_FIGURE = ("value", "lo", "hi")
"""An inference or serving board's figure and its interval's columns."""
UNITS = {"train": configurations.UNIT, "inference": inference.UNIT, "serving": serving.UNIT}
"""What each kind of board's figure is in (`Board.unit`)."""


def _quantized(*frames: pl.DataFrame) -> list[str]:
    """The quantized weight formats (`llama_files.QUANT_TYPES`) of every row of `frames`, each once, in order."""
    weights = [w for frame in frames if "weights" in frame.columns for w in frame["weights"].to_list()]
    return list(dict.fromkeys(w for w in weights if w in llama_files.QUANT_TYPES))


def _best_ranked(ranked: pl.DataFrame) -> dict[str, Any] | None:
    """A test board's best row: its fastest row that ranks (`ladder.rank`: a row without an interval has no rank and
    is never a board's best); None where none does."""
    with_rank = ranked.filter(pl.col("rank").is_not_null())
    return with_rank.row(0, named=True) if with_rank.height else None


def hardware_of_boards(summary: pl.DataFrame) -> dict[tuple[str, str], str]:
    """What each board's runs ran on, as a reader names it ("2 × H200", "1–2 × H200", "CPU"): its measured
    runs' hardware, or its claims' where nothing was measured. A suite's name (`h100`) says what it was written for,
    not what ran."""
    out: dict[tuple[str, str], str] = {}
    for (suite, workload), group in summary.partition_by("suite", "workload", as_dict=True).items():
        measured = group.filter(counting.MEASURED)
        rows = measured if measured.height else group
        labels = []
        for accelerator, counts in (
            rows.group_by("accelerator")
            .agg(pl.col("accelerator_count").unique().sort())
            .sort("accelerator")
            .iter_rows()
        ):
            if rows.filter(pl.col("accelerator") == accelerator)["device"].eq("cpu").any():
                labels.append("CPU")
                continue
            # a name the datasheet table knows, and nothing else: a record's accelerator is free text
            known = metrics.datasheet_memory(str(accelerator)) is not None
            name = str(accelerator).removeprefix("NVIDIA ") if known else "other hardware"
            counts = [c for c in counts if c is not None]
            many = f"{counts[0]}–{counts[-1]}" if len(counts) > 1 else f"{counts[0]}" if counts else "?"
            labels.append(f"{many} × {name}")
        out[(str(suite), str(workload))] = " + ".join(labels) or str(suite)
    return out
