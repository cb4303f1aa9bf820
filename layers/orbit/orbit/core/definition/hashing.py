"""The canonical definition hash.

``sha256:`` + hex digest of the document as canonical JSON: keys sorted, no
whitespace, UTF-8, integral floats written as integers (YAML ``2.0`` and JSON
``2`` are the same number). Formatting, comments, key order and YAML-vs-JSON do
not change the hash. Values are hashed as written: ``1m`` and ``60s`` are
different texts and give different hashes (an execution pins the text it ran).
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any


def canonical_json(value: Any) -> str:
    """Deterministic JSON text; raises ``ValueError`` for values JSON cannot hold."""
    return json.dumps(_normalise(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def definition_hash(document: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(document).encode("utf-8")).hexdigest()


def _normalise(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer():
            return int(value)
        return value
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"object key {key!r} is not a string")
            out[key] = _normalise(item)
        return out
    if isinstance(value, (list, tuple)):
        return [_normalise(item) for item in value]
    raise ValueError(f"{type(value).__name__} is not a JSON value")
