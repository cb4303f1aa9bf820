"""Flow control given per call (docs/flow-control.md, "Per call"): a step's `key` and `priority`
(`ctx.step(..., key=, priority=)`, a definition step's `flow: {key, priority}`) and a start's
`priority` (`POST /executions`, `Client.start(priority=)`, `orbit start --priority`).

Each value is hostile until checked: a priority is a whole number 1..5, a key a string of 1..128
printable characters. A bad one is refused with one line naming the call and the field.
"""

from __future__ import annotations

from typing import Any

from orbit.core.flow.spec import PRIORITIES

MAX_CALL_KEY = 128


def _shown(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def priority_problem(v: Any) -> str | None:
    """Why `v` is not a priority (None: it is one, or it is None)."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v not in PRIORITIES:
        return f"must be a whole number 1 (highest) .. 5, not {_shown(v)}"
    return None


def key_problem(v: Any) -> str | None:
    """Why `v` is not a call's flow key (None: it is one, or it is None)."""
    if v is None:
        return None
    if not isinstance(v, str):
        return f"must be a string of 1..{MAX_CALL_KEY} characters, not {type(v).__name__} {_shown(v)}"
    if not v or len(v) > MAX_CALL_KEY:
        return f"must be a string of 1..{MAX_CALL_KEY} characters, not one of {len(v)}"
    if not v.isprintable():
        return f"must be printable characters only, not {_shown(v)}"
    return None


def check_call(what: str, key: Any, priority: Any) -> None:
    """Raise TypeError naming `what` (e.g. "step 'partner.call'") when `key` or `priority` is bad."""
    for name, problem in (("key", key_problem(key)), ("priority", priority_problem(priority))):
        if problem:
            raise TypeError(f"{what}: {name} {problem}")


STEP_FLOW_KEYS = ("key", "priority")


def check_step_flow(body: Any, path: str, out: Any) -> None:
    """A definition step's `flow: {key, priority}` (task steps): each a constant or a `{% %}`
    template over the step's context; one problem line per bad field (`out.add(path, message)`)."""
    from orbit.core.definition.expressions import is_expression, parse_expression
    from orbit.errors import ExpressionError

    if not isinstance(body, dict) or not body:
        out.add(path, "must be a mapping {key, priority}: the step's key on its task's limits, "
                      "its priority 1..5")
        return
    for k in body:
        if k not in STEP_FLOW_KEYS:
            out.add(f"{path}.{k}", f"unknown key (allowed: {', '.join(STEP_FLOW_KEYS)})")
    for k, check in (("key", key_problem), ("priority", priority_problem)):
        v = body.get(k)
        if isinstance(v, str) and is_expression(v):
            try:
                parse_expression(v)
            except ExpressionError as e:
                out.add(f"{path}.{k}", f"invalid expression: {e}"[:300])
            continue
        problem = check(v)
        if problem:
            out.add(f"{path}.{k}", problem)


def step_flow_values(flow: Any, evaluate: Any) -> tuple[str | None, int | None]:
    """(key, priority) of a definition step's `flow:` for this run: `evaluate(template)` gives a
    template's value. A value that is not a key or a priority raises ValueError naming the field."""
    if not isinstance(flow, dict):
        return None, None
    key, priority = evaluate(flow["key"]) if "key" in flow else None, None
    if "priority" in flow:
        priority = evaluate(flow["priority"])
    if isinstance(key, (int, float)) and not isinstance(key, bool):
        key = str(key)
    for name, problem in (("key", key_problem(key)), ("priority", priority_problem(priority))):
        if problem:
            raise ValueError(f"flow.{name} {problem}")
    return (None if key is None else str(key)), (None if priority is None else int(priority))
