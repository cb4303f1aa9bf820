"""The queue bodies that are not an execution's message: flow control's own (`FlowComeBack`, told by
`FLOW_KEY`), a trigger buffer's check, a trigger's dead letter, and the task queues' bodies
(`TaskDispatch`, `TaskCancel`, read with `task_message_from_dict`). Like the execution messages
(messages.py) each is built with `<Class>(...).to_dict()`: tests/unit/test_queue_bodies.py checks that
no module builds one by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar

from orbit.core.history.effects import CancelTask, DispatchTask
from orbit.core.history.events import JSON
from orbit.core.history.serial import known_fields
from orbit.errors import ValidationError

FLOW_KEY = "orbit_flow"  # a decision-queue body that is flow control's own, not an execution's


@dataclass(frozen=True)
class FlowComeBack:
    """Flow control's own decision-queue body (service/limits.py): `send`, a start or an attempt held
    back by a limit, comes back at `at_ms` (a start to be decided, a task to be sent). It has no
    `kind`: the engine tells it by its `FLOW_KEY` (`{"orbit_flow": "admit", "at_ms", "send"}`)."""

    at_ms: int
    send: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {FLOW_KEY: "admit", "at_ms": self.at_ms, "send": self.send}

    @classmethod
    def from_dict(cls, body: dict[str, Any]) -> FlowComeBack | None:
        """The body's fields, or None when it carries no `send` to act on."""
        send = body.get("send")
        at = body.get("at_ms")
        return cls(at if isinstance(at, int) else 0, send) if isinstance(send, dict) else None


@dataclass(frozen=True)
class BufferCheck:
    """A trigger buffer's check (service/trigger_buffers.py): a delayed message on the trigger queue
    (adapters/sqs_trigger_checks.py wraps it as `{"orbit_buffer": ...}`) that flushes generation
    `gen` of the buffer of (`workflow`, `trigger`, `key`) once `at` is reached."""

    workflow: str
    trigger: str
    key: str
    gen: int
    at: int = 0

    def to_dict(self) -> dict[str, JSON]:
        return {"workflow": self.workflow, "trigger": self.trigger, "key": self.key, "gen": self.gen,
                "at": self.at}

    @classmethod
    def from_dict(cls, d: Any) -> BufferCheck:
        if not isinstance(d, dict):
            raise ValidationError("a buffer check must be a JSON object", "orbit_buffer")
        for k in ("workflow", "trigger", "key"):
            if not isinstance(d.get(k), str):
                raise ValidationError(f"a buffer check needs a string `{k}`", f"orbit_buffer.{k}")
        for k in ("gen", "at"):
            if not isinstance(d.get(k, 0), int) or isinstance(d.get(k), bool):
                raise ValidationError(f"a buffer check's `{k}` must be an integer", f"orbit_buffer.{k}")
        return cls(d["workflow"], d["trigger"], d["key"], d.get("gen", 0), d.get("at", 0))

    def due(self, at: int) -> BufferCheck:
        return replace(self, at=at)


@dataclass(frozen=True)
class TriggerDeadLetter:
    """What a trigger's dead-letter queue receives (service/triggers.py): enough to see why and to
    send the event again."""

    workflow: str
    trigger: str
    reason: str
    event: JSON

    def to_dict(self) -> dict[str, JSON]:
        return {"workflow": self.workflow, "trigger": self.trigger, "reason": self.reason,
                "event": self.event}


# ------------------------------------------------------------------ the task queues' bodies
@dataclass(frozen=True)
class TaskDispatch(DispatchTask):
    """A worker queue's body: one attempt to run (the commit's `DispatchTask` effect, field for field)
    and what the sending adds: `resent` (a copy re-sent from the commit log: the first may have run,
    worker/dedupe.py) and `waiting_for_worker` (how often it came back to its queue unserved,
    worker/sdk.py)."""

    OMIT_IF_NONE: ClassVar[frozenset[str]] = DispatchTask.OMIT_IF_NONE | {"resent", "waiting_for_worker"}
    resent: bool | None = None  # True, or left out
    waiting_for_worker: int | None = None

    @classmethod
    def of(cls, d: DispatchTask, resent: bool = False) -> TaskDispatch:
        return cls(**{f.name: getattr(d, f.name) for f in fields(DispatchTask)}, resent=resent or None)


@dataclass(frozen=True)
class TaskCancel(CancelTask):
    """A worker queue's body: the result of attempt `token` is no longer wanted."""

    @classmethod
    def of(cls, c: CancelTask) -> TaskCancel:
        return cls(**{f.name: getattr(c, f.name) for f in fields(CancelTask)})


def task_message_from_dict(d: Any) -> TaskDispatch | TaskCancel:
    """A worker queue's body; ValidationError names what is wrong."""
    if not isinstance(d, dict):
        raise ValidationError("a task message must be a JSON object", "message")
    kind = d.get("kind")
    cls = TaskDispatch if kind == TaskDispatch.KIND else TaskCancel if kind == TaskCancel.KIND else None
    if cls is None:
        raise ValidationError(f"a worker queue carries dispatch_task/cancel_task, not {kind!r}",
                              "message.kind")
    kwargs = known_fields(cls, d)
    if "resent" in kwargs:
        kwargs["resent"] = kwargs["resent"] is True or None  # only the decider's own mark counts
    waiting = kwargs.get("waiting_for_worker")
    if waiting is not None and (not isinstance(waiting, int) or isinstance(waiting, bool)):
        kwargs["waiting_for_worker"] = None
    try:
        return cls(**kwargs)
    except TypeError as e:
        raise ValidationError(f"{cls.KIND}: {e}", "message") from None
