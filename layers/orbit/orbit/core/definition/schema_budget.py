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

from collections.abc import Callable
from typing import Any

from jsonschema import FormatChecker

BASE_STEPS = 200_000  # keyword evaluations per check (about 1-2 s of jsonschema), plus:
STEPS_PER_VALUE = 50  # per value (object, array, string, number, ...) in the checked document

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


class CheckBudget(FormatChecker):  # type: ignore[misc]
    """One check's budget of keyword evaluations, and the `enum` lists it has hashed
    (`schema_unique.enum`). It rides on the validator of the check as its format checker, which
    jsonschema hands to the validator of every subschema it descends into; so the budget is an
    argument of the check, not state of the process or the thread. It checks no format, as a
    validator without a format checker does (`format` is an annotation here)."""

    def __init__(self, steps: int) -> None:
        super().__init__(formats=())
        self.steps = self.left = steps
        self.enums: dict[int, tuple[Any, frozenset[Any], str]] = {}  # id(enum list) -> (list, keys, shown)


def budgeted(validator: Any, steps: int) -> Any:
    """`validator` (a compiled one, shared) for one check of at most `steps` keyword evaluations."""
    return validator.evolve(format_checker=CheckBudget(steps))


def counted(keyword: Callable[..., Any]) -> Callable[..., Any]:
    """jsonschema keyword function `keyword`, spending one step of the check's budget per call
    (none on a validator that carries no budget)."""

    def spend(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        budget = validator.format_checker
        if isinstance(budget, CheckBudget):
            budget.left -= 1
            if budget.left < 0:
                raise SchemaBudgetExceeded(budget.steps)
        return keyword(validator, value, instance, schema)

    spend.__name__ = getattr(keyword, "__name__", "keyword")
    spend.__doc__ = keyword.__doc__
    return spend
