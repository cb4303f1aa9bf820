"""The decision queue's execution messages, one class each (the other queue bodies: queue_bodies.py).

JSON objects `{"kind", "execution_id", "id", ...}`. `id` is unique per logical
message and survives redelivery, which is how the service recognises a
message it already committed (`state.inbound`). A sender builds a body with
`<Class>(...).to_dict()` and a receiver reads it with `message_from_dict` (an execution's
messages), `Bundle.from_dict` or `ScheduleFire.from_dict`; `tests/unit/test_queue_bodies.py`
checks that no module builds one by hand and that the bodies already on queues still parse. Two
keys ride beside the fields, outside any class: the trace header (`core.tracing.BODY_KEY`, carried
as an SQS message attribute) and `sent_at_ms` (stamped by the `Queues` adapter).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from orbit.core.history.events import JSON, TaskError
from orbit.core.history.serial import known_fields, lookup, registry, tagged_dict
from orbit.errors import Problem, ValidationError

_ANY = object()  # marker: any JSON value
M = TypeVar("M", bound="Message")


@dataclass(frozen=True)
class Message:
    KIND: ClassVar[str] = "message"
    # field -> (expected python type(s) or _ANY, required)
    SPEC: ClassVar[dict[str, tuple[Any, bool]]] = {}
    BASE_SPEC: ClassVar[dict[str, tuple[Any, bool]]] = {"execution_id": (str, True), "id": (str, True)}
    execution_id: str
    id: str

    def to_dict(self) -> dict[str, JSON]:
        return tagged_dict(self, "kind", self.KIND)

    @classmethod
    def from_dict(cls: type[M], d: Any) -> M:
        """A body of this class's kind, checked field by field (ValidationError names each bad one)."""
        if not isinstance(d, dict):
            raise ValidationError("message must be a JSON object", "message")
        if d.get("kind") != cls.KIND:
            raise ValidationError(f"expected kind {cls.KIND!r}, not {d.get('kind')!r}", "message.kind")
        return _checked(cls, d)


@dataclass(frozen=True)
class StartMessage(Message):
    KIND: ClassVar[str] = "start"
    SPEC: ClassVar[dict[str, tuple[Any, bool]]] = {
        "workflow": (str, True),
        "version": ((str, type(None)), False),
        "input": (_ANY, False),
        "parent": ((dict, type(None)), False),
        "fork": ((dict, type(None)), False),
        "continued_from": ((str, type(None)), False),
        "signals": ((list, type(None)), False),
        "idle_hops": ((int, type(None)), False),
        "priority": ((int, type(None)), False),
    }
    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"fork", "continued_from", "signals", "idle_hops",
                                                        "priority"})
    workflow: str = ""
    version: str | None = None
    input: JSON = None
    parent: dict[str, str] | None = None  # {"execution_id", "step"}
    # A fork (orbit fork): {"execution_id", "step", "units": {key: recorded unit}} reused from the original.
    fork: dict[str, JSON] | None = None
    # Set when the previous run continued as new: its id, the signals it had not consumed
    # (`[{"name", "payload", "signal_id"}]`, in arrival order) and its idle-hop count.
    continued_from: str | None = None
    signals: list[JSON] | None = None
    idle_hops: int | None = None
    # The start's own priority 1..5 in its workflow's flow-control lines (None: the declared one).
    priority: int | None = None


@dataclass(frozen=True)
class StartedMessage(Message):
    """A worker took a task: records StepDispatched."""

    KIND: ClassVar[str] = "started"
    SPEC: ClassVar[dict[str, tuple[Any, bool]]] = {
        "unit": (str, True),
        "token": (str, True),
        "worker_id": (str, False),
        "worker_session": (str, False),
    }
    unit: str = ""
    token: str = ""
    worker_id: str = ""
    worker_session: str = ""


@dataclass(frozen=True)
class ResultMessage(Message):
    """A worker's answer: `output`, or `error` (a TaskError) when it failed."""

    KIND: ClassVar[str] = "result"
    SPEC: ClassVar[dict[str, tuple[Any, bool]]] = {
        "unit": (str, True),
        "token": (str, True),
        "output": (_ANY, False),
        "error": ((dict, type(None)), False),
    }
    unit: str = ""
    token: str = ""
    output: JSON = None
    error: TaskError | None = None

    def to_dict(self) -> dict[str, JSON]:
        """`output`, or `error` when the attempt failed: never both (the worker's form since 1.0)."""
        d = super().to_dict()
        del d["output" if self.error is not None else "error"]
        return d


@dataclass(frozen=True)
class HeartbeatMessage(Message):
    KIND: ClassVar[str] = "heartbeat"
    SPEC: ClassVar[dict[str, tuple[Any, bool]]] = {
        "unit": (str, True),
        "token": (str, True),
        "details": (_ANY, False),
    }
    unit: str = ""
    token: str = ""
    details: JSON = None


@dataclass(frozen=True)
class SignalMessage(Message):
    KIND: ClassVar[str] = "signal"
    SPEC: ClassVar[dict[str, tuple[Any, bool]]] = {"name": (str, True), "payload": (_ANY, False)}
    name: str = ""
    payload: JSON = None


@dataclass(frozen=True)
class HookMessage(Message):
    """A hook resume. The API sends the token's SHA-256 (`token_sha256`): the token itself is a
    credential and never rides the queue. Messages sent before carry `token`."""

    KIND: ClassVar[str] = "hook"
    SPEC: ClassVar[dict[str, tuple[Any, bool]]] = {
        "token": (str, False), "payload": (_ANY, False), "token_sha256": (str, False)}
    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"token_sha256"})
    token: str = ""
    payload: JSON = None
    token_sha256: str | None = None


@dataclass(frozen=True)
class CancelMessage(Message):
    """Cancel an execution. `parent_id` is set when a parent cancels its child (CancelChild):
    such a cancel may overtake the child's `start` on the standard queue, so it is recorded
    even before the child exists, and the start honours it (see `decider.decide`)."""

    KIND: ClassVar[str] = "cancel"
    SPEC: ClassVar[dict[str, tuple[Any, bool]]] = {
        "reason": (str, False),
        "force": (bool, False),
        "parent_id": ((str, type(None)), False),
    }
    reason: str = ""
    force: bool = False
    parent_id: str | None = None


@dataclass(frozen=True)
class WakeMessage(Message):
    """A timer came due (sleep, retry backoff, attempt/queue/workflow deadline)."""

    KIND: ClassVar[str] = "wake"


@dataclass(frozen=True)
class UnparkMessage(Message):
    """`orbit unpark`: try a parked execution again now, on the build this decider holds."""

    KIND: ClassVar[str] = "unpark"


@dataclass(frozen=True)
class PauseMessage(Message):
    """`orbit pause`: dispatch nothing new and fire no timer until `orbit unpause`."""

    KIND: ClassVar[str] = "pause"
    SPEC: ClassVar[dict[str, tuple[Any, bool]]] = {"reason": (str, False)}
    reason: str = ""


@dataclass(frozen=True)
class UnpauseMessage(Message):
    """`orbit unpause`: everything that came due while paused runs now."""

    KIND: ClassVar[str] = "unpause"
    SPEC: ClassVar[dict[str, tuple[Any, bool]]] = {"reason": (str, False)}
    reason: str = ""


@dataclass(frozen=True)
class ChildDoneMessage(Message):
    KIND: ClassVar[str] = "child_done"
    SPEC: ClassVar[dict[str, tuple[Any, bool]]] = {
        "unit": (str, True),
        "child_id": (str, True),
        "status": (str, True),
        "output": (_ANY, False),
        "error": ((dict, type(None)), False),
    }
    unit: str = ""
    child_id: str = ""
    status: str = ""
    output: JSON = None
    error: TaskError | None = None


@dataclass(frozen=True)
class RedriveMessage(Message):
    """Continue a FAILED or TIMED_OUT execution (orbit redrive). `parent_id` is set when a parent
    that is being redriven redrives this child: the child then answers with a `child_done` even
    when it cannot go on, so the parent's unit never waits for nothing."""

    KIND: ClassVar[str] = "redrive"
    SPEC: ClassVar[dict[str, tuple[Any, bool]]] = {"parent_id": ((str, type(None)), False),
                                                   "unit": (str, False)}
    parent_id: str | None = None
    unit: str = ""  # the parent's unit that waits for this child


@dataclass(frozen=True)
class ForkCreatedMessage(Message):
    """A fork of this execution started (sent by the fork's first commit): record the link."""

    KIND: ClassVar[str] = "fork_created"
    SPEC: ClassVar[dict[str, tuple[Any, bool]]] = {"fork_id": (str, True), "from_step": (str, False)}
    fork_id: str = ""
    from_step: str = ""


@dataclass(frozen=True)
class UpdateMessage(Message):
    """A validated update (docs/updates.md); its id is `update:<update_id>`."""

    KIND: ClassVar[str] = "update"
    SPEC: ClassVar[dict[str, tuple[Any, bool]]] = {"update_id": (str, True), "name": (str, True),
                                                   "input": (_ANY, False)}
    update_id: str = ""
    name: str = ""
    input: JSON = None


@dataclass(frozen=True)
class Bundle(Message):
    """Several messages of one execution as one decision-queue body (adapters/sqs.py `bundle`): they
    reach the decider together, one decision and one commit."""

    KIND: ClassVar[str] = "bundle"
    SPEC: ClassVar[dict[str, tuple[Any, bool]]] = {"messages": (list, True)}
    messages: list[dict[str, JSON]] | None = None

    @classmethod
    def from_dict(cls, d: Any) -> Bundle:
        b = super().from_dict(d)
        if not b.messages or not all(isinstance(m, dict) for m in b.messages):
            raise ValidationError("a bundle needs `messages`, a non-empty list of objects",
                                  "message.messages")
        return b


@dataclass(frozen=True)
class ScheduleFire(Message):
    """A schedule's clock fired (EventBridge Scheduler, or the local stack's): the schedule service
    takes it, not an execution (service/schedules.py). `execution_id` is `schedule:<id>`, `id`
    `schedule_fire:<id>:<fire_at_ms>`; bodies written by hand may lack both, or `fire_at_ms`."""

    KIND: ClassVar[str] = "schedule_fire"
    BASE_SPEC: ClassVar[dict[str, tuple[Any, bool]]] = {"execution_id": (str, False), "id": (str, False)}
    SPEC: ClassVar[dict[str, tuple[Any, bool]]] = {"schedule_id": (str, False),
                                                   "fire_at_ms": ((int, type(None)), False)}
    schedule_id: str = ""
    fire_at_ms: int | None = None


@dataclass(frozen=True)
class BatchPage(Message):
    """One page of a bulk action (service/batches.py): the batch service takes it, not an execution.
    `execution_id` is `batch:<id>`, `id` `batch_page:<id>:<page>`."""

    KIND: ClassVar[str] = "batch_page"
    SPEC: ClassVar[dict[str, tuple[Any, bool]]] = {"batch_id": (str, True), "page": (int, True)}
    batch_id: str = ""
    page: int = 0

    @classmethod
    def of(cls, batch_id: str, page: int) -> BatchPage:
        return cls(f"batch:{batch_id}", f"{cls.KIND}:{batch_id}:{page}", batch_id, page)


MESSAGE_TYPES: dict[str, type[Message]] = registry(
    "KIND",
    StartMessage,
    StartedMessage,
    ResultMessage,
    HeartbeatMessage,
    SignalMessage,
    HookMessage,
    CancelMessage,
    WakeMessage,
    ChildDoneMessage,
    RedriveMessage,
    ForkCreatedMessage,
    UnparkMessage,
    UpdateMessage,
    PauseMessage,
    UnpauseMessage,
)


def message_from_dict(d: Any) -> Message:
    """Validate and build an execution's message; ValidationError lists every bad field by name."""
    if not isinstance(d, dict):
        raise ValidationError("message must be a JSON object", "message")
    return _checked(lookup(MESSAGE_TYPES, d, "kind", "message.kind", list_known=True), d)


def _checked(cls: type[M], d: dict[str, Any]) -> M:
    problems: list[Problem] = []
    spec = {**cls.BASE_SPEC, **cls.SPEC}
    for name, (typ, required) in spec.items():
        if name not in d or (d[name] is None and required):
            if required:
                problems.append(Problem(f"message.{name}", "is required"))
            continue
        if typ is not _ANY and not isinstance(d[name], typ):
            problems.append(Problem(f"message.{name}", f"has the wrong type ({type(d[name]).__name__})"))
        elif typ is str and required and not d[name]:
            problems.append(Problem(f"message.{name}", "must not be empty"))
    kwargs = known_fields(cls, d)
    if not problems and kwargs.get("error") is not None:
        try:
            kwargs["error"] = TaskError.from_dict(kwargs["error"])
        except ValidationError:
            problems.append(Problem("message.error", "must be {code, message, retryable, details}"))
    if problems:
        raise ValidationError(problems)
    for name, (_, required) in cls.BASE_SPEC.items():
        if not required and not isinstance(kwargs.get(name), str):
            kwargs[name] = ""
    return cls(**kwargs)
