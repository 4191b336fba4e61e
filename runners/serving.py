"""What any serving engine's runner needs beside its engine: random token-id prompts (an engine's runner may send its
own tool's text prompts instead: vLLM's does), an OpenAI-compatible server's lifecycle (start on 127.0.0.1, wait for
its health check, always stop the whole process group), a served point driven through the load generator
(`runners/loadgen.py`), its prompts' lengths as the server counted them held to the workload's (`prompt_tokens_off`),
and the record rows of an offline test and of a served point. An engine's own folder keeps only what is its own: its
settings, its command line, its tools (runners/engines/vllm/runner.py is the first user; add-an-engine.md shows a
second).

The figures made from these rows are `runners.metrics.serving_metrics`'s, for every engine alike.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from runners import lifetime

WARMUP_PROMPTS = 8
"""Requests sent untimed before a served point (and batched before an offline test): the first wave after start-up
pays for compilation and allocation."""
START_TIMEOUT_S = 900.0


def prompts(vocab: int, n: int, length: int, seed: int) -> list[list[int]]:
    """`n` prompts of `length` random token ids, none of them a special token (the tokenizer's last two ids)."""
    rng = random.Random(seed)
    return [[rng.randrange(vocab - 2) for _ in range(length)] for _ in range(n)]


def tail(text: str, n: int = 3000) -> str:
    """The end of a process's output, for a failure record's error."""
    return text.strip()[-n:]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """An OpenAI-compatible server on 127.0.0.1 (`command(port)`: its command line), its log in a file, up once
    `health` answers 200; stopped (the whole process group) by `stop`. `name` is how its errors call it."""

    def __init__(
        self,
        command: Callable[[int], list[str]],
        env: dict[str, str],
        log: Path,
        *,
        name: str,
        health: str = "/health",
        start_timeout_s: float = START_TIMEOUT_S,
    ) -> None:
        self.port = free_port()
        self.log = log
        self.name = name
        self.health = health
        self.start_timeout_s = start_timeout_s
        self.command = command(self.port)
        self._log = open(log, "w")  # noqa: SIM115 - closed in stop()
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            self.command,
            env=os.environ | env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=lifetime.die_with_parent(),  # the server ends with its runner
        )
        self.startup_s = self._wait(t0)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def tail(self, n: int = 3000) -> str:
        self._log.flush()
        return self.log.read_text(errors="replace")[-n:]

    def _wait(self, t0: float) -> float:
        while time.perf_counter() - t0 < self.start_timeout_s:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode} while starting:\n{self.tail()}")
            try:
                with urllib.request.urlopen(self.url + self.health, timeout=5) as r:
                    if r.status == 200:
                        return time.perf_counter() - t0
            except OSError:
                pass
            time.sleep(1)
        raise RuntimeError(
            f"{self.name} did not answer {self.health} within {self.start_timeout_s:g} s:\n{self.tail()}"
        )

    def alive(self) -> None:
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.name} died (exit {self.proc.returncode}):\n{self.tail()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._log.close()


def drive_point(
    server: Server,
    path: str,
    served_name: str,
    asks: Sequence[str | list[int]],
    output_len: int,
    sampling: dict[str, Any],
    *,
    concurrency: int,
    request_rate: float | None,
    seed: int,
    meter: Any = None,
) -> tuple[list[Any], float, float | None]:
    """One served point: the first `WARMUP_PROMPTS` of `asks` (text or token ids) untimed, then the rest through the
    load generator at `concurrency` (closed loop) or `request_rate` (open loop, Poisson), the server checked alive
    before and after.
    Returns the requests (`metrics.ServedRequest`), the point's duration in seconds and, with an energy `meter`
    (`runners.energy.Meter`), the server's GPUs' joules over the timed requests (else None)."""
    from runners import loadgen

    server.alive()
    url = server.url + path
    bodies = [loadgen.payload(served_name, p, output_len, sampling) for p in asks]
    loadgen.drive(url, bodies[:WARMUP_PROMPTS], concurrency=WARMUP_PROMPTS)  # untimed
    if meter is not None:
        meter.start()
    requests, duration = loadgen.drive(
        url, bodies[WARMUP_PROMPTS:], concurrency=concurrency, request_rate=request_rate, seed=seed
    )
    joules = meter.stop() if meter is not None else None
    server.alive()
    return requests, duration, joules


def prompt_tokens_off(requests: Sequence[Any], input_len: int) -> str | None:
    """Why a served point's requests are not its workload's, or None: every answered request's prompt, as the server
    counted it (its usage), must be `input_len` tokens long. A text prompt is the server's to tokenize, and a prompt
    of another length would time another workload."""
    answered = [r for r in requests if r.ok]
    off = sorted({r.prompt_tokens for r in answered if r.prompt_tokens != input_len})
    if not off:
        return None
    n = sum(r.prompt_tokens != input_len for r in answered)
    return (
        f"the server counted {off} prompt tokens in {n} of {len(answered)} answered requests, not the workload's "
        f"{input_len}: the point timed other prompts than its workload's, so it is not recorded as one"
    )


def offline_rows(result: dict[str, Any], num_prompts: int) -> list[dict[str, Any]]:
    """An offline test's rows: its engine's start-up and warm-up, and per timed repetition (trial) its time, output
    and total tokens/s and requests/s. `result`: `startup_s`, `warmup_s` and `repetitions`, each with `elapsed_s`,
    `prompt_tokens` and `output_tokens`."""
    rows = [
        dict(trial=0, step=None, phase="run", metric="startup_s", value=result["startup_s"], unit="s"),
        dict(trial=0, step=None, phase="warmup", metric="warmup_s", value=result["warmup_s"], unit="s"),
    ]
    for rep, r in enumerate(result["repetitions"]):
        s = r["elapsed_s"]
        for metric, value, unit in (
            ("test_time_s", s, "s"),
            ("output_tokens_per_s", r["output_tokens"] / s, "tokens/s"),
            ("total_tokens_per_s", (r["output_tokens"] + r["prompt_tokens"]) / s, "tokens/s"),
            ("request_throughput", num_prompts / s, "requests/s"),
        ):
            rows.append(dict(trial=rep, step=None, phase="steady", metric=metric, value=value, unit=unit))
    return rows


def served_rows(requests: list[Any], duration_s: float) -> list[dict[str, Any]]:
    """A served point's raw samples: per request (trial) its TTFT, end-to-end time and token counts, and every
    inter-token gap (step = its index); `runners.metrics.serving_metrics` makes the figures from these."""
    rows = [dict(trial=0, step=None, phase="run", metric="duration_s", value=duration_s, unit="s")]
    for i, r in enumerate(requests):
        rows.append(dict(trial=i, step=None, phase="steady", metric="request_ok", value=float(r.ok), unit="bool"))
        if not r.ok:
            continue
        rows += [
            dict(trial=i, step=None, phase="steady", metric="ttft_s", value=r.ttft_s, unit="s"),
            dict(trial=i, step=None, phase="steady", metric="e2e_s", value=r.e2e_s, unit="s"),
            dict(trial=i, step=None, phase="steady", metric="prompt_tokens", value=float(r.prompt_tokens))
            | {"unit": "tokens"},
            dict(trial=i, step=None, phase="steady", metric="output_tokens", value=float(r.output_tokens))
            | {"unit": "tokens"},
        ]
        rows += [
            dict(trial=i, step=k, phase="steady", metric="itl_s", value=g, unit="s") for k, g in enumerate(r.itl_s)
        ]
    return rows
