"""Retention steps of the engine: when an ended execution's data expires, and setting or lifting it.

`RetentionSteps` is a mixin of `Engine` (orbit/service/engine.py): the engine computes the expiry
when a decision ends an execution, writes that decision's items with it, and calls `_retire` last,
after every other write of the decision (a crash before it redelivers the message, whose commit is
re-sent and retires again). A redrive lifts the expiry (`_unretire`) before anything runs. When
the stack keeps an archive, `_retire` writes the history to it before the expiries.
"""

from __future__ import annotations

from typing import Any

from orbit.core.definition.retention import expires_at_s, retention_of
from orbit.core.history.events import ExecutionRedriven
from orbit.core.history.lifecycle import retirement
from orbit.core.history.state import ExecutionState
from orbit.errors import BuildMismatch, UnknownWorkflow
from orbit.service.archive import encode_archive

# An expiry no table will reach: DynamoDB TTL deletes only items whose time has passed.
NO_EXPIRY_S = 253_402_300_799  # 9999-12-31T23:59:59Z


class RetentionSteps:
    """Mixin of Engine: `registry`, `store`, `timers` and `retention_ms` come from the engine."""

    registry: Any
    store: Any
    timers: Any
    retention_ms: int
    archive: Any = None  # an orbit.service.ports.Archive when the stack keeps one (ORBIT_ARCHIVE_DAYS)

    def _expiry(self, state: ExecutionState) -> int:
        """When an ended execution's data expires: its end + its workflow's retention (epoch s)."""
        try:
            wf = self.registry.get_build(state.workflow, state.version, state.build)
        except (BuildMismatch, UnknownWorkflow):
            wf = None  # the stack default applies
        return expires_at_s(retirement(state).ended_at_ms, retention_of(wf, self.retention_ms))

    def _retire(self, state: ExecutionState, expires: int) -> None:
        """Everything the execution left expires; what this decision wrote already carries it.
        With an archive, the history is written to it first (orbit/service/archive.py says why)."""
        r = retirement(state)
        self.timers.disarm(state.id)  # nothing is due any more
        if self.archive is not None:
            self._archive(state, expires, r.ended_at_ms)
        self.store.retire(state.id, r.ended_at_ms, expires, r.hook_tokens, r.dedupe_keys)

    def _archive(self, state: ExecutionState, expires: int, ended_at_ms: int) -> None:
        records: list[Any] = []
        after: int | None = 0
        while after is not None:  # the whole history, a page at a time, large values inline
            page = self.store.history(state.id, after, 1000)
            records += page.records
            after = page.next_after_seq
        self.archive.put(state.id, encode_archive(state, records, expires, ended_at_ms))

    def _unretire_if_redriven(self, state: ExecutionState, events: list[Any], resend: dict[int, Any]) -> None:
        """A redrive (recorded now, or in the commit a redelivery re-sends) pushes the expiry of
        everything the execution left out to NO_EXPIRY (retire is idempotent and sets, so the next
        end's retire writes the real expiry again)."""
        if not _redrives(events, resend):
            return
        r = retirement(state)
        self.store.retire(state.id, r.ended_at_ms, NO_EXPIRY_S, r.hook_tokens, [])


def _redrives(events: list[Any], resend: dict[int, Any]) -> bool:
    """Did this decision (or the commit a redelivery re-sends) record an ExecutionRedriven?"""
    recorded = list(events) + [r for c in resend.values() for r in c.events]
    return any(isinstance(r.event, ExecutionRedriven) for r in recorded)
