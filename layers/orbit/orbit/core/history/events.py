"""History events: immutable data with a stable JSON form.

One frozen dataclass per event type; the class name is the `type` in JSON.
`Recorded` wraps an event with its `seq` and commit time. Field names follow
`shared/reference/orbit_runtime-model.rs.txt`; every event touching a unit
names it `step` (a unit key: `step`, `step[i]` or `compensate:step`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

from orbit.core.history.event_base import Event, event
from orbit.core.history.serial import known_fields
from orbit.core.history.task_error import (  # noqa: F401  (re-export: events.py was TaskError's home)
    ADAPTER_DISABLED,
    CANCELLED,
    EXPRESSION_ERROR,
    HEARTBEAT_TIMEOUT,
    HTTP_ERROR,
    INPUT_CONTRACT_VIOLATION,
    JSON,
    OUTPUT_CONTRACT_VIOLATION,
    QUEUE_TIMEOUT,
    RUNTIME_CODES,
    TIMEOUT,
    WORKFLOW_TIMEOUT,
    TaskError,
)
from orbit.core.history.task_error import error_or_none as _error_or_none
from orbit.errors import OrbitError, ValidationError  # noqa: F401  (re-exported, as before the split)


@event
class WorkflowCreated(Event):
    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset(
        {"continued_from", "idle_hops", "provisional_expiry_s"})
    workflow: str
    version: str
    definition_hash: str
    input: JSON = None
    parent: dict[str, str] | None = None  # {"execution_id", "step"} for child executions
    build: str = ""  # the pinned build: code build id or definition hash
    execution_id: str = ""
    continued_from: str | None = None  # the run that continued as new into this one
    # How many runs before this one in a row continued as new without a durable call.
    idle_hops: int | None = None
    # The expiry (epoch s) every item of the execution is written with while it is young (write-time
    # expiry, orbit/core/definition/retention.py); the start's own commit carries it. None in
    # histories recorded before it was kept: those also fold no `timer_free` (state.py).
    provisional_expiry_s: int | None = None


@event
class WorkflowStarted(Event):
    deadline_ms: int | None = None  # whole-execution timeout -> WORKFLOW_TIMEOUT


@event
class StepFanOut(Event):
    step: str
    items: list[JSON] = field(default_factory=list)


@event
class StepScheduled(Event):
    """A unit attempt is queued for a worker (kind task/http) with a fresh `token`."""

    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset(
        {"heartbeat_timeout_ms", "inline", "on_missing_worker", "flow_key", "priority"})
    step: str
    attempt: int
    input: JSON = None
    idempotency_key: str = ""
    redelivery: bool = False
    token: str = ""
    kind: str = "task"
    task: str = ""
    queue: str = ""
    retry: dict[str, JSON] | None = None
    timeout_ms: int | None = None
    queue_timeout_ms: int | None = None
    deadline_ms: int | None = None  # queue deadline, else the attempt timeout counted from now
    on_exhausted: str = "fail_run"
    compensable: bool = False
    # Once started, the attempt fails with HEARTBEAT_TIMEOUT after this long without a heartbeat.
    heartbeat_timeout_ms: int | None = None
    # An inline step (run in the decider's invocation): its semantics, at_least_once | at_most_once.
    inline: str | None = None
    # "fail": a worker that does not serve the task fails the attempt; None: it waits in its queue.
    on_missing_worker: str | None = None
    # The call's flow-control key and priority (ctx.step(key=, priority=); a state's `flow:`).
    flow_key: str | None = None
    priority: int | None = None


@event
class StepSkipped(Event):
    step: str
    reason: str = ""


@event
class StepDispatched(Event):
    """A worker took the attempt (`started` message)."""

    step: str
    attempt: int
    token: str
    worker_id: str = ""
    worker_session: str = ""
    deadline_ms: int | None = None


@event
class StepHeartbeat(Event):
    step: str
    token: str
    details: JSON = None


@event
class StepSucceeded(Event):
    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"reconciled_attempt"})
    step: str
    attempt: int = 1
    output: JSON = None
    # Reconciliation (docs/definitions.md): the unit was resolved by the late success of this
    # earlier attempt, whose token it had issued, while `attempt` was waiting to retry or running.
    # None (and absent from the JSON) for the live attempt's own result and in every older history.
    reconciled_attempt: int | None = None


@event
class StepAttemptFailed(Event):
    step: str
    attempt: int
    error: TaskError


@event
class StepAttemptUncertain(Event):
    step: str
    attempt: int
    reason: str = ""


@event
class RetryScheduled(Event):
    step: str
    next_attempt: int
    delay_ms: int
    fire_at_ms: int


@event
class StepFailed(Event):
    """The unit ended failed. `fatal` False: on_failure continue / fan-out element."""

    step: str
    error: TaskError
    fatal: bool = True


@event
class StepCancelled(Event):
    step: str
    reason: str = ""


@event
class TimerStarted(Event):
    step: str
    fire_at_ms: int


@event
class TimerFired(Event):
    step: str


@event
class StaleResultIgnored(Event):
    step: str
    token: str
    outcome: str


@event
class CancelRequested(Event):
    reason: str = ""
    force: bool = False


@event
class FailRequested(Event):
    """The runtime failed the workflow (not a step): e.g. output contract, code raised."""

    error: TaskError


@event
class WorkflowTimeoutReached(Event):
    """The execution passed its deadline (`deadline_ms`: the whole-execution timeout, or the one a
    code workflow's `Timeout` named; `reason` when the workflow gave one)."""

    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"deadline_ms", "reason"})
    deadline_ms: int | None = None
    reason: str | None = None


@event
class CompensationStarted(Event):
    reason: str
    steps: list[str] = field(default_factory=list)  # in the order they will run


@event
class CompensationCompleted(Event):
    pass


@event
class CompensationFailed(Event):
    step: str
    error: TaskError


@event
class WorkflowCompleted(Event):
    output: JSON = None


@event
class WorkflowFailed(Event):
    error: TaskError
    compensation: str = "none"  # none | completed | failed


@event
class WorkflowCancelled(Event):
    reason: str = ""
    compensation: str = "none"


@event
class WorkflowTimedOut(Event):
    compensation: str = "none"


@event
class SignalReceived(Event):
    name: str
    payload: JSON = None
    signal_id: str = ""


@event
class SignalConsumed(Event):
    """A buffered signal (or hook payload) was handed to the waiting unit `step`."""

    step: str
    name: str
    signal_id: str = ""


@event
class UpdateAccepted(Event):
    """An update passed its validator and was recorded (docs/updates.md); it runs next."""

    update_id: str
    name: str
    input: JSON = None


@event
class UpdateCompleted(Event):
    """The update's handler ran (code: at durable-call `position`; a definition: its `wait_for`
    step `step` consumed it) with `result`, or failed with `error`."""

    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"error", "step"})
    update_id: str
    position: int = 0
    result: JSON = None
    error: TaskError | None = None
    step: str | None = None


@event
class HookCreated(Event):
    """`token` in histories written without a stack key; otherwise only `token_sha256`
    (orbit.core.history.hook_tokens): the token is derived again, never stored. `metadata`: what
    the code attached (ctx.hook_token(name, metadata=...)), shown by describe."""

    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"token", "token_sha256", "metadata"})
    name: str
    token: str | None = None
    token_sha256: str | None = None
    metadata: JSON = None


@event
class HookDisposed(Event):
    """The code disposed of the hook: its token resumes nothing any more."""

    name: str


@event
class HookResumed(Event):
    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"token", "token_sha256"})
    name: str
    token: str | None = None
    payload: JSON = None
    token_sha256: str | None = None


@event
class WaitStarted(Event):
    step: str
    signal: str
    deadline_ms: int | None = None
    on_exhausted: str = "fail_run"


@event
class ChildStarted(Event):
    step: str
    child_id: str
    workflow: str
    version: str | None = None
    input: JSON = None
    on_exhausted: str = "fail_run"


@event
class ProgressRecorded(Event):
    data: JSON = None


@event
class WorkflowContinuedAsNew(Event):
    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"signals"})
    input: JSON = None
    new_execution_id: str = ""
    # Signals (and hook payloads) received and not consumed, in arrival order, handed to the
    # successor: [{"name", "payload", "signal_id"}].
    signals: list[JSON] | None = None


@event
class ExecutionParked(Event):
    """Replay cannot go on (non-determinism, build mismatch). The engine tries again on every
    decision and, by itself, at `retry_at_ms` (backing off); `orbit unpark` tries at once."""

    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"retry_at_ms"})
    error: TaskError
    retry_at_ms: int | None = None


# -- safe deploys (replay on the deployed build) -------------------------------------------------


@event
class BuildSwitched(Event):
    """The pinned build was not deployed; the history replayed cleanly on `to_build`, which the
    execution runs on from here."""

    from_build: str
    to_build: str


@event
class ExecutionUnparked(Event):
    """A parked execution replays cleanly again (on `build`) and goes on deciding."""

    build: str = ""
    reason: str = ""


@event
class ExecutionPaused(Event):
    """`orbit pause`: the execution dispatches nothing new and fires no timer until it is un-paused;
    results, signals, updates and hook resumes that arrive meanwhile are recorded."""

    reason: str = ""


@event
class ExecutionUnpaused(Event):
    """`orbit unpause` (or a cancel, which is not held by a pause): everything due runs."""

    reason: str = ""


@event
class PatchMarked(Event):
    """`ctx.patched(change_id)` was reached on code that has the change (durable call `position`)."""

    change_id: str
    position: int = 0


@event
class ExecutionRedriven(Event):
    """A FAILED or TIMED_OUT execution goes on where it stopped (`orbit redrive`), same id and input.

    `steps`: the units that run again with a fresh retry budget (failed, timed-out, cancelled;
    a `for` step's unfinished elements); `children`: child executions redriven with it (their
    units wait for them again); `deadline_ms`: the new whole-execution deadline, if it has one."""

    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"deadline_ms"})
    redrive_count: int
    steps: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    deadline_ms: int | None = None
    request_id: str = ""


@event
class AttributesSet(Event):
    """The execution's search attributes changed (`ctx.set_attributes`, a definition's `attributes:`):
    `values` holds the keys that changed with their new values (orbit/core/history/attributes.py)."""

    values: dict[str, JSON] = field(default_factory=dict)


@event
class ExecutionForked(Event):
    """This execution is a fork (`orbit fork`): it reuses `units` (key -> recorded unit: kind,
    task, output, ...) that completed in `from_execution` before `from_step`."""

    from_execution: str
    from_step: str
    units: dict[str, JSON] = field(default_factory=dict)


@event
class ForkCreated(Event):
    """A fork of this execution was started from `from_step` under `fork_id`."""

    fork_id: str
    from_step: str = ""


@event
class HandlerStarted(Event):
    """An `on_signal` instance started for one arrival of signal `signal`: unit `step` is
    `on_signal:<signal>@<signal_seq>` (`signal_seq`: the seq of the arrival's SignalReceived or
    HookResumed), its input the payload; the buffered arrival is consumed."""

    step: str
    signal: str
    signal_seq: int
    signal_id: str = ""
    payload: JSON = None


@dataclass(frozen=True)
class UnknownEvent(Event):
    """An event type this code does not know; kept verbatim, ignored by `apply`."""

    data: dict[str, JSON] = field(default_factory=dict)

    @property
    def type(self) -> str:
        return str(self.data.get("type", "Unknown"))

    def to_dict(self) -> dict[str, JSON]:
        return dict(self.data)


def event_from_dict(d: Any) -> Event:
    """Inverse of `Event.to_dict`: unknown keys ignored, unknown type -> UnknownEvent.

    Raises ValidationError when a known type lacks a required field or has a malformed error.
    """
    if not isinstance(d, dict):
        raise ValidationError("event must be an object", "event")
    cls = EVENT_TYPES.get(d.get("type"))  # type: ignore[arg-type]
    if cls is None:
        return UnknownEvent(dict(d))
    kwargs = known_fields(cls, d)
    for name in cls._ERRORS:
        if name in kwargs:
            kwargs[name] = _error_or_none(kwargs[name])
    try:
        return cls(**kwargs)
    except TypeError as e:
        raise ValidationError(f"{d.get('type')}: {e}", "event") from None


@dataclass(frozen=True)
class Recorded:
    """An event at its place in history."""

    seq: int
    timestamp_ms: int
    event: Event

    def to_dict(self) -> dict[str, JSON]:
        return {"seq": self.seq, "timestamp_ms": self.timestamp_ms, **self.event.to_dict()}


def recorded_from_dict(d: Any) -> Recorded:
    if not isinstance(d, dict) or not all(isinstance(d.get(k), int) for k in ("seq", "timestamp_ms")):
        raise ValidationError("recorded event needs integer `seq` and `timestamp_ms`", "event")
    body = {k: v for k, v in d.items() if k not in ("seq", "timestamp_ms")}
    return Recorded(d["seq"], d["timestamp_ms"], event_from_dict(body))


def _made_by_event(base: type[Event]) -> dict[str, type[Event]]:
    out: dict[str, type[Event]] = {}
    for cls in base.__subclasses__():
        if cls.__dict__.get("TYPE") == cls.__name__:
            out[cls.__name__] = cls
        out.update(_made_by_event(cls))
    return out


# A durable function's events (the Lambda durable execution API) are events too: defined before the
# table is made, so a history read back from the store decodes them.
from orbit.core.history import durable_events as _durable_events  # noqa: E402,F401

EVENT_TYPES: Mapping[str, type[Event]] = MappingProxyType(_made_by_event(Event))  # every event class, by name
