"""When a group of branches is done, and what it returns: completion policies and outcomes.

Policies (checked each time a branch ends, in the order branches end):
- all (the default): every branch runs to its end; if any failed, the group fails then;
- `fail_fast=True`: the first failure fails the group at once;
- `tolerated_failures=k` / `tolerated_failure_percentage=p`: up to k (or p% of the branches,
  rounded down) may fail; one more fails the group at once;
- `min_successful=k`: the group succeeds as soon as k branches succeeded, and fails as soon
  as k can no longer be reached;
- a race ends with its first branch to end.
Branches still running when the group ends are cancelled; branches not started never start.

The group's unit records the outcome, so a replay returns it without running the branches
again: on success `{"results": [...], "errors": {"<branch>": error}}` (RecordResult), on
failure a `BRANCHES_FAILED` error whose details carry the same two fields (FailStep).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orbit.core.history.events import TaskError
from orbit.core.runtime.code.errors import StepFailed, step_failed

BRANCHES_FAILED = "BRANCHES_FAILED"


class BranchesFailed(StepFailed):
    """A group of branches failed its completion policy. `.errors` maps each failed branch (its
    index, or name in a race) to its `TaskError`; `.results` holds what succeeded (None elsewhere)."""

    def __init__(self, step: str, error: TaskError) -> None:
        super().__init__(step, error)
        details = error.details if isinstance(error.details, dict) else {}
        self.results: list[Any] = list(details.get("results") or [])
        self.errors: dict[Any, TaskError] = {_branch_id(k): TaskError.from_dict(v)
                                             for k, v in (details.get("errors") or {}).items()}


def _branch_id(key: str) -> Any:
    return int(key) if key.isdigit() else key


def _count(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TypeError(f"{what} must be an int >= 0, got {value!r}")
    return value


@dataclass(frozen=True)
class Policy:
    min_successful: int | None = None
    tolerated: int | None = None
    fail_fast: bool = False
    first: bool = False

    @classmethod
    def of(cls, n: int, min_successful: Any = None, tolerated_failures: Any = None,
           tolerated_failure_percentage: Any = None, fail_fast: Any = False) -> Policy:
        """Check the options a caller gave (one clear TypeError for a bad one)."""
        mins = _count(min_successful, "min_successful")
        if mins is not None and not 1 <= mins <= max(n, 1):
            raise TypeError(f"min_successful must be between 1 and the {n} branches, got {mins}")
        tolerated = _count(tolerated_failures, "tolerated_failures")
        pct = tolerated_failure_percentage
        if pct is not None:
            if isinstance(pct, bool) or not isinstance(pct, (int, float)) or not 0 <= pct <= 100:
                raise TypeError(f"tolerated_failure_percentage must be a number from 0 to 100, got {pct!r}")
            by_pct = int(n * pct // 100)
            tolerated = by_pct if tolerated is None else min(tolerated, by_pct)
        if not isinstance(fail_fast, bool):
            raise TypeError(f"fail_fast must be True or False, got {fail_fast!r}")
        return cls(mins, tolerated, fail_fast)

    def verdict(self, n: int, succeeded: int, failed: int) -> str | None:
        """"ok", "failed", or None (not done yet) after a branch ended."""
        ended = succeeded + failed
        if self.first and ended:
            return "ok" if succeeded else "failed"
        if failed and (self.fail_fast or (self.tolerated is not None and failed > self.tolerated)):
            return "failed"
        if self.min_successful is not None:
            if succeeded >= self.min_successful:
                return "ok"
            if succeeded + n - ended < self.min_successful:
                return "failed"
        if ended >= n:
            return "failed" if failed > (self.tolerated or 0) else "ok"
        return None


def failure(base: str, names: list[str], results: list[Any], errors: dict[str, TaskError]) -> TaskError:
    """The group's error: how many failed and the first one, with every error in details."""
    first = next(n for n in names if n in errors)
    err = errors[first]
    return TaskError(BRANCHES_FAILED, f"{len(errors)} of {len(names)} branches of {base!r} failed; "
                     f"first, branch {first}: {err.code}: {err.message}", retryable=False,
                     details={"results": results, "errors": {k: v.to_dict() for k, v in errors.items()}})


def success(results: list[Any], errors: dict[str, TaskError]) -> dict[str, Any]:
    return {"results": results, "errors": {k: v.to_dict() for k, v in errors.items()}}


def decoded(base: str, names: list[str], output: Any, return_exceptions: bool) -> list[Any]:
    """A recorded success as the code sees it: results in order; a tolerated failure reads as
    None, or as its StepFailed with `return_exceptions=True`."""
    out = output if isinstance(output, dict) else {}
    results = list(out.get("results") or [None] * len(names))
    if return_exceptions:
        for k, v in (out.get("errors") or {}).items():
            if k in names:
                results[names.index(k)] = step_failed(f"{base}/{k}", TaskError.from_dict(v))
    return results
