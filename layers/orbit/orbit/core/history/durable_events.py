"""The history events of a durable function: an execution written with AWS's durable execution
SDK (the Lambda durable execution API, 2025-12-01) and run by Orbit.

Each is an Orbit event on the execution's own history (so `describe`, the timeline, retention and
the crash matrix see it); `orbit.core.history.durable` folds them into a `DurableState`, and the
generic fold (`evolve/durable.py`) into the `ExecutionState` every Orbit tool reads.

Operations and Lambda events are kept in the API's own JSON shape (`Operation`, `Event` of the
Lambda service model), timestamps as epoch milliseconds: the HTTP layer converts them to the
wire's epoch seconds. `lambda_event` carries no `EventId`: the fold numbers events in order.
"""

from __future__ import annotations

from typing import ClassVar, TypeVar, dataclass_transform

from orbit.core.history.event_base import Event, event
from orbit.core.history.task_error import JSON

_D = TypeVar("_D", bound=Event)


@dataclass_transform(frozen_default=True)
def durable_event(cls: type[_D]) -> type[_D]:
    """An event of the durable execution API: its `error` is Lambda's ErrorObject as the SDK sent it
    (ErrorType, ErrorMessage, ...), kept as it is, not read as Orbit's TaskError."""
    cls = event(cls)
    cls._ERRORS = ()
    return cls


@durable_event
class DurableStarted(Event):
    """An Invoke created the execution. `input` is the payload as JSON text (None: empty)."""

    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"parent"})
    function: str
    arn: str
    name: str
    input: str | None = None
    timeout_s: int = 86_400
    # a chained invoke's child: {"arn": parent execution arn, "operation": the CHAINED_INVOKE id}
    parent: dict[str, str] | None = None


@durable_event
class DurableOperationRecorded(Event):
    """One operation changed: `operation` is its whole new record, `lambda_event` the history
    event the change shows as (None: a change with no event of its own, e.g. a retry now due)."""

    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"lambda_event", "wakes"})
    operation: dict[str, JSON]
    lambda_event: dict[str, JSON] | None = None
    # True: Orbit changed it behind the handler's back (a wait elapsed, a callback answered, a
    # retry fell due): the handler is invoked again to replay with it
    wakes: bool | None = None


@durable_event
class DurableCheckpointed(Event):
    """A checkpoint was accepted: the token it returned and the caller's ClientToken, if any."""

    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"client_token"})
    token: str
    client_token: str | None = None
    operations: list[str] | None = None  # the ids it changed (its answer lists them again)


@durable_event
class DurableInvocationStarted(Event):
    """Orbit invoked the handler (the first time or to replay); its first checkpoint token."""

    request_id: str
    token: str


@durable_event
class DurableInvocationCompleted(Event):
    """The handler returned (or failed): `status` SUCCEEDED | FAILED | PENDING as it answered."""

    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"error"})
    request_id: str
    start_ms: int
    status: str
    error: dict[str, JSON] | None = None


@durable_event
class DurableEnded(Event):
    """The execution ended: SUCCEEDED | FAILED | STOPPED | TIMED_OUT, its result (JSON text) or error."""

    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"result", "error"})
    status: str
    result: str | None = None
    error: dict[str, JSON] | None = None
