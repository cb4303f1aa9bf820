"""A durable function's state: the left fold of its history (`durable_events.py`). Pure.

`DurableState` holds what the Lambda durable execution API answers from: the operations (the
API's `Operation` records, by id, in the order they first appeared), the Lambda `Event` history
(numbered here, `EventId` 1..n), the open invocation and its current checkpoint token, and what
changed behind the handler's back since it was last invoked (a wait that elapsed, a callback the
outside world completed, a retry now due): the next invocation replays because of it.

`ORBIT` is the key inside an operation record for what only Orbit reads (a callback's deadlines,
a chained invoke's child); the HTTP layer strips it (`public_operation`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from orbit.core.history import durable_events as D
from orbit.core.history.events import JSON, Recorded
from orbit.core.history.serial import tagged_dict

ORBIT = "Orbit"
RUNNING = "RUNNING"
TERMINAL_EXECUTION = frozenset({"SUCCEEDED", "FAILED", "STOPPED", "TIMED_OUT"})
TERMINAL_OPERATION = frozenset({"SUCCEEDED", "FAILED", "CANCELLED", "TIMED_OUT", "STOPPED"})
CLIENT_TOKENS_KEPT = 256  # the newest ClientTokens remembered (a repeat of an older one is rare)


@dataclass
class DurableState:
    arn: str = ""
    function: str = ""
    name: str = ""
    input: str | None = None
    timeout_s: int = 86_400
    parent: dict[str, str] | None = None
    start_ms: int = 0
    end_ms: int | None = None
    status: str = RUNNING
    result: str | None = None
    error: dict[str, JSON] | None = None
    operations: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    token: str | None = None  # the open invocation's current checkpoint token
    request_id: str | None = None  # the open invocation
    invocation_start_ms: int = 0
    invocations: int = 0
    checkpoints: int = 0  # in the open invocation
    failed_invocations: int = 0  # in a row, that returned no answer
    client_tokens: dict[str, str] = field(default_factory=dict)  # ClientToken -> token answered
    changed: list[str] = field(default_factory=list)  # ops changed since the last checkpoint answer
    woken: list[str] = field(default_factory=list)  # ops changed since the last invocation began
    exists: bool = False

    @property
    def ended(self) -> bool:
        return self.status in TERMINAL_EXECUTION

    @property
    def invoking(self) -> bool:
        return self.request_id is not None

    @property
    def execution_id(self) -> str:
        return self.arn.rsplit("/", 1)[-1]


def apply_durable(s: DurableState, r: Recorded) -> None:
    """Advance `s` by one recorded event (events of other kinds are ignored). Total."""
    e, ts = r.event, r.timestamp_ms
    if isinstance(e, D.DurableStarted):
        s.exists, s.arn, s.function, s.name, s.input = True, e.arn, e.function, e.name, e.input
        s.timeout_s, s.parent, s.start_ms = e.timeout_s, e.parent, ts
    elif isinstance(e, D.DurableOperationRecorded):
        op = dict(e.operation)
        oid = str(op.get("Id"))
        s.operations[oid] = op
        if e.wakes:
            if oid not in s.changed:
                s.changed.append(oid)
            if oid not in s.woken:
                s.woken.append(oid)
        if e.lambda_event is not None:
            s.events.append({**e.lambda_event, "EventId": len(s.events) + 1})
    elif isinstance(e, D.DurableCheckpointed):
        s.token, s.checkpoints = e.token, s.checkpoints + 1
        s.changed = []
        if e.client_token:
            s.client_tokens[e.client_token] = e.token
            while len(s.client_tokens) > CLIENT_TOKENS_KEPT:
                del s.client_tokens[next(iter(s.client_tokens))]
    elif isinstance(e, D.DurableInvocationStarted):
        s.request_id, s.token, s.invocation_start_ms = e.request_id, e.token, ts
        s.invocations, s.checkpoints = s.invocations + 1, 0
        s.changed, s.woken = [], []
    elif isinstance(e, D.DurableInvocationCompleted):
        if s.request_id != e.request_id:
            return
        s.request_id = s.token = None
        s.failed_invocations = s.failed_invocations + 1 if e.status == "ERROR" else 0
        details: dict[str, JSON] = {
            "StartTimestamp": e.start_ms,
            "EndTimestamp": ts,
            "RequestId": e.request_id,
        }
        if e.error is not None:
            details["Error"] = {"Payload": e.error, "Truncated": False}
        s.events.append(
            {
                "EventType": "InvocationCompleted",
                "EventTimestamp": ts,
                "EventId": len(s.events) + 1,
                "InvocationCompletedDetails": details,
            }
        )
    elif isinstance(e, D.DurableEnded):
        if s.ended:
            return
        s.status, s.result, s.error, s.end_ms = e.status, e.result, e.error, ts
        s.token = None


def fold_durable(records: Iterable[Recorded]) -> DurableState:
    s = DurableState()
    for r in records:
        apply_durable(s, r)
    return s


def public_operation(op: dict[str, Any]) -> dict[str, Any]:
    """The operation as the API shows it (what only Orbit reads left out)."""
    return {k: v for k, v in op.items() if k != ORBIT}


def next_due_ms(s: DurableState) -> int | None:
    """When the next timer of the execution falls due: a wait's end, a retry, a callback's
    timeout or heartbeat timeout, the execution's own timeout. None when it has ended."""
    if s.ended:
        return None
    due = [s.start_ms + s.timeout_s * 1000]
    if s.invoking:
        due.append(s.invocation_start_ms + 1_020_000)  # durable_ops.INVOCATION_TIMEOUT_S
    for op in s.operations.values():
        st = op.get("Status")
        if op.get("Type") == "WAIT" and st == "STARTED":
            due.append(int((op.get("WaitDetails") or {}).get("ScheduledEndTimestamp") or 0))
        elif op.get("Type") == "STEP" and st == "PENDING":
            due.append(int((op.get("StepDetails") or {}).get("NextAttemptTimestamp") or 0))
        elif op.get("Type") == "CALLBACK" and st == "STARTED":
            orbit = op.get(ORBIT) or {}
            due += [int(orbit[k]) for k in ("TimeoutAt", "HeartbeatAt") if orbit.get(k)]
    return min(due)


def callback_operation(s: DurableState, callback_id: str) -> dict[str, Any] | None:
    for op in s.operations.values():
        if (
            op.get("Type") == "CALLBACK"
            and (op.get("CallbackDetails") or {}).get("CallbackId") == callback_id
        ):
            return op
    return None


@dataclass(frozen=True)
class DurableFollowup:
    """A durable function's message on the decision queue (orbit/aws/durable.py): `invoke` it now,
    or `fire` what is due at `due_ms` (`tag`: the invocation count and whether one was open when it
    was armed, so a newer invocation's chain supersedes it)."""

    KIND = "durable"
    op: str
    arn: str
    execution_id: str
    due_ms: int = 0
    tag: tuple[Any, ...] = ()

    def to_dict(self) -> dict[str, JSON]:
        d = tagged_dict(self, "kind", self.KIND)
        if self.op == "fire":
            d["tag"] = list(self.tag)
        else:
            del d["due_ms"], d["tag"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DurableFollowup:
        """A body read back; what is missing or not of its type reads as empty (the handler ignores
        an unknown `op` and a missing execution answers 404, which drops the message)."""
        tag = d.get("tag")
        due = d.get("due_ms")
        return cls(str(d.get("op") or ""), str(d.get("arn") or ""), str(d.get("execution_id") or ""),
                   due if isinstance(due, int) and not isinstance(due, bool) else 0,
                   tuple(tag) if isinstance(tag, list) else ())
