"""The history as the outbox: which commit already handled a message, and what to send again.

A decision's effects are sent after its commit. A crash in between leaves the
inbound message undeleted, so it comes back; the decider must then recognise
it and send the stored effects of the commit that handled it, not decide it
again. The state remembers the ids of its last few commits (`state.inbound`);
`find_handled` looks further back in the commit log only for a redelivery (or a
repeated start), and only as far back as the message's send time.
"""

from __future__ import annotations

from orbit.core.history.effects import DispatchTask, Effect
from orbit.core.history.events import WorkflowStarted
from orbit.core.history.messages import Message, StartMessage
from orbit.core.history.state import DISPATCHED, SCHEDULED, ExecutionState
from orbit.service.ports import Commit, HistoryStore

# A message is sent before the commit that handles it, so that commit's timestamp is at least the
# message's `sent_at_ms`, give or take the clocks of the sender and the decider (NTP keeps them
# within milliseconds; five minutes is a wide margin that costs a few more commits read).
SEND_SKEW_MS = 5 * 60_000


def find_handled(
    store: HistoryStore,
    eid: str,
    state: ExecutionState,
    m: Message,
    sent_at_ms: int | None,
    receive_count: int,
) -> Commit | None:
    """The commit that already handled `m`, when the state no longer remembers its id.

    Read only for a start of an existing execution (its commit is among the first) and for
    a redelivery (SQS receive count > 1: the decider that took it before may have died
    between its commit and its sends). The log is read newest first and only back to the
    message's send time, since no earlier commit can have handled it. Anything else is
    decided from the state alone: every kind but a signal is idempotent on it (a repeated
    result is recorded as StaleResultIgnored), and signal ids are kept for 19 days. A
    copy that is not a redelivery (SQS's rare duplicate, a re-sent answer) needs no
    resend: the message it repeats was handled, and if that decider died, that
    message's own redelivery re-sends its effects.
    """
    if isinstance(m, StartMessage):
        if not state.created:
            return None
        for c in store.scan_commits(eid, newest_first=False):
            if m.id in c.all_inbound:
                return c
            if any(isinstance(r.event, WorkflowStarted) for r in c.events):
                return None  # the start was handled under another id (a child's, an API call)
        return None
    if sent_at_ms is None or receive_count <= 1:
        return None
    for c in store.scan_commits(eid, newest_first=True):
        if c.timestamp_ms < sent_at_ms - SEND_SKEW_MS:
            return None
        if m.id in c.all_inbound:
            return c
    return None


def still_due(state: ExecutionState, effects: list[Effect]) -> list[Effect]:
    """The effects of an old commit worth sending again for a redelivered message.

    The resend repairs a send lost between commit and effects, so a dispatch goes again
    only while its attempt is still the live one: the unit is queued or with a worker,
    under that token. A dispatch whose step has finished, waits for a retry or moved to a
    newer attempt is only noise: a repeated start re-sent every first dispatch of the
    execution, each answered again by the worker and recorded as StaleResultIgnored.
    """
    out: list[Effect] = []
    for e in effects:
        if isinstance(e, DispatchTask):
            u = state.units.get(e.unit)
            if u is None or u.status not in (SCHEDULED, DISPATCHED) or u.token != e.token:
                continue
        out.append(e)
    return out
