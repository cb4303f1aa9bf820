"""The per-event state transitions behind `orbit.core.history.model.apply`
(one small function per event type; step transitions in evolve/steps.py, the helpers they share in
evolve/base.py, recovery, updates and event handlers in evolve_recovery/_updates/_handlers.py).

Each handler mutates the state for one event and keeps the aggregates right
(`active`, `wakeups`, `fanouts`, signals, hooks, children). A handler never
raises on an odd combination: it ignores events for finished units.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from orbit.core.history import events as E
from orbit.core.history.evolve.base import _enter, _finish, _live, _unit, _wake
from orbit.core.history.evolve.steps import STEP_HANDLERS
from orbit.core.history.state import (
    CANCELLED,
    COMPENSATING,
    COMPLETED,
    FAILED,
    RUNNING,
    SUCCEEDED,
    TIMED_OUT,
    UNPARK_WAKE,
    WAITING,
    WORKFLOW_WAKE,
    ExecutionState,
)


def _created(s: ExecutionState, e: E.WorkflowCreated, ts: int) -> None:
    s.workflow, s.version, s.definition_hash = e.workflow, e.version, e.definition_hash
    s.build = e.build or e.definition_hash
    s.input, s.parent = e.input, e.parent
    s.created, s.created_at_ms, s.status = True, ts, RUNNING
    s.continued_from, s.idle_hops = e.continued_from, e.idle_hops or 0
    # Only a start recorded first (not after a tombstone, whose commit carries no expiry) says how
    # every item was written; a start without the field says nothing (older histories).
    recorded = type(e.provisional_expiry_s) is int and s.last_seq == 1
    s.provisional_expiry_s = e.provisional_expiry_s if recorded else None
    s.timer_free = recorded and not s.wakeups


def _started(s: ExecutionState, e: E.WorkflowStarted, ts: int) -> None:
    s.started = True
    s.deadline_ms = e.deadline_ms
    if e.deadline_ms is not None:
        s.wakeups[WORKFLOW_WAKE] = e.deadline_ms


def _timer_started(s: ExecutionState, e: E.TimerStarted, ts: int) -> None:
    u = _unit(s, e.step)
    if u.terminal:
        return
    _enter(s, e.step, u, WAITING)
    u.kind, u.scheduled_at_ms, u.attempt = u.kind or "sleep", ts, max(u.attempt, 1)
    u.fire_at_ms = e.fire_at_ms
    _wake(s, e.step, u, e.fire_at_ms)


def _timer_fired(s: ExecutionState, e: E.TimerFired, ts: int) -> None:
    u = s.units.get(e.step)
    if _live(u):
        assert u is not None
        _finish(s, e.step, u, SUCCEEDED, ts)
        u.output, u.succeeded_seq = {}, s.last_seq


def _wait_started(s: ExecutionState, e: E.WaitStarted, ts: int) -> None:
    u = _unit(s, e.step)
    if u.terminal:
        return
    _enter(s, e.step, u, WAITING)
    u.kind, u.signal, u.scheduled_at_ms, u.attempt = "wait_for", e.signal, ts, max(u.attempt, 1)
    u.on_exhausted = e.on_exhausted
    s.waiters[e.signal] = e.step
    _wake(s, e.step, u, e.deadline_ms)


def _signal(s: ExecutionState, e: E.SignalReceived, ts: int) -> None:
    # `seq` keeps the arrival order across names, for the hand-over at continue-as-new.
    s.signals.setdefault(e.name, []).append({"signal_id": e.signal_id, "payload": e.payload,
                                             "seq": s.last_seq})


def _signal_consumed(s: ExecutionState, e: E.SignalConsumed, ts: int) -> None:
    buf = s.signals.get(e.name)
    if buf:
        i = next((n for n, b in enumerate(buf) if b["signal_id"] == e.signal_id), 0)
        buf.pop(i)
        if not buf:
            del s.signals[e.name]


def _hook_created(s: ExecutionState, e: E.HookCreated, ts: int) -> None:
    # older histories record the token; newer ones only its hash (orbit.core.history.hook_tokens)
    hook = {"token": e.token} if e.token else {"token_sha256": e.token_sha256}
    h = s.hooks.setdefault(e.name, {**hook, "resumed": False})
    if e.metadata is not None:
        h.setdefault("metadata", e.metadata)


def _hook_disposed(s: ExecutionState, e: E.HookDisposed, ts: int) -> None:
    h = s.hooks.get(e.name)
    if h is not None:
        h["disposed"] = True


def _hook_resumed(s: ExecutionState, e: E.HookResumed, ts: int) -> None:
    h = s.hooks.get(e.name)
    if h is None or h["resumed"]:
        return
    ours = h.get("token") == e.token if e.token else h.get("token_sha256") == e.token_sha256
    if ours:
        h["resumed"] = True
        sid = "hook:" + (e.token or f"sha256:{e.token_sha256}")
        s.signals.setdefault(e.name, []).append({"signal_id": sid, "payload": e.payload, "seq": s.last_seq})


def _child_started(s: ExecutionState, e: E.ChildStarted, ts: int) -> None:
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
            s.abort = {
                "kind": kind,
                "reason": getattr(e, "reason", "") or kind,
                "error": e.error.to_dict() if isinstance(e, E.FailRequested) else None,
                "force": bool(getattr(e, "force", False)),
            }

    return go


_timed_out = _abort("timed_out")


def _timeout_reached(s: ExecutionState, e: E.WorkflowTimeoutReached, ts: int) -> None:
    if e.deadline_ms is not None and s.abort is None and not s.terminal:
        s.deadline_ms = e.deadline_ms  # the deadline that passed (a code workflow's Timeout may name its own)
    _timed_out(s, e, ts)


def _comp_started(s: ExecutionState, e: E.CompensationStarted, ts: int) -> None:
    s.status, s.compensation_order, s.compensation_done = COMPENSATING, list(e.steps), 0


def _comp_completed(s: ExecutionState, e: E.CompensationCompleted, ts: int) -> None:
    s.compensation = "failed" if s.compensation_failed else "completed"


def _comp_failed(s: ExecutionState, e: E.CompensationFailed, ts: int) -> None:
    s.compensation_failed = True


def _end(status: str) -> Callable[[ExecutionState, Any, int], None]:
    def go(s: ExecutionState, e: Any, ts: int) -> None:
        if s.terminal:
            return
        s.status, s.finished_at_ms = status, ts
        s.wakeups.clear()
        if isinstance(e, E.WorkflowCompleted):
            s.output = e.output
        if isinstance(e, E.WorkflowFailed):
            s.error = e.error
        if isinstance(e, (E.WorkflowCancelled, E.WorkflowTimedOut)):
            code = "CANCELLED" if status == CANCELLED else "WORKFLOW_TIMEOUT"
            default = "cancelled" if status == CANCELLED else "workflow timed out"
            reason = getattr(e, "reason", "") or default
            s.error = E.TaskError(code, reason, retryable=False)
        if isinstance(e, E.WorkflowContinuedAsNew):
            s.continued_as, s.output = e.new_execution_id, {"continued_as": e.new_execution_id}
        s.compensation = getattr(e, "compensation", None) or s.compensation

    return go


def _progress(s: ExecutionState, e: E.ProgressRecorded, ts: int) -> None:
    s.progress = e.data
    s.progress_count += 1


def _parked(s: ExecutionState, e: E.ExecutionParked, ts: int) -> None:
    if s.parked is None:
        s.parked_since_ms = ts
    s.parked, s.parked_at_ms = e.error, ts
    if e.retry_at_ms is not None:
        s.wakeups[UNPARK_WAKE] = e.retry_at_ms
    else:
        s.wakeups.pop(UNPARK_WAKE, None)


def _unparked(s: ExecutionState, e: E.ExecutionUnparked, ts: int) -> None:
    s.parked, s.parked_at_ms, s.parked_since_ms = None, None, None
    s.wakeups.pop(UNPARK_WAKE, None)
    if e.build:
        s.build = e.build


def _paused(s: ExecutionState, e: E.ExecutionPaused, ts: int) -> None:
    s.paused_at_ms, s.paused_reason = ts, e.reason


def _unpaused(s: ExecutionState, e: E.ExecutionUnpaused, ts: int) -> None:
    s.paused_at_ms, s.paused_reason = None, ""


def _build_switched(s: ExecutionState, e: E.BuildSwitched, ts: int) -> None:
    s.build = e.to_build


def _patch_marked(s: ExecutionState, e: E.PatchMarked, ts: int) -> None:
    s.patches.setdefault(e.change_id, e.position)


# built here, frozen into HANDLERS at the end (the transitions of other modules join it)
_handlers: dict[type, Callable[[ExecutionState, Any, int], None]] = {
    E.WorkflowCreated: _created,
    E.WorkflowStarted: _started,
    **STEP_HANDLERS,
    E.TimerStarted: _timer_started,
    E.TimerFired: _timer_fired,
    E.WaitStarted: _wait_started,
    E.SignalReceived: _signal,
    E.SignalConsumed: _signal_consumed,
    E.HookCreated: _hook_created,
    E.HookResumed: _hook_resumed,
    E.HookDisposed: _hook_disposed,
    E.ChildStarted: _child_started,
    E.CancelRequested: _abort("cancelled"),
    E.WorkflowTimeoutReached: _timeout_reached,
    E.FailRequested: _abort("failed"),
    E.CompensationStarted: _comp_started,
    E.CompensationCompleted: _comp_completed,
    E.CompensationFailed: _comp_failed,
    E.WorkflowCompleted: _end(COMPLETED),
    E.WorkflowFailed: _end(FAILED),
    E.WorkflowCancelled: _end(CANCELLED),
    E.WorkflowTimedOut: _end(TIMED_OUT),
    E.WorkflowContinuedAsNew: _end(COMPLETED),
    E.ProgressRecorded: _progress,
    E.ExecutionParked: _parked,
    E.ExecutionUnparked: _unparked,
    E.BuildSwitched: _build_switched,
    E.ExecutionPaused: _paused,
    E.ExecutionUnpaused: _unpaused,
    E.PatchMarked: _patch_marked,
}

from orbit.core.history.evolve.recovery import RECOVERY_HANDLERS  # noqa: E402

_handlers.update(RECOVERY_HANDLERS)


def _attributes_set(s: ExecutionState, e: E.AttributesSet, ts: int) -> None:
    s.attributes.update(e.values)


_handlers[E.AttributesSet] = _attributes_set

from orbit.core.history.evolve.updates import UPDATE_HANDLERS  # noqa: E402

_handlers.update(UPDATE_HANDLERS)

from orbit.core.history.evolve.handlers import HANDLER_HANDLERS  # noqa: E402

_handlers.update(HANDLER_HANDLERS)

from orbit.core.history.evolve.durable import DURABLE_HANDLERS  # noqa: E402

_handlers.update(DURABLE_HANDLERS)

HANDLERS: Mapping[type, Callable[[ExecutionState, Any, int], None]] = MappingProxyType(_handlers)
del _handlers
