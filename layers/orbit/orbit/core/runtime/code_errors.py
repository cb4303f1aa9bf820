"""Exceptions seen by workflow code, and the internal ones that steer a replay.

Two families on purpose:
- `StepFailed`, `Cancelled`, `WorkflowTimedOut` are ordinary exceptions: the
  workflow may catch them to choose a fallback, compensate or clean up.
- `ReplayStop` and its subclasses derive from `BaseException`, so a workflow's
  `except Exception:` cannot swallow a suspension, a non-determinism stop or a
  fail-run step failure (the same choice as the AWS durable execution SDK,
  whose suspension is not an `Exception` either).
"""

from __future__ import annotations

from typing import Any

from orbit.core.history.events import TaskError
from orbit.core.history.task_error import broken_contract
from orbit.errors import NonDeterminismError, OrbitError


class StepFailed(OrbitError):
    """A durable call ended failed and the workflow is allowed to handle it.

    Raised for steps with `on_exhausted="continue_workflow"`, for `map` beyond
    its `tolerated_failures` (same option), and for `wait_for` timeouts
    (`code == "TIMEOUT"`). `.code`, `.message`, `.retryable`, `.details`
    mirror the worker's `TaskError`, so non-retryable errors are told apart by code.
    """

    def __init__(self, step: str, error: TaskError) -> None:
        self.step = step
        self.error = error
        super().__init__(f"step {step!r} failed: {error.code}: {error.message}")

    @property
    def code(self) -> str:
        return self.error.code

    @property
    def message(self) -> str:
        return self.error.message

    @property
    def retryable(self) -> bool:
        return self.error.retryable

    @property
    def details(self) -> Any:
        return self.error.details


class ContractViolation(StepFailed):
    """A step broke its task's contract (`tasks=` on `@orbit.workflow`, `tasks:` in a definition):
    its input (`side == "input"`: the task never ran) or its output (`side == "output"`).
    `.code` is INPUT_CONTRACT_VIOLATION or OUTPUT_CONTRACT_VIOLATION; `.task` names the task and
    `.path` the first JSON path that is wrong (`output.charge_id`). Not retried unless the step's
    retry policy names the code in `retry_on`."""

    @property
    def side(self) -> str:
        return "input" if self.code == "INPUT_CONTRACT_VIOLATION" else "output"

    @property
    def task(self) -> str:
        return str((self.details or {}).get("task") or "")

    @property
    def path(self) -> str:
        errors = (self.details or {}).get("errors") or [{}]
        return str(errors[0].get("path") or self.side)


def step_failed(step: str, error: TaskError) -> StepFailed:
    """What workflow code catches for a failed step: a ContractViolation when a task contract
    refused it, a StepFailed otherwise."""
    if broken_contract(error.code, error.details) is not None:
        return ContractViolation(step, error)
    return StepFailed(step, error)


class Cancelled(OrbitError):
    """The execution was asked to stop; raised at the pending (or next) durable call.

    The workflow may run cleanup steps after catching it; whatever it then
    does, the execution ends CANCELLED (or TIMED_OUT for `WorkflowTimedOut`).
    """

    def __init__(self, reason: str = "") -> None:
        self.reason = reason
        super().__init__(reason or "cancelled")


class WorkflowTimedOut(Cancelled):
    """The workflow's own `timeout` passed; the execution ends TIMED_OUT after cleanup.

    Workflow code may raise it too, to end TIMED_OUT on a deadline of its own: `deadline_ms` (epoch
    ms) is recorded in the history's WorkflowTimeoutReached and shown by describe as `deadline_ms`
    (without it: the execution's `timeout` deadline, else the time of the decision)."""

    def __init__(self, reason: str = "", deadline_ms: int | None = None) -> None:
        self.deadline_ms = deadline_ms
        super().__init__(reason)


class ReplayStop(BaseException):
    """Base of the replay's control flow; deliberately not an `Exception`."""


class Suspended(ReplayStop):
    """The replay is being discarded while waiting: unwind the workflow function."""


class Stalled(ReplayStop):
    """Workflow code ran longer than its budget without a durable call (raised by the host's guard,
    orbit/service/stall.py): the decision fails (the queue retries it), nothing is recorded."""


class FailRun(ReplayStop):
    """A step with `on_exhausted="fail_run"` failed: the execution fails, no catching."""

    def __init__(self, error: TaskError) -> None:
        self.error = error
        super().__init__(str(error))


class ContinuedAsNew(ReplayStop):
    """`ctx.continue_as_new(input)`: end this run and start a fresh history."""

    def __init__(self, input: Any) -> None:
        self.input = input
        super().__init__("continue as new")


class Diverged(ReplayStop):
    """The code asked for a different durable call than history recorded here."""

    def __init__(self, error: NonDeterminismError, recorded: dict[str, Any] | None,
                 requested: dict[str, Any], position: int, differs: dict[str, Any] | None = None) -> None:
        self.error = error
        self.recorded = recorded
        self.requested = requested
        self.position = position
        self.differs = differs
        super().__init__(str(error))


def non_determinism(position: int, recorded: dict[str, Any] | None, requested: dict[str, Any] | None,
                    execution_id: str, differs: dict[str, Any] | None = None) -> Diverged:
    """Build the stop with a message that shows the recorded and the requested call (and, for the
    same call made differently, the values that differ)."""
    if differs:
        from orbit.core.runtime.code_compare import summary

        pairs = ({k: v["recorded"] for k, v in differs.items()},
                 {k: v["requested"] for k, v in differs.items()})
        msg = (f"execution {execution_id!r}: non-deterministic replay at durable call #{position}: "
               f"history recorded {_fmt(recorded)}, the code now requests the same call with other values: "
               f"{summary(list(differs), *pairs)}")
        return Diverged(NonDeterminismError(msg), recorded, requested or {}, position, differs)
    if requested is None:
        msg = (f"execution {execution_id!r}: history records {_fmt(recorded)} at durable call #{position}, "
               f"but the workflow code ended before making it")
    elif recorded is None:
        msg = (f"execution {execution_id!r}: the workflow code asks for {_fmt(requested)} at durable call "
               f"#{position}, where history records nothing")
    else:
        msg = (f"execution {execution_id!r}: non-deterministic replay at durable call #{position}: "
               f"history recorded {_fmt(recorded)}, the code now requests {_fmt(requested)}")
    return Diverged(NonDeterminismError(msg), recorded, requested or {}, position)


def _fmt(call: dict[str, Any] | None) -> str:
    if not call:
        return "nothing"
    name = call.get("task") or call.get("signal") or call.get("workflow") or ""
    return f"{call.get('kind')}({name}) as unit {call.get('unit')!r}" if name else \
        f"{call.get('kind')} as unit {call.get('unit')!r}"
