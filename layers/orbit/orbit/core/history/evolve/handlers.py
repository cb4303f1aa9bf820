"""The transition of `HandlerStarted` (an `on_signal` instance), added to `evolve.HANDLERS`.

The instance is a unit of its own (`on_signal:<signal>@<seq>`, kind `on_signal`, input = the
payload): RUNNING while its steps run, then SUCCEEDED with the handler's output, FAILED, or
CANCELLED (a cancel, a timeout, a failure elsewhere, or the main flow ending). The arrival it
handles leaves the signal buffer, as a `wait_for` consuming it would (`SignalConsumed`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from orbit.core.history import events as E
from orbit.core.history.state import RUNNING, ExecutionState, UnitState

HANDLER_KIND = "on_signal"


def _handler_started(s: ExecutionState, e: E.HandlerStarted, ts: int) -> None:
    buf = s.signals.get(e.signal)
    if buf:
        i = next((n for n, b in enumerate(buf) if b.get("seq") == e.signal_seq), None)
        if i is not None:
            buf.pop(i)
            if not buf:
                del s.signals[e.signal]
    u = s.units.setdefault(e.step, UnitState())
    if u.terminal or s.terminal:
        return
    s.active[e.step] = None  # an instance key is never a `for` element: no fan-out counters
    u.status, u.kind, u.task, u.input = RUNNING, HANDLER_KIND, e.signal, e.payload
    u.scheduled_at_ms, u.attempt = ts, max(u.attempt, 1)


HANDLER_HANDLERS: Mapping[type, Callable[[ExecutionState, Any, int], None]] = MappingProxyType({
    E.HandlerStarted: _handler_started,
})
