"""Retention steps of the engine: when an ended execution's data expires, and setting or lifting it.

`Retention` is a stage `Engine` (orbit/service/engine.py) composes: the engine computes the expiry
when a decision ends an execution (`write_expiry`), writes that decision's items with it, and calls
`retire` last, after every other write of the decision (a crash before it redelivers the message,
whose commit is re-sent and retires again). A redrive lifts the expiry (`unretire_if_redriven`)
before anything runs. When the stack keeps an archive, `retire` writes the history to it before the
expiries.

Write-time expiry (docs/decisions/0010-retention-archive-expiry.md): while an execution is young (its first
hour, orbit.core.definition.retention), every item written for it already carries the expiry P it
would get if it ended at the close of that hour, marked provisional. The start records P in its
own commit (WorkflowCreated.provisional_expiry_s) and every later write uses that P. One that ends
young keeps P on every item, so its end writes nothing more: `_retire` skips the walk over its
items (an execution whose start did not record P, started before this, takes the walk). One that
lives longer is pinned by `RetentionSweeper` (its provisional items get NO_EXPIRY) before P can
come, and gets its exact expiry (end + retention) at its end, as before. A redriven execution
writes nothing provisionally: its items were pinned by the redrive.
"""

from __future__ import annotations

import logging
from typing import Any

from orbit.core.definition.retention import (
    SWEEP_AFTER_MS,
    ended_young,
    expires_at_s,
    provisional_expiry_s,
    retention_of,
    writes_provisionally,
)
from orbit.core.history.events import ExecutionRedriven
from orbit.core.history.lifecycle import ended_at_ms, retirement
from orbit.core.history.state import TERMINAL_WORKFLOW, ExecutionState
from orbit.errors import BuildMismatch, NotFound, UnknownWorkflow
from orbit.service.archive import encode_archive
from orbit.service.ports import Archive, Clock, HistoryStore, Registry, Timers

log = logging.getLogger("orbit.retention")

# An expiry no table will reach: DynamoDB TTL deletes only items whose time has passed.
NO_EXPIRY_S = 253_402_300_799  # 9999-12-31T23:59:59Z


class Retention:
    """When what a decision writes expires, and retiring an ended execution. `retention_ms`: the
    stack's default, for workflows that set no retention of their own."""

    def __init__(self, store: HistoryStore, timers: Timers, clock: Clock, registry: Registry,
                 retention_ms: int) -> None:
        self.store, self.timers, self.clock = store, timers, clock
        self.registry, self.retention_ms = registry, retention_ms

    def _retention_ms(self, state: ExecutionState) -> int:
        try:
            wf = self.registry.get_build(state.workflow, state.version, state.build)
        except (BuildMismatch, UnknownWorkflow):
            wf = None  # the stack default applies
        return retention_of(wf, self.retention_ms)

    @staticmethod
    def _ends_young(state: ExecutionState, ended_ms: int) -> bool:
        """Ended (at `ended_ms`) while young and never redriven: every item it left carries the
        provisional expiry."""
        return state.redrive_count == 0 and ended_young(state.created_at_ms, ended_ms)

    def _provisional(self, state: ExecutionState) -> int:
        """The provisional expiry: the one the start recorded (and its commit carries), else (an
        execution started before starts recorded it) computed as that start did."""
        if state.provisional_expiry_s is not None:
            return state.provisional_expiry_s
        return provisional_expiry_s(state.created_at_ms, self._retention_ms(state))

    def _expiry(self, state: ExecutionState) -> int:
        """When an ended execution's data expires (epoch s): its end + its workflow's retention, or
        for one that ended young the provisional expiry its items were written with (at most an
        hour later: every item of an execution expires at the same second)."""
        ended_ms = ended_at_ms(state)
        if self._ends_young(state, ended_ms):
            return self._provisional(state)
        return expires_at_s(ended_ms, self._retention_ms(state))

    def write_expiry(self, state: ExecutionState, now_ms: int) -> tuple[int | None, bool]:
        """(expiry, provisional) of the items a decision at `now_ms` writes for the execution."""
        if not state.created:
            return None, False
        if state.status in TERMINAL_WORKFLOW:
            return self._expiry(state), False
        if state.redrive_count == 0 and writes_provisionally(state.created_at_ms, now_ms):
            return self._provisional(state), True
        return None, False

    def retire(self, state: ExecutionState, expires: int, archive: Archive | None = None) -> None:
        """Everything the execution left expires; what this decision wrote already carries it, and
        for one that ended young so does everything else, when its start recorded the expiry all
        were written with (`written`: the store skips the walk). The timer is disarmed unless the
        history shows none was ever armed (ExecutionState.timer_free). With an `archive`, the
        history is written to it first (orbit/service/archive.py says why)."""
        r = retirement(state)
        if not state.timer_free:
            self.timers.disarm(state.id)  # nothing is due any more
        if archive is not None:
            self._archive(archive, state, expires, r.ended_at_ms)
        written = (self._ends_young(state, r.ended_at_ms) and state.provisional_expiry_s is not None
                   and expires == state.provisional_expiry_s)
        self.store.retire(state.id, r.ended_at_ms, expires, r.hook_tokens, r.dedupe_keys, written)

    def _archive(self, archive: Archive, state: ExecutionState, expires: int, ended_at_ms: int) -> None:
        records: list[Any] = []
        after: int | None = 0
        while after is not None:  # the whole history, a page at a time, large values inline
            page = self.store.history(state.id, after, 1000)
            records += page.records
            after = page.next_after_seq
        archive.put(state.id, encode_archive(state, records, expires, ended_at_ms))

    def sweep_young(self, now_ms: int | None = None, limit: int = 100) -> int:
        """One batch of the retention sweeper (the timers function's tick); how many it looked at."""
        sweeper = RetentionSweeper(self.store, self.clock, lambda eid: self.store.load(eid).fold())
        return sweeper.sweep(now_ms, limit)

    def unretire_if_redriven(self, state: ExecutionState, events: list[Any], resend: dict[int, Any]) -> None:
        """A redrive (recorded now, or in the commit a redelivery re-sends) pushes the expiry of
        everything the execution left out to NO_EXPIRY (retire is idempotent and sets, so the next
        end's retire writes the real expiry again)."""
        if not _redrives(events, resend):
            return
        r = retirement(state)
        self.store.retire(state.id, r.ended_at_ms, NO_EXPIRY_S, r.hook_tokens, [])


class RetentionSweeper:
    """Pins the provisional items of executions that outlived their young hour (the timers
    function runs it every minute): before their provisional expiry could come, every item still
    marked provisional gets NO_EXPIRY; the execution's end gives them the exact expiry.

    The store lists running executions by creation time; a cursor (created#id) says how far every
    one has been pinned. It moves only after the pins of a batch landed: a crash repeats the batch,
    and pinning is idempotent (conditional on the provisional mark)."""

    def __init__(self, store: Any, clock: Any, load: Any) -> None:
        self.store, self.clock = store, clock
        self._load = load  # execution id -> its current ExecutionState (the engine's load_state)

    def sweep(self, now_ms: int | None = None, limit: int = 100) -> int:
        """Pin one batch of executions older than SWEEP_AFTER_MS; returns how many were looked at."""
        now = self.clock.now_ms() if now_ms is None else now_ms
        batch = self.store.aging(self.store.sweep_cursor(), now - SWEEP_AFTER_MS, limit)
        for _, eid in batch:
            try:
                state = self._load(eid)
            except NotFound:
                continue  # listed but gone: nothing to pin
            except Exception:  # one unreadable execution must not stop the sweep
                # Pin what can be found without its state (everything but its hook rows) rather
                # than let TTL take a running execution's history, or retry it forever.
                log.exception("retention sweep: execution %s could not be loaded; pinned without hooks", eid)
                self.store.pin(eid, [], NO_EXPIRY_S)
                continue
            # An ended one (its index row not yet updated) has its final expiry; a redriven one
            # wrote nothing provisionally.
            if state.status in TERMINAL_WORKFLOW or state.redrive_count:
                continue
            self.store.pin(eid, retirement(state).hook_tokens, NO_EXPIRY_S)
        if batch:
            self.store.advance_sweep(batch[-1][0])
        return len(batch)


def _redrives(events: list[Any], resend: dict[int, Any]) -> bool:
    """Did this decision (or the commit a redelivery re-sends) record an ExecutionRedriven?"""
    recorded = list(events) + [r for c in resend.values() for r in c.events]
    return any(isinstance(r.event, ExecutionRedriven) for r in recorded)
