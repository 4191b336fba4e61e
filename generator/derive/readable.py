"""Settings as a reader reads them: `settings.compile_loss=true, depth_fills=null` (what `configurations.differing`
writes: names and canonical JSON) becomes `compile_loss on · depth_fills every repetition`. Pure: text in, text out
(a run's settings beside its engine's defaults are derived once per run: `derive.defaults`)."""

from __future__ import annotations

import json
import re
from typing import Any

NULL_WORDS = {"depth_fills": "every repetition"}
"""What an unset value means where a setting says more than "not set": a record without `depth_fills` predates the
field and filled its KV-cache depth on every repetition (the inference board's Depth fills column says the same)."""
_KEY = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_.]*)=")
_DECODER = json.JSONDecoder()


def settings(text: str | None) -> str | None:
    """`key=json, key=json` as `key value · key value`; text that is not in that form comes back unchanged (never
    half-rewritten)."""
    if not text:
        return text
    pairs: list[tuple[str, Any]] = []
    at = 0
    while at < len(text):
        found = _KEY.match(text, at)
        if found is None:
            return text
        try:
            value, at = _DECODER.raw_decode(text, found.end())
        except json.JSONDecodeError:
            return text
        pairs.append((found[1], value))
        if text.startswith(", ", at):
            at += 2
        elif at != len(text):
            return text
    return " · ".join(f"{_name(key)} {_value(key, value)}" for key, value in pairs)


def changes(triples: list[tuple[str, Any, Any]]) -> list[str]:
    """Settings' changes as a reader reads them (`configurations.changed`'s (name, before, after) triples): a line
    per setting both sides have (`compile off → on`), then one line of the settings only the second has (`new:
    param_dtype bf16 · …`) and one of those only the first has (`dropped: bucket_cap_mb 25 · …`): a change of
    engine or parallelism brings its own settings, which changed nothing from a value the other side had."""
    both = [f"{_name(k)} {_value(k, a)} → {_value(k, b)}" for k, a, b in triples if a is not None and b is not None]
    new = [f"{_name(k)} {_value(k, b)}" for k, a, b in triples if a is None]
    dropped = [f"{_name(k)} {_value(k, a)}" for k, a, b in triples if b is None]
    return both + [f"{label}: {' · '.join(items)}" for label, items in (("new", new), ("dropped", dropped)) if items]


def _name(key: str) -> str:
    return key.removeprefix("settings.").removeprefix("env.")


def _value(key: str, value: Any) -> str:
    if value is None:
        return NULL_WORDS.get(_name(key), "not set")
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))
