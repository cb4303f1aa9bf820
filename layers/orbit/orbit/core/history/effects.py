"""Effects: what a decision asks the outside world to do, after its commit.

A small closed set of frozen dataclasses. They are stored in the commit (the
history is the outbox), so a redelivered inbound message re-sends exactly the
same effects (same tokens, same idempotency keys).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from orbit.core.history.events import JSON, TaskError
from orbit.core.history.serial import known_fields, lookup, registry, tagged_dict
from orbit.errors import ValidationError


@dataclass(frozen=True)
class Effect:
    KIND: ClassVar[str] = "effect"

    def to_dict(self) -> dict[str, JSON]:
        return tagged_dict(self, "kind", self.KIND)


@dataclass(frozen=True)
class DispatchTask(Effect):
    """Send one attempt to a worker queue. Workers deduplicate on `idempotency_key`."""

    KIND: ClassVar[str] = "dispatch_task"
    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset(
        {"heartbeat_timeout_ms", "inline", "on_missing_worker", "flow_key", "priority"})
    execution_id: str
    unit: str
    task: str
    queue: str
    input: JSON
    attempt: int
    token: str
    idempotency_key: str
    deadline_ms: int | None = None
    redelivery: bool = False
    # The worker reports `started` at once and must call ctx.heartbeat within this period.
    heartbeat_timeout_ms: int | None = None
    # Inline: the decider runs it in its own invocation (never sent to a queue); its semantics.
    inline: str | None = None
    # "fail": a worker that has no function for `task` fails the attempt (UNKNOWN_TASK); None: the
    # message waits in the queue until a worker serves it (worker/sdk.py).
    on_missing_worker: str | None = None
    # Flow control: the key and priority the call gave (None: the declared limit's own).
    flow_key: str | None = None
    priority: int | None = None


@dataclass(frozen=True)
class CancelTask(Effect):
    """Tell the worker running `token` that its result is no longer wanted."""

    KIND: ClassVar[str] = "cancel_task"
    execution_id: str
    unit: str
    token: str
    queue: str


@dataclass(frozen=True)
class ArmTimer(Effect):
    """Wake the execution at `fire_at_ms` (replaces the execution's earlier timer)."""

    KIND: ClassVar[str] = "arm_timer"
    execution_id: str
    fire_at_ms: int


@dataclass(frozen=True)
class StartChild(Effect):
    KIND: ClassVar[str] = "start_child"
    parent_id: str
    unit: str
    child_id: str
    workflow: str
    version: str | None
    input: JSON


@dataclass(frozen=True)
class CancelChild(Effect):
    KIND: ClassVar[str] = "cancel_child"
    child_id: str
    reason: str


@dataclass(frozen=True)
class NotifyParent(Effect):
    """A child ended: tell the parent's unit (`child_done` message)."""

    KIND: ClassVar[str] = "notify_parent"
    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"tag"})
    parent_id: str
    unit: str
    child_id: str
    status: str
    output: JSON = None
    error: TaskError | None = None
    # Set after a redrive (`r<n>`, or the refused redrive request's id): the message id must differ
    # from the notice the parent already handled, or the parent would take it for a redelivery.
    tag: str | None = None

    @property
    def message_id(self) -> str:
        return f"child_done:{self.child_id}" + (f"#{self.tag}" if self.tag else "")


@dataclass(frozen=True)
class RegisterHook(Effect):
    """Make `token` resolvable to (execution, hook name) for `resume_hook`: the token itself
    (older histories) or `sha256:<hex>` of it (orbit.core.history.hook_tokens)."""

    KIND: ClassVar[str] = "register_hook"
    token: str
    execution_id: str
    name: str


@dataclass(frozen=True)
class ContinueExecution(Effect):
    """Start the successor of an execution that continued as new."""

    KIND: ClassVar[str] = "continue_execution"
    execution_id: str
    new_execution_id: str
    workflow: str
    version: str
    input: JSON
    parent: dict[str, str] | None = None  # a child's successor still answers its parent
    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"signals", "idle_hops"})
    signals: list[JSON] | None = None  # unconsumed signals handed over, in arrival order
    idle_hops: int | None = None  # see WorkflowCreated.idle_hops


@dataclass(frozen=True)
class ForwardSignal(Effect):
    """A signal that reached a run after it continued as new goes on to its successor, under the
    same message id (the successor records it once however often it is forwarded)."""

    KIND: ClassVar[str] = "forward_signal"
    execution_id: str
    message_id: str
    name: str
    payload: JSON = None


@dataclass(frozen=True)
class ContinueDecision(Effect):
    """The decision stopped at its budget (rounds or events) with work left: send the execution a
    `wake` message with this id so the next decision goes on where this one stopped. The id is
    the commit's last seq, so a redelivered message re-sends the same continuation, and deciding
    it twice is harmless (a wake with nothing due decides nothing)."""

    KIND: ClassVar[str] = "continue_decision"
    execution_id: str
    message_id: str


@dataclass(frozen=True)
class RedriveChild(Effect):
    """A parent being redriven redrives its failed child (a `redrive` message, id `request_id`)."""

    KIND: ClassVar[str] = "redrive_child"
    parent_id: str
    unit: str
    child_id: str
    request_id: str


@dataclass(frozen=True)
class LinkFork(Effect):
    """A fork started: record the link in the original execution (a `fork_created` message)."""

    KIND: ClassVar[str] = "link_fork"
    execution_id: str
    fork_id: str
    from_step: str


EFFECT_TYPES: dict[str, type[Effect]] = registry(
    "KIND",
    DispatchTask,
    CancelTask,
    ArmTimer,
    StartChild,
    CancelChild,
    NotifyParent,
    RegisterHook,
    ContinueExecution,
    ContinueDecision,
    RedriveChild,
    LinkFork,
    ForwardSignal,
)


def effect_from_dict(d: Any) -> Effect:
    """Inverse of `Effect.to_dict`; raises ValidationError naming what is wrong."""
    if not isinstance(d, dict):
        raise ValidationError("effect must be an object", "effect")
    cls = lookup(EFFECT_TYPES, d, "kind", "effect.kind", what="effect ")
    kwargs = known_fields(cls, d)
    if kwargs.get("error") is not None:
        kwargs["error"] = TaskError.from_dict(kwargs["error"])
    try:
        return cls(**kwargs)
    except TypeError as e:
        raise ValidationError(f"{cls.KIND}: {e}", "effect") from None
