"""Inline attempts whose lease ran out: the invocation that owned them ended without an answer.

An inline attempt runs in the decider invocation that committed it (orbit/service/inline.py). Its
`deadline_ms` is that invocation's lease: the runner answers (a result, or TIMEOUT) before it,
so a deadline that passes with the attempt still live means the invocation died (crash, out of
memory, killed at its timeout). What happens then is the step's semantics, with the names Lambda
durable functions uses:
- at_least_once: the same attempt runs again (a redelivery: same attempt number, same idempotency
  key, a new token), as a worker queue redelivers a message whose worker died;
- at_most_once: if the attempt's started record was committed (DISPATCHED) the function may have
  run, so it is never run again blind: the attempt is recorded uncertain and fails with the
  retryable ATTEMPT_UNCERTAIN, and the retry policy decides whether a *new* attempt runs. An
  at_most_once attempt that was never started (still SCHEDULED) is simply run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orbit.core.decider.context import Ctx
from orbit.core.definition.inline import AT_MOST_ONCE
from orbit.core.history.events import StepAttemptUncertain, TaskError
from orbit.core.history.state import DISPATCHED, UnitState

ATTEMPT_UNCERTAIN = "ATTEMPT_UNCERTAIN"


def lease_expired(ctx: Ctx, key: str, u: UnitState, attempt_failed: Callable[..., Any],
                  redispatch: Callable[..., Any]) -> None:
    """`attempt_failed` and `redispatch` are orbit.core.decider.units' (which calls this)."""
    if u.inline == AT_MOST_ONCE and u.status == DISPATCHED:
        why = (f"the invocation running attempt {u.attempt} of {u.task!r} ({u.worker_session or '?'}) "
               "ended before recording its outcome; at_most_once: not run again")
        ctx.emit(StepAttemptUncertain(key, u.attempt, why))
        attempt_failed(ctx, key, TaskError(ATTEMPT_UNCERTAIN, why, retryable=True))
        return
    if u.inline != AT_MOST_ONCE:
        ctx.emit(StepAttemptUncertain(key, u.attempt, f"the invocation running attempt {u.attempt} of "
                                                      f"{u.task!r} ended before recording its outcome; "
                                                      "at_least_once: run again"))
    redispatch(ctx, key, redelivery=True)
