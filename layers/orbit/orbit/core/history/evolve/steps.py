"""The per-event transitions of steps: scheduling, dispatch, heartbeats, attempts, retries and
the end of a step (`orbit.core.history.evolve.workflow` assembles them with the others into HANDLERS).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from orbit.core.history import events as E
from orbit.core.history.evolve.base import _enter, _finish, _live, _unit, _wake
from orbit.core.history.state import (
    CANCELLED,
    DISPATCHED,
    FAILED,
    RETRY_WAIT,
    RUNNING,
    SCHEDULED,
    SKIPPED,
    SUCCEEDED,
    WORKFLOW_WAKE,
    ExecutionState,
    FanOut,
    UnitState,
    parse_key,
)


def _fan_out(s: ExecutionState, e: E.StepFanOut, ts: int) -> None:
    u = _unit(s, e.step)
    if u.terminal:
        return
    _enter(s, e.step, u, RUNNING)
    u.input, u.scheduled_at_ms, u.attempt = list(e.items), ts, 1
    s.fanouts[e.step] = FanOut(total=len(e.items))


def _scheduled(s: ExecutionState, e: E.StepScheduled, ts: int) -> None:
    u = _unit(s, e.step)
    if u.terminal:
        return
    _enter(s, e.step, u, SCHEDULED)
    u.attempt, u.input, u.idempotency_key, u.redelivery = e.attempt, e.input, e.idempotency_key, e.redelivery
    u.kind, u.task, u.queue, u.retry = e.kind, e.task, e.queue, e.retry
    u.timeout_ms, u.queue_timeout_ms = e.timeout_ms, e.queue_timeout_ms
    u.heartbeat_timeout_ms, u.inline = e.heartbeat_timeout_ms, e.inline
    u.on_missing_worker = e.on_missing_worker
    u.flow_key, u.priority = e.flow_key, e.priority
    u.on_exhausted, u.compensable = e.on_exhausted, e.compensable
    u.scheduled_at_ms, u.dispatched_at_ms, u.deadline_ms = ts, None, e.deadline_ms
    u.token = e.token or None
    if e.token:
        u.tokens[e.token] = e.attempt
    u.dispatch_count += 1
    _wake(s, e.step, u, e.deadline_ms)


def _skipped(s: ExecutionState, e: E.StepSkipped, ts: int) -> None:
    u = _unit(s, e.step)
    if not u.terminal:
        _finish(s, e.step, u, SKIPPED, ts)
        u.output = None


def _dispatched(s: ExecutionState, e: E.StepDispatched, ts: int) -> None:
    u = s.units.get(e.step)
    if not _live(u):
        return
    assert u is not None
    _enter(s, e.step, u, DISPATCHED)
    u.worker_id, u.worker_session, u.dispatched_at_ms = e.worker_id, e.worker_session, ts
    u.tokens.setdefault(e.token, e.attempt)
    u.deadline_ms = e.deadline_ms
    _wake(s, e.step, u, _attempt_wake(u, ts))


def _heartbeat(s: ExecutionState, e: E.StepHeartbeat, ts: int) -> None:
    u = s.units.get(e.step)
    if _live(u):
        assert u is not None
        u.heartbeat = e.details
        if u.status == DISPATCHED and u.heartbeat_timeout_ms is not None:
            _wake(s, e.step, u, _attempt_wake(u, ts))


def _attempt_wake(u: UnitState, ts: int) -> int | None:
    """A started attempt wakes at its deadline (`timeout`) or, with a heartbeat timeout, at the
    last sign of life (`started`, a heartbeat: time `ts`) + heartbeat_timeout, whichever is first.
    `deadline_ms` stays the attempt's own deadline, so the wake-up can tell the two apart."""
    if u.heartbeat_timeout_ms is None:
        return u.deadline_ms
    beat_due = ts + u.heartbeat_timeout_ms
    return beat_due if u.deadline_ms is None else min(u.deadline_ms, beat_due)


def _succeeded(s: ExecutionState, e: E.StepSucceeded, ts: int) -> None:
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


def _attempt_failed(s: ExecutionState, e: E.StepAttemptFailed, ts: int) -> None:
    u = s.units.get(e.step)
    if _live(u):
        assert u is not None
        u.status, u.last_error, u.token = "ATTEMPT_FAILED", e.error, None
        _wake(s, e.step, u, None)


def _uncertain(s: ExecutionState, e: E.StepAttemptUncertain, ts: int) -> None:
    u = s.units.get(e.step)
    if _live(u):
        assert u is not None
        u.status, u.token = "UNCERTAIN", None
        _wake(s, e.step, u, None)


def _retry(s: ExecutionState, e: E.RetryScheduled, ts: int) -> None:
    u = s.units.get(e.step)
    if _live(u):
        assert u is not None
        u.status, u.attempt = RETRY_WAIT, e.next_attempt
        _wake(s, e.step, u, e.fire_at_ms)


def _failed(s: ExecutionState, e: E.StepFailed, ts: int) -> None:
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
        s.abort = {
            "kind": "failed",
            "reason": f"step {e.step!r} failed",
            "error": e.error.replace(message=f"step {e.step!r} failed: {e.error.message}").to_dict(),
        }


def _cancelled(s: ExecutionState, e: E.StepCancelled, ts: int) -> None:
    u = _unit(s, e.step)
    if not u.terminal:
        _finish(s, e.step, u, CANCELLED, ts)
        if u.child_id:
            s.children.pop(u.child_id, None)


STEP_HANDLERS: Mapping[type, Callable[[ExecutionState, Any, int], None]] = MappingProxyType({
    E.StepFanOut: _fan_out,
    E.StepScheduled: _scheduled,
    E.StepSkipped: _skipped,
    E.StepDispatched: _dispatched,
    E.StepHeartbeat: _heartbeat,
    E.StepSucceeded: _succeeded,
    E.StepAttemptFailed: _attempt_failed,
    E.StepAttemptUncertain: _uncertain,
    E.RetryScheduled: _retry,
    E.StepFailed: _failed,
    E.StepCancelled: _cancelled,
})
