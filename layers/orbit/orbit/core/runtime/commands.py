"""The command contract between a runtime and the engine.

A runtime (the DSL interpreter `runtime/dsl/interpreter.py`, the Python replayer
`runtime/code/replayer.py`) looks at an execution's state and says what should happen
next as **commands** (imperative; the engine records the resulting events,
past tense). The engine (`orbit.core.decider.decide`) owns unit life cycles: attempts,
tokens, idempotency keys, retries, timeouts, stale results, cancellation,
compensation and the workflow timeout.

How the engine drives a runtime (the fixpoint):
1. it applies the events caused by the inbound message to the state;
2. it calls `runtime.run(workflow, state, now_ms)`, turns every command into
   events, applies them, and calls `run` again, until a call produces no new
   event. `run` must therefore be idempotent: it describes what *should* exist
   given `state`; a command for something that already exists (a unit that is
   already scheduled, a hook already created) is ignored by the engine.
3. `run` is called in every status. While `state.abort` is set the engine
   ignores everything but compensation commands and final commands. While
   `state.status == "COMPENSATING"`, the runtime must answer for the unit
   `compensate:<state.next_compensation()>` with a ScheduleStep / LinkChild /
   RecordResult / FailStep for that unit key; the engine runs compensations
   one at a time in the order of `CompensationStarted.steps`.
4. A runtime never raises for workflow-level problems: it returns `Fail(...)`,
   `FailStep(...)` or `Park(...)`.

A workflow object handed to the engine is either a DSL `Definition` or any
object with `name`, `version`, `build` (str) and `runtime` (a `Runtime`);
optional `timeout_ms` (int | None) and `signals` (names whose hook tokens are
created at start).

Changes to this module are additive only: other helpers code against it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from orbit.core.history.events import JSON, TaskError
from orbit.core.history.storable import VALUE_NOT_STORABLE, value_problem

FAIL_RUN = "fail_run"
CONTINUE_WORKFLOW = "continue_workflow"
# Elements one `for` step (or `ctx.map`) may fan out to (docs/limits.md): each is a unit in the state
# and a few events in history; a million took 177 s and 2.4 GB to start. Past it the step fails.
MAX_FOR_ITEMS = 10_000
TOO_MANY_ITEMS = "TOO_MANY_ITEMS"


def too_many_items(unit: str, what: str, count: int) -> TaskError:
    return TaskError(TOO_MANY_ITEMS, f"{unit}.{what}: gave {count} items, more than the limit of "
                                     f"{MAX_FOR_ITEMS} elements a step may fan out to; give each element a "
                                     "batch of items, or a child workflow a slice", retryable=False)


@dataclass(frozen=True)
class RetryPolicy:
    """Retry of one unit. `max_attempts` counts the first attempt.

    Delay before attempt n+1 = min(backoff_ms * multiplier**(n-1), max_backoff_ms);
    jitter "full" replaces it by a deterministic draw in [0, delay].
    """

    max_attempts: int = 1
    backoff_ms: int = 1000
    multiplier: float = 2.0
    max_backoff_ms: int | None = None
    jitter: str = "none"  # none | full
    non_retryable: tuple[str, ...] = ()
    # Codes retried although the error says it is not (a worker's flag, OUTPUT_CONTRACT_VIOLATION);
    # recorded only when given, so the policies of every other step keep their recorded shape.
    retry_on: tuple[str, ...] = ()

    @classmethod
    def of(cls, obj: Any) -> RetryPolicy:
        """Accept a RetryPolicy, any object with the same attributes (the definition's), a dict, or None."""
        if obj is None:
            return cls()
        if isinstance(obj, RetryPolicy):
            return obj
        get = obj.get if isinstance(obj, dict) else (lambda k, d=None: getattr(obj, k, d))
        mb = get("max_backoff_ms", None)
        return cls(
            max_attempts=int(get("max_attempts", 1) or 1),
            backoff_ms=int(get("backoff_ms", 1000) if get("backoff_ms", None) is not None else 1000),
            multiplier=float(get("multiplier", 2.0) if get("multiplier", None) is not None else 2.0),
            max_backoff_ms=int(mb) if mb is not None else None,
            jitter=str(get("jitter", "none") or "none"),
            non_retryable=tuple(get("non_retryable", ()) or ()),
            retry_on=tuple(get("retry_on", ()) or ()),
        )

    def to_dict(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {
            "max_attempts": self.max_attempts,
            "backoff_ms": self.backoff_ms,
            "multiplier": self.multiplier,
            "max_backoff_ms": self.max_backoff_ms,
            "jitter": self.jitter,
            "non_retryable": list(self.non_retryable),
        }
        if self.retry_on:
            out["retry_on"] = list(self.retry_on)
        return out


@dataclass(frozen=True)
class StepCommand:
    """One unit to run on a worker.

    `unit` is the unit key (`step`, `step[i]`, `compensate:step`). `kind` is
    "task" or "http" (http runs as task "orbit.http" on queue "http").
    `on_exhausted`: "fail_run" (StepFailed, then the workflow fails and
    compensates) or "continue_workflow" (StepFailed, the workflow goes on;
    used for `on_failure: continue` and for `for` elements).
    `compensable`: this step has a compensation the runtime will provide.
    """

    unit: str
    task: str
    queue: str
    input: JSON = None
    kind: str = "task"
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout_ms: int | None = None
    queue_timeout_ms: int | None = None
    on_exhausted: str = FAIL_RUN
    compensable: bool = False
    heartbeat_timeout_ms: int | None = None  # task steps: once started, max time between heartbeats
    # Run in the decider's invocation, not on a queue: "at_least_once" | "at_most_once" (None: a worker).
    inline: str | None = None
    # "fail": a worker with no function for the task fails the attempt (UNKNOWN_TASK) instead of
    # leaving it in its queue until a worker serves it (None).
    on_missing_worker: str | None = None
    # Flow control (docs/flow-control.md): the key this attempt counts under on its task's limits
    # (instead of the limit's key expression) and its priority 1..5 in their lines; None: declared.
    flow_key: str | None = None
    priority: int | None = None


class Command:
    """Base class of all commands."""


@dataclass(frozen=True)
class Complete(Command):
    output: JSON = None


@dataclass(frozen=True)
class Fail(Command):
    error: TaskError


@dataclass(frozen=True)
class Cancel(Command):
    """The workflow asks to be cancelled (compensation runs like an external cancel)."""

    reason: str = ""


@dataclass(frozen=True)
class Timeout(Command):
    """End the run TIMED_OUT. `deadline_ms`: the deadline that passed, recorded in
    WorkflowTimeoutReached (None: the execution's own deadline, else the decision time)."""

    reason: str = ""
    deadline_ms: int | None = None


@dataclass(frozen=True)
class RecordProgress(Command):
    data: JSON = None


@dataclass(frozen=True)
class LinkChild(Command):
    """Start a child execution for `unit`; its output becomes the unit's output."""

    unit: str
    child_id: str
    workflow: str
    version: str | None = None
    input: JSON = None
    on_exhausted: str = FAIL_RUN


@dataclass(frozen=True)
class ScheduleStep(Command):
    step: StepCommand


@dataclass(frozen=True)
class ScheduleSteps(Command):
    steps: list[StepCommand]


@dataclass(frozen=True)
class WaitUntil(Command):
    """A durable timer: the unit succeeds with `{}` at `fire_at_ms`."""

    unit: str
    fire_at_ms: int


@dataclass(frozen=True)
class CreateHook(Command):
    """Create hook `hook_id` (a signal name). Empty `token`: the engine draws one (>= 128 bits)."""

    hook_id: str
    token: str = ""
    metadata: JSON = None


@dataclass(frozen=True)
class ContinueAsNew(Command):
    input: JSON = None


@dataclass(frozen=True)
class WaitForSignal(Command):
    """The unit waits for signal `name` (or its hook); output = the payload. Timeout -> TIMEOUT."""

    unit: str
    name: str
    timeout_ms: int | None = None
    on_exhausted: str = FAIL_RUN


@dataclass(frozen=True)
class SkipStep(Command):
    unit: str
    reason: str = ""


@dataclass(frozen=True)
class FanOut(Command):
    """Expand `step` into one unit per item (`step[0]` ...); schedule them with ScheduleStep(s)."""

    step: str
    items: list[JSON]


@dataclass(frozen=True)
class RecordResult(Command):
    """An inline unit (compute, a finished `for` step) succeeded with `output`."""

    unit: str
    output: JSON = None


@dataclass(frozen=True)
class FailStep(Command):
    """An inline unit failed (EXPRESSION_ERROR, too many `for` failures). Not retried."""

    unit: str
    error: TaskError
    continue_workflow: bool = False


@dataclass(frozen=True)
class Park(Command):
    """Replay cannot continue (non-determinism, build mismatch): stop deciding, keep history."""

    error: TaskError


@dataclass(frozen=True)
class SwitchBuild(Command):
    """The pinned build is not deployed, and the history replays cleanly on `to_build`:
    record the switch; the commands after it come from `to_build`."""

    from_build: str
    to_build: str


@dataclass(frozen=True)
class MarkPatch(Command):
    """`ctx.patched(change_id)` reached at durable-call `position` on code that has the change."""

    change_id: str
    position: int


@dataclass(frozen=True)
class SetAttributes(Command):
    """Search attributes (`ctx.set_attributes`, a definition's `attributes:`): the engine records
    the keys whose value differs from the execution's (orbit/core/history/attributes.py)."""

    values: dict[str, JSON]


@dataclass(frozen=True)
class DisposeHook(Command):
    """The code is done with hook `hook_id`: its token resumes nothing any more (404)."""

    hook_id: str


@dataclass(frozen=True)
class CompleteUpdate(Command):
    """A code workflow ran update `update_id`'s handler at durable-call `position`."""

    update_id: str
    position: int
    result: JSON = None
    error: TaskError | None = None


@dataclass(frozen=True)
class StartHandler(Command):
    """Start an `on_signal` instance, unit `on_signal:<signal>@<seq>`, for the buffered arrival
    of `signal` recorded at `signal_seq` (recorded as HandlerStarted, which consumes the arrival)."""

    unit: str
    signal: str
    signal_seq: int
    signal_id: str = ""
    payload: JSON = None


@dataclass(frozen=True)
class CancelUnit(Command):
    """Withdraw a live unit: a queued task is withdrawn, a running one told through its heartbeat,
    a child cancelled, a timer or wait ended (StepCancelled; nothing for a unit that already ended).
    The DSL cancels the on_signal instances still running when the main flow ends; code workflows
    cancel a race's losers, a group's branches still running, a cancelled scope's units."""

    unit: str
    reason: str = ""


@runtime_checkable
class Runtime(Protocol):
    def run(self, workflow: Any, state: Any, now_ms: int) -> list[Command]:
        """Commands for what should happen next given `state` (idempotent; see module doc)."""
        ...


def flatten(commands: list[Command]) -> list[Command]:
    """ScheduleSteps -> its ScheduleStep items (the engine handles them one by one)."""
    out: list[Command] = []
    for c in commands:
        if isinstance(c, ScheduleSteps):
            out.extend(ScheduleStep(s) for s in c.steps)
        else:
            out.append(c)
    return out


def storable(c: Command, continue_workflow: bool = False) -> Command:
    """`c`, or the failure it becomes when a value it would record cannot be stored.

    A lone surrogate, a NaN or JSON nested too deep, produced by an expression or by code, would
    make the commit (and so every later decision) fail; the step or the execution fails instead.
    `continue_workflow`: what a failed RecordResult unit does (the runtime knows, the command not).
    """
    if isinstance(c, RecordResult):
        checked: tuple[object, str, str | None] = (c.output, f"steps.{c.unit}.output", c.unit)
    elif isinstance(c, ScheduleStep):
        checked = (c.step.input, f"steps.{c.step.unit}.input", c.step.unit)
    elif isinstance(c, LinkChild):
        checked = (c.input, f"steps.{c.unit}.input", c.unit)
    elif isinstance(c, Complete):
        checked = (c.output, "output", None)
    elif isinstance(c, ContinueAsNew):
        checked = (c.input, "continue_as_new.input", None)
    elif isinstance(c, RecordProgress):
        checked = (c.data, "progress", None)
    else:
        return c
    value, where, unit = checked
    problem = value_problem(value, where)
    if problem is None:
        return c
    error = TaskError(VALUE_NOT_STORABLE, str(problem), retryable=False)
    if unit is None:
        return Fail(error)
    on_exhausted = c.step.on_exhausted if isinstance(c, ScheduleStep) else getattr(c, "on_exhausted", None)
    return FailStep(unit, error, continue_workflow or on_exhausted == CONTINUE_WORKFLOW)
