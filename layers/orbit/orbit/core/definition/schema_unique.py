"""`uniqueItems` in time linear in the array (jsonschema's own is quadratic on objects).

jsonschema (`_utils.uniq`) sorts the items and compares neighbours when they are mutually
orderable (numbers, strings, lists of those); otherwise it compares every item with every item
before it: 50,000 distinct objects make 1.25 billion comparisons, holding the decider or the API
for ever. :func:`unique_items` gives exactly jsonschema's answer, with the same message: the
sorting path unchanged (it is n log n), and instead of the pairwise fallback a set of hashable
keys, one per item, equal exactly when jsonschema's `equal` says the items are:

- numbers compare as Python numbers (`1 == 1.0`, exact between ints and floats), a boolean only
  equals the same boolean (`true` is not `1`, `false` is not `0`), at every depth;
- strings equal strings, `null` equals `null`, lists (and tuples) compare item by item,
  objects compare key by key whatever their order.

An item that is not JSON data (only Python code can pass one: a code workflow's own value)
falls back to jsonschema's comparison.

`enum` uses the same keys: jsonschema compares the value with every member (a definition's
enum of 2,000 objects against 20,000 items made 40 million comparisons and 1.6 GB of
messages, each repeating the whole enum); :func:`enum` looks the value's key up in the
members' keys, and writes the members in its message cut to 200 characters.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from numbers import Number
from typing import Any

from jsonschema import _keywords as js_keywords
from jsonschema import exceptions as js_exceptions
from jsonschema._utils import equal, unbool  # the helpers jsonschema's own uniqueItems uses
from jsonschema._utils import uniq as _pairwise_uniq


class _NotJson(Exception):
    """An item holds a value with no JSON key (not produced by parsing JSON)."""


def unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Any:
    """jsonschema's `uniqueItems` keyword (same answer, same message), linear in the array."""
    if unique and validator.is_type(instance, "array") and not is_unique(instance):
        yield js_exceptions.ValidationError(f"{instance!r} has non-unique elements")


def is_unique(items: Any) -> bool:
    """jsonschema's `_utils.uniq(items)` without its quadratic fallback."""
    try:  # jsonschema's own first path, verbatim: sorted neighbours
        ordered = sorted(unbool(i) for i in items)
        return not any(equal(i, j) for i, j in zip(ordered, itertools.islice(ordered, 1, None)))
    except (NotImplementedError, TypeError):
        pass
    seen: set[Any] = set()
    try:
        for item in items:
            key = json_key(item)
            if key in seen:
                return False
            seen.add(key)
    except _NotJson:
        return bool(_pairwise_uniq(items))
    return True


_ENUM_SHOWN = 200  # characters of an enum's members written in a message


def enum(validator: Any, enums: Any, instance: Any, schema: Any) -> Any:
    """jsonschema's `enum` keyword (same answer) with hashed membership and a bounded message."""
    budget = validator.format_checker  # the check's `schema_budget.CheckBudget`: its hashed enums
    found_cache = getattr(budget, "enums", None)  # None: a validator without a budget (not a check's)
    cache: dict[int, tuple[Any, frozenset[Any], str]] = found_cache if found_cache is not None else {}
    known = cache.get(id(enums))
    if known is None or known[0] is not enums:
        try:
            keys = frozenset(json_key(member) for member in enums)
        except (_NotJson, TypeError):
            yield from js_keywords.enum(validator, enums, instance, schema)
            return
        shown = repr(enums)
        if len(shown) > _ENUM_SHOWN:
            shown = f"{shown[:_ENUM_SHOWN - 3]}..."
        if len(cache) >= 1024:  # the enums of one check's schema, and no more
            cache.clear()
        known = cache[id(enums)] = (enums, keys, shown)
    try:
        found = json_key(instance) in known[1]
    except (_NotJson, TypeError):
        yield from js_keywords.enum(validator, enums, instance, schema)
        return
    if not found:
        yield js_exceptions.ValidationError(f"{instance!r} is not one of {known[2]}")


def json_key(value: Any) -> Any:
    """A hashable key; two values' keys are equal exactly when jsonschema's `equal` holds."""
    if value is True or value is False:
        return ("b", value)
    if value is None:
        return ("z",)
    if isinstance(value, str):
        return ("s", value)
    if isinstance(value, Number):  # tuples compare their items by identity, then ==: Python's rules
        return ("n", value)
    if isinstance(value, Mapping):
        try:
            return ("d", frozenset((k, json_key(v)) for k, v in value.items()))
        except TypeError as exc:  # an unhashable key
            raise _NotJson from exc
    if isinstance(value, (list, tuple)):
        return ("l", tuple(json_key(v) for v in value))
    raise _NotJson  # bytes, sets, dates, ...: jsonschema compares those its own way
