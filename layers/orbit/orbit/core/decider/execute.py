"""Turning a runtime's commands into events and effects."""

from __future__ import annotations

from orbit.core.decider import updates
from orbit.core.decider.abort import cleans_up, finish, notify_parent
from orbit.core.decider.context import Ctx
from orbit.core.decider.parking import park, switch_build
from orbit.core.decider.signals import deliver
from orbit.core.decider.units import cancel_unit, fail, schedule, succeed
from orbit.core.history.attributes import ATTRIBUTE_INVALID, attributes_problem, changed
from orbit.core.history.effects import ContinueExecution, RegisterHook, StartChild
from orbit.core.history.events import (
    AttributesSet,
    CancelRequested,
    ChildStarted,
    CompensationCompleted,
    CompensationFailed,
    FailRequested,
    HandlerStarted,
    HookCreated,
    HookDisposed,
    PatchMarked,
    ProgressRecorded,
    StepFanOut,
    StepSkipped,
    TaskError,
    TimerFired,
    TimerStarted,
    WaitStarted,
    WorkflowCompleted,
    WorkflowContinuedAsNew,
    WorkflowTimeoutReached,
)
from orbit.core.history.hook_tokens import DIGEST_PREFIX, derive, key_of, sha256_hex
from orbit.core.history.state import PENDING, buffered_signals, parse_key
from orbit.core.runtime.commands import (
    CONTINUE_WORKFLOW,
    Cancel,
    CancelUnit,
    Command,
    Complete,
    CompleteUpdate,
    ContinueAsNew,
    CreateHook,
    DisposeHook,
    Fail,
    FailStep,
    FanOut,
    LinkChild,
    MarkPatch,
    Park,
    RecordProgress,
    RecordResult,
    ScheduleStep,
    SetAttributes,
    SkipStep,
    StartHandler,
    SwitchBuild,
    Timeout,
    WaitForSignal,
    WaitUntil,
    flatten,
    storable,
)

CONTINUE_AS_NEW_LOOP = "CONTINUE_AS_NEW_LOOP"
MAX_IDLE_HOPS = 10  # runs in a row that continue as new without a durable call


def _fresh(ctx: Ctx, unit: str) -> bool:
    u = ctx.state.units.get(unit)
    return u is None or u.status == PENDING


def _allowed(ctx: Ctx, unit: str) -> bool:
    """While winding down only the compensation units (or a code workflow's cleanup) may start."""
    return ctx.state.abort is None or parse_key(unit)[0] or cleans_up(ctx)


def execute(ctx: Ctx, commands: list[Command]) -> None:
    for c in flatten(commands):
        if ctx.state.terminal:
            return
        _one(ctx, storable(c))


def _one(ctx: Ctx, c: Command) -> None:  # one branch per command, flat on purpose
    s = ctx.state
    cleanup = cleans_up(ctx)
    aborting = s.abort is not None and not cleanup
    if isinstance(c, ScheduleStep):
        if _allowed(ctx, c.step.unit):
            schedule(ctx, c.step)
    elif isinstance(c, RecordResult):
        if _allowed(ctx, c.unit):
            succeed(ctx, c.unit, c.output)
    elif isinstance(c, FailStep):
        if _allowed(ctx, c.unit):
            fail(ctx, c.unit, c.error, c.continue_workflow)
    elif isinstance(c, SkipStep):
        if _fresh(ctx, c.unit) and not aborting:
            ctx.emit(StepSkipped(c.unit, c.reason))
    elif isinstance(c, FanOut):
        if _fresh(ctx, c.step) and not aborting:
            ctx.emit(StepFanOut(c.step, list(c.items)))
    elif isinstance(c, WaitUntil):
        if _fresh(ctx, c.unit) and not aborting:
            ctx.emit(TimerStarted(c.unit, c.fire_at_ms))
            if c.fire_at_ms <= ctx.now:
                ctx.emit(TimerFired(c.unit))
    elif isinstance(c, WaitForSignal):
        if _fresh(ctx, c.unit) and not aborting:
            deadline = ctx.now + c.timeout_ms if c.timeout_ms is not None else None
            ctx.emit(WaitStarted(c.unit, c.name, deadline, c.on_exhausted))
            deliver(ctx, c.name)
    elif isinstance(c, LinkChild):
        if _fresh(ctx, c.unit) and _allowed(ctx, c.unit):
            ctx.emit(ChildStarted(c.unit, c.child_id, c.workflow, c.version, c.input, c.on_exhausted))
            ctx.effect(StartChild(s.id, c.unit, c.child_id, c.workflow, c.version, c.input))
    elif isinstance(c, CreateHook):
        if c.hook_id not in s.hooks:
            create_hook(ctx, c.hook_id, c.token, c.metadata)
    elif isinstance(c, DisposeHook):
        if c.hook_id in s.hooks and not s.hooks[c.hook_id].get("disposed"):
            ctx.emit(HookDisposed(c.hook_id))
    elif isinstance(c, RecordProgress):
        if c.data != s.progress:
            ctx.emit(ProgressRecorded(c.data))
    elif isinstance(c, Park):
        park(ctx, c.error)
    elif isinstance(c, SwitchBuild):
        switch_build(ctx, c)
    elif isinstance(c, MarkPatch):
        if c.change_id not in s.patches:
            ctx.emit(PatchMarked(c.change_id, c.position))
    elif isinstance(c, SetAttributes):
        set_attributes(ctx, c.values, aborting)
    elif isinstance(c, CompleteUpdate):
        updates.complete(ctx, c)
    elif isinstance(c, StartHandler):
        if _fresh(ctx, c.unit) and not aborting:
            ctx.emit(HandlerStarted(c.unit, c.signal, c.signal_seq, c.signal_id, c.payload))
    elif isinstance(c, CancelUnit):
        cancel_unit(ctx, c.unit, c.reason)
    elif aborting:
        return  # final commands wait for the wind-down to finish
    elif cleanup:
        finish_cleanup(ctx, c)
    elif isinstance(c, Complete):
        ctx.emit(WorkflowCompleted(c.output))
        notify_parent(ctx)
    elif isinstance(c, Fail):
        ctx.emit(FailRequested(c.error))
    elif isinstance(c, Cancel):
        ctx.emit(CancelRequested(c.reason or "cancelled by the workflow"))
    elif isinstance(c, Timeout):
        deadline = c.deadline_ms if c.deadline_ms is not None else s.deadline_ms
        ctx.emit(WorkflowTimeoutReached(deadline if deadline is not None else ctx.now, c.reason or None))
    elif isinstance(c, ContinueAsNew):
        continue_as_new(ctx, c)


def continue_as_new(ctx: Ctx, c: ContinueAsNew) -> None:
    """End this run and start its successor, handing over the signals it did not consume.

    A run that made no durable call is an idle hop; a chain of more than MAX_IDLE_HOPS of
    them in a row would spin forever on the decision queue, so the run fails instead.
    """
    s = ctx.state
    hops = s.idle_hops + 1 if not s.units else 0
    if hops > MAX_IDLE_HOPS:
        ctx.emit(FailRequested(TaskError(
            CONTINUE_AS_NEW_LOOP,
            f"continue_as_new: {hops} runs in a row continued as new without a durable call "
            f"(step, sleep, wait_for or child); the limit is {MAX_IDLE_HOPS}. Make a durable call "
            "before continuing, or end the workflow", retryable=False,
            details={"idle_hops": hops, "limit": MAX_IDLE_HOPS})))
        return
    new_id = next_execution_id(s.id)
    signals = buffered_signals(s) or None
    ctx.emit(WorkflowContinuedAsNew(c.input, new_id, signals))
    # The parent (if any) hears from the last execution of the chain, not from this one.
    ctx.effect(ContinueExecution(s.id, new_id, s.workflow, s.version, c.input, s.parent, signals,
                                 hops or None))


def finish_cleanup(ctx: Ctx, c: Command) -> None:
    """A code workflow ended its cleanup: the execution ends as the abort said (CANCELLED or
    TIMED_OUT); a failure during cleanup is recorded as a failed compensation. Declared
    compensations finish first (the runtime repeats its final command on every round)."""
    if ctx.state.next_compensation() is not None:
        return
    if isinstance(c, Fail):
        ctx.emit(CompensationFailed("cleanup", c.error))
    elif not isinstance(c, (Complete, Cancel, Timeout, ContinueAsNew)):
        return
    ctx.emit(CompensationCompleted())
    finish(ctx, ctx.state.compensation or "completed")


def set_attributes(ctx: Ctx, values: dict[str, object], aborting: bool) -> None:
    """Record the attributes that changed; values the runtime let through that break the bounds
    fail the execution with ATTRIBUTE_INVALID (ignored while it winds down)."""
    problem = attributes_problem(values, ctx.state.attributes)
    if problem is not None:
        if not aborting:
            ctx.emit(FailRequested(TaskError(ATTRIBUTE_INVALID, problem, retryable=False)))
        return
    new = changed(values, ctx.state.attributes)
    if new:
        ctx.emit(AttributesSet(new))


def create_hook(ctx: Ctx, name: str, token: str = "", metadata: object = None) -> None:
    """With a stack key the token is derived and only its hash is recorded and indexed
    (orbit.core.history.hook_tokens); without one, a random token is recorded as it is."""
    key = None if token else key_of(ctx.ids)
    if key is not None:
        digest = sha256_hex(derive(key, ctx.state.id, name))
        ctx.emit(HookCreated(name, token_sha256=digest, metadata=metadata))
        ctx.effect(RegisterHook(DIGEST_PREFIX + digest, ctx.state.id, name))
        return
    token = token or ctx.token()
    ctx.emit(HookCreated(name, token, metadata=metadata))
    ctx.effect(RegisterHook(token, ctx.state.id, name))


def next_execution_id(execution_id: str) -> str:
    """`id` -> `id~1` -> `id~2`: deterministic successor ids for continue-as-new."""
    base, sep, n = execution_id.rpartition("~")
    if sep and n.isdigit():
        return f"{base}~{int(n) + 1}"
    return f"{execution_id}~1"


__all__ = ("execute", "create_hook", "next_execution_id", "CONTINUE_WORKFLOW")
