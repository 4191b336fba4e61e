"""The load generator's reading of one streamed response (runners/loadgen.py `_one`), against a stand-in for an
aiohttp session: no server, no aiohttp."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

import pytest

from runners import loadgen, serving


class _Content:
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    async def iter_any(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk


class _Response:
    status = 200

    def __init__(self, chunks: list[bytes]) -> None:
        self.content = _Content(chunks)


class _Session:
    """What `_one` asks of an aiohttp session: `post(url, json=...)` as an async context manager."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    @contextlib.asynccontextmanager
    async def post(self, url: str, json: object) -> AsyncIterator[_Response]:
        yield _Response(self._chunks)


def _stream(completion_tokens: int) -> list[bytes]:
    """A completions stream: one chunk of text, then the usage chunk (`stream_options.include_usage`), then DONE."""
    events = [{"choices": [{"text": " a"}]}, {"choices": [], "usage": {"prompt_tokens": 4,
              "completion_tokens": completion_tokens}}]  # fmt: skip
    return [b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events), b"data: [DONE]\n\n"]


@pytest.mark.parametrize(("tokens", "answered"), [(1, True), (3, True), (0, False)])
def test_a_request_the_server_counted_no_token_for_is_a_failed_one(tokens: int, answered: bool) -> None:
    """A request answered with no token counted generated nothing to time: failed, as vllm bench serve's records judge
    it (runners/engines/vllm/tool.py), so the rows the runner writes of it (`serving.served_rows`) carry no
    `output_tokens` row of 0 that the loader would refuse the whole point for (runners/schema.py)."""
    request = asyncio.run(loadgen._one(_Session(_stream(tokens)), "http://127.0.0.1/v1/completions", {}))
    assert request.ok is answered and request.output_tokens == tokens and request.ttft_s is not None
    rows = serving.served_rows([request], 1.0)
    assert [r["value"] for r in rows if r["metric"] == "output_tokens"] == ([float(tokens)] if answered else [])
