"""Events, state and `apply` (the fold). Everything here is pure.

Events and `TaskError` live in `orbit.core.history.events`, the state classes in
`orbit.core.history.state`; this module re-exports them and defines `apply`, which is total:
an unexpected combination (an event for a finished unit, an unknown type) is
ignored and never raises, so replaying an older history always works.
"""

from __future__ import annotations

from collections.abc import Iterable

from orbit.core.history.events import *  # noqa: F403  (re-export: `orbit.core.history.model` is the public home)
from orbit.core.history.events import (
    EVENT_TYPES,
    Event,
    Recorded,
    SignalReceived,
    TaskError,
    event_from_dict,
    recorded_from_dict,
)
from orbit.core.history.evolve.workflow import HANDLERS
from orbit.core.history.state import *  # noqa: F403
from orbit.core.history.state import (
    ExecutionState,
    FanOut,
    UnitState,
    remember_inbound,
)

__all__ = (
    "apply",
    "fold",
    "apply_commit",
    "signal_ids",
    "EVENT_TYPES",
    "Event",
    "Recorded",
    "TaskError",
    "ExecutionState",
    "UnitState",
    "FanOut",
    "event_from_dict",
    "recorded_from_dict",
)


def apply(state: ExecutionState, recorded: Recorded) -> None:
    """Advance `state` by one recorded event, in place. Total: never raises."""
    state.last_seq = recorded.seq
    state.updated_at_ms = recorded.timestamp_ms
    handler = HANDLERS.get(type(recorded.event))
    if handler is None:
        return
    try:
        handler(state, recorded.event, recorded.timestamp_ms)
    except (TypeError, ValueError, KeyError, AttributeError, AssertionError):
        # A malformed field inside a well-typed event (hand-edited history): ignore the
        # event rather than make the execution unreadable.
        pass
    if state.wakeups:  # a timer may be armed for this state (ExecutionState.timer_free)
        state.timer_free = False


def fold(execution_id: str, records: Iterable[Recorded]) -> ExecutionState:
    """The state of an execution: the left fold of `apply` over its events."""
    s = ExecutionState(execution_id)
    for r in records:
        apply(s, r)
    return s


def apply_commit(
    state: ExecutionState,
    records: Iterable[Recorded],
    inbound_id: str | None,
    first_seq: int,
    timestamp_ms: int | None = None,
    more_inbound: Iterable[str] = (),
) -> None:
    """Apply one commit's events and remember which inbound messages it handled.

    `timestamp_ms` is the commit's (default: its last event's); it also ages out the
    remembered ids (`state.remember_inbound`). Signal ids, found in the commit's
    SignalReceived events, are kept longer than the others.
    """
    records = list(records)
    for r in records:
        apply(state, r)
    ts = state.updated_at_ms if timestamp_ms is None else timestamp_ms
    ids = ([inbound_id] if inbound_id else []) + [i for i in more_inbound if i]
    remember_inbound(state, ids, first_seq, ts, signal_ids(records))


def signal_ids(records: Iterable[Recorded]) -> set[str]:
    """The signal ids a commit's events received (kept longer than other message ids)."""
    return {r.event.signal_id for r in records if isinstance(r.event, SignalReceived) and r.event.signal_id}
