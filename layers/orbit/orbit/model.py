"""Events, state and `apply` (the fold). Everything here is pure.

Events and `TaskError` live in `orbit.events`, the state classes in
`orbit.state`; this module re-exports them and defines `apply`, which is total:
an unexpected combination (an event for a finished unit, an unknown type) is
ignored and never raises, so replaying an older history always works.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from orbit.events import *  # noqa: F403  (re-export: `orbit.model` is the public home)
from orbit.events import (
    EVENT_TYPES,
    CancelRequested,
    ChildStarted,
    CompensationCompleted,
    CompensationFailed,
    CompensationStarted,
    Event,
    ExecutionParked,
    FailRequested,
    HookCreated,
    HookResumed,
    ProgressRecorded,
    Recorded,
    RetryScheduled,
    SignalConsumed,
    SignalReceived,
    StepAttemptFailed,
    StepAttemptUncertain,
    StepCancelled,
    StepDispatched,
    StepFailed,
    StepFanOut,
    StepHeartbeat,
    StepScheduled,
    StepSkipped,
    StepSucceeded,
    TaskError,
    TimerFired,
    TimerStarted,
    WaitStarted,
    WorkflowCancelled,
    WorkflowCompleted,
    WorkflowContinuedAsNew,
    WorkflowCreated,
    WorkflowFailed,
    WorkflowStarted,
    WorkflowTimedOut,
    WorkflowTimeoutReached,
    event_from_dict,
    recorded_from_dict,
)
from orbit.state import *  # noqa: F403
from orbit.state import (
    CANCELLED,
    COMPENSATING,
    COMPLETED,
    DISPATCHED,
    FAILED,
    RETRY_WAIT,
    RUNNING,
    SCHEDULED,
    SKIPPED,
    SUCCEEDED,
    TERMINAL_UNIT,
    TIMED_OUT,
    WAITING,
    WORKFLOW_WAKE,
    ExecutionState,
    FanOut,
    UnitState,
    parse_key,
)

__all__ = ["apply", "fold", "apply_commit", "EVENT_TYPES", "Event", "Recorded", "TaskError",
           "ExecutionState", "UnitState", "FanOut", "event_from_dict", "recorded_from_dict"]


def _unit(s: ExecutionState, key: str) -> UnitState:
    u = s.units.get(key)
    if u is None:
        u = s.units[key] = UnitState()
    return u


def _enter(s: ExecutionState, key: str, u: UnitState, status: str) -> None:
    """Move a unit to a live status, keeping `active` and fan-out counters right."""
    if key not in s.active:
        s.active[key] = None
        _, step, index = parse_key(key)
        fo = s.fanouts.get(step) if index is not None else None
        if fo is not None:
            fo.running += 1
            fo.next_index = max(fo.next_index, index + 1)  # type: ignore[operator]
    u.status = status


def _finish(s: ExecutionState, key: str, u: UnitState, status: str, ts: int) -> None:
    was_active = key in s.active
    s.active.pop(key, None)
    s.wakeups.pop(key, None)
    u.status = status
    u.finished_at_ms = ts
    u.token = None
    u.wake_at_ms = None
    if u.signal is not None and s.waiters.get(u.signal) == key:
        del s.waiters[u.signal]
    _, step, index = parse_key(key)
    fo = s.fanouts.get(step) if index is not None else None
    if fo is not None:
        if was_active:
            fo.running -= 1
        else:  # ended without ever running (cancelled while pending)
            fo.next_index = max(fo.next_index, index + 1)  # type: ignore[operator]
        if status == SUCCEEDED:
            fo.succeeded += 1
        elif status == FAILED:
            fo.failed += 1
        else:
            fo.cancelled += 1


def _wake(s: ExecutionState, key: str, u: UnitState, at: int | None) -> None:
    u.wake_at_ms = at
    if at is None:
        s.wakeups.pop(key, None)
    else:
        s.wakeups[key] = at


def _live(u: UnitState | None) -> bool:
    return u is not None and u.status not in TERMINAL_UNIT


def _created(s: ExecutionState, e: WorkflowCreated, ts: int) -> None:
    s.workflow, s.version, s.definition_hash = e.workflow, e.version, e.definition_hash
    s.build = e.build or e.definition_hash
    s.input, s.parent = e.input, e.parent
    s.created, s.created_at_ms, s.status = True, ts, RUNNING


def _started(s: ExecutionState, e: WorkflowStarted, ts: int) -> None:
    s.started = True
    s.deadline_ms = e.deadline_ms
    if e.deadline_ms is not None:
        s.wakeups[WORKFLOW_WAKE] = e.deadline_ms


def _fan_out(s: ExecutionState, e: StepFanOut, ts: int) -> None:
    u = _unit(s, e.step)
    if u.terminal:
        return
    _enter(s, e.step, u, RUNNING)
    u.input, u.scheduled_at_ms, u.attempt = list(e.items), ts, 1
    s.fanouts[e.step] = FanOut(total=len(e.items))


def _scheduled(s: ExecutionState, e: StepScheduled, ts: int) -> None:
    u = _unit(s, e.step)
    if u.terminal:
        return
    _enter(s, e.step, u, SCHEDULED)
    u.attempt, u.input, u.idempotency_key, u.redelivery = e.attempt, e.input, e.idempotency_key, e.redelivery
    u.kind, u.task, u.queue, u.retry = e.kind, e.task, e.queue, e.retry
    u.timeout_ms, u.queue_timeout_ms = e.timeout_ms, e.queue_timeout_ms
    u.on_exhausted, u.compensable = e.on_exhausted, e.compensable
    u.scheduled_at_ms, u.dispatched_at_ms, u.deadline_ms = ts, None, e.deadline_ms
    u.token = e.token or None
    if e.token:
        u.tokens[e.token] = e.attempt
    u.dispatch_count += 1
    _wake(s, e.step, u, e.deadline_ms)


def _skipped(s: ExecutionState, e: StepSkipped, ts: int) -> None:
    u = _unit(s, e.step)
    if not u.terminal:
        _finish(s, e.step, u, SKIPPED, ts)
        u.output = None


def _dispatched(s: ExecutionState, e: StepDispatched, ts: int) -> None:
    u = s.units.get(e.step)
    if not _live(u):
        return
    assert u is not None
    _enter(s, e.step, u, DISPATCHED)
    u.worker_id, u.worker_session, u.dispatched_at_ms = e.worker_id, e.worker_session, ts
    u.tokens.setdefault(e.token, e.attempt)
    u.deadline_ms = e.deadline_ms
    _wake(s, e.step, u, e.deadline_ms)


def _heartbeat(s: ExecutionState, e: StepHeartbeat, ts: int) -> None:
    u = s.units.get(e.step)
    if _live(u):
        u.heartbeat = e.details  # type: ignore[union-attr]


def _succeeded(s: ExecutionState, e: StepSucceeded, ts: int) -> None:
    u = _unit(s, e.step)
    if u.terminal:
        return
    _finish(s, e.step, u, SUCCEEDED, ts)
    u.attempt, u.output = max(u.attempt, e.attempt), e.output
    u.succeeded_seq = s.last_seq
    if u.compensable:
        s.compensable.append(e.step)
    comp, step, _ = parse_key(e.step)
    if comp:
        s.compensation_done += 1


def _attempt_failed(s: ExecutionState, e: StepAttemptFailed, ts: int) -> None:
    u = s.units.get(e.step)
    if _live(u):
        assert u is not None
        u.status, u.last_error, u.token = "ATTEMPT_FAILED", e.error, None
        _wake(s, e.step, u, None)


def _uncertain(s: ExecutionState, e: StepAttemptUncertain, ts: int) -> None:
    u = s.units.get(e.step)
    if _live(u):
        assert u is not None
        u.status, u.token = "UNCERTAIN", None
        _wake(s, e.step, u, None)


def _retry(s: ExecutionState, e: RetryScheduled, ts: int) -> None:
    u = s.units.get(e.step)
    if _live(u):
        assert u is not None
        u.status, u.attempt = RETRY_WAIT, e.next_attempt
        _wake(s, e.step, u, e.fire_at_ms)


def _failed(s: ExecutionState, e: StepFailed, ts: int) -> None:
    u = _unit(s, e.step)
    if u.terminal:
        return
    _finish(s, e.step, u, FAILED, ts)
    u.error = e.error
    comp, step, _ = parse_key(e.step)
    if comp:
        s.compensation_done += 1
        s.compensation_failed = True
    elif e.fatal and s.abort is None:
        s.wakeups.pop(WORKFLOW_WAKE, None)  # the deadline is spent once winding down
        s.abort = {"kind": "failed", "reason": f"step {e.step!r} failed",
                   "error": e.error.replace(message=f"step {e.step!r} failed: {e.error.message}").to_dict()}


def _cancelled(s: ExecutionState, e: StepCancelled, ts: int) -> None:
    u = _unit(s, e.step)
    if not u.terminal:
        _finish(s, e.step, u, CANCELLED, ts)
        if u.child_id:
            s.children.pop(u.child_id, None)


def _timer_started(s: ExecutionState, e: TimerStarted, ts: int) -> None:
    u = _unit(s, e.step)
    if u.terminal:
        return
    _enter(s, e.step, u, WAITING)
    u.kind, u.scheduled_at_ms, u.attempt = u.kind or "sleep", ts, max(u.attempt, 1)
    _wake(s, e.step, u, e.fire_at_ms)


def _timer_fired(s: ExecutionState, e: TimerFired, ts: int) -> None:
    u = s.units.get(e.step)
    if _live(u):
        assert u is not None
        _finish(s, e.step, u, SUCCEEDED, ts)
        u.output, u.succeeded_seq = {}, s.last_seq


def _wait_started(s: ExecutionState, e: WaitStarted, ts: int) -> None:
    u = _unit(s, e.step)
    if u.terminal:
        return
    _enter(s, e.step, u, WAITING)
    u.kind, u.signal, u.scheduled_at_ms, u.attempt = "wait_for", e.signal, ts, max(u.attempt, 1)
    u.on_exhausted = e.on_exhausted
    s.waiters[e.signal] = e.step
    _wake(s, e.step, u, e.deadline_ms)


def _signal(s: ExecutionState, e: SignalReceived, ts: int) -> None:
    s.signals.setdefault(e.name, []).append({"signal_id": e.signal_id, "payload": e.payload})


def _signal_consumed(s: ExecutionState, e: SignalConsumed, ts: int) -> None:
    buf = s.signals.get(e.name)
    if buf:
        i = next((n for n, b in enumerate(buf) if b["signal_id"] == e.signal_id), 0)
        buf.pop(i)
        if not buf:
            del s.signals[e.name]


def _hook_created(s: ExecutionState, e: HookCreated, ts: int) -> None:
    s.hooks.setdefault(e.name, {"token": e.token, "resumed": False})


def _hook_resumed(s: ExecutionState, e: HookResumed, ts: int) -> None:
    h = s.hooks.get(e.name)
    if h is not None and h["token"] == e.token and not h["resumed"]:
        h["resumed"] = True
        s.signals.setdefault(e.name, []).append({"signal_id": "hook:" + e.token, "payload": e.payload})


def _child_started(s: ExecutionState, e: ChildStarted, ts: int) -> None:
    u = _unit(s, e.step)
    if u.terminal:
        return
    _enter(s, e.step, u, RUNNING)
    u.kind, u.child_id, u.input, u.scheduled_at_ms = "workflow", e.child_id, e.input, ts
    u.task, u.attempt, u.on_exhausted = e.workflow, max(u.attempt, 1), e.on_exhausted
    s.children[e.child_id] = e.step


def _abort(kind: str) -> Callable[[ExecutionState, Any, int], None]:
    def go(s: ExecutionState, e: Any, ts: int) -> None:
        if s.abort is None and not s.terminal:
            s.wakeups.pop(WORKFLOW_WAKE, None)  # the deadline is spent once winding down
            s.abort = {"kind": kind, "reason": getattr(e, "reason", "") or kind,
                       "error": e.error.to_dict() if isinstance(e, FailRequested) else None,
                       "force": bool(getattr(e, "force", False))}
    return go


def _comp_started(s: ExecutionState, e: CompensationStarted, ts: int) -> None:
    s.status, s.compensation_order, s.compensation_done = COMPENSATING, list(e.steps), 0


def _comp_completed(s: ExecutionState, e: CompensationCompleted, ts: int) -> None:
    s.compensation = "failed" if s.compensation_failed else "completed"


def _comp_failed(s: ExecutionState, e: CompensationFailed, ts: int) -> None:
    s.compensation_failed = True


def _end(status: str) -> Callable[[ExecutionState, Any, int], None]:
    def go(s: ExecutionState, e: Any, ts: int) -> None:
        if s.terminal:
            return
        s.status, s.finished_at_ms = status, ts
        s.wakeups.clear()
        if isinstance(e, WorkflowCompleted):
            s.output = e.output
        if isinstance(e, WorkflowFailed):
            s.error = e.error
        if isinstance(e, (WorkflowCancelled, WorkflowTimedOut)):
            code = "CANCELLED" if status == CANCELLED else "WORKFLOW_TIMEOUT"
            default = "cancelled" if status == CANCELLED else "workflow timed out"
            reason = getattr(e, "reason", "") or default
            s.error = TaskError(code, reason, retryable=False)
        if isinstance(e, WorkflowContinuedAsNew):
            s.continued_as, s.output = e.new_execution_id, {"continued_as": e.new_execution_id}
        s.compensation = getattr(e, "compensation", None) or s.compensation
    return go


def _progress(s: ExecutionState, e: ProgressRecorded, ts: int) -> None:
    s.progress = e.data
    s.progress_count += 1


def _parked(s: ExecutionState, e: ExecutionParked, ts: int) -> None:
    s.parked = e.error


_APPLY: dict[type, Callable[[ExecutionState, Any, int], None]] = {
    WorkflowCreated: _created, WorkflowStarted: _started, StepFanOut: _fan_out,
    StepScheduled: _scheduled, StepSkipped: _skipped, StepDispatched: _dispatched,
    StepHeartbeat: _heartbeat, StepSucceeded: _succeeded, StepAttemptFailed: _attempt_failed,
    StepAttemptUncertain: _uncertain, RetryScheduled: _retry, StepFailed: _failed,
    StepCancelled: _cancelled, TimerStarted: _timer_started, TimerFired: _timer_fired,
    WaitStarted: _wait_started, SignalReceived: _signal, SignalConsumed: _signal_consumed,
    HookCreated: _hook_created, HookResumed: _hook_resumed, ChildStarted: _child_started,
    CancelRequested: _abort("cancelled"), WorkflowTimeoutReached: _abort("timed_out"),
    FailRequested: _abort("failed"), CompensationStarted: _comp_started,
    CompensationCompleted: _comp_completed, CompensationFailed: _comp_failed,
    WorkflowCompleted: _end(COMPLETED), WorkflowFailed: _end(FAILED),
    WorkflowCancelled: _end(CANCELLED), WorkflowTimedOut: _end(TIMED_OUT),
    WorkflowContinuedAsNew: _end(COMPLETED), ProgressRecorded: _progress, ExecutionParked: _parked,
}


def apply(state: ExecutionState, recorded: Recorded) -> None:
    """Advance `state` by one recorded event, in place. Total: never raises."""
    state.last_seq = recorded.seq
    state.updated_at_ms = recorded.timestamp_ms
    handler = _APPLY.get(type(recorded.event))
    if handler is None:
        return
    try:
        handler(state, recorded.event, recorded.timestamp_ms)
    except (TypeError, ValueError, KeyError, AttributeError, AssertionError):
        # A malformed field inside a well-typed event (hand-edited history): ignore the
        # event rather than make the execution unreadable.
        return


def fold(execution_id: str, records: Iterable[Recorded]) -> ExecutionState:
    """The state of an execution: the left fold of `apply` over its events."""
    s = ExecutionState(execution_id)
    for r in records:
        apply(s, r)
    return s


def apply_commit(state: ExecutionState, records: Iterable[Recorded], inbound_id: str | None,
                 first_seq: int) -> None:
    """Apply one commit's events and remember which inbound message it handled."""
    for r in records:
        apply(state, r)
    if inbound_id:
        state.inbound[inbound_id] = first_seq
