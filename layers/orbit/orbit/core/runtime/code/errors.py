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

import functools
import linecache
import os
import traceback
from collections.abc import Callable
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


WORKFLOW_ERROR = "WORKFLOW_ERROR"
# What an unexpected exception in workflow code does (`@orbit.workflow(on_workflow_error=...)`):
# park the execution until a build that gets past it is deployed, or fail it (WORKFLOW_ERROR).
ON_WORKFLOW_ERROR = ("park", "fail")
TRACEBACK_FRAMES = 5  # the deepest frames of the user's code kept in the park's details
CONTEXT_LINES = 2  # source lines shown before and after each frame's line
MAX_MESSAGE = 1000  # characters of the exception's text kept in the message
_ORBIT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))) + os.sep


def guarded(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """`fn` with its unexpected exceptions (a bug: KeyError, AttributeError, ..., anything that is
    not an `OrbitError` such as `TaskError`/`ApplicationError`, `StepFailed` or `Cancelled`, and
    was not raised by an orbit helper refusing its arguments: `raised_by_orbit`) turned
    into a WORKFLOW_ERROR `TaskError` that carries the traceback (`workflow_bug`). The decider
    parks on it (decider/parking.py) unless the workflow chose `on_workflow_error="fail"`."""

    @functools.wraps(fn)
    def run(ctx: Any, input: Any) -> Any:
        try:
            out = fn(ctx, input)
        except OrbitError:
            raise
        except Exception as e:  # a bug in workflow code, whatever its type
            if raised_by_orbit(e):
                raise  # an orbit helper refusing its arguments (a clear error): it fails, as before
            raise workflow_bug(e) from e
        from orbit.core.runtime.code.returns import check_output

        check_output(fn, out)  # a set, bytes, ...: reported at the user's `return` line
        return out

    return run


def raised_by_orbit(e: BaseException) -> bool:
    """Did an orbit function raise it (its deepest frame is in the orbit package)? Those are
    orbit's own refusals of a bad argument (`ctx.sleep("soon")`), which fail the execution."""
    tb = traceback.extract_tb(e.__traceback__)
    return bool(tb) and tb[-1].filename.startswith(_ORBIT_DIR)


def workflow_bug(e: BaseException) -> TaskError:
    """WORKFLOW_ERROR for an unexpected exception: `Type: text at FILE:LINE` (the deepest frame of
    the user's code) and details {exception, traceback: [{file, line, function, code}]}, the code
    being the lines around it, the failing one marked `>`."""
    tb = traceback.extract_tb(e.__traceback__)
    # frames of the user's code: an error raised inside an orbit helper is the fault of the call
    # that passed it ("<string>" frames are generated code, e.g. a dataclass __init__)
    mine = [f for f in tb if not f.filename.startswith((_ORBIT_DIR, "<"))] or list(tb)
    frames = [{"file": f.filename, "line": f.lineno or 0, "function": f.name,
               "code": _around(f.filename, f.lineno or 0)} for f in mine[-TRACEBACK_FRAMES:]]
    text = str(e)
    text = text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE] + "..."
    where = f" at {frames[-1]['file']}:{frames[-1]['line']}" if frames else ""
    return TaskError(WORKFLOW_ERROR, f"{type(e).__name__}: {text}{where}", retryable=False,
                     details={"exception": type(e).__name__, "traceback": frames})


def is_workflow_bug(error: TaskError) -> bool:
    """Was this failure an unexpected exception in workflow code (`workflow_bug`)?"""
    return (error.code == WORKFLOW_ERROR and isinstance(error.details, dict)
            and isinstance(error.details.get("traceback"), list))


def _around(filename: str, lineno: int) -> str:
    lines = []
    for n in range(max(1, lineno - CONTEXT_LINES), lineno + CONTEXT_LINES + 1):
        text = linecache.getline(filename, n)
        if text:
            lines.append(f"{'>' if n == lineno else ' '} {n:4d} | {text.rstrip()}")
    return "\n".join(lines)


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
        from orbit.core.runtime.code.compare import summary

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
