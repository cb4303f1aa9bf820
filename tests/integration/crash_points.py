"""Count every AWS call a handler makes, and kill the "process" at one of them.

A botocore `before-call` / `after-call` hook on the clients the services use
sees each request a handler sends. Calls are labelled (handler, service,
operation, detail) and numbered in order; the driver's own calls (receive,
delete, the checks) happen while no handler is running and are not counted.

A crash point is (index, "before" | "after"): `before` dies before the request
leaves (nothing landed), `after` dies once the answer came back (the write
landed, the handler never saw it). `Crash` is a BaseException so no handler
code can catch it and report a partial failure: like a Lambda process that
died, the whole invocation fails. Once dead, every further call of that
invocation dies too (a `finally:` in a dying process sends nothing).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# The calls that change something: where a crash before or after can matter.
WRITES = frozenset({
    ("dynamodb", "PutItem"), ("dynamodb", "UpdateItem"), ("dynamodb", "DeleteItem"),
    ("dynamodb", "TransactWriteItems"), ("dynamodb", "BatchWriteItem"),
    ("sqs", "SendMessage"), ("sqs", "SendMessageBatch"), ("sqs", "DeleteMessage"),
    ("sqs", "DeleteMessageBatch"), ("sqs", "ChangeMessageVisibility"),
    ("sqs", "ChangeMessageVisibilityBatch"), ("s3", "PutObject"),
    ("scheduler", "CreateSchedule"), ("scheduler", "UpdateSchedule"), ("scheduler", "DeleteSchedule"),
})
VARIANTS = ("before", "after")


class Crash(BaseException):
    """The Lambda process died at this call (not an Exception: nothing may turn it into a result)."""


@dataclass(frozen=True)
class Call:
    handler: str
    service: str
    op: str
    detail: str

    @property
    def writes(self) -> bool:
        return (self.service, self.op) in WRITES

    def __str__(self) -> str:
        return f"{self.handler} {self.service}.{self.op}({self.detail})"


@dataclass(frozen=True)
class CrashPoint:
    index: int
    variant: str  # "before" | "after"
    again: bool = False  # the recovery dies too, at its first call with the same label

    def __str__(self) -> str:
        return f"#{self.index}/{self.variant}" + (" twice" if self.again else "")


def _detail(service: str, params: Any) -> str:
    """What the request touches, without ids: `EXEC/C` (a commit), `IDEM/IDEM`, `DecisionQueue x2`,
    `archive` (an ended execution's archive object; other S3 objects have no detail)."""
    if service == "s3":
        return "archive" if "/archive/" in str(params.get("url_path") or params.get("url") or "") else ""
    try:
        body = json.loads(params.get("body") or b"{}")
    except (TypeError, ValueError, AttributeError):
        return ""
    if service == "dynamodb":
        key = body.get("Key") or body.get("Item") or {}
        pk = str((key.get("pk") or {}).get("S", "")).split("#", 1)[0]
        sk = str((key.get("sk") or {}).get("S", ""))
        sk = sk if sk in ("A#INDEX", "SNAP", "IDEM", "PTR", "HOOK") else sk.split("#", 1)[0]
        return f"{pk}/{sk}" if pk else ""
    if service == "sqs":
        queue = str(body.get("QueueUrl", "")).rsplit("/", 1)[-1]
        texts = [e.get("MessageBody") for e in body.get("Entries") or []] or [body.get("MessageBody")]
        kinds = [k for t in texts if isinstance(t, str) for k in _kinds(t)]
        return f"{queue}: {','.join(kinds)}" if kinds else queue
    return ""


def _kinds(text: str) -> list[str]:
    """The kinds of the messages an SQS body carries (a bundle's, one by one)."""
    try:
        body = json.loads(text)
    except ValueError:
        return ["?"]
    if not isinstance(body, dict):
        return ["?"]
    inner = body.get("messages") if body.get("kind") == "bundle" else None
    return [str(m.get("kind")) for m in inner if isinstance(m, dict)] if isinstance(inner, list) \
        else [str(body.get("kind"))]


class Recorder:
    """Process-wide: attached once to the session's clients, armed per run."""

    def __init__(self) -> None:
        self.handler: str | None = None  # the function being invoked; None while the driver works
        self.calls: list[Call] = []
        self.crash_at: CrashPoint | None = None
        self.fired: Call | None = None  # the call the crash hit
        self.fired_times = 0
        self.dead = False
        self._attached: set[int] = set()

    def attach(self, *clients: Any) -> None:
        for c in clients:
            if id(c) in self._attached:
                continue
            c.meta.events.register("before-call", self._before, unique_id="orbit-crash-matrix-before")
            c.meta.events.register("after-call", self._after, unique_id="orbit-crash-matrix-after")
            self._attached.add(id(c))

    def arm(self, crash_at: CrashPoint | None) -> None:
        self.calls, self.crash_at, self.fired, self.dead, self.handler = [], crash_at, None, False, None
        self.fired_times = 0

    def _before(self, model: Any, params: Any, context: dict[str, Any], **_: Any) -> None:
        if self.handler is None:
            return
        if self.dead:
            raise Crash(f"{self.handler} is dead: no call leaves a crashed process")
        service = model.service_model.service_name
        index = len(self.calls)
        self.calls.append(Call(self.handler, service, model.name, _detail(service, params)))
        context["orbit_crash_index"] = index
        if self._hits(index, "before"):
            self._die(index)

    def _after(self, context: dict[str, Any], **_: Any) -> None:
        index = context.get("orbit_crash_index")
        if self.handler is not None and index is not None and self._hits(index, "after"):
            self._die(index)

    def _hits(self, index: int, variant: str) -> bool:
        at = self.crash_at
        if at is None or at.variant != variant:
            return False
        if self.fired_times == 0:
            return at.index == index
        return at.again and self.fired_times == 1 and index > at.index and self.calls[index] == self.fired

    def _die(self, index: int) -> None:
        self.dead = True
        self.fired = self.calls[index]
        self.fired_times += 1
        raise Crash(f"crash {self.crash_at} at {self.fired}")


def crash_points(reference: list[Call], writes_only: bool = False) -> list[CrashPoint]:
    """Every point of a reference run: reads only `before` (after a read nothing has changed)."""
    out = []
    for i, c in enumerate(reference):
        if writes_only and not c.writes:
            continue
        out += [CrashPoint(i, v) for v in VARIANTS if v == "before" or c.writes]
    return out
