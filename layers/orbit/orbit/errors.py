"""The one exceptions module: every error Orbit raises derives from `OrbitError`.

`TaskError` (a step's structured failure) lives in `orbit.core.history.model` because it is
also a value stored in events; it derives from `OrbitError` too.
"""

from __future__ import annotations

from dataclasses import dataclass


class OrbitError(Exception):
    """Base of every Orbit error."""


@dataclass(frozen=True)
class Problem:
    """One validation problem: `path` names where (e.g. `steps.charge.retry`)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


class ValidationError(OrbitError):
    """Input (a definition, a message, a payload) is malformed; lists every problem."""

    def __init__(self, problems: list[Problem] | Problem | str, path: str = "") -> None:
        if isinstance(problems, str):
            problems = [Problem(path, problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems: list[Problem] = list(problems)
        super().__init__(str(self))

    def __str__(self) -> str:
        return "; ".join(str(p) for p in self.problems) or "invalid"


class ConflictError(OrbitError):
    """A commit lost its conditional write: `seq` already exists in the history."""

    def __init__(self, execution_id: str, seq: int, message: str = "") -> None:
        self.execution_id = execution_id
        self.seq = seq
        super().__init__(message or f"execution {execution_id!r}: seq {seq} already committed")


class NotFound(OrbitError):
    """An execution, commit, hook or payload does not exist."""


class IdReused(OrbitError):
    """A signal or update id sent again with another name or payload (HTTP 409): an id names one
    request, so its retry must be the same request; the message names what differs."""

    def __init__(self, kind: str, ident: str, recorded_name: str, name: str) -> None:
        if recorded_name != name:
            what = f"it was {kind} {recorded_name!r}, this is {kind} {name!r}"
        else:
            what = f"{kind} {name!r} was sent with another {'payload' if kind == 'signal' else 'input'}"
        super().__init__(f"{kind} id {ident!r} is already used and this request differs: {what}; "
                         f"a retry must send the same {kind}, a new one a new id")


class UserCodeStopped(OrbitError):
    """The workflow author's code run for a request (a query handler, an update validator) ran past
    its time bound (`code` USER_CODE_TIMEOUT) or raised SystemExit or the like (USER_CODE_ERROR):
    HTTP 400 with that code; nothing was recorded (orbit/service/user_code.py)."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(message)


class ExecutionExists(OrbitError):
    """Start with an id that already exists and a different input (or workflow)."""

    def __init__(self, execution_id: str, message: str = "") -> None:
        self.execution_id = execution_id
        super().__init__(
            message or f"execution {execution_id!r} already exists with a different workflow or input"
        )


class ExecutionEnded(OrbitError):
    """A signal, hook resume or cancel for an execution that has already ended: it could
    change nothing, so it is refused rather than accepted and silently dropped."""

    def __init__(self, execution_id: str, status: str, action: str) -> None:
        self.execution_id = execution_id
        self.status = status
        super().__init__(f"execution {execution_id!r} has already ended ({status}); {action}")


class PayloadRefused(OrbitError):
    """A signal or hook payload breaks the signal's schema; nothing was recorded."""

    def __init__(self, name: str, message: str, details: object = None) -> None:
        self.name = name
        self.details = details
        super().__init__(f"signal {name!r}: payload refused: {message}")


class NonDeterminismError(OrbitError):
    """Replaying workflow code asked for something other than what history recorded."""


class BuildMismatch(OrbitError):
    """The build an execution is pinned to is not the one available to replay it."""


class HookAlreadyResumed(OrbitError):
    """A hook token can be resumed once; this one already was."""


class UnknownWorkflow(OrbitError):
    """No workflow is registered under that name (and version)."""


class ExpressionError(OrbitError):
    """A JSONata expression failed to parse or evaluate (step fails with EXPRESSION_ERROR)."""


class ExecutionExpired(NotFound):
    """The execution ended and its retention has passed: its data is deleted or about to be."""

    def __init__(self, execution_id: str, expires_at_s: int) -> None:
        import datetime

        self.execution_id = execution_id
        self.expires_at_s = expires_at_s
        when = datetime.datetime.fromtimestamp(expires_at_s, datetime.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
        super().__init__(f"execution {execution_id!r} expired at {when}: it ended and its retention "
                         f"has passed, so its history is no longer available")


class LimitFull(OrbitError):
    """A start that cannot wait in line (signal-with-start) found its flow limit full or its rate
    spent; nothing was recorded (docs/flow-control.md). 409 LIMIT_FULL."""

    code = "LIMIT_FULL"


class RedriveRefused(OrbitError):
    """`orbit redrive` of an execution that cannot go on (running, completed, cancelled, parked,
    or compensated); the message says why. Nothing was recorded."""

    def __init__(self, execution_id: str, message: str) -> None:
        self.execution_id = execution_id
        super().__init__(message)


class ForkAfterCompensation(RedriveRefused):
    """`orbit fork` from a step of an execution whose earlier steps were compensated: the fork would
    reuse outputs whose effects were undone. Refused (409) unless confirmed; names the steps."""


class NotParked(OrbitError):
    """`unpark` for an execution that is not parked: there is nothing to try again."""

    def __init__(self, execution_id: str, status: str) -> None:
        self.execution_id = execution_id
        super().__init__(f"execution {execution_id!r} is not parked ({status}); there is nothing to un-park")


class PauseRefused(OrbitError):
    """`pause` of an execution already paused, or `unpause` of one that is not."""

    def __init__(self, execution_id: str, why: str) -> None:
        self.execution_id = execution_id
        super().__init__(f"execution {execution_id!r} {why}")


class UpdateRefused(ValidationError):
    """An update's validator refused it, or its name is unknown; nothing was recorded. For a
    refusal the message is the validator's, word for word."""


class UpdateFailed(OrbitError):
    """An update was recorded and its handler failed (or a later validator run refused it)."""

    def __init__(self, update_id: str, code: str, message: str) -> None:
        self.update_id = update_id
        self.code = code
        super().__init__(message)


class UpdateTimedOut(OrbitError):
    """The update was accepted but had no result within the caller's timeout; asking again with
    the same update id waits for (or returns) its one result."""

    def __init__(self, update_id: str, timeout_s: float) -> None:
        self.update_id = update_id
        super().__init__(f"update {update_id!r} was accepted but has no result after {timeout_s:g}s; "
                         f"ask again with update id {update_id!r} to wait for it")


def update_result(answer: dict[str, object], timeout_s: float) -> object:
    """What a Python caller of an update gets from `{update_id, status, result, error}`: the
    result, or UpdateFailed (the handler failed) or UpdateTimedOut (no result yet)."""
    uid = str(answer.get("update_id"))
    if answer.get("status") != "COMPLETED":
        raise UpdateTimedOut(uid, timeout_s)
    error = answer.get("error")
    if isinstance(error, dict) and error:
        raise UpdateFailed(uid, str(error.get("code")), str(error.get("message")))
    return answer.get("result")


class DuplicateTask(OrbitError):
    """Two different functions registered under one task name in one process (`@orbit.worker.task`):
    which one a step would run depends on import order, so it is refused at import."""


class WorkflowRetired(UnknownWorkflow):
    """A start (or fork) names a definition version that was retired (`orbit retire`): new starts are
    refused; executions already running on it finish. An UnknownWorkflow, so every place that refuses
    a start of an unknown workflow (a child's step, a schedule's fire) refuses this one too."""

    code = "WORKFLOW_RETIRED"


def retired_message(name: str, version: str, latest: bool) -> str:
    """Why a start of a retired version is refused, and what to do instead."""
    which = f"its latest version, {version}," if latest else f"version {version}"
    return (f"workflow {name!r}: {which} is retired: new starts are refused (running executions finish); "
            f"register it again to bring it back, or start another version")


def retire_unknown(name: str, version: str | None) -> str:
    which = f" with version {version!r}" if version is not None else ""
    return f"cannot retire {name!r}: no definition named {name!r}{which} is registered"
