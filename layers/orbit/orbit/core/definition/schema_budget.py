"""A budget of keyword evaluations for one schema check.

A JSON Schema may refer to itself, and `allOf`, `anyOf`, `oneOf`, `if`/`then` evaluate the same
value more than once: `{"allOf": [{"items": {"$ref": "#"}}, {"items": {"$ref": "#"}}]}` evaluates
a value nested 64 deep (the deepest a payload may be) 2^64 times. Every keyword of the validator
classes Orbit uses (`schema_regex.re2_class`) spends one step of the budget that
`contracts.check_compiled` opens for each check: :func:`steps_for` the value, a base of
:data:`BASE_STEPS` plus :data:`STEPS_PER_VALUE` for every value in it (an ordinary schema spends
a few per value), so the time of a check stays linear in the size of what it checks. Past it
the check stops with :class:`SchemaBudgetExceeded`, which fails it the way a value breaking the
schema does. Outside a budget (a validator used directly) keywords run uncounted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

BASE_STEPS = 200_000  # keyword evaluations per check (about 1-2 s of jsonschema), plus:
STEPS_PER_VALUE = 50  # per value (object, array, string, number, ...) in the checked document

_left: ContextVar[list[int] | None] = ContextVar("orbit_schema_steps", default=None)


class SchemaBudgetExceeded(Exception):
    """A check spent its whole budget of keyword evaluations."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        super().__init__(f"checking the value against the schema took more than {steps:,} steps "
                         "(keyword evaluations); the schema evaluates parts of the value over and over "
                         "(`allOf`/`anyOf`/`oneOf` around a `$ref` to itself?)")


def steps_for(value: Any) -> int:
    """The budget of a check of `value`: :data:`BASE_STEPS` + :data:`STEPS_PER_VALUE` per value in it."""
    count = 0
    stack = [value]
    seen: set[int] = set()  # a Python value (a code workflow's) may hold itself: count it once
    while stack:
        node = stack.pop()
        count += 1
        if isinstance(node, (dict, list, tuple)):
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.extend(node.values() if isinstance(node, dict) else node)
    return BASE_STEPS + STEPS_PER_VALUE * count


@contextmanager
def schema_budget(steps: int) -> Iterator[None]:
    """Count the keyword evaluations of the checks run inside; raise past `steps`."""
    token = _left.set([steps, steps])
    try:
        yield
    finally:
        _left.reset(token)


def counted(keyword: Callable[..., Any]) -> Callable[..., Any]:
    """jsonschema keyword function `keyword`, spending one step of the open budget per call."""

    def spend(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        left = _left.get()
        if left is not None:
            left[0] -= 1
            if left[0] < 0:
                raise SchemaBudgetExceeded(left[1])
        return keyword(validator, value, instance, schema)

    spend.__name__ = getattr(keyword, "__name__", "keyword")
    spend.__doc__ = keyword.__doc__
    return spend
