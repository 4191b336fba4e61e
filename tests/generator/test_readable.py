"""Settings as words on the boards (generator/derive/readable.py): no `settings.` prefix, no JSON
`null`/`true`/quotes."""

from __future__ import annotations

import pytest

from generator.derive import readable
from generator.render import pages


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('settings.compile_loss=true, settings.reduce_dtype="bf16"', "compile_loss on · reduce_dtype bf16"),
        ("settings.compile_loss=null", "compile_loss not set"),
        ("depth_fills=null", "depth_fills every repetition"),
        ("depth_fills=1, requests=128", "depth_fills 1 · requests 128"),
        ('settings.buckets=[25, 50], env.NCCL_ALGO="Ring, Tree"', "buckets [25,50] · NCCL_ALGO Ring, Tree"),
        ("", ""),
        (None, None),
        ("not a key=value list", "not a key=value list"),  # not that form: unchanged, never half-rewritten
        ('a="unterminated', 'a="unterminated'),
    ],
)
def test_settings_read_as_words(text: str | None, words: str | None) -> None:
    assert readable.settings(text) == words


def test_the_words_are_still_escaped_on_a_page() -> None:
    env = pages.environment()
    out = env.from_string("{{ d | readable | text }}").render(d='settings.x="<script>"')
    assert "<script>" not in out and "x &#60;script&#62;" in out


def test_a_rungs_changes_read_as_words_with_new_and_dropped_settings_apart() -> None:
    triples = [("settings.compile", False, True), ("settings.param_dtype", None, "bf16"),
               ("settings.bucket_cap_mb", 25.0, None), ("settings.reduce_dtype", None, "fp32")]  # fmt: skip
    assert readable.changes(triples) == [
        "compile off → on", "new: param_dtype bf16 · reduce_dtype fp32", "dropped: bucket_cap_mb 25.0"
    ]  # fmt: skip
