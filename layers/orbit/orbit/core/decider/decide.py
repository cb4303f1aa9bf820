"""The pure decision: (workflow, state, inbound message, now, ids) -> events + effects.

`decide` reads no clock and draws no randomness: time is `now_ms`, new tokens
come from `ids`. It advances `state` **in place** (the caller's working copy:
the service owns it and reloads after a failed commit), so a decision costs
what changed, not the size of the state or the history.

Order of work:
1. the inbound message's own events (start, result, signal, wake, ...);
2. the fixpoint: wind an aborting execution down, then ask the runtime
   (`runtime.run`) for commands and turn them into events, until nothing new
   happens;
3. effects that follow from the new state: the next timer, the parent notice.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from orbit.core.decider import updates
from orbit.core.decider.abort import compensation_unanswered, progress_abort
from orbit.core.decider.context import Ctx, Decision, IdSource
from orbit.core.decider.execute import create_hook, execute
from orbit.core.decider.parking import bugs_park, try_unpark
from orbit.core.decider.recovery import answer_unstarted_child, record_fork, redrive, seed_fork
from orbit.core.decider.signals import deliver
from orbit.core.decider.units import fail, heartbeat, result, started, succeed, wake_due
from orbit.core.definition.retention import provisional_expiry_s, retention_of
from orbit.core.history.effects import ArmTimer, ContinueDecision, ForwardSignal
from orbit.core.history.events import (
    CANCELLED,
    WORKFLOW_TIMEOUT,
    CancelRequested,
    ExecutionPaused,
    ExecutionUnpaused,
    HookResumed,
    SignalReceived,
    StaleResultIgnored,
    TaskError,
    WorkflowCreated,
    WorkflowStarted,
)
from orbit.core.history.hook_tokens import KeySource, matches, sha256_hex
from orbit.core.history.messages import (
    CancelMessage,
    ChildDoneMessage,
    ForkCreatedMessage,
    HeartbeatMessage,
    HookMessage,
    Message,
    PauseMessage,
    RedriveMessage,
    ResultMessage,
    SignalMessage,
    StartedMessage,
    StartMessage,
    UnparkMessage,
    UnpauseMessage,
    UpdateMessage,
    WakeMessage,
)
from orbit.core.history.state import COMPENSATING, ExecutionState
from orbit.core.history.storable import VALUE_NOT_STORABLE, value_problem
from orbit.core.runtime.commands import Runtime

__all__ = ("decide", "Decision", "runtime_for", "workflow_build")

# One decision's budget. A decision that reaches either stops between two rounds (a state any
# round could have left) and sends itself a continuation (ContinueDecision): a long chain of
# compute steps runs as a series of bounded decisions, each well inside the decider's Lambda
# timeout and each commit a bounded size, instead of one decision that never ends.
MAX_ROUNDS = 500
MAX_DECISION_EVENTS = 2_000
# Expression evaluation steps one decision may spend before it continues in the next (each
# expression has its own budget too: docs/limits.md). Counted, so replays stop at the same place.
MAX_DECISION_STEPS = 500_000
RETRY_STUCK_WAKE_MS = 60_000  # a runtime that never settles is a bug; stop rather than spin


def decide(workflow: Any, state: ExecutionState, inbound: Message, now_ms: int, ids: IdSource,
           retention_ms: int | None = None, code_runtime: Runtime | None = None) -> Decision:
    """`retention_ms`: the stack's default retention (a workflow's own wins); with it, a start
    records the provisional expiry its items are written with (WorkflowCreated). `code_runtime`:
    the runtime that replays code workflows (the host's, with its cache of paused instances:
    orbit/service/replay_host.py); None: a `CodeReplayer` that replays each decision cold.
    The stack key (`ids.hook_key`, for `hooks.NAME.token`) reaches the runtimes as an argument."""
    return _decide(workflow, state, inbound, now_ms, ids, retention_ms, code_runtime)


def _decide(workflow: Any, state: ExecutionState, inbound: Message, now_ms: int, ids: IdSource,
            retention_ms: int | None, code_runtime: Runtime | None = None) -> Decision:
    ctx = Ctx(workflow, state, now_ms, ids)
    wake_before = state.next_wake_ms()
    was_terminal = state.terminal
    if isinstance(inbound, StartMessage):
        if state.created:
            return ctx.decision  # idempotent start is the service's business
        _start(ctx, inbound, retention_ms)
    elif not state.created:
        if isinstance(inbound, CancelMessage) and inbound.parent_id and state.abort is None:
            # A parent's cancel that overtook its child's start. It is recorded as the child's
            # first commit (a tombstone: CancelRequested before WorkflowCreated); the start then
            # creates the execution with the abort already set and winds it down before the
            # runtime runs, so the child ends CANCELLED without running a step. One conditional
            # write per commit still orders the two: whichever commits second sees the other.
            # The alternative, the child's start reading its parent's state, would cost every
            # child start a second execution load for a rare race.
            ctx.emit(CancelRequested(inbound.reason or "cancelled", inbound.force))
        elif isinstance(inbound, RedriveMessage):
            answer_unstarted_child(ctx, inbound)
        return ctx.decision
    elif isinstance(inbound, ForkCreatedMessage):
        record_fork(ctx, inbound.fork_id, inbound.from_step)
        return ctx.decision  # a link for describe: nothing for the runtime
    elif isinstance(inbound, RedriveMessage):
        if not redrive(ctx, inbound):
            return ctx.decision
        was_terminal, wake_before = False, None  # running again: arm its timers as a start does
    else:
        _inbound(ctx, inbound)
    if state.paused:  # `orbit pause`: what arrived is recorded; nothing runs, no timer is armed
        return ctx.decision
    if not state.terminal and not _fixpoint(ctx, isinstance(inbound, UnparkMessage), code_runtime):
        ctx.effect(ContinueDecision(state.id, f"continue:{state.id}:{state.last_seq}"))
    if not state.terminal and not was_terminal:
        wake = state.next_wake_ms()
        if wake is not None and (
            wake != wake_before
            or isinstance(inbound, (WakeMessage, StartMessage, RedriveMessage, UnpauseMessage))
        ):
            if _pushed_back_by_heartbeat(inbound, wake_before, wake, now_ms):
                return ctx.decision
            # Everything due was handled above; a wake-up still in the past would fire again at
            # once and spin, so it is retried at the schedule's pace instead.
            ctx.effect(ArmTimer(state.id, wake if wake > now_ms else now_ms + RETRY_STUCK_WAKE_MS))
    return ctx.decision


def _pushed_back_by_heartbeat(inbound: Message, before: int | None, wake: int, now_ms: int) -> bool:
    """A heartbeat that only moved the wake-up later (heartbeat_timeout) arms nothing: the timer
    armed for the earlier time is still pending, fires, finds nothing due and arms the new time
    (every wake decision re-arms). Arming on each heartbeat would cost a timer write or a delayed
    message per heartbeat, each later firing for nothing; this way it is one per timeout."""
    return isinstance(inbound, HeartbeatMessage) and before is not None and now_ms < before <= wake


def _start(ctx: Ctx, m: StartMessage, retention_ms: int | None) -> None:
    wf = ctx.workflow
    build = workflow_build(wf)
    timeout = getattr(wf, "timeout_ms", None)
    # What the engine writes the start's commit (and every item while young) with; only a start
    # that is the execution's first commit can say so (a tombstone's commit has no expiry).
    expiry = None
    if retention_ms is not None and ctx.state.last_seq == 0:
        expiry = provisional_expiry_s(ctx.now, retention_of(wf, retention_ms))
    ctx.emit(
        WorkflowCreated(
            workflow=wf.name,
            version=str(wf.version),
            definition_hash=build,
            input=m.input,
            parent=m.parent,
            build=build,
            execution_id=ctx.state.id,
            continued_from=m.continued_from,
            idle_hops=m.idle_hops,
            provisional_expiry_s=expiry,
        )
    )
    ctx.emit(WorkflowStarted(ctx.now + timeout if timeout is not None else None))
    for name in sorted(getattr(wf, "signals", None) or {}):
        create_hook(ctx, name)
    if m.fork is not None:
        seed_fork(ctx, m.fork)
    for sig in m.signals or []:  # handed over by the previous run, in the order they arrived
        if isinstance(sig, dict) and isinstance(sig.get("name"), str) and sig["name"]:
            ctx.emit(SignalReceived(sig["name"], sig.get("payload"), str(sig.get("signal_id") or "")))


def _inbound(ctx: Ctx, m: Message) -> None:  # one branch per message kind
    s = ctx.state
    if s.terminal:
        if isinstance(m, ResultMessage):  # evidence of a late answer, never applied
            outcome = "succeeded" if m.error is None else f"failed:{m.error.code}"
            ctx.emit(StaleResultIgnored(m.unit, m.token, outcome))
        elif isinstance(m, SignalMessage) and s.continued_as:  # sent before the run continued
            ctx.effect(ForwardSignal(s.continued_as, m.id, m.name, m.payload))
        return
    m = _storable_inbound(m)
    if isinstance(m, ResultMessage):
        result(ctx, m.unit, m.token, m.output, m.error)
    elif isinstance(m, StartedMessage):
        started(ctx, m.unit, m.token, m.worker_id, m.worker_session)
    elif isinstance(m, HeartbeatMessage):
        heartbeat(ctx, m.unit, m.token, m.details)
    elif isinstance(m, WakeMessage):
        if not s.paused:  # a timer armed before the pause: handled at the unpause
            wake_due(ctx)
    elif isinstance(m, SignalMessage):
        ctx.emit(SignalReceived(m.name, m.payload, m.id))
        deliver(ctx, m.name)
    elif isinstance(m, HookMessage):
        _hook_resumed(ctx, m)
    elif isinstance(m, CancelMessage):
        if s.paused and s.abort is None:  # a cancel is not held by a pause: it winds down now
            ctx.emit(ExecutionUnpaused("cancel requested"))
        if s.abort is None:
            ctx.emit(CancelRequested(m.reason or "cancelled", m.force))
    elif isinstance(m, ChildDoneMessage):
        _child_done(ctx, m)
    elif isinstance(m, UpdateMessage) and (signal := updates.accept(ctx, m)):
        deliver(ctx, signal)  # a definition's update: delivered as its signal
    elif isinstance(m, PauseMessage):
        if not s.paused:
            ctx.emit(ExecutionPaused(m.reason))
    elif isinstance(m, UnpauseMessage):
        if s.paused:
            ctx.emit(ExecutionUnpaused(m.reason))
            wake_due(ctx)  # everything that came due while paused
    if not isinstance(m, WakeMessage) and not s.paused and _overdue(s, ctx.now):
        wake_due(ctx)  # a late timer: act on what is already due rather than wait for it


def _hook_resumed(ctx: Ctx, m: HookMessage) -> None:
    digest = m.token_sha256 or (sha256_hex(m.token) if m.token else "")
    hooks = ctx.state.hooks
    name = next((n for n, h in hooks.items() if not h["resumed"] and matches(h, m.token, digest)), None)
    if name is None:
        return
    legacy = hooks[name].get("token")  # a history that records the token goes on recording it
    ctx.emit(HookResumed(name, legacy, m.payload) if legacy else
             HookResumed(name, None, m.payload, token_sha256=digest))
    deliver(ctx, name)


def _storable_inbound(m: Message) -> Message:
    """A worker's answer or heartbeat whose values cannot be stored (a lone surrogate, NaN, nesting
    deeper than MAX_DEPTH) becomes a non-retryable VALUE_NOT_STORABLE failure, or loses its details:
    recording it as it is would make this and every later commit fail."""
    if isinstance(m, ResultMessage):
        err = m.error.to_dict() if m.error is not None else None
        problem = value_problem(m.output, f"steps.{m.unit}.output") or value_problem(
            err, f"steps.{m.unit}.error"
        )
        if problem is not None:
            return replace(m, output=None, error=TaskError(VALUE_NOT_STORABLE, str(problem), retryable=False))
    elif isinstance(m, HeartbeatMessage) and value_problem(m.details, "details") is not None:
        return replace(m, details=None)
    elif isinstance(m, (SignalMessage, HookMessage)) and (problem := value_problem(m.payload, "payload")):
        return replace(m, payload={"refused": VALUE_NOT_STORABLE, "problem": str(problem)})
    return m


def _overdue(s: ExecutionState, now: int) -> bool:
    w = s.next_wake_ms()
    return w is not None and w <= now


def _child_done(ctx: Ctx, m: ChildDoneMessage) -> None:
    u = ctx.state.units.get(m.unit)
    # A child that continued as new answers from its successor (`child~1`, `child~2`, ...).
    ours = u is not None and (m.child_id == u.child_id or m.child_id.startswith(f"{u.child_id}~"))
    if u is None or u.terminal or not ours:
        ctx.emit(StaleResultIgnored(m.unit, m.child_id, f"child {m.status.lower()}"))
        return
    if m.status == "COMPLETED":
        succeed(ctx, m.unit, m.output)
        return
    error = m.error
    if error is None:
        code = {"CANCELLED": CANCELLED, "TIMED_OUT": WORKFLOW_TIMEOUT}.get(m.status, "FAILED")
        error = TaskError(code, f"child {m.child_id} ended {m.status}", retryable=False)
    fail(ctx, m.unit, error)


def _fixpoint(ctx: Ctx, retry_asked: bool = False, code_runtime: Runtime | None = None) -> bool:
    """Run rounds until nothing new happens (True) or the decision's budget is spent (False)."""
    s = ctx.state
    runtime = None
    for _ in range(MAX_ROUNDS):
        if ctx.event_count >= MAX_DECISION_EVENTS or ctx.meter.spent > MAX_DECISION_STEPS:
            return False
        before = ctx.event_count
        progress_abort(ctx)
        if s.terminal:
            return True
        runtime = runtime or runtime_for(ctx.workflow, code_runtime, ctx.keys, ctx.meter)
        commands: list[Any] | None = bugs_park(ctx.workflow, runtime.run(ctx.workflow, s, ctx.now))
        if s.parked is not None:  # tried again on every decision: un-parks once the replay is clean
            commands = try_unpark(ctx, commands or [], retry_asked)
            retry_asked = False
        if commands is not None:
            execute(ctx, commands)
            if s.terminal:
                return True
            if ctx.event_count == before and s.status == COMPENSATING:
                compensation_unanswered(ctx)
        if ctx.event_count == before:
            return True
    return False


def workflow_build(workflow: Any) -> str:
    """The build an execution pins: a code build id, or a definition's hash."""
    return str(getattr(workflow, "build", None) or getattr(workflow, "hash", None) or "")


def runtime_for(workflow: Any, code_runtime: Runtime | None = None, keys: KeySource | None = None,
                meter: Any = None) -> Runtime:
    """The DSL interpreter for definitions; a code workflow's own runtime otherwise (`code_runtime`
    when given, else a replayer that replays cold). `keys`: the stack key's source; `meter`: the
    decision's `expressions.Meter`."""
    rt = getattr(workflow, "runtime", None)
    if rt is not None:
        runtime: Runtime = rt() if isinstance(rt, type) else rt
        return runtime
    if hasattr(workflow, "steps") and hasattr(workflow, "raw"):
        if getattr(workflow, "handlers", None):  # on_signal: the interpreter with event handlers
            from orbit.core.runtime.dsl.handlers import HandlersRuntime

            return HandlersRuntime(keys, meter)
        from orbit.core.runtime.dsl.interpreter import DslRuntime

        return DslRuntime(keys, meter)
    from orbit.core.runtime.code.replayer import CodeReplayer  # the Python replayer

    if code_runtime is None:
        code_runtime = CodeReplayer()
    return _Keyed(code_runtime, keys) if isinstance(code_runtime, CodeReplayer) else code_runtime


class _Keyed:
    """A code replayer and the decision's key source: `Runtime.run` with the key given along."""

    def __init__(self, replayer: Any, keys: KeySource | None) -> None:
        self.replayer, self.keys = replayer, keys

    def run(self, workflow: Any, state: Any, now_ms: int) -> list[Any]:
        commands: list[Any] = self.replayer.run(workflow, state, now_ms, keys=self.keys)
        return commands
