"""State transitions of recovery: a redrive continues an ended execution, a fork reuses outputs.

`ExecutionRedriven` turns a FAILED or TIMED_OUT execution back into a RUNNING one: the units it
names leave their terminal status (plain units go back to PENDING with a fresh retry budget,
`for` steps and child units to RUNNING), everything else (succeeded steps and elements, their
outputs, signals, hooks) stays as it was. `ExecutionForked` seeds a new execution with the
succeeded units of another; `ForkCreated` links the original to its fork.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from orbit.core.history import events as E
from orbit.core.history.state import (
    CANCELLED,
    FAILED,
    PENDING,
    RUNNING,
    WORKFLOW_WAKE,
    ExecutionState,
    UnitState,
    parse_key,
)


def _redriven(s: ExecutionState, e: E.ExecutionRedriven, ts: int) -> None:
    if not s.terminal:
        return  # only an ended execution can go on
    s.status, s.finished_at_ms, s.error, s.output, s.abort = RUNNING, None, None, None, None
    s.compensation, s.compensation_order, s.compensation_done, s.compensation_failed = None, [], 0, False
    s.redrive_count = e.redrive_count
    s.deadline_ms = e.deadline_ms
    s.wakeups.clear()
    if e.deadline_ms is not None:
        s.wakeups[WORKFLOW_WAKE] = e.deadline_ms
    children = set(e.children)
    touched: set[str] = set()
    for key in e.steps:
        u = s.units.get(key)
        if u is None or u.status not in (FAILED, CANCELLED):
            continue
        _, step, index = parse_key(key)
        fo = s.fanouts.get(step) if index is not None else None
        if fo is not None:
            if u.status == FAILED:
                fo.failed -= 1
            else:
                fo.cancelled -= 1
            fo.redo.append(index)  # type: ignore[arg-type]
            touched.add(step)
        if key in s.fanouts or (u.child_id is not None and u.child_id in children) or u.kind == "on_signal":
            # a `for` step goes on with its elements; a child unit waits for its child; an on_signal
            # instance goes on with its steps
            u.status = RUNNING
            s.active[key] = None
            if u.child_id is not None:
                s.children[u.child_id] = key
        else:
            u.status, u.attempt_base = PENDING, u.attempt
        u.error, u.finished_at_ms, u.token, u.wake_at_ms = None, None, None, None
    for step in touched:
        s.fanouts[step].redo.sort()


def _forked(s: ExecutionState, e: E.ExecutionForked, ts: int) -> None:
    s.forked_from = {"execution_id": e.from_execution, "step": e.from_step}
    for key, rec in e.units.items():
        if key in s.units or not isinstance(rec, dict):
            continue
        s.units[key] = UnitState(
            status=str(rec.get("status") or "SUCCEEDED"),
            attempt=int(rec.get("attempt") or 1),
            kind=str(rec.get("kind") or ""),
            task=str(rec.get("task") or ""),
            input=rec.get("input"),
            output=rec.get("output"),
            signal=rec.get("signal"),
            retry=rec.get("retry") if isinstance(rec.get("retry"), dict) else None,
            timeout_ms=_ms(rec.get("timeout_ms")),
            queue_timeout_ms=_ms(rec.get("queue_timeout_ms")),
            heartbeat_timeout_ms=_ms(rec.get("heartbeat_timeout_ms")),
            finished_at_ms=ts,
            succeeded_seq=s.last_seq,
        )


def _ms(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _fork_created(s: ExecutionState, e: E.ForkCreated, ts: int) -> None:
    if e.fork_id not in s.forked_to:
        s.forked_to.append(e.fork_id)


RECOVERY_HANDLERS: Mapping[type, Callable[[ExecutionState, Any, int], None]] = MappingProxyType({
    E.ExecutionRedriven: _redriven,
    E.ExecutionForked: _forked,
    E.ForkCreated: _fork_created,
})
