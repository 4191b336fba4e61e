"""The `engine` and `bench` markers mean something: every test that asks for an engine's fixture carries its marker
(tests/conftest.py), so `nox -s tests-fast` (`-m "not engine and not bench"`) never waits for a build or a bench run."""

from __future__ import annotations

import pytest

from tests import conftest


class _Item:
    def __init__(self, nodeid: str, fixtures: tuple[str, ...], *markers: str) -> None:
        self.nodeid, self.fixturenames, self.markers = nodeid, fixtures, markers

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self.markers else None


def test_an_engine_fixture_without_the_marker_is_named() -> None:
    items = [
        _Item("t.py::plain", ("tmp_path",)),
        _Item("t.py::marked", ("model_cache", "llama_build"), "engine"),
        _Item("t.py::forgot", ("tmp_path", "vllm_python"), "slow"),
        _Item("t.py::through_a_fixture", ("mlx_train_data", "mlx_engine")),
    ]
    items.append(_Item("t.py::torch_run", ("bench_data", "torch_engine"), "engine"))
    items.append(_Item("t.py::mlx_beside_torch", ("mlx_engine", "torch_engine"), "engine", "bench"))
    assert conftest.unmarked_engine_tests(items) == [
        "t.py::forgot: @pytest.mark.engine (it uses vLLM through the vllm_python fixture)",
        "t.py::through_a_fixture: @pytest.mark.engine (it uses MLX through the mlx_engine fixture)",
        "t.py::torch_run: @pytest.mark.bench (it uses torch bench sessions through the torch_engine fixture)",
    ]


def test_the_marker_is_registered_strictly_beside_a_default_timeout(request: pytest.FixtureRequest) -> None:
    """Unknown markers fail collection, and every test has a timeout unless it says otherwise."""
    assert {m.partition(":")[0] for m in request.config.getini("markers")} >= {"engine", "bench", "slow"}
    assert "--strict-markers" in request.config.getini("addopts")
    assert request.config.getini("timeout")
