"""What a redelivered message makes the decider carry out again (docs/decisions/delivery-engine-outbox.md).

A chain of inline steps carries out each commit's effects before it runs the next step, but the
sends of a decider invocation leave together at its end (queues.batched): a crash or a refused send
can leave the effects of every commit of the chain unsent (a worker dispatch, a child's start...).
Those commits handled the chain's own results and started records, which no queue redelivers, and
other commits may have landed in between (a signal). So when a message comes again, every internal
commit since the first invocation could have committed has its still-due effects sent again, oldest
first (`Redelivery.recover`); then the live inline leases are woken or armed (`lease_actions`).

Since when: a redelivered message's send time (`redelivered_since`), a hand-over wake's
(`sent_since`: chaos seed 8687, a wake redriven from the DLQ is a first receive again), or the
time of the commit that handled it (`Engine._after_commit`). One pipeline pass remembers how far
back it recovered (`turn.Turn.recovery_due`, chaos seed 9574).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from orbit.core.history.messages import Message, WakeMessage
from orbit.core.history.state import SCHEDULED, ExecutionState
from orbit.service.effects import Effects
from orbit.service.outbox import SEND_SKEW_MS, still_due
from orbit.service.ports import Clock, HistoryStore, Queues, Timers
from orbit.service.retention import Retention
from orbit.service.state_cache import StateCache


class Redelivery:
    """`recover`, given the engine's state cache, retention and effects."""

    def __init__(self, store: HistoryStore, timers: Timers, queues: Queues, clock: Clock,
                 states: StateCache, retention: Retention, effects: Effects) -> None:
        self.store, self.timers, self.queues, self.clock = store, timers, queues, clock
        self.states, self.retention, self.effects = states, retention, effects

    def recover(self, eid: str, state: ExecutionState, since_ms: int | None = None, done: Any = (),
                turn: Any = None, runner: Any = None) -> None:
        """Every internal commit since `since_ms` has its still due effects sent again, oldest first;
        `done` and `turn.resent`: first seqs already re-sent. Without a time, the newest commit only.
        Then the live inline leases are woken or armed. `runner`: the decider's inline runner, or None."""
        if turn is not None:
            turn.recovers(since_ms)
        # a cached state another decider overtook: filter on the stored one
        state = self.states.reload_if_overtaken(eid, state)
        now = self.clock.now_ms()
        expiry = None
        for commit in internal_commits(self.store, eid, state, since_ms):
            if commit.first_seq in done or (turn is not None and commit.first_seq in turn.resent):
                continue
            if turn is not None:
                turn.resent.add(commit.first_seq)
            # Its hook rows get the expiry of what is written for the execution now, as a decision's do.
            expiry = expiry or self.retention.write_expiry(state, now)
            due = still_due(state, commit.effects)
            self.effects.carry_out(eid, due, expiry, False, commit.last_seq, turn, runner)
        arms, wake = lease_actions(state, now)
        for at in arms:
            self.timers.arm(eid, at, state.last_seq)
        if wake is not None:
            self.queues.send_decision(wake.to_dict())


def redelivered_since(msgs: list[Message], delivery: Any) -> tuple[bool, int | None]:
    """Whether a message of `msgs` is a redelivery, and since when its first invocation's commits
    may have landed: they all came after the message was sent (outbox.SEND_SKEW_MS as in
    find_handled); None when a send time is unknown."""
    again = [(delivery or {}).get(m.id, (None, 1)) for m in msgs]
    sent = [at for at, count in again if count > 1]
    if not sent:
        return False, None
    return True, (min(sent) - SEND_SKEW_MS if all(isinstance(t, int) for t in sent) else None)


def sent_since(msgs: Sequence[Message], delivery: Any) -> int | None:
    """Since when the commits of an invocation that took these messages may have landed: their
    oldest send time (less outbox.SEND_SKEW_MS), or None when a send time is unknown."""
    sent = [(delivery or {}).get(m.id, (None, 1))[0] for m in msgs]
    return min(sent) - SEND_SKEW_MS if sent and all(isinstance(t, int) for t in sent) else None


def lease_actions(state: ExecutionState, now: int) -> tuple[list[int], WakeMessage | None]:
    """After a redelivery (`Engine.recover`): a live inline attempt whose lease passed is woken now
    (the wake, which ends the list); one still leased gets a timer at the lease's end, in case its
    owner is gone (a spare wake finds nothing due and changes nothing). Returns (the lease ends to
    arm, in order, the wake to send or None)."""
    arms: list[int] = []
    for key in list(state.active):
        u = state.units.get(key)
        if u is None or u.inline is None or u.deadline_ms is None:
            continue
        if u.status not in (SCHEDULED, "DISPATCHED"):
            continue
        if u.deadline_ms <= now:
            return arms, WakeMessage(state.id, f"wake:{state.id}:{now}")
        arms.append(u.deadline_ms)
    return arms, None


def internal_commits(store: Any, eid: str, state: ExecutionState, since_ms: int | None) -> list[Any]:
    """The commits since `since_ms` (or the newest one) that touched an inline unit, oldest first."""
    if not any(u.inline is not None for u in state.units.values()):
        return []  # no inline unit, no internal commit: nothing to read
    if since_ms is None:
        last = max(state.inbound.values(), default=None)
        newest = store.read_commit(eid, last) if last is not None else None
        commits = [newest] if newest is not None else []
    else:
        commits = []
        for c in store.scan_commits(eid, newest_first=True):
            if c.timestamp_ms < since_ms:
                break
            commits.append(c)
    return [c for c in reversed(commits)
            if any(_inline_unit(state, getattr(r.event, "step", None)) for r in c.events)]


def _inline_unit(state: ExecutionState, unit: Any) -> bool:
    u = state.units.get(unit) if isinstance(unit, str) else None
    return u is not None and u.inline is not None
