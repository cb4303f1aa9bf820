"""Stage 4 of the decision pipeline (`Engine._decide_and_commit`): the commit and the index row.

The commit is conditional on the next seq: the only synchronisation between deciders. A writer that
loses gets ConflictError and the engine decides again on the stored state. The index row (what
`orbit list` reads) is written after it, as one of the commit's effects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orbit.core.history.lifecycle import decision_metrics
from orbit.core.history.model import signal_ids
from orbit.core.history.state import ExecutionState, remember_inbound
from orbit.service.deciding import Decided
from orbit.service.ports import Commit, HistoryStore, IndexEntry


@dataclass(frozen=True)
class Before:
    """The state as stage 1 loaded it, before the decision advanced it in place."""

    first_seq: int  # the seq the commit takes
    was: tuple[str, bool]  # (status, created)
    had: dict[str, Any]  # search attributes: the index row follows them too


class Commits:
    """Writes a decision: its commit, a snapshot now and then, its metrics, its index row."""

    def __init__(self, store: HistoryStore, meter: Any) -> None:
        self.store = store
        self.meter = meter  # per-workflow counters (orbit.aws.observability.Meter), or None

    def commit(self, eid: str, state: ExecutionState, d: Decided, before: Before, now: int,
               expiry: tuple[int | None, bool], since_snapshot: int, snapshot_every: int) -> int:
        """The commit, conditional on the next seq (ConflictError when another landed
        first), the metrics, and a snapshot every `snapshot_every` commits. Returns the commits
        since the last snapshot."""
        if not d.events:
            return since_snapshot
        expires, provisional = expiry
        commit = Commit(before.first_seq, now, d.handled[0], d.events, d.effects, tuple(d.handled[1:]))
        self.store.commit(eid, commit, expires, provisional)
        # exactly what `Loaded.fold` (model.apply_commit) does
        remember_inbound(state, d.handled, before.first_seq, now, signal_ids(d.events))
        since_snapshot += 1
        for name in decision_metrics(state, before.was, d.events) if self.meter is not None else ():
            self.meter.count_workflow(state.workflow, name)  # per workflow (the name only)
            self.meter.count(name)  # stack-wide: what the template's alarms watch
        if since_snapshot >= max(snapshot_every, len(state.units) // 4):
            self.store.save_snapshot(eid, state.to_dict(), state.last_seq, expires, provisional)
            since_snapshot = 0
        return since_snapshot

    def write_index(self, eid: str, state: ExecutionState, d: Decided, before: Before,
                    expiry: tuple[int | None, bool]) -> None:
        """The index row is written after the commit, so it is one of the commit's effects: a
        redelivered message (resend) writes it again, in case the decider that committed died
        before it (put_index keeps the newest). A tombstone (never created) is not listed."""
        changed = bool(d.events) and ((state.status, state.created) != before.was
                                      or state.attributes != before.had)
        if not state.created or not (changed or d.resend):
            return
        self.store.put_index(
            IndexEntry(
                eid,
                state.workflow,
                state.version,
                state.status,
                state.created_at_ms,
                state.updated_at_ms,
                (state.parent or {}).get("execution_id"),
                dict(state.attributes) or None,
            ),
            *expiry,
        )
