"""Unit life cycles: schedule, dispatch, results, retries, timeouts, stale and reconciled answers.

Every function here takes the decision context and emits events through it;
none scans all units: they touch the one unit named by the inbound message
or the units whose wake-up is due.
"""

from __future__ import annotations

from orbit.core.decider.context import Ctx, jitter_fraction
from orbit.core.decider.contracts import violation
from orbit.core.decider.inline import lease_expired
from orbit.core.definition.inline import inline_timeout
from orbit.core.history.effects import CancelChild, CancelTask, DispatchTask
from orbit.core.history.events import (
    HEARTBEAT_TIMEOUT,
    QUEUE_TIMEOUT,
    TIMEOUT,
    CompensationFailed,
    RetryScheduled,
    StaleResultIgnored,
    StepAttemptFailed,
    StepAttemptUncertain,
    StepCancelled,
    StepDispatched,
    StepFailed,
    StepHeartbeat,
    StepScheduled,
    StepSucceeded,
    TaskError,
    TimerFired,
    WorkflowTimeoutReached,
)
from orbit.core.history.nesting import abandoned
from orbit.core.history.state import (
    DISPATCHED,
    RETRY_WAIT,
    RUNNING,
    SCHEDULED,
    WAITING,
    WORKFLOW_WAKE,
    UnitState,
    parse_key,
)
from orbit.core.history.task_error import retried
from orbit.core.runtime.commands import CONTINUE_WORKFLOW, RetryPolicy, StepCommand


def schedule(ctx: Ctx, cmd: StepCommand) -> None:
    """First attempt of a unit on a worker queue; ignored if the unit already exists. A unit a
    redrive reset (PENDING again) goes on numbering its attempts (see UnitState.attempt_base)."""
    u = ctx.state.units.get(cmd.unit)
    if u is not None and u.status != "PENDING":
        return
    refused = violation(ctx, cmd.task, cmd.unit, "input", cmd.input)
    if refused is not None:  # recorded instead of the dispatch: no worker or inline function sees it
        fail(ctx, cmd.unit, refused, cmd.on_exhausted == CONTINUE_WORKFLOW)
        return
    deadline = None
    if cmd.inline is not None:
        deadline = inline_deadline(ctx, cmd.timeout_ms)  # the lease of the invocation running it
    elif cmd.queue_timeout_ms is not None:
        deadline = ctx.now + cmd.queue_timeout_ms
    elif cmd.timeout_ms is not None:
        deadline = ctx.now + cmd.timeout_ms  # nobody reported `started`: count from the send
    token = ctx.token()
    ctx.emit(
        StepScheduled(
            step=cmd.unit,
            attempt=(u.attempt if u is not None else 0) + 1,
            input=cmd.input,
            idempotency_key=ctx.idempotency_key(cmd.unit),
            redelivery=False,
            token=token,
            kind=cmd.kind,
            task=cmd.task,
            queue=cmd.queue,
            retry=RetryPolicy.of(cmd.retry).to_dict(),
            timeout_ms=cmd.timeout_ms,
            queue_timeout_ms=cmd.queue_timeout_ms,
            deadline_ms=deadline,
            on_exhausted=cmd.on_exhausted,
            compensable=cmd.compensable,
            heartbeat_timeout_ms=cmd.heartbeat_timeout_ms,
            inline=cmd.inline,
            on_missing_worker=cmd.on_missing_worker,
            flow_key=cmd.flow_key,
            priority=cmd.priority,
        )
    )
    _dispatch(ctx, cmd.unit)


def inline_deadline(ctx: Ctx, timeout_ms: int | None) -> int:
    """An inline attempt's deadline: its timeout (or the inline default) from now. It is also the
    lease of the invocation running it: no other decider touches the attempt before it passes."""
    return ctx.now + inline_timeout(timeout_ms)


def redispatch(ctx: Ctx, unit: str, redelivery: bool, token: str | None = None, send: bool = True) -> None:
    """Queue the unit's current attempt again (retry or redelivery), same idempotency key."""
    u = ctx.state.units[unit]
    deadline = None
    if u.inline is not None:
        deadline = inline_deadline(ctx, u.timeout_ms)
    elif u.queue_timeout_ms is not None:
        deadline = ctx.now + u.queue_timeout_ms
    elif u.timeout_ms is not None:
        deadline = ctx.now + u.timeout_ms
    ctx.emit(
        StepScheduled(
            step=unit,
            attempt=u.attempt,
            input=u.input,
            idempotency_key=u.idempotency_key or ctx.idempotency_key(unit),
            redelivery=redelivery,
            token=token or ctx.token(),
            kind=u.kind,
            task=u.task,
            queue=u.queue,
            retry=u.retry,
            timeout_ms=u.timeout_ms,
            queue_timeout_ms=u.queue_timeout_ms,
            deadline_ms=deadline,
            on_exhausted=u.on_exhausted,
            compensable=u.compensable,
            heartbeat_timeout_ms=u.heartbeat_timeout_ms,
            inline=u.inline,
            on_missing_worker=u.on_missing_worker,
            flow_key=u.flow_key,
            priority=u.priority,
        )
    )
    if send:
        _dispatch(ctx, unit)


def _dispatch(ctx: Ctx, unit: str) -> None:
    u = ctx.state.units[unit]
    ctx.effect(
        DispatchTask(
            execution_id=ctx.state.id,
            unit=unit,
            task=u.task,
            queue=u.queue,
            input=u.input,
            attempt=u.attempt,
            token=u.token or "",
            idempotency_key=u.idempotency_key,
            deadline_ms=u.deadline_ms,
            redelivery=u.redelivery,
            heartbeat_timeout_ms=u.heartbeat_timeout_ms,
            inline=u.inline,
            on_missing_worker=u.on_missing_worker,
            flow_key=u.flow_key,
            priority=u.priority,
        )
    )


def _current(u: UnitState | None, token: str) -> bool:
    """Is `token` one of the live attempt's tokens? (redelivery keeps older tokens of the attempt valid)"""
    return (
        u is not None
        and not u.terminal
        and u.status in (SCHEDULED, DISPATCHED)
        and u.tokens.get(token) == u.attempt
    )


def started(ctx: Ctx, unit: str, token: str, worker_id: str, session: str) -> None:
    u = ctx.state.units.get(unit)
    if not _current(u, token):
        return  # a late `started` for an old attempt changes nothing
    assert u is not None
    if u.status == DISPATCHED:
        if (u.worker_session == session and u.worker_id == worker_id) or u.inline is not None:
            return  # duplicate delivery of the same `started`; an inline attempt has one owner
        # Another worker took the same message: the first one was lost mid-attempt, so
        # the outcome is uncertain. The queue already redelivered it (same token, same key).
        ctx.emit(
            StepAttemptUncertain(
                unit,
                u.attempt,
                f"worker {u.worker_id}/{u.worker_session} lost the attempt; "
                f"redelivered to {worker_id}/{session}",
            )
        )
        redispatch(ctx, unit, redelivery=True, token=token, send=False)
    deadline = ctx.now + u.timeout_ms if u.timeout_ms is not None else None
    if u.inline is not None:  # the invocation that records it owns the attempt: a fresh lease
        deadline = inline_deadline(ctx, u.timeout_ms)
    ctx.emit(StepDispatched(unit, u.attempt, token, worker_id, session, deadline))


def heartbeat(ctx: Ctx, unit: str, token: str, details: object) -> None:
    u = ctx.state.units.get(unit)
    if u is not None and u.heartbeat_timeout_ms is not None and not ctx.state.paused and _due(ctx, unit):
        # The heartbeat came after its deadline (before the wake-up did): the attempt has
        # already timed out, so time it out first; the token is then no longer current.
        _wake_unit(ctx, unit, u)
    if _current(ctx.state.units.get(unit), token):
        ctx.emit(StepHeartbeat(unit, token, details))


def _due(ctx: Ctx, unit: str) -> bool:
    at = ctx.state.wakeups.get(unit)
    return at is not None and at <= ctx.now


def _reconcilable(u: UnitState | None, token: str) -> int | None:
    """The earlier attempt whose success may still resolve the unit (reconciliation), or None.

    Every token a unit issued since its last redrive counts while the unit is unresolved: waiting
    to retry, or queued/running a later attempt. The live attempt's own tokens are `_current`."""
    if u is None or u.terminal or u.status not in (SCHEDULED, DISPATCHED, RETRY_WAIT):
        return None
    attempt = u.tokens.get(token)
    if attempt is None or attempt <= u.attempt_base or attempt >= u.attempt:
        return None
    return attempt


def _reconcile(ctx: Ctx, unit: str, u: UnitState, attempt: int, output: object) -> bool:
    """Resolve the unit with the late success of an earlier attempt: the pending retry's wake-up
    ends with the unit; a queued or running later attempt is withdrawn (CancelTask, as a cancel
    does). An output its task's contract refuses resolves nothing (that attempt already failed)."""
    if violation(ctx, u.task, unit, "output", output) is not None:
        return False
    live_token, status, queue = u.token, u.status, u.queue
    ctx.emit(StepSucceeded(unit, u.attempt, output, reconciled_attempt=attempt))
    if status in (SCHEDULED, DISPATCHED) and live_token:
        ctx.effect(CancelTask(ctx.state.id, unit, live_token, queue))
    return True


def result(ctx: Ctx, unit: str, token: str, output: object, error: TaskError | None) -> None:
    u = ctx.state.units.get(unit)
    if not _current(u, token):
        earlier = _reconcilable(u, token) if error is None else None
        if earlier is not None and u is not None and _reconcile(ctx, unit, u, earlier, output):
            return
        outcome = "succeeded" if error is None else f"failed:{error.code}"
        ctx.emit(StaleResultIgnored(unit, token, outcome))
        return
    assert u is not None
    if error is None:
        error = violation(ctx, u.task, unit, "output", output)
    if error is None:
        ctx.emit(StepSucceeded(unit, u.attempt, output))
    else:
        attempt_failed(ctx, unit, error)


def attempt_failed(ctx: Ctx, unit: str, error: TaskError) -> None:
    """Record the failed attempt, then retry (with backoff) or fail the unit."""
    u = ctx.state.units[unit]
    ctx.emit(StepAttemptFailed(unit, u.attempt, error))
    policy = RetryPolicy.of(u.retry)
    retry = (
        retried(error.code, error.retryable, policy.non_retryable, policy.retry_on)
        and u.attempt - u.attempt_base < policy.max_attempts
        and ctx.state.abort is None
        and u.kind in ("task", "http")
    )
    if not retry:
        fail(ctx, unit, error)
        return
    delay = backoff_ms(policy, u.attempt - u.attempt_base, ctx.state.id, unit)
    ctx.emit(RetryScheduled(unit, u.attempt + 1, delay, ctx.now + delay))
    if delay == 0 and not ctx.state.paused:  # paused: the retry runs at the unpause
        redispatch(ctx, unit, redelivery=False)


def backoff_ms(policy: RetryPolicy, failed_attempt: int, execution_id: str, unit: str) -> int:
    delay = policy.backoff_ms * policy.multiplier ** max(failed_attempt - 1, 0)
    if policy.max_backoff_ms is not None:
        delay = min(delay, policy.max_backoff_ms)
    if policy.jitter == "full":
        delay = delay * jitter_fraction(execution_id, unit, failed_attempt)
    return max(0, int(delay))


def fail(ctx: Ctx, unit: str, error: TaskError, continue_workflow: bool | None = None) -> None:
    """End the unit failed. Fatal unless it continues (on_failure: continue, `for` elements)."""
    u = ctx.state.units.get(unit)
    if u is not None and u.terminal:
        return
    comp, step, index = parse_key(unit)
    if continue_workflow is None:
        continue_workflow = u is not None and u.on_exhausted == CONTINUE_WORKFLOW
    fatal = not comp and not continue_workflow and index is None
    ctx.emit(StepFailed(unit, error, fatal))
    if comp:
        ctx.emit(CompensationFailed(step, error))
    if u is not None and unit in ctx.state.fanouts:
        cancel_elements(ctx, unit, "the `for` step ended")


def succeed(ctx: Ctx, unit: str, output: object) -> None:
    u = ctx.state.units.get(unit)
    if u is not None and u.terminal:
        return
    ctx.emit(StepSucceeded(unit, max(1, u.attempt if u else 1), output))


def cancel_unit(ctx: Ctx, unit: str, reason: str) -> None:
    """Withdraw a queued unit, tell a running one, cancel a child."""
    u = ctx.state.units.get(unit)
    if u is None or u.terminal:
        return
    token, queue, child = u.token, u.queue, u.child_id
    status = u.status
    ctx.emit(StepCancelled(unit, reason))
    if status in (SCHEDULED, DISPATCHED) and token:
        ctx.effect(CancelTask(ctx.state.id, unit, token, queue))
    if child and status == RUNNING and not abandoned(unit):  # an abandoned child runs on
        ctx.effect(CancelChild(child, reason))


def cancel_elements(ctx: Ctx, step: str, reason: str) -> None:
    prefix = step + "["
    for key in [k for k in ctx.state.active if k.startswith(prefix)]:
        cancel_unit(ctx, key, reason)


def wake_due(ctx: Ctx) -> None:
    """Handle every unit whose wake-up time has come (timers, deadlines, retry backoffs)."""
    due = sorted((at, key) for key, at in ctx.state.wakeups.items() if at <= ctx.now)
    for _, key in due:
        if key == WORKFLOW_WAKE:
            if ctx.state.abort is None and not ctx.state.terminal:
                ctx.emit(WorkflowTimeoutReached(ctx.state.deadline_ms))
            continue
        u = ctx.state.units.get(key)
        if u is None or u.terminal or ctx.state.wakeups.get(key, ctx.now + 1) > ctx.now:
            continue
        _wake_unit(ctx, key, u)


def _wake_unit(ctx: Ctx, key: str, u: UnitState) -> None:
    if u.inline is not None and u.status in (SCHEDULED, DISPATCHED):
        lease_expired(ctx, key, u, attempt_failed, redispatch)  # the invocation running it died
    elif u.status == RETRY_WAIT:
        redispatch(ctx, key, redelivery=False)
    elif u.status == WAITING and u.signal is None:
        ctx.emit(TimerFired(key))
    elif u.status == WAITING:
        attempt_failed(
            ctx, key, TaskError(TIMEOUT, f"no signal {u.signal!r} before the timeout", retryable=False)
        )
    elif u.status == SCHEDULED and u.queue_timeout_ms is not None and u.dispatched_at_ms is None:
        attempt_failed(
            ctx,
            key,
            TaskError(
                QUEUE_TIMEOUT,
                f"no worker took {u.task!r} from queue {u.queue!r} within {u.queue_timeout_ms} ms",
            ),
        )
    elif u.status == DISPATCHED and u.heartbeat_timeout_ms is not None and not _past_deadline(ctx, u):
        attempt_failed(
            ctx,
            key,
            TaskError(
                HEARTBEAT_TIMEOUT,
                f"attempt {u.attempt} of {u.task!r} sent no heartbeat within {u.heartbeat_timeout_ms} ms",
            ),
        )
    elif u.status in (SCHEDULED, DISPATCHED):
        attempt_failed(
            ctx,
            key,
            TaskError(TIMEOUT, f"attempt {u.attempt} of {u.task!r} did not finish within {u.timeout_ms} ms"),
        )


def _past_deadline(ctx: Ctx, u: UnitState) -> bool:
    """Was this wake-up the attempt's own `timeout` rather than the heartbeat's? The wake-up is
    the earlier of the two (evolve_steps._attempt_wake); a tie counts as the attempt timeout."""
    wake = u.wake_at_ms if u.wake_at_ms is not None else ctx.now
    return u.deadline_ms is not None and u.deadline_ms <= wake
