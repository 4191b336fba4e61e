"""A load generator for OpenAI-compatible completion servers: streamed requests of text or token-id prompts,
closed-loop at a fixed concurrency or open-loop at a Poisson rate, timed per chunk as vLLM's `vllm bench serve` times
them (`benchmarks/lib/endpoint_request_func.py`, `async_request_openai_completions`).

Only the clock readings happen here; every figure made from them is `runners.metrics.serving_metrics`.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Sequence
from typing import Any

from runners.metrics import ServedRequest


def payload(model: str, prompt: str | list[int], output_len: int, sampling: dict[str, Any]) -> dict[str, Any]:
    """The request body: `vllm bench serve`'s for the completions API, EOS ignored, usage in the last chunk. The
    prompt is text (the server tokenizes it, as it does the tool's) or token ids (sent as they are)."""
    return {
        "model": model,
        "prompt": prompt,
        "max_tokens": output_len,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
        **sampling,
    }


async def _one(session: Any, url: str, body: dict[str, Any]) -> ServedRequest:
    start = time.perf_counter()
    ttft: float | None = None
    last = start
    gaps: list[float] = []
    usage: dict[str, Any] = {}
    try:
        async with session.post(url, json=body) as response:
            if response.status != 200:
                text = (await response.text())[:300]
                raise RuntimeError(f"HTTP {response.status}: {text}")
            buffer = b""
            async for chunk in response.content.iter_any():
                buffer += chunk
                *messages, buffer = buffer.split(b"\n\n")
                for message in messages:
                    data = message.strip().removeprefix(b"data: ")
                    if not data or data.startswith(b":") or data == b"[DONE]":
                        continue
                    obj = json.loads(data)
                    if obj.get("choices"):
                        now = time.perf_counter()
                        if ttft is None:
                            ttft = now - start
                        else:
                            gaps.append(now - last)
                        last = now
                    elif obj.get("usage"):
                        usage = obj["usage"]
        end = time.perf_counter()
    except Exception:
        return ServedRequest(ok=False, ttft_s=None, itl_s=(), e2e_s=None, prompt_tokens=0, output_tokens=0)
    output_tokens = int(usage.get("completion_tokens", 0))
    # a request whose server counted no token generated nothing to time: failed, as vllm bench serve's records judge
    # it (runners/engines/vllm/tool.py), and as the loader holds an answered request to (runners/schema.py)
    ok = ttft is not None and output_tokens > 0
    return ServedRequest(
        ok=ok,
        ttft_s=ttft,
        itl_s=tuple(gaps),
        e2e_s=end - start,
        prompt_tokens=int(usage.get("prompt_tokens", 0)),
        output_tokens=output_tokens,
    )


async def _drive(
    url: str,
    bodies: Sequence[dict[str, Any]],
    concurrency: int | None,
    request_rate: float | None,
    seed: int,
) -> tuple[list[ServedRequest], float]:
    import aiohttp

    gate = asyncio.Semaphore(concurrency or len(bodies))
    arrivals = random.Random(seed)
    timeout = aiohttp.ClientTimeout(total=6 * 3600)
    connector = aiohttp.TCPConnector(limit=0, force_close=False)

    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:

        async def gated(body: dict[str, Any]) -> ServedRequest:
            async with gate:
                return await _one(session, url, body)

        start = time.perf_counter()
        tasks = []
        for i, body in enumerate(bodies):
            if request_rate is not None and i:
                await asyncio.sleep(arrivals.expovariate(request_rate))
            tasks.append(asyncio.create_task(gated(body)))
        results = await asyncio.gather(*tasks)
        return list(results), time.perf_counter() - start


def drive(
    url: str,
    bodies: Sequence[dict[str, Any]],
    *,
    concurrency: int | None = None,
    request_rate: float | None = None,
    seed: int = 0,
) -> tuple[list[ServedRequest], float]:
    """Send every request body to `url` and return each request's timings and the whole point's duration (first
    send to last response). Closed loop: at most `concurrency` in flight. Open loop: Poisson arrivals at
    `request_rate` per second (seeded), however many are in flight."""
    if (concurrency is None) == (request_rate is None):
        raise ValueError("a served point has either a concurrency or a request rate")
    return asyncio.run(_drive(url, bodies, concurrency, request_rate, seed))
