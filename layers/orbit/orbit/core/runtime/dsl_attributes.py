"""A definition's `attributes:` block, evaluated on every round of the DSL runtime.

Each name's expression reads the usual root (input, steps, execution, hooks). A result of null
(a step that has not run yet) leaves the attribute as it is; anything that is not a string of at
most 256 characters, a number or a boolean fails the execution with ATTRIBUTE_INVALID, naming the
attribute. The engine records only what changed, so re-evaluating costs no write.
"""

from __future__ import annotations

from typing import Any

from orbit.core.history.attributes import ATTRIBUTE_INVALID, value_problem
from orbit.core.history.events import EXPRESSION_ERROR, TaskError
from orbit.core.runtime.commands import Command, Fail, SetAttributes
from orbit.errors import ExpressionError


def attribute_commands(block: dict[str, Any], root: dict[str, Any], now_ms: int) -> list[Command]:
    from orbit.core.definition.expressions import evaluate

    values: dict[str, Any] = {}
    for key, template in block.items():
        try:
            value = evaluate(template, root, now_ms)
        except ExpressionError as e:
            return [Fail(TaskError(EXPRESSION_ERROR, f"attributes.{key}: {e}", retryable=False))]
        if value is None:
            continue
        problem = value_problem(value)
        if problem is not None:
            return [Fail(TaskError(ATTRIBUTE_INVALID, f"attributes.{key}: {problem}", retryable=False))]
        values[key] = value
    return [SetAttributes(values)] if values else []
