"""Updates in the decider (docs/updates.md): record an accepted update, record its completion.

- Accepted (`update` message, validated by the API before it was sent): `UpdateAccepted`, once
  per update id (a second message with a known id records nothing).
- Code workflows: the runtime runs the handler at a deterministic point of the replay and
  returns `CompleteUpdate` (orbit/core/runtime/code/updates.py): recorded as `UpdateCompleted`.
- Definitions: `updates: {NAME: {signal: S, result: "{% expr %}"}}`. The update is delivered as
  signal `S` (id `update:<update_id>`); when a `wait_for: S` step consumes it, the update
  completes with `result` evaluated over the step-input root plus `update` (its input), or
  with the step's output when the definition gives no `result`.
"""

from __future__ import annotations

from typing import Any

from orbit.core.decider.context import Ctx
from orbit.core.history.events import (
    EXPRESSION_ERROR,
    SignalReceived,
    TaskError,
    UpdateAccepted,
    UpdateCompleted,
)
from orbit.core.history.messages import UpdateMessage
from orbit.core.history.storable import value_problem
from orbit.core.runtime.commands import CompleteUpdate

SIGNAL_PREFIX = "update:"


def definition_updates(workflow: Any) -> dict[str, Any] | None:
    """A definition's `updates:` (None for code workflows)."""
    raw = getattr(workflow, "raw", None)
    if not isinstance(raw, dict) or not hasattr(workflow, "steps"):
        return None
    updates = raw.get("updates")
    return updates if isinstance(updates, dict) else {}


def accept(ctx: Ctx, m: UpdateMessage) -> str | None:
    """Record the update; for a definition, the signal it was delivered as (to hand over now)."""
    s = ctx.state
    if m.update_id in s.updates:
        return None  # the same update id again: one effect
    problem = value_problem(m.input, "input")
    if problem is not None:  # the API checks this; a hand-made message must not poison the history
        return None
    ctx.emit(UpdateAccepted(m.update_id, m.name, m.input))
    declared = definition_updates(ctx.workflow)
    if declared is None:
        return None  # a code workflow: its runtime runs the handler in this decision's fixpoint
    spec = declared.get(m.name) if isinstance(declared.get(m.name), dict) else None
    if spec is None or not isinstance(spec.get("signal"), str):
        ctx.emit(UpdateCompleted(m.update_id, 0, None, TaskError(
            "UPDATE_UNKNOWN", f"workflow {s.workflow!r} v{s.version} has no update {m.name!r}", False)))
        return None
    ctx.emit(SignalReceived(spec["signal"], m.input, SIGNAL_PREFIX + m.update_id))
    return str(spec["signal"])


def consumed(ctx: Ctx, unit: str, signal_id: str) -> None:
    """A `wait_for` step consumed a buffered signal: complete the update it carried, if any."""
    if not signal_id.startswith(SIGNAL_PREFIX):
        return
    s = ctx.state
    uid = signal_id[len(SIGNAL_PREFIX):]
    rec = s.updates.get(uid)
    if rec is None or rec.get("status") != "ACCEPTED":
        return
    spec = (definition_updates(ctx.workflow) or {}).get(rec.get("name")) or {}  # type: ignore[arg-type]
    u = s.units.get(unit)
    result, error = (u.output if u is not None else None), None
    if isinstance(spec, dict) and spec.get("result") is not None:
        result, error = _evaluate(ctx, spec["result"], rec.get("input"), str(rec.get("name")))
    problem = value_problem(result, f"updates.{rec.get('name')}.result")
    if problem is not None:
        result, error = None, TaskError("VALUE_NOT_STORABLE", str(problem), retryable=False)
    ctx.emit(UpdateCompleted(uid, 0, result, error, unit))


def _evaluate(ctx: Ctx, template: Any, input: Any, name: str) -> tuple[Any, TaskError | None]:
    from orbit.core.definition.expressions import evaluate
    from orbit.core.runtime.dsl.interpreter import _Run
    from orbit.errors import OrbitError

    try:
        root = _Run(ctx.workflow, ctx.state, ctx.now, keys=ctx.keys, meter=ctx.meter).root(update=input)
        return evaluate(template, root, ctx.now, ctx.meter), None
    except OrbitError as e:
        return None, TaskError(EXPRESSION_ERROR, f"updates.{name}.result: {e}", retryable=False)


def complete(ctx: Ctx, c: CompleteUpdate) -> None:
    rec = ctx.state.updates.get(c.update_id)
    if rec is None or rec.get("status") != "ACCEPTED":
        return  # completed already (a command repeated by a later round)
    result, error = c.result, c.error
    problem = value_problem(result, "update result")
    if problem is not None:
        result, error = None, TaskError("VALUE_NOT_STORABLE", str(problem), retryable=False)
    ctx.emit(UpdateCompleted(c.update_id, c.position, result, error))
