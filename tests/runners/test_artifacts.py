"""Same start and same data for every engine and world size."""

from __future__ import annotations

import numpy as np

from runners import artifacts, spec

TINY = spec.load_suite("cpu-smoke").models["gpt-tiny"]


def test_initial_weights_are_seeded_per_tensor() -> None:
    a = artifacts.init_weights(TINY, seed=0)
    b = artifacts.init_weights(TINY, seed=0)
    c = artifacts.init_weights(TINY, seed=1)
    assert sum(w.size for w in a.values()) == TINY.total_params
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["wte"], c["wte"])
    one = artifacts.init_tensor(TINY, "blocks.1.mlp.up.weight", (TINY.ffn_dim, TINY.dim), seed=0)
    assert np.array_equal(one, a["blocks.1.mlp.up.weight"])  # independent of which others are made
    assert np.all(a["ln_f.weight"] == 1.0)


def test_token_stream_is_the_same_for_any_world_size_and_step_range() -> None:
    kw = dict(vocab=512, seed=0, seq_len=16)
    whole = artifacts.token_batches(steps=range(6), global_batch=8, **kw)
    tail = artifacts.token_batches(steps=range(3, 6), global_batch=8, **kw)
    assert np.array_equal(whole[3:], tail)
    # 2 ranks × micro-batch 4 read exactly the rows of 1 rank × micro-batch 8
    rank0, rank1 = whole[:, 0:4], whole[:, 4:8]
    assert np.array_equal(np.concatenate([rank0, rank1], axis=1), whole)


def test_token_stream_has_learnable_structure() -> None:
    tokens = artifacts.token_batches(vocab=512, seed=0, steps=range(2), global_batch=4, seq_len=64)
    table = artifacts.successor_table(512, 0)
    prev, nxt = tokens[..., :-1].ravel(), tokens[..., 1:].ravel()
    assert all(n in table[p] for p, n in zip(prev, nxt, strict=True))  # every transition is one of 4 successors


def test_initial_weights_file_is_real_safetensors(tmp_path) -> None:
    from safetensors.numpy import load_file

    path = artifacts.initial_weights_file(TINY, 0, tmp_path)
    assert path.name == f"{artifacts.spec_key(TINY, 0)}.safetensors"
    theirs = load_file(path)  # the reference implementation reads what we wrote
    ours = artifacts.read_safetensors(path)
    expected = artifacts.init_weights(TINY, 0)
    assert sorted(theirs) == sorted(ours) == sorted(expected)
    assert all(np.array_equal(theirs[k], expected[k]) and np.array_equal(ours[k], expected[k]) for k in expected)
    mtime = path.stat().st_mtime_ns
    assert artifacts.initial_weights_file(TINY, 0, tmp_path) == path and path.stat().st_mtime_ns == mtime  # reused
