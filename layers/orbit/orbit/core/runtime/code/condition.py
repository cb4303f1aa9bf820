"""`ctx.wait_for_condition(check, initial_state, ...)`: poll with durable waits until a condition holds.

Each attempt calls `check(ctx, state)` (a function that may make durable calls, a step to poll
an API for instance; or a task name, run as `ctx.step(task, state)`) and takes what it returns
as the new state. When `until(state)` holds (default: the state is truthy) the call returns the
state; otherwise it sleeps for the next delay (`delay`, times `backoff` after each attempt, at
most `max_delay`) and tries again, at most `max_attempts` times in all. Out of attempts it
raises `ConditionNotMet` (a `StepFailed`, code `CONDITION_NOT_MET`), carrying the last state.

It runs as a group of one branch, unit `<position>.condition()`; its attempts are keyed under it
(`4.condition()/0/1.orders.status`, `4.condition()/0/2.sleep()`, ...), and its outcome is recorded
there, so a replay does not poll again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orbit.core.definition.durations import parse_duration
from orbit.core.history.events import TaskError
from orbit.core.runtime.code.branch_calls import make_ctx
from orbit.core.runtime.code.branch_policy import BranchesFailed, Policy
from orbit.core.runtime.code.errors import StepFailed
from orbit.core.runtime.code.group import run_group
from orbit.core.runtime.code.specs import as_json

CONDITION_NOT_MET = "CONDITION_NOT_MET"
MAX_ATTEMPTS = 10_000


class ConditionNotMet(StepFailed):
    """`wait_for_condition` ran out of attempts; `.details["state"]` is the last state."""


def _ms(value: Any, what: str) -> int:
    try:
        return parse_duration(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"wait_for_condition {what}: {e}") from None


def wait_for_condition(ctx: Any, check: Any, initial_state: Any = None, *,
                       until: Callable[[Any], Any] | None = None, delay: Any = "5s", backoff: float = 1.0,
                       max_delay: Any = None, max_attempts: int = 10) -> Any:
    if isinstance(check, str) and check:
        task = check

        def check(c: Any, state: Any) -> Any:  # a task name polls with that step
            return c.step(task, state)
    if not callable(check):
        raise TypeError(f"wait_for_condition needs check(ctx, state) or a task name, got {check!r}")
    if until is not None and not callable(until):
        raise TypeError(f"wait_for_condition until must be a function of the state, got {until!r}")
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or \
            not 1 <= max_attempts <= MAX_ATTEMPTS:
        raise TypeError(f"wait_for_condition max_attempts must be an int from 1 to {MAX_ATTEMPTS}, "
                        f"got {max_attempts!r}")
    if isinstance(backoff, bool) or not isinstance(backoff, (int, float)) or not 1 <= backoff <= 100:
        raise TypeError(f"wait_for_condition backoff must be a number from 1 to 100, got {backoff!r}")
    first = _ms(delay, "delay")
    cap = None if max_delay is None else _ms(max_delay, "max_delay")
    done = until or bool
    policy = {"delay_ms": first, "backoff": backoff, "max_delay_ms": cap, "max_attempts": max_attempts}

    def poll(c: Any, state: Any) -> Any:
        wait = float(first)
        for attempt in range(1, max_attempts + 1):
            state = as_json(check(c, state), "the state returned by wait_for_condition's check")
            if done(state):
                return state
            if attempt == max_attempts:
                raise TaskError(CONDITION_NOT_MET, f"the condition was not met after {max_attempts} "
                                f"attempt(s); last state: {str(state)[:200]}", retryable=False,
                                details={"state": state, "attempts": max_attempts})
            c.sleep(int(wait if cap is None else min(wait, cap)))
            wait *= backoff
        raise AssertionError("unreachable")

    try:
        out = run_group(ctx._replay, make_ctx(ctx), "condition", ["0"], [policy], [(poll, (initial_state,))],
                        Policy())
    except BranchesFailed as e:
        inner = e.errors.get(0)
        if inner is not None and inner.code == CONDITION_NOT_MET:
            raise ConditionNotMet(e.step, inner) from None
        raise
    return out["results"][0]
