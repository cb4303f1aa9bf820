"""Inline steps: run a step inside the decider's invocation, no queue (docs/inline-steps.md).

The decider schedules an inline step like any other (`StepScheduled` with `inline` set, a
`DispatchTask` effect). After the commit, `Engine._carry_out` does not send that dispatch to a
queue: the engine that committed it runs it here, turns the outcome into the `result` message a
worker would have sent, and decides that message at once. That decision records the result
together with whatever follows (the next inline step's `StepScheduled`, a worker dispatch, the
end of the run) in **one** conditional commit, then the loop runs the next inline step. A chain of
inline steps and the decision after it therefore cost at most one commit per step, no queue message
and no extra read (the state stays cached in the process); at_least_once steps share commits,
up to BATCH_STEPS results in one (`run_before_commit`, argued in docs/decisions/0011-inline-steps.md).

Semantics per attempt (the names Lambda durable functions uses):
- at_least_once: the result is committed with the next decision. A crash between the commit that
  scheduled the attempt and the one recording its result leaves the attempt live; once its lease
  (`deadline_ms`) has passed, the next decision runs it again (orbit/core/decider/inline.py).
- at_most_once: the started record (`StepDispatched`, this invocation's session) is committed
  before the function runs; in a chain it rides in the same commit as the `StepScheduled`, so it
  costs no extra write. After a crash the attempt is recorded uncertain and never run again blind.

Who runs what:
- a process with a runner (the decider; LocalStack) runs the attempts its own decisions schedule,
  while the invocation has time for them (`InlineRunner.limit_ms`);
- anything else (the API's `start`, a decider short of time) hands the attempt over: a `wake`
  message with id `inline:<token>:<unit>` on the decision queue, whose decider runs it;
- a redelivered message whose commit scheduled an attempt re-runs nothing itself: the attempt's
  lease decides (`Engine.recover`: a wake when it already passed, a timer at its end otherwise).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any, Protocol

from orbit.core.definition.inline import AT_MOST_ONCE
from orbit.core.history.effects import ArmTimer, DispatchTask, Effect
from orbit.core.history.events import Recorded, TaskError
from orbit.core.history.hook_tokens import key_of
from orbit.core.history.messages import Message, ResultMessage, StartedMessage, WakeMessage
from orbit.core.history.state import SCHEDULED, ExecutionState
from orbit.service.ports import Clock, IdSource, Queues
from orbit.service.replay_host import runtime_of
from orbit.service.turn import Turn

HANDOFF = "inline:"

# The host's hook while an inline step's task runs on a thread of its own (orbit dev lets go of
# its engine lock meanwhile: orbit/local/devserver.py). Kept here, on the decision path.
_ELSEWHERE: ContextVar[Callable[[], AbstractContextManager[Any]] | None] = ContextVar(
    "orbit_user_code_elsewhere", default=None)


def while_elsewhere() -> AbstractContextManager[Any]:
    """Wrap a wait for user code that runs on another thread (an inline step's task): `orbit dev`
    lets go of its engine lock for it, so other requests and decisions go on meanwhile."""
    release = _ELSEWHERE.get()
    return release() if release is not None else nullcontext()


@contextmanager
def releasing(release: Callable[[], AbstractContextManager[Any]]) -> Iterator[None]:
    """Inside the block, `while_elsewhere()` is `release()`."""
    token = _ELSEWHERE.set(release)
    try:
        yield
    finally:
        _ELSEWHERE.reset(token)


RESERVE_MS = 1_000  # kept free before a lease or the invocation's end, for the commit after the run
MIN_RUN_MS = 200  # an attempt is not started with less than this left: it is handed over instead
# at_least_once steps whose results may share one commit (docs/decisions/0011-inline-steps.md)
BATCH_STEPS = 8


class InlineTasks(Protocol):
    """Runs one inline attempt in this process (orbit/worker/inline.py)."""

    def run(self, d: DispatchTask, limit_ms: int, closures: Any = None) -> tuple[Any, TaskError | None]:
        """The output, or the TaskError the attempt ended with (TIMEOUT past `limit_ms`); a `ctx.run`
        step's function comes from `closures` (the code runtime's table)."""
        ...


class Decider(Protocol):
    """What inline work uses of the engine that decides (service/engine.py `Engine`)."""

    inline: InlineRunner | None
    queues: Queues
    clock: Clock
    ids: IdSource
    code_runtime: Any

    def cached_state(self, eid: str) -> ExecutionState | None: ...
    def load_state(self, execution_id: str) -> ExecutionState: ...
    def workflow_for(self, state: ExecutionState, m: Message | None) -> Any: ...
    def recover(self, eid: str, state: ExecutionState, since_ms: int | None = None, done: Any = (),
                turn: Turn | None = None) -> None: ...


class InlineRunner:
    """The decider's side of inline steps: what runs, within which limit (the loop: `Engine._pipeline`)."""

    def __init__(self, tasks: InlineTasks, session: str, worker_id: str = "decider",
                 remaining_ms: Callable[[], int | None] | None = None) -> None:
        self.tasks, self.worker_id = tasks, worker_id
        self._default_session, self._default_remaining = session, remaining_ms or (lambda: None)
        # per thread (one invocation each): .remaining, .session (`until`)
        self._local = threading.local()

    def until(self, remaining_ms: Callable[[], int | None], session: str | None = None) -> None:
        """Bound this thread's attempts by what its invocation has left (Lambda: the context's
        clock); `session` names the invocation in at_most_once started records."""
        self._local.remaining = remaining_ms
        self._local.session = session

    @property
    def session(self) -> str:
        return getattr(self._local, "session", None) or self._default_session

    def _remaining(self) -> int | None:
        return getattr(self._local, "remaining", self._default_remaining)()

    def limit_ms(self, d: DispatchTask, now_ms: int) -> int | None:
        """How long attempt `d` may run here: until its lease and the invocation's end, each minus
        RESERVE_MS for the commit that follows. None: too little left, hand it over."""
        limit = (d.deadline_ms - now_ms if d.deadline_ms is not None else 900_000) - RESERVE_MS
        remaining = self._remaining()
        if remaining is not None:
            limit = min(limit, remaining - RESERVE_MS)
        return limit if limit >= MIN_RUN_MS else None


def recall(engine: Decider, eid: str, dispatches: list[DispatchTask],
           state: ExecutionState | None = None, wf: Any = None) -> None:
    """Before running inline attempts this process did not schedule itself (a hand-over, a restart):
    a code workflow's `ctx.run` function is only ever the object its replay passed, so when one is
    missing the workflow is replayed once, on a fresh instance, against the stored state. The
    replay reaches the `ctx.run` call again and hands its function (closures included) to the
    engine's code runtime's table (orbit/service/replay_host.py `Closures`); its commands are
    dropped. Nothing is resolved by name."""
    # a ctx.run step's task is `module:qualname` (code_inline.task_name): others never need a replay
    if all(":" not in d.task for d in dispatches):
        return
    closures = runtime_of(engine).closures
    if all(":" not in d.task or closures.get(eid, d.unit) is not None for d in dispatches):
        return
    if state is None:
        state = engine.cached_state(eid)
        state = state if state is not None else engine.load_state(eid)
    wf = wf if wf is not None else engine.workflow_for(state, None)
    if getattr(wf, "kind", None) != "code" or state.terminal:
        return  # a definition's inline steps run registered tasks only
    from orbit.core.runtime.code.instance import Instance

    inst = Instance(wf, eid, closures)
    try:
        inst.feed(state, lambda: key_of(engine.ids))
    finally:
        inst.discard()


def _code_runtime(engine: Any, wf: Any) -> Any:
    """The engine's code runtime for a code workflow; None for a definition (it needs none)."""
    return runtime_of(engine) if getattr(wf, "kind", None) == "code" else None


def _closures(engine: Any, d: DispatchTask) -> Any:
    """Where a `ctx.run` step's function is (the engine's code runtime); None for a registered task."""
    return runtime_of(engine).closures if ":" in d.task else None


def handed_over(msgs: list[Message]) -> list[WakeMessage]:
    """The hand-over wakes among `msgs` (`handover`)."""
    return [m for m in msgs if isinstance(m, WakeMessage) and m.id.startswith(HANDOFF)]


def runs_here(runner: InlineRunner | None, clock: Clock, d: DispatchTask, turn: Turn | None) -> bool:
    return (runner is not None and turn is not None and turn.drives
            and runner.limit_ms(d, clock.now_ms()) is not None)


def run_before_commit(engine: Decider, state: ExecutionState, wf: Any, events: list[Recorded],
                      effects: list[Effect], handled: list[str], turn: Turn) -> None:
    """Batching (docs/decisions/0011-inline-steps.md): before a commit, run the at_least_once
    inline attempts it schedules and decide their results into the same commit, up to BATCH_STEPS
    steps. Nothing is durable before the commit, which at_least_once allows: a crash re-runs the
    batch from the last commit. Stops at anything else the decision must carry out first (a worker
    dispatch, a child, a signal's hook...), at an at_most_once step (its started record must be
    committed before it runs) and when the invocation runs short."""
    from orbit.core.decider.decide import decide

    runner = engine.inline
    if wf is None or runner is None or not turn.drives:
        return
    ran = 0
    while ran < BATCH_STEPS and not state.terminal:
        ready = [e for e in effects if isinstance(e, DispatchTask) and e.inline is not None]
        others = [e for e in effects if not isinstance(e, ArmTimer) and e not in ready]
        if not ready or others or any(e.inline == AT_MOST_ONCE for e in ready):
            break
        if len(ready) + ran > BATCH_STEPS or any(not runs_here(runner, engine.clock, d, turn) for d in ready):
            break
        if any(d.redelivery for d in ready):
            # An attempt whose lease passed (core/decider/inline.py): maybe decided on a cached state
            # another decider overtook, which ran and recorded it since. The commit goes first (its
            # condition is the check); `drive` runs the attempt after it. Recovery path only.
            break
        recall(engine, state.id, ready, state, wf)  # the decision's replay passed them, unless evicted
        for d in ready:
            effects.remove(d)
            with while_elsewhere():  # the task runs on a thread of its own: orbit dev lets go of its lock
                output, error = runner.tasks.run(d, runner.limit_ms(d, engine.clock.now_ms()) or MIN_RUN_MS,
                                                 _closures(engine, d))
            m = ResultMessage(state.id, f"result:{d.token}", d.unit, d.token,
                              output if error is None else None, error)
            decision = decide(wf, state, m, engine.clock.now_ms(), engine.ids,
                              code_runtime=_code_runtime(engine, wf))
            events.extend(decision.events)
            effects.extend(decision.effects)
            handled.append(m.id)
            ran += 1
    if ran:  # the timers the inner decisions asked for: only the last state's next wake-up counts
        from orbit.core.decider.decide import RETRY_STUCK_WAKE_MS

        effects[:] = [e for e in effects if not isinstance(e, ArmTimer)]
        wake = state.next_wake_ms()
        if wake is not None and not state.terminal:
            now = engine.clock.now_ms()
            effects.append(ArmTimer(state.id, wake if wake > now else now + RETRY_STUCK_WAKE_MS))


def add_started(engine: Decider, state: ExecutionState, wf: Any, effects: list[Effect],
                events: list[Recorded], now: int, turn: Turn) -> None:
    """Before the commit: the started record of every at_most_once attempt this decision schedules
    and this process will run, in the same commit (orbit.core.decider.decide, a `started` message)."""
    if wf is None:
        return
    from orbit.core.decider.decide import decide

    runner = engine.inline
    if runner is None:
        return
    for e in list(effects):
        if (isinstance(e, DispatchTask) and e.inline == AT_MOST_ONCE
                and runs_here(runner, engine.clock, e, turn)):
            u = state.units.get(e.unit)
            if u is not None and u.status == SCHEDULED and u.token == e.token:
                m = StartedMessage(state.id, f"started:{e.token}:{runner.session}", e.unit, e.token,
                                   runner.worker_id, runner.session)
                d = decide(wf, state, m, now, engine.ids, code_runtime=_code_runtime(engine, wf))
                events.extend(d.events)
                effects.extend(d.effects)


def carry_out(runner: InlineRunner | None, queues: Queues, clock: Clock, eid: str, effects: list[Effect],
              fresh: bool, turn: Turn | None) -> list[Effect]:
    """Take the inline dispatches out of `effects` (the rest is sent as usual). Fresh ones are run
    by this process or handed over; ones re-sent for a redelivered message wait for their lease
    (`Engine.recover`). An ArmTimer for the lease of an attempt this process runs now is dropped: the
    commit after the attempt re-arms whatever is due next, so a chain costs no timer per step."""
    if runner is not None and fresh and turn is not None and turn.taking:
        # Taking a hand-over: the timer for the current wake-up was armed by the process that
        # handed it over, and what this one runs next needs none (its crash redelivers the message).
        effects = [e for e in effects if not isinstance(e, ArmTimer)]
    inline = [e for e in effects if isinstance(e, DispatchTask) and e.inline is not None]
    if not inline:
        return effects
    rest = [e for e in effects if not (isinstance(e, DispatchTask) and e.inline is not None)]
    if not fresh:
        return rest
    here = [d for d in inline if runs_here(runner, clock, d, turn)]
    for d in inline:
        if d in here and turn is not None:
            turn.pending.append(d)
        else:
            queues.send_decision(handover(eid, d).to_dict())
    # No timer for these leases either way: the process running an attempt commits again before
    # its lease ends; a hand-over is a message on the decision queue. If this invocation dies before
    # either, the message it was handling comes back (a redelivery: `Engine.recover` wakes or arms what is
    # due); an API call that dies is retried by its client, which re-sends the commit's effects, as
    # for a worker dispatch the API did not get to send.
    leases = {d.deadline_ms for d in inline}
    return [e for e in rest if not (isinstance(e, ArmTimer) and e.fire_at_ms in leases)]


def run_attempts(engine: Decider, eid: str, pending: list[DispatchTask]) -> list[Message]:
    """Run the inline attempts `pending` here, each within what its lease and the invocation leave;
    their outcomes as the `result` messages a worker would have sent. One that no longer fits is
    handed over (a wake on the decision queue) and has no result here."""
    runner = engine.inline
    assert runner is not None  # only a pass that drives runs attempts
    recall(engine, eid, pending)
    results: list[Message] = []
    for d in pending:
        limit = runner.limit_ms(d, engine.clock.now_ms())
        if limit is None:  # the invocation ran short: the next one takes it
            engine.queues.send_decision(handover(eid, d).to_dict())
            continue
        with while_elsewhere():
            output, error = runner.tasks.run(d, limit, _closures(engine, d))
        results.append(ResultMessage(eid, f"result:{d.token}", d.unit, d.token,
                                     output if error is None else None, error))
    return results


def take_over(runner: InlineRunner, now: int, state: ExecutionState,
              handed: list[WakeMessage]) -> tuple[list[DispatchTask], list[Message]]:
    """Attempts another process handed over: still live with that token, never started, lease not
    over (an expired one was just redispatched by the wake itself). Returns (the at_least_once ones
    whose lease is long enough to run in now, the started records the others need first): an
    at_most_once one, or one whose lease is too short, first gets a started record from this
    invocation (a fresh lease; one extra commit, on hand-overs only; `started_attempts` after it).

    `state` may be a cached one that another decider overtook: an attempt found live runs, and
    the conditional commit of its result or started record settles it; one found missing is only
    dropped once a read of the history's head shows the state is current (`all_live`)."""
    eid = state.id
    starts: list[Message] = []
    ready: list[DispatchTask] = []
    for m in handed:
        token, _, unit = m.id[len(HANDOFF):].partition(":")
        u = state.units.get(unit)
        if not _live_handover(state, m) or u is None:
            continue  # answered, retried or started meanwhile: nothing to take over
        if u.deadline_ms is not None and u.deadline_ms <= now:
            continue
        d = dispatch_of(state, unit)
        if u.inline != AT_MOST_ONCE and runner.limit_ms(d, now) is not None:
            ready.append(d)  # at_least_once with its lease still long enough: just run it
            continue
        starts.append(StartedMessage(eid, f"started:{token}:{runner.session}", unit, token,
                                     runner.worker_id, runner.session))
    return ready, starts


def started_attempts(state: ExecutionState, starts: list[Message]) -> list[DispatchTask]:
    """After the commit of `take_over`'s started records: the attempts they started."""
    return [dispatch_of(state, m.unit) for m in starts if isinstance(m, StartedMessage)
            and state.units[m.unit].token == m.token and state.units[m.unit].status == "DISPATCHED"]


def handover(eid: str, d: DispatchTask) -> WakeMessage:
    """The wake that hands inline attempt `d` over to the decider that receives it."""
    return WakeMessage(eid, f"{HANDOFF}{d.token}:{d.unit}")


def all_live(state: ExecutionState, handed: list[WakeMessage]) -> bool:
    """Whether every hand-over in `handed` names an attempt still live in `state`."""
    return all(_live_handover(state, m) for m in handed)


def _live_handover(state: ExecutionState, m: WakeMessage) -> bool:
    token, _, unit = m.id[len(HANDOFF):].partition(":")
    u = state.units.get(unit)
    return u is not None and u.inline is not None and u.token == token and u.status == SCHEDULED


def dispatch_of(state: ExecutionState, unit: str) -> DispatchTask:
    u = state.units[unit]
    return DispatchTask(state.id, unit, u.task, u.queue, u.input, u.attempt, u.token or "", u.idempotency_key,
                        u.deadline_ms, u.redelivery, u.heartbeat_timeout_ms, u.inline)


def recover(engine: Decider, eid: str, state: ExecutionState, since_ms: int | None = None,
            done: Any = (), turn: Turn | None = None) -> None:
    """`Engine.recover` for a caller outside a decision (a test, a tool)."""
    engine.recover(eid, state, since_ms, done, turn)
