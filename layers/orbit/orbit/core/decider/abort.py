"""Winding an execution down: withdraw live units, compensate, record the outcome.

An abort starts with StepFailed (fatal), FailRequested, CancelRequested or
WorkflowTimeoutReached. Live units are cancelled (queued ones withdrawn,
running ones told, children cancelled); then the succeeded steps that have a
compensation are compensated one at a time in reverse order of success; then
WorkflowFailed / WorkflowCancelled / WorkflowTimedOut records the outcome.
"""

from __future__ import annotations

from orbit.core.decider.context import Ctx
from orbit.core.decider.units import cancel_unit, fail
from orbit.core.history.effects import NotifyParent
from orbit.core.history.events import (
    CANCELLED,
    CompensationCompleted,
    CompensationStarted,
    TaskError,
    WorkflowCancelled,
    WorkflowFailed,
    WorkflowTimedOut,
)
from orbit.core.history.nesting import shielded
from orbit.core.history.state import COMPENSATING, RUNNING, compensation_key, parse_key


def cleans_up(ctx: Ctx) -> bool:
    """Does the workflow run its own cleanup now? Code workflows (`cleanup_on_abort`) do after a
    cancel or timeout that is not forced: the engine withdraws the live units, records
    CompensationStarted (declared compensations run as usual, one at a time), then lets the
    runtime schedule cleanup work until it sends a final command (see `execute.finish_cleanup`)."""
    a = ctx.state.abort
    return (
        a is not None
        and a.get("kind") in ("cancelled", "timed_out")
        and not a.get("force")
        and bool(getattr(ctx.workflow, "cleanup_on_abort", False))
        and ctx.state.parked is None
    )


def progress_abort(ctx: Ctx) -> None:
    """Advance the wind-down as far as possible without the runtime."""
    s = ctx.state
    if s.abort is None or s.terminal:
        return
    reason = str(s.abort.get("reason") or s.abort["kind"])
    if s.status == RUNNING:
        force = bool(s.abort.get("force")) or not cleans_up(ctx)
        for key in [k for k in s.active if not parse_key(k)[0] and (force or not shielded(k))]:
            cancel_unit(ctx, key, reason)
        if cleans_up(ctx):
            ctx.emit(CompensationStarted(reason, list(reversed(s.compensable))))
            return
        # a parked execution cannot run its runtime, so it cannot compensate: it ends at once
        steps = [] if s.abort.get("force") or s.parked else list(reversed(s.compensable))
        if steps:
            ctx.emit(CompensationStarted(reason, steps))
        else:
            finish(ctx, "none")
        return
    if s.status == COMPENSATING and s.next_compensation() is None and not cleans_up(ctx):
        ctx.emit(CompensationCompleted())
        finish(ctx, s.compensation or "completed")


def compensation_unanswered(ctx: Ctx) -> None:
    """The runtime gave nothing for the current compensation: fail it so the wind-down goes on."""
    step = ctx.state.next_compensation()
    if step is not None and compensation_key(step) not in ctx.state.units:
        fail(
            ctx,
            compensation_key(step),
            TaskError(
                "COMPENSATION_MISSING", f"the runtime has no compensation for step {step!r}", retryable=False
            ),
        )


def finish(ctx: Ctx, compensation: str) -> None:
    s = ctx.state
    kind = s.abort["kind"] if s.abort else "failed"
    if kind == "cancelled":
        ctx.emit(WorkflowCancelled(str(s.abort.get("reason") or "") if s.abort else "", compensation))
    elif kind == "timed_out":
        ctx.emit(WorkflowTimedOut(compensation))
    else:
        raw = s.abort.get("error") if s.abort else None
        error = TaskError.from_dict(raw) if raw else TaskError("FAILED", "the workflow failed", False)
        ctx.emit(WorkflowFailed(error, compensation))
    notify_parent(ctx)


def notify_parent(ctx: Ctx) -> None:
    s = ctx.state
    if not s.parent or not s.terminal:
        return
    error = s.error
    if s.status == "CANCELLED" and error is None:
        error = TaskError(CANCELLED, "child cancelled", retryable=False)
    ctx.effect(
        NotifyParent(
            s.parent.get("execution_id", ""),
            s.parent.get("step", ""),
            s.id,
            s.status,
            s.output if s.status == "COMPLETED" else None,
            None if s.status == "COMPLETED" else error,
            tag=f"r{s.redrive_count}" if s.redrive_count else None,
        )
    )
