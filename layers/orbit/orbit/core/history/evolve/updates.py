"""State transitions of updates (docs/updates.md): accepted, then completed once.

`state.updates` keeps every update of the execution by id, in the order they were accepted:
`{"name", "input", "status": "ACCEPTED"|"COMPLETED", "position", "result", "error", "step"}`.
It is what makes an update id idempotent: a second update with a known id records nothing,
and its caller gets the first one's result.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from orbit.core.history import events as E
from orbit.core.history.state import ExecutionState

ACCEPTED = "ACCEPTED"
COMPLETED = "COMPLETED"


def _accepted(s: ExecutionState, e: E.UpdateAccepted, ts: int) -> None:
    s.updates.setdefault(e.update_id, {"name": e.name, "input": e.input, "status": ACCEPTED,
                                       "accepted_seq": s.last_seq})


def _completed(s: ExecutionState, e: E.UpdateCompleted, ts: int) -> None:
    u = s.updates.get(e.update_id)
    if u is None or u.get("status") == COMPLETED:
        return
    u.update(status=COMPLETED, position=e.position, result=e.result,
             error=e.error.to_dict() if e.error is not None else None, completed_seq=s.last_seq)
    if e.step:
        u["step"] = e.step


def pending_updates(s: ExecutionState) -> list[tuple[str, dict[str, Any]]]:
    """Accepted updates whose handler has not run yet, oldest first."""
    return [(uid, u) for uid, u in s.updates.items() if u.get("status") == ACCEPTED]


def completed_updates(s: ExecutionState) -> list[tuple[str, dict[str, Any]]]:
    """Completed updates in the order their handlers ran."""
    done = [(uid, u) for uid, u in s.updates.items() if u.get("status") == COMPLETED]
    return sorted(done, key=lambda item: int(item[1].get("completed_seq") or 0))


UPDATE_HANDLERS: Mapping[type, Any] = MappingProxyType(
    {E.UpdateAccepted: _accepted, E.UpdateCompleted: _completed})
