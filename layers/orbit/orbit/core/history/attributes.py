"""Search attributes: a few indexed fields an execution sets about itself (`orbit list --where`).

Pure. A workflow sets them with `ctx.set_attributes({...})` (code) or an `attributes:` block of
expressions (definitions); the engine records the keys that changed in an `AttributesSet` event,
and the index (adapters/dynamodb/attributes.py) keeps one row per attribute, which expires with
the execution. Bounds (docs/definitions.md, "attributes"): at most MAX_ATTRIBUTES keys per
execution, keys of KEY's shape, values strings of at most MAX_TEXT characters, integers, finite
numbers or booleans. A value of `null` leaves the key as it is.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_ATTRIBUTES = 10
MAX_TEXT = 256
KEY = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,39}")
ATTRIBUTE_INVALID = "ATTRIBUTE_INVALID"
_SAFE_INT = 2**53


def key_problem(key: Any) -> str | None:
    if not isinstance(key, str) or not KEY.fullmatch(key):
        return (f"attribute name {key!r} must be 1-40 letters, digits or '_', starting with a letter")
    return None


def value_problem(value: Any) -> str | None:
    """Why `value` cannot be an attribute value, or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return None if -_SAFE_INT < value < _SAFE_INT else f"{value} is outside +-2^53"
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value} is not a finite number"
    if isinstance(value, str):
        if len(value) > MAX_TEXT:
            return f"a string of {len(value)} characters; at most {MAX_TEXT}"
        if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
            return "a string with a lone surrogate"
        return None
    kinds: dict[type, str] = {list: "a list", dict: "an object"}
    kind = "null" if value is None else kinds.get(type(value), type(value).__name__)
    return f"must be a string, a number or a boolean, not {kind}"


def attributes_problem(values: Any, current: dict[str, Any]) -> str | None:
    """Why `values` (merged into `current`) cannot be set, naming the key; None when it can."""
    if not isinstance(values, dict):
        return f"attributes must be a mapping of names to values, not {type(values).__name__}"
    for key, value in values.items():
        problem = key_problem(key) or value_problem(value)
        if problem:
            return problem if problem.startswith("attribute name") else f"attribute {key!r}: {problem}"
    keys = set(current) | set(values)
    if len(keys) > MAX_ATTRIBUTES:
        return (f"at most {MAX_ATTRIBUTES} attributes per execution; this would make {len(keys)} "
                f"({', '.join(sorted(keys))})")
    return None


def normal(value: Any) -> Any:
    """One spelling per value: 2.0 is 2 (so `--where n=2` finds it)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < _SAFE_INT:
        return int(value)
    return value


def changed(values: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """The keys of `values` whose value differs from `current` (True is not 1)."""
    out = {}
    for key, value in values.items():
        value = normal(value)
        old = current.get(key, _MISSING)
        if old is _MISSING or type(old) is not type(value) or old != value:
            out[key] = value
    return out


def index_value(key: str, value: Any) -> str:
    """The index partition of `key = value`: `AT#tier="gold"`, `AT#n=2`, `AT#vip=true`."""
    return f"AT#{key}={json.dumps(normal(value), ensure_ascii=False, separators=(',', ':'))}"


def parse_where(text: Any) -> tuple[str, Any]:
    """`key=value` -> (key, value). The value is a number, `true`/`false` or a JSON string
    ("42" in quotes is the string); anything else is taken as the string it spells."""
    if not isinstance(text, str) or "=" not in text:
        raise ValueError(f"must look like name=value (e.g. tier=gold), not {text!r}")
    key, _, raw = text.partition("=")
    key = key.strip()
    problem = key_problem(key)
    if problem:
        raise ValueError(problem)
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    if not isinstance(value, (str, int, float, bool)):  # null, lists, objects: the text itself
        value = raw
    problem = value_problem(value)
    if problem:
        raise ValueError(f"{key}: {problem}")
    return key, normal(value)


_MISSING = object()
