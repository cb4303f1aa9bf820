"""A decision-queue batch sorted before anything is decided (`Engine.handle_batch`).

Flow control's own messages (a start it lets in), bulk actions' pages and schedules' messages are
not an execution's: each is handed to its service here, its failure reported for its record alone.
Everything else parses into an execution's message (a bad body fails its record, one line) and is
grouped by execution, with what its delivery says: its send time and SQS ApproximateReceiveCount.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from orbit.core.history.messages import Message, message_from_dict
from orbit.core.history.queue_bodies import FLOW_KEY
from orbit.core.tracing import BODY_KEY
from orbit.errors import OrbitError
from orbit.service.batches import is_batch_message
from orbit.service.deciding import Deliveries
from orbit.service.schedules import is_schedule_message

log = logging.getLogger("orbit.core.decider")


@dataclass
class Intake:
    """A batch, sorted: per execution its (position, message) records, in batch order."""

    groups: dict[str, list[tuple[int, Message]]] = field(default_factory=dict)
    delivery: Deliveries = field(default_factory=dict)  # message id -> (sent_at_ms or None, receive count)
    traces: dict[str, str] = field(default_factory=dict)  # execution -> the trace header its messages carried
    admitted: set[str] = field(default_factory=set)  # starts flow control held back and now lets go
    failures: list[tuple[int, Exception]] = field(default_factory=list)  # (position, error)

    def messages(self, eid: str) -> list[Message]:
        """The execution's messages, each once: SQS may hand a record over twice in one batch; it is
        decided once, and its inline work (a hand-over wake) runs once; both records share the outcome."""
        msgs: list[Message] = []
        for _, m in self.groups[eid]:
            if all(m.id != seen.id for seen in msgs):
                msgs.append(m)
        return msgs


def sort_batch(messages: list[dict[str, Any] | Message], receive_counts: list[int] | None,
               flow: Any, batches: Any, schedules: Any) -> Intake:
    """Sort `messages`; `flow`, `batches`, `schedules`: the engine's services (None: not deployed)."""
    out = Intake()
    for i, raw in enumerate(messages):
        if isinstance(raw, dict) and FLOW_KEY in raw:
            try:  # flow control's own message (service/flow_steps.py): a start it lets in, or None
                back = flow.come_back(raw) if flow is not None else None
            except Exception as e:  # reported per message, the queue retries it
                log.exception("flow message failed")
                out.failures.append((i, e))
                continue
            if back is None:
                continue
            raw = back
            out.admitted.add(str(raw.get("execution_id")))
        if isinstance(raw, dict) and batches is not None and is_batch_message(raw):
            try:  # a bulk action's page (service/batches.py): not an execution's message
                batches.handle(raw)
            except Exception as e:  # reported per message, the queue retries it
                log.exception("batch message failed: %s", raw.get("batch_id"))
                out.failures.append((i, e))
            continue
        if isinstance(raw, dict) and schedules is not None and is_schedule_message(raw):
            try:  # a schedule's fire, or the end of a run it started: not an execution's message
                schedules.handle(raw)
            except Exception as e:  # reported per message, the queue retries it
                log.exception("schedule message failed: %s", raw.get("execution_id"))
                out.failures.append((i, e))
            continue
        try:
            m = raw if isinstance(raw, Message) else message_from_dict(raw)
        except OrbitError as e:
            out.failures.append((i, e))
            continue
        sent = raw.get("sent_at_ms") if isinstance(raw, dict) else None
        count = receive_counts[i] if receive_counts is not None and i < len(receive_counts) else 1
        out.delivery[m.id] = (sent if isinstance(sent, int) else None, count)
        out.groups.setdefault(m.execution_id, []).append((i, m))
        trace = raw.get(BODY_KEY) if isinstance(raw, dict) else None
        if isinstance(trace, str) and trace:
            out.traces.setdefault(m.execution_id, trace)
    return out
