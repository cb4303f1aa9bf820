"""A step's structured failure (`TaskError`) and the runtime error codes.

Split out of `orbit.core.history.events`, which re-exports everything here: events carry a
TaskError, but it is also the exception worker code raises, so it stands on its
own. `from orbit.core.history.events import TaskError` and `from orbit.core.history.model import TaskError`
keep working.
"""

from __future__ import annotations

from typing import Any

from orbit.errors import OrbitError, ValidationError

JSON = Any

# Runtime error codes (docs/definitions.md, "Errors").
TIMEOUT = "TIMEOUT"
QUEUE_TIMEOUT = "QUEUE_TIMEOUT"
# An Orbit addition: a started attempt sent no heartbeat within its heartbeat_timeout.
HEARTBEAT_TIMEOUT = "HEARTBEAT_TIMEOUT"
EXPRESSION_ERROR = "EXPRESSION_ERROR"
INPUT_CONTRACT_VIOLATION = "INPUT_CONTRACT_VIOLATION"
OUTPUT_CONTRACT_VIOLATION = "OUTPUT_CONTRACT_VIOLATION"
CANCELLED = "CANCELLED"
WORKFLOW_TIMEOUT = "WORKFLOW_TIMEOUT"
ADAPTER_DISABLED = "ADAPTER_DISABLED"
HTTP_ERROR = "HTTP_ERROR"
RUNTIME_CODES = frozenset(
    {
        TIMEOUT,
        QUEUE_TIMEOUT,
        HEARTBEAT_TIMEOUT,
        EXPRESSION_ERROR,
        INPUT_CONTRACT_VIOLATION,
        OUTPUT_CONTRACT_VIOLATION,
        CANCELLED,
        WORKFLOW_TIMEOUT,
        ADAPTER_DISABLED,
        HTTP_ERROR,
    }
)

# Codes the engine never retries, whatever the worker said. A retry policy's `retry_on` may name
# only OUTPUT_CONTRACT_VIOLATION of them: the others are decided before any attempt runs (an
# expression, an input contract), or end the whole execution (CANCELLED, WORKFLOW_TIMEOUT).
NEVER_RETRIED = frozenset(
    {
        EXPRESSION_ERROR,
        INPUT_CONTRACT_VIOLATION,
        OUTPUT_CONTRACT_VIOLATION,
        CANCELLED,
        WORKFLOW_TIMEOUT,
        ADAPTER_DISABLED,
    }
)
RETRY_ON_ALLOWED = frozenset({OUTPUT_CONTRACT_VIOLATION})


def retried(code: str, retryable: bool, non_retryable: tuple[str, ...], retry_on: tuple[str, ...]) -> bool:
    """Does a retry policy retry this error (attempts left aside)? A code in `retry_on` is retried
    even when the error says it is not retryable; `non_retryable` always wins."""
    if code in non_retryable:
        return False
    if code in retry_on and (code not in NEVER_RETRIED or code in RETRY_ON_ALLOWED):
        return True
    return retryable and code not in NEVER_RETRIED


def retry_on_problems(retry_on: object, non_retryable: object) -> list[str]:
    """What is wrong with a policy's `retry_on` list (each problem one sentence); a list that is
    not one of strings is reported by the shape check, not here."""
    if not isinstance(retry_on, list) or not all(isinstance(c, str) for c in retry_on):
        return []
    out = [f"{code} is never retried: it is decided before an attempt runs or ends the execution"
           for code in retry_on if code in NEVER_RETRIED - RETRY_ON_ALLOWED]
    never = {c for c in non_retryable if isinstance(c, str)} if isinstance(non_retryable, list) else set()
    both = sorted(set(map(str, retry_on)) & never)
    if both:
        out.append(f"{', '.join(both)} also in non_retryable: a code is either retried or not")
    return out


def broken_contract(code: str, details: object) -> str | None:
    """The task whose `tasks:` contract an error (code, details) reports broken, else None (the
    same codes also report the execution's own `input` and `output_schema`)."""
    if code in (INPUT_CONTRACT_VIOLATION, OUTPUT_CONTRACT_VIOLATION) and isinstance(details, dict) \
            and str(details.get("contract", "")).startswith("tasks."):
        return str(details.get("task"))
    return None


class TaskError(OrbitError):
    """A step's structured failure: a value stored in events *and* an exception.

    Worker code raises it (`raise TaskError("CARD_DECLINED", "...", retryable=False)`);
    the engine stores it. Equality and hashing go by the four fields. It is
    immutable after construction, like the events that carry it.
    """

    __slots__ = ("code", "message", "retryable", "details")
    code: str
    message: str
    retryable: bool
    details: JSON

    def __init__(self, code: str, message: str = "", retryable: bool = True, details: JSON = None) -> None:
        object.__setattr__(self, "code", str(code))
        object.__setattr__(self, "message", str(message))
        object.__setattr__(self, "retryable", bool(retryable))
        object.__setattr__(self, "details", details)
        super().__init__(f"{code}: {message}" if message else str(code))

    def __setattr__(self, name: str, value: object) -> None:
        if name in TaskError.__slots__:
            raise AttributeError(f"TaskError.{name} is read-only")
        object.__setattr__(self, name, value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TaskError):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self.code, self.message, self.retryable))

    def __repr__(self) -> str:
        return (
            f"TaskError(code={self.code!r}, message={self.message!r}, "
            f"retryable={self.retryable!r}, details={self.details!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (TaskError, (self.code, self.message, self.retryable, self.details))

    def replace(self, **changes: Any) -> TaskError:
        d = self.to_dict()
        d.update(changes)
        return TaskError(d["code"], d["message"], d["retryable"], d["details"])

    def to_dict(self) -> dict[str, JSON]:
        return {
            "code": self.code,
            "message": self.message,
            "retryable": self.retryable,
            "details": self.details,
        }

    @classmethod
    def from_dict(cls, d: Any) -> TaskError:
        """Build from `{code, message, retryable?, details?}`; raises ValidationError if malformed."""
        if isinstance(d, TaskError):
            return d
        if not isinstance(d, dict) or not isinstance(d.get("code"), str) or not d["code"]:
            raise ValidationError("error must be an object with a non-empty string `code`", "error")
        retryable = d.get("retryable", True)
        return cls(
            d["code"],
            str(d.get("message") or ""),
            bool(retryable) if retryable is not None else True,
            d.get("details"),
        )


def error_or_none(v: Any) -> TaskError | None:
    """`None` stays None; anything else goes through `TaskError.from_dict`."""
    return None if v is None else TaskError.from_dict(v)
