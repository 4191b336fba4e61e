"""One site build derives every figure once (issue 36): `derive.results` is called once, and each derivation it
is made of once per build (per reading of steps/s, or per board of its kind, where that is its job). A page writer
that derived a figure for itself would call one of these again and fail here; each derivation that sets a decode
beside the copy bound is handed the one copy bandwidth the build derived. Counted on the committed records, through the
real build (MkDocs included), in this process."""

from __future__ import annotations

import collections
import functools
import importlib
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from generator import build, derive
from generator.derive import verdict

ROOT = Path(__file__).resolve().parents[2]

ONCE = [
    "derive.results",
    "derive.summaries.run_summary",
    "derive.training_boards.leaderboards",
    "derive.training_boards.candidates",
    "derive.training_boards.scaling",
    "derive.training_boards.loss_windows",
    "derive.parity.loss_parity",
    "derive.copy_bound.copy_bandwidths",
    "derive.inference.inference_figures",
    "derive.inference.per_run_figures",
    "derive.serving.serving",
    "derive.serving.per_run_figures",
    "derive.inference.ranked_runs",
    "derive.serving.ranked_runs",
    "derive.serving.tp_scaling",
    "derive.serving.latency_points",
    "derive.verdict.fight",
    "derive.verdict.sweep",
    "derive.verdict.changed_sweep",
    "derive.verdict.answer",
    "derive.verdict.owed",
    "derive.verdict.draws.compute",
    "derive.verdict.draws.draws",
    "derive.side_by_side.derive",
    "derive.claims.checks",
    "derive.catalog.tables",
    "derive.results.hardware_of_boards",
    "derive.results.with_test_figures",
    "derive.defaults.with_beside_defaults",
    "derive.runs.every_run",
    "derive.configurations.rows",
    "derive.single_settings.rows",
    "derive.tuning.tuning",
    "derive.side_by_side.stacked_boards",
    "derive.commit_history.history",
    "derive.commit_history.points",
    "derive.commit_history.bands",
]
"""Derivations a build calls exactly once."""


def _boards_of(kind: str) -> Callable[[Any], int]:
    return lambda results: sum(b.kind == kind for b in results.boards.values())


def _test_boards(results: Any) -> int:
    return sum(b.kind != "train" for b in results.boards.values())


PER = {
    "derive.configurations.pooled_spreads": lambda results: len(verdict.READINGS),  # each reading of steps/s
    "derive.ladder.pooled_spreads": lambda results: 2,  # each kind of test: inference, serving
    # the repeats of the runs that rank (the boards' A/A), and of those compare counts at each commit (the floors
    # compare and the history across commits hold a difference to: runs.at_commit_floors)
    "derive.ladder.repeats": lambda results: 2,
    "derive.training_boards.repeats": lambda results: 2,
    "derive.results._training_board": _boards_of("train"),
    "derive.results._inference_board": _boards_of("inference"),
    "derive.results._serving_board": _boards_of("serving"),
    "derive.inference.board": _boards_of("inference"),
    "derive.serving.board": _boards_of("serving"),
    "derive.ladder.board": _test_boards,
}
"""Derivations a build calls once per reading, per kind or per board, as a function of its Results (every board:
the training boards are ranked together by `derive.training_boards.leaderboards`, once, and each is assembled once)."""

COPY_BANDWIDTH_READERS = {
    "derive.inference.inference_figures",
    "derive.inference.per_run_figures",
    "derive.serving.serving",
    "derive.serving.per_run_figures",
    "derive.side_by_side.derive",
}
"""Derivations of `ONCE` that set a decode beside the copy bound: each takes the copy bandwidth calibrated on each
hardware model (`copy_bound.copy_bandwidths`) as its `copy_bandwidth`."""


@pytest.fixture(scope="module")
def counted(tmp_path_factory: pytest.TempPathFactory) -> tuple[collections.Counter[str], Any, dict[str, list[Any]]]:
    """How often the build called each derivation, its Results, and what some derivations returned or were handed:
    `derive.results` and `derive.copy_bound.copy_bandwidths` their returns, each of `COPY_BANDWIDTH_READERS` its
    `copy_bandwidth`."""
    counts: collections.Counter[str] = collections.Counter()
    seen: dict[str, list[Any]] = collections.defaultdict(list)
    with pytest.MonkeyPatch.context() as patch:
        for name in [*ONCE, *PER]:
            module_name, _, function = name.rpartition(".")
            module = importlib.import_module(f"generator.{module_name}")
            original = getattr(module, function)
            signature = inspect.signature(original) if name in COPY_BANDWIDTH_READERS else None

            @functools.wraps(original)
            def wrapped(
                *args: Any, _original: Any = original, _name: str = name, _takes: Any = signature, **kwargs: Any
            ) -> Any:
                counts[_name] += 1
                if _takes is not None:
                    seen[_name].append(_takes.bind(*args, **kwargs).arguments["copy_bandwidth"])
                out = _original(*args, **kwargs)
                if _name in ("derive.results", "derive.copy_bound.copy_bandwidths"):
                    seen[_name].append(out)
                return out

            patch.setattr(module, function, wrapped)
        tmp = tmp_path_factory.mktemp("once")
        build.build(ROOT / "data", tmp / "site", tmp / "work")
    made = seen["derive.results"]
    assert len(made) == 1, f"derive.results was called {len(made)} times"
    return counts, made[0], dict(seen)


@pytest.mark.parametrize("name", ONCE)
def test_each_derivation_runs_once_per_build(counted: tuple[collections.Counter[str], Any, Any], name: str) -> None:
    counts, _, _ = counted
    assert counts[name] == 1, f"{name} ran {counts[name]} times in one build"


@pytest.mark.parametrize("name", list(PER))
def test_each_board_is_ranked_once(counted: tuple[collections.Counter[str], Any, Any], name: str) -> None:
    counts, results, _ = counted
    assert counts[name] == PER[name](results) > 0, f"{name} ran {counts[name]} times"


def test_the_results_are_frozen(counted: tuple[collections.Counter[str], Any, Any]) -> None:
    _, results, _ = counted
    assert isinstance(results, derive.Results)
    with pytest.raises(AttributeError):
        results.boards = {}  # type: ignore[misc]


def test_every_copy_bound_reads_the_one_copy_bandwidth(counted: tuple[collections.Counter[str], Any, Any]) -> None:
    """The inference figures, the serving figures and the side-by-side page set each decode beside the copy bound of
    one mapping, derived once a build (`copy_bound.copy_bandwidths`): each is handed that very object, so no two of
    them can read another."""
    _, results, seen = counted
    (derived,) = seen["derive.copy_bound.copy_bandwidths"]
    for name in sorted(COPY_BANDWIDTH_READERS):
        assert seen[name] and all(handed is derived for handed in seen[name]), f"{name} read another copy bandwidth"
    assert results.side_by_side.bandwidths.items() <= derived.items()
