"""Helpers every per-event transition uses (`orbit.core.history.evolve.workflow`, `evolve_steps`, ...):
a unit's lookup, its entry into and exit from a live status (keeping `active`, the wakeups and the
fan-out counters right), and its wake-up time.
"""

from __future__ import annotations

from orbit.core.history.state import (
    COMPENSATING,
    FAILED,
    SUCCEEDED,
    TERMINAL_UNIT,
    ExecutionState,
    UnitState,
    parse_key,
)


def _unit(s: ExecutionState, key: str) -> UnitState:
    u = s.units.get(key)
    if u is None:
        u = s.units[key] = UnitState()
        if s.status == COMPENSATING:
            s.ran_compensation = True  # a compensation or cleanup unit: a redrive would repeat undone work
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
            if index in fo.redo:
                fo.redo.remove(index)
    u.status = status


def _finish(s: ExecutionState, key: str, u: UnitState, status: str, ts: int) -> None:
    was_active = key in s.active
    if was_active:
        s.active.pop(key)
        s.left.append(key)
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
