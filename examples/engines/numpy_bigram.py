"""A small real engine outside Fair Fight, for the external-runner contract (runners/engines/external/runner.py): a
bigram
language model in NumPy trained with plain SGD.

It reads the run's spec (JSON) on standard input and writes one JSON line per measurement on standard output:
step times and losses per step, and its version first. It does not train the workload's GPT (it only takes its
vocabulary, micro-batch, sequence length and step counts), so its loss curve is its own: the site flags it in
the loss-parity check and leaves it out of rankings, as it would any engine that trains a different model.

    python -m runners bench --suite cpu-smoke --variants examples/engines/numpy.toml --variant numpy-bigram --steps 40
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> int:
    spec = json.load(sys.stdin)
    if spec.get("contract") != 1:
        print(f"unsupported contract {spec.get('contract')!r}", file=sys.stderr)
        return 2
    work, settings = spec["workload"], spec["variant"]["settings"]
    vocab, batch, seq = spec["model"]["vocab"], work["micro_batch"], work["seq_len"]
    lr = float(settings["lr"])
    emit({"engine_version": f"numpy-bigram 1 (numpy {np.__version__})"})
    for trial in range(work.get("trials", 1)):
        rng = np.random.default_rng(work["seed"])
        logits = np.zeros((vocab, vocab))
        successor = rng.permutation(vocab)  # the stream's structure: mostly a fixed successor per token
        for step in range(work["steps"]):
            t0 = time.perf_counter()
            start = rng.integers(0, vocab, size=(batch, 1))
            tokens = np.empty((batch, seq + 1), dtype=np.int64)
            tokens[:, :1] = start
            for i in range(seq):
                follow = rng.random(batch) < 0.9
                tokens[:, i + 1] = np.where(follow, successor[tokens[:, i]], rng.integers(0, vocab, size=batch))
            prev, nxt = tokens[:, :-1].ravel(), tokens[:, 1:].ravel()
            z = logits[prev]
            z = z - z.max(axis=1, keepdims=True)
            p = np.exp(z)
            p /= p.sum(axis=1, keepdims=True)
            loss = float(-np.log(p[np.arange(nxt.size), nxt]).mean())
            p[np.arange(nxt.size), nxt] -= 1.0
            np.add.at(logits, prev, -lr * p / nxt.size * vocab)
            elapsed = time.perf_counter() - t0
            phase = "warmup" if step < work["warmup_steps"] else "steady"
            for metric, value, unit in (("step_time_s", elapsed, "s"), ("loss", loss, "nats")):
                emit({"trial": trial, "step": step, "phase": phase, "metric": metric, "value": value, "unit": unit})
        emit(
            {
                "trial": trial,
                "step": None,
                "phase": "run",
                "metric": "steps_completed",
                "value": work["steps"],
                "unit": "steps",
            }
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
