"""How a durable function's events (`durable_events.py`) move the `ExecutionState` every Orbit
tool reads (list, describe, the console): it is created by `DurableStarted`, named after its
function, and ends with `DurableEnded`. The operations themselves are folded by
`orbit.core.history.durable` (the Lambda API answers from that fold)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from orbit.core.history import durable_events as D
from orbit.core.history.state import CANCELLED, COMPLETED, FAILED, RUNNING, TIMED_OUT, ExecutionState
from orbit.core.history.task_error import TaskError

KIND = "durable-function"  # ExecutionState.version of a durable function's execution
_STATUS = MappingProxyType(
    {"SUCCEEDED": COMPLETED, "FAILED": FAILED, "STOPPED": CANCELLED, "TIMED_OUT": TIMED_OUT}
)


def _started(s: ExecutionState, e: D.DurableStarted, ts: int) -> None:
    s.workflow, s.version, s.build = e.function, KIND, KIND
    s.input = e.input
    s.created = s.started = True
    s.created_at_ms, s.status = ts, RUNNING


def _ended(s: ExecutionState, e: D.DurableEnded, ts: int) -> None:
    if s.terminal:
        return
    s.status, s.finished_at_ms = _STATUS.get(e.status, FAILED), ts
    if e.status == "SUCCEEDED":
        s.output = e.result
    elif e.error is not None:
        err = e.error
        s.error = TaskError(str(err.get("ErrorType") or e.status), str(err.get("ErrorMessage") or ""))


DURABLE_HANDLERS: Mapping[type, Callable[[ExecutionState, Any, int], None]] = MappingProxyType(
    {
        D.DurableStarted: _started,
        D.DurableEnded: _ended,
    }
)
