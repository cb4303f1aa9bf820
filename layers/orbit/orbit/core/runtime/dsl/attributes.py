"""A definition's `attributes:` block, evaluated on every round of the DSL runtime.

Each name's expression reads the usual root (input, steps, execution, hooks). An expression that
names steps (`steps.charge.output.amount`) waits until every step it names has ended, as a
step's input does, so `$length(steps.big.output)` is not an error while `big` runs. A result of
null leaves the attribute as it is; anything that is not a string of at most 256 characters, a
number or a boolean fails the execution with ATTRIBUTE_INVALID, naming the attribute, and an
expression error fails it with EXPRESSION_ERROR. The engine records only what changed, so
re-evaluating costs no write.
"""

from __future__ import annotations

from typing import Any

from orbit.core.history.attributes import ATTRIBUTE_INVALID, value_problem
from orbit.core.history.events import EXPRESSION_ERROR, TaskError
from orbit.core.history.state import TERMINAL_UNIT
from orbit.core.runtime.commands import Command, Fail, SetAttributes
from orbit.errors import ExpressionError


def attribute_commands(block: dict[str, Any], root: dict[str, Any], now_ms: int,
                       meter: Any = None) -> list[Command]:
    from orbit.core.definition.expressions import evaluate, expression_references, expressions_in

    values: dict[str, Any] = {}
    steps = root.get("steps") or {}
    for key, template in block.items():
        if any((steps.get(name) or {}).get("status") not in TERMINAL_UNIT
               for _, text in expressions_in(template) for name in expression_references(text)[0]):
            continue  # a step it reads has not ended yet
        try:
            value = evaluate(template, root, now_ms, meter)
        except ExpressionError as e:
            return [Fail(TaskError(EXPRESSION_ERROR, f"attributes.{key}: {e}", retryable=False))]
        if value is None:
            continue
        problem = value_problem(value)
        if problem is not None:
            return [Fail(TaskError(ATTRIBUTE_INVALID, f"attributes.{key}: {problem}", retryable=False))]
        values[key] = value
    return [SetAttributes(values)] if values else []
