"""Values valid against a JSON Schema, drawn reproducibly from a seed (hypothesis-jsonschema).

`orbit simulate` needs one value per (schema, seed), the same every time, and hundreds of them a
second. hypothesis-jsonschema turns the schema into a Hypothesis strategy; `draw` runs that
strategy on a seeded choice sequence, outside a `@given` test, so a run's seed alone replays it.

Before that, `bounded` narrows the schema so values stay small: an object gets only the
properties the schema names (required ones included), "any value" becomes a short scalar,
strings and arrays get a modest maximum length. Every value of the narrowed schema is valid
against the original one; only the sizes and the open-ended parts are cut.
"""

from __future__ import annotations

import json
import random
from functools import lru_cache
from typing import Any

MAX_STRING = 12
MAX_ITEMS = 4
ANY_SCALAR = ["null", "boolean", "integer", "string"]
_SHAPING = {"type", "enum", "const", "$ref", "allOf", "anyOf", "oneOf", "not", "if", "properties",
            "items", "prefixItems", "additionalProperties", "patternProperties"}
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SUBSCHEMA = ("items", "not", "if", "then", "else", "contains", "additionalProperties")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")
_ATTEMPTS = 50


class GenerationError(Exception):
    """No value could be drawn (an unsatisfiable schema, or one hypothesis-jsonschema cannot read)."""


def bounded(schema: Any) -> Any:
    if schema is True or schema == {}:
        return {"type": ANY_SCALAR, "maxLength": MAX_STRING}
    if not isinstance(schema, dict):
        return schema
    s = dict(schema)
    if not (_SHAPING & set(s)):  # no type at all: a short scalar
        s["type"] = ANY_SCALAR
    types = s.get("type")
    types = types if isinstance(types, list) else [types]
    if "string" in types and _at_most(s.get("minLength"), MAX_STRING) and "pattern" not in s:
        s.setdefault("maxLength", MAX_STRING)
    if "array" in types and _at_most(s.get("minItems"), MAX_ITEMS):
        s.setdefault("maxItems", MAX_ITEMS)
    if "object" in types or "properties" in s:
        props = dict(s.get("properties") or {})
        for name in s.get("required") or []:
            if isinstance(name, str):
                props.setdefault(name, {})
        s["properties"] = props
        if "patternProperties" not in s:
            s.setdefault("additionalProperties", False)
    for key in _SUBSCHEMA:
        if isinstance(s.get(key), (dict, bool)) and not (key == "additionalProperties" and s[key] is False):
            s[key] = bounded(s[key])
    for key in _SUBSCHEMA_LISTS:
        if isinstance(s.get(key), list):
            s[key] = [bounded(x) for x in s[key]]
    for key in _SUBSCHEMA_MAPS:
        if isinstance(s.get(key), dict):
            s[key] = {k: bounded(v) for k, v in s[key].items()}
    return s


def _at_most(value: Any, cap: int) -> bool:
    return value is None or (isinstance(value, int) and value <= cap)


_OBJECT_KEYS = {"type", "properties", "required", "additionalProperties", "title", "description"}
_ARRAY_KEYS = {"type", "items", "minItems", "maxItems", "title", "description"}


@lru_cache(maxsize=256)
def _strategy(key: str) -> Any:
    return _build(bounded(json.loads(key)))


def _build(schema: Any) -> Any:
    """hypothesis-jsonschema's strategy, with plain closed objects and arrays composed here from
    their members' strategies: its own object strategy re-reads the schema on every draw, which
    costs tens of milliseconds a value."""
    from hypothesis import strategies as st
    from hypothesis_jsonschema import from_schema

    if isinstance(schema, dict) and schema.get("type") == "object" and set(schema) <= _OBJECT_KEYS \
            and schema.get("additionalProperties") is False:
        props = schema.get("properties") or {}
        required = [n for n in schema.get("required") or [] if n in props]
        return st.fixed_dictionaries({n: _build(props[n]) for n in required},
                                     optional={n: _build(v) for n, v in props.items() if n not in required})
    if isinstance(schema, dict) and schema.get("type") == "array" and set(schema) <= _ARRAY_KEYS \
            and isinstance(schema.get("items", {}), dict):
        return st.lists(_build(schema.get("items", {})), min_size=schema.get("minItems", 0),
                        max_size=schema.get("maxItems"))
    return from_schema(schema)


def draw(schema: Any, seed: int) -> Any:
    """One value valid against `schema`, the same for the same seed."""
    from hypothesis.control import BuildContext
    from hypothesis.errors import StopTest
    from hypothesis.internal.conjecture.data import ConjectureData

    if schema is None:
        schema = {}
    try:
        strategy = _strategy(json.dumps(schema, sort_keys=True))
    except Exception as exc:  # noqa: BLE001 - whatever hypothesis-jsonschema refuses
        raise GenerationError(f"cannot generate values for this schema: {exc}") from None
    rnd = random.Random(seed)
    for _ in range(_ATTEMPTS):  # a draw may overrun or be filtered out: draw again, same sequence
        data = ConjectureData(random=rnd, max_choices=8192)
        try:
            with BuildContext(data, wrapped_test=lambda: None):
                return json.loads(json.dumps(data.draw(strategy)))
        except StopTest:
            continue
        except Exception as exc:  # noqa: BLE001 - e.g. an unsatisfiable schema
            raise GenerationError(f"cannot generate values for this schema: {exc}") from None
    raise GenerationError(f"no valid value found in {_ATTEMPTS} tries; is the schema satisfiable?")
