"""Inline steps: run a step inside the decider's invocation, no queue (docs/inline-steps.md).

The decider schedules an inline step like any other (`StepScheduled` with `inline` set, a
`DispatchTask` effect). After the commit, `Engine._carry_out` does not send that dispatch to a
queue: the engine that committed it runs it here, turns the outcome into the `result` message a
worker would have sent, and decides that message at once. That decision records the result
together with whatever follows (the next inline step's `StepScheduled`, a worker dispatch, the
end of the run) in **one** conditional commit, then the loop runs the next inline step. A chain of
inline steps and the decision after it therefore cost at most one commit per step, no queue message
and no extra read (the state stays cached in the process); at_least_once steps share commits,
up to BATCH_STEPS results in one (`run_before_commit`, argued in docs/architecture.md).

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
  lease decides (`recover`: a wake when it already passed, a timer at its end otherwise).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from orbit.core.definition.inline import AT_MOST_ONCE, inline_timeout_problems, unserved_inline_problems
from orbit.core.history.effects import ArmTimer, DispatchTask, Effect
from orbit.core.history.events import Recorded, TaskError
from orbit.core.history.messages import Message, ResultMessage, StartedMessage, WakeMessage
from orbit.core.history.state import SCHEDULED, ExecutionState
from orbit.errors import ValidationError
from orbit.service.outbox import SEND_SKEW_MS, still_due

HANDOFF = "inline:"
RESERVE_MS = 1_000  # kept free before a lease or the invocation's end, for the commit after the run
MIN_RUN_MS = 200  # an attempt is not started with less than this left: it is handed over instead
BATCH_STEPS = 8  # at_least_once steps whose results may share one commit (docs/architecture.md)


class InlineTasks(Protocol):
    """Runs one inline attempt in this process (orbit/worker/inline.py)."""

    def run(self, d: DispatchTask, limit_ms: int) -> tuple[Any, TaskError | None]:
        """The output, or the TaskError the attempt ended with (TIMEOUT past `limit_ms`)."""
        ...


class InlineRunner:
    """The decider's side of inline steps: what runs, within which limit, and the chain loop."""

    def __init__(self, tasks: InlineTasks, session: str, worker_id: str = "decider",
                 remaining_ms: Callable[[], int | None] | None = None) -> None:
        self.tasks, self.worker_id = tasks, worker_id
        self._default_session, self._default_remaining = session, remaining_ms or (lambda: None)
        # per thread: .pending (eid -> dispatches its decisions made), .driving, .remaining, .session
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

    def pending(self) -> dict[str, list[DispatchTask]]:
        p = getattr(self._local, "pending", None)
        if p is None:
            p = self._local.pending = {}
        return p


def check_registration(engine: Any, definition: Any) -> None:
    """Refuse a definition whose inline step's timeout does not fit in the decider's timeout
    (`engine.decider_timeout_ms`, from ORBIT_DECIDER_TIMEOUT_S; unknown: Lambda's 900 s, checked
    when the definition was parsed), or whose inline step names a task this stack does not serve
    (`served_inline_tasks`; one line per step, naming it and its task). Only registration checks
    this: a stored definition that is loaded again is not refused, its step fails with
    INLINE_TASK_NOT_FOUND when it runs."""
    limit = getattr(engine, "decider_timeout_ms", None)
    problems = inline_timeout_problems(definition, limit) if limit else []
    served = served_inline_tasks(engine)
    if served is not None:
        problems += unserved_inline_problems(definition, served)
    if problems:
        raise ValidationError(problems)


def served_inline_tasks(engine: Any) -> frozenset[str] | None:
    """The tasks inline steps may name here, or None when this process cannot know them: the
    engine's own runner's (the local stack, a decider), else `engine.inline_tasks` (a deployed API
    that imports InlineTaskModules only to know their names; orbit/aws/wiring.py)."""
    runner = getattr(engine, "inline", None)
    served = getattr(getattr(runner, "tasks", None), "served", None)
    if callable(served):
        return frozenset(served())
    known = getattr(engine, "inline_tasks", None)
    if callable(known):
        known = known()
    return None if known is None else frozenset(known)


def recall(engine: Any, eid: str, dispatches: list[DispatchTask],
           state: ExecutionState | None = None, wf: Any = None) -> None:
    """Before running inline attempts this process did not schedule itself (a hand-over, a restart):
    a code workflow's `ctx.run` function is only ever the object its replay passed, so when one is
    missing the workflow is replayed once, on a fresh instance, against the stored state. The
    replay reaches the `ctx.run` call again and hands its function (closures included) to the table
    (orbit/core/runtime/code_inline.py); its commands are dropped. Nothing is resolved by name."""
    from orbit.core.runtime.code_inline import callable_for

    # a ctx.run step's task is `module:qualname` (code_inline.task_name): others never need a replay
    if all(":" not in d.task or callable_for(eid, d.unit) is not None for d in dispatches):
        return
    if state is None:
        cached = engine._cache.get(eid)
        state = cached[0] if cached is not None else engine.load_state(eid)
    wf = wf if wf is not None else engine._workflow_for(state, None)
    if getattr(wf, "kind", None) != "code" or state.terminal:
        return  # a definition's inline steps run registered tasks only
    from orbit.core.runtime.code_instance import Instance

    inst = Instance(wf, eid)
    try:
        inst.feed(state)
    finally:
        inst.discard()


def decide_and_drive(engine: Any, eid: str, msgs: list[Message], delivery: Any) -> None:
    """`Engine._process`, then the inline attempts it scheduled (`drive`). Only decisions made
    here run inline work in this process; others (a redrive or fork from the API) hand it over."""
    runner = engine.inline
    if runner is None:
        engine._process(eid, msgs, delivery)
        return
    runner._local.driving = True
    runner._local.taking = all(isinstance(m, WakeMessage) and m.id.startswith(HANDOFF) for m in msgs)
    engine._local.recovered = None
    try:
        engine._process(eid, msgs, delivery)
        runner._local.taking = False
        again = [(delivery or {}).get(m.id, (None, 1)) for m in msgs]
        again = [sent for sent, count in again if count > 1]
        cached = engine._cache.get(eid)
        if again and cached is not None:
            # A redelivery: its first invocation may have died mid-chain, after commits that handled
            # internal results. They all came after the message was sent (outbox.SEND_SKEW_MS as in
            # find_handled); the decision's own resend may have recovered them already.
            since = min(again) - SEND_SKEW_MS if all(isinstance(t, int) for t in again) else None
            if engine._local.recovered is None:  # else: recovered since the message's own commit
                recover(engine, eid, cached[0], since)
        drive(engine, eid, msgs)
    finally:
        runner._local.driving = runner._local.taking = False
        runner.pending().pop(eid, None)


def runs_here(engine: Any, d: DispatchTask) -> bool:
    runner = engine.inline
    return (runner is not None and getattr(runner._local, "driving", False)
            and runner.limit_ms(d, engine.clock.now_ms()) is not None)


def run_before_commit(engine: Any, state: ExecutionState, wf: Any, events: list[Recorded],
                      effects: list[Effect], handled: list[str]) -> None:
    """Batching (docs/architecture.md, "inline steps"): before a commit, run the at_least_once
    inline attempts it schedules and decide their results into the same commit, up to BATCH_STEPS
    steps. Nothing is durable before the commit, which at_least_once allows: a crash re-runs the
    batch from the last commit. Stops at anything else the decision must carry out first (a worker
    dispatch, a child, a signal's hook...), at an at_most_once step (its started record must be
    committed before it runs) and when the invocation runs short."""
    from orbit.core.decider.decide import decide

    runner = engine.inline
    if wf is None or runner is None or not getattr(runner._local, "driving", False):
        return
    ran = 0
    while ran < BATCH_STEPS and not state.terminal:
        ready = [e for e in effects if isinstance(e, DispatchTask) and e.inline is not None]
        others = [e for e in effects if not isinstance(e, ArmTimer) and e not in ready]
        if not ready or others or any(e.inline == AT_MOST_ONCE for e in ready):
            break
        if len(ready) + ran > BATCH_STEPS or any(not runs_here(engine, d) for d in ready):
            break
        if any(d.redelivery for d in ready):
            # An attempt whose lease passed (core/decider/inline.py): maybe decided on a cached state
            # another decider overtook, which ran and recorded it since. The commit goes first (its
            # condition is the check); `drive` runs the attempt after it. Recovery path only.
            break
        recall(engine, state.id, ready, state, wf)  # the decision's replay passed them, unless evicted
        for d in ready:
            effects.remove(d)
            output, error = runner.tasks.run(d, runner.limit_ms(d, engine.clock.now_ms()) or MIN_RUN_MS)
            m = ResultMessage(state.id, f"result:{d.token}", d.unit, d.token,
                              output if error is None else None, error)
            decision = decide(wf, state, m, engine.clock.now_ms(), engine.ids,
                              code_runtime=getattr(engine, "code_runtime", None))
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


def add_started(engine: Any, state: ExecutionState, wf: Any, effects: list[Effect], events: list[Recorded],
                now: int) -> None:
    """Before the commit: the started record of every at_most_once attempt this decision schedules
    and this process will run, in the same commit (orbit.core.decider.decide, a `started` message)."""
    if wf is None:
        return
    from orbit.core.decider.decide import decide

    runner = engine.inline
    for e in list(effects):
        if isinstance(e, DispatchTask) and e.inline == AT_MOST_ONCE and runs_here(engine, e):
            u = state.units.get(e.unit)
            if u is not None and u.status == SCHEDULED and u.token == e.token:
                m = StartedMessage(state.id, f"started:{e.token}:{runner.session}", e.unit, e.token,
                                   runner.worker_id, runner.session)
                d = decide(wf, state, m, now, engine.ids, code_runtime=getattr(engine, "code_runtime", None))
                events.extend(d.events)
                effects.extend(d.effects)


def carry_out(engine: Any, eid: str, effects: list[Effect], fresh: bool) -> list[Effect]:
    """Take the inline dispatches out of `effects` (the rest is sent as usual). Fresh ones are run
    by this process or handed over; ones re-sent for a redelivered message wait for their lease
    (`recover`). An ArmTimer for the lease of an attempt this process runs now is dropped: the
    commit after the attempt re-arms whatever is due next, so a chain costs no timer per step."""
    runner = engine.inline
    if runner is not None and fresh and getattr(runner._local, "taking", False):
        # Taking a hand-over: the timer for the current wake-up was armed by the process that
        # handed it over, and what this one runs next needs none (its crash redelivers the message).
        effects = [e for e in effects if not isinstance(e, ArmTimer)]
    inline = [e for e in effects if isinstance(e, DispatchTask) and e.inline is not None]
    if not inline:
        return effects
    rest = [e for e in effects if not (isinstance(e, DispatchTask) and e.inline is not None)]
    if not fresh:
        return rest
    here = [d for d in inline if runs_here(engine, d)]
    for d in inline:
        if d in here:
            engine.inline.pending().setdefault(eid, []).append(d)
        else:
            engine.queues.send_decision({"kind": "wake", "execution_id": eid,
                                         "id": f"{HANDOFF}{d.token}:{d.unit}"})
    # No timer for these leases either way: the process running an attempt commits again before
    # its lease ends; a hand-over is a message on the decision queue. If this invocation dies before
    # either, the message it was handling comes back (a redelivery: `recover` wakes or arms what is
    # due); an API call that dies is retried by its client, which re-sends the commit's effects, as
    # for a worker dispatch the API did not get to send.
    leases = {d.deadline_ms for d in inline}
    return [e for e in rest if not (isinstance(e, ArmTimer) and e.fire_at_ms in leases)]


def drive(engine: Any, eid: str, msgs: list[Message]) -> None:
    """After a decision: run the inline attempts it scheduled (and any handed over to us by a
    message), decide each outcome at once, and go on while new inline attempts come up."""
    runner = engine.inline
    if runner is None:
        return
    pending = runner.pending().pop(eid, [])
    handed = [m for m in msgs if isinstance(m, WakeMessage) and m.id.startswith(HANDOFF)]
    if handed:
        pending += _taken_over(engine, eid, handed)
    while pending:
        recall(engine, eid, pending)
        results: list[Message] = []
        for d in pending:
            limit = runner.limit_ms(d, engine.clock.now_ms())
            if limit is None:  # the invocation ran short: the next one takes it
                engine.queues.send_decision({"kind": "wake", "execution_id": eid,
                                             "id": f"{HANDOFF}{d.token}:{d.unit}"})
                continue
            output, error = runner.tasks.run(d, limit)
            results.append(ResultMessage(eid, f"result:{d.token}", d.unit, d.token,
                                         output if error is None else None, error))
        if not results:
            return
        engine._process(eid, results)  # one commit: these results + the decision that follows
        pending = runner.pending().pop(eid, [])


def _taken_over(engine: Any, eid: str, handed: list[WakeMessage]) -> list[DispatchTask]:
    """Attempts another process handed over: still live with that token, never started, lease not
    over (an expired one was just redispatched by the wake itself). An at_most_once one, or one
    whose lease is too short to run in, first gets a started record from this invocation (a fresh
    lease; one extra commit, on hand-overs only); an at_least_once one runs under its lease.

    The state may be a cached one that another decider overtook: an attempt found live runs, and
    the conditional commit of its result or started record settles it; one found missing is only
    dropped once a read of the history's head shows the state is current."""
    state, since_snapshot = engine._state(eid, create=False)
    if any(not _live_handover(state, m) for m in handed) and engine._overtaken(eid, state):
        state, since_snapshot = engine._state(eid, create=False)  # _state popped the stale one: a load
    engine._remember(eid, state, since_snapshot)
    runner, now = engine.inline, engine.clock.now_ms()
    starts, ready = [], []
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
    if not starts:
        return ready
    runner._local.taking = True  # this process runs them next: their lease needs no timer (carry_out)
    try:
        engine._process(eid, starts)
    finally:
        runner._local.taking = False
    cached = engine._cache.get(eid)
    state = cached[0] if cached is not None else engine.load_state(eid)
    return ready + [dispatch_of(state, m.unit) for m in starts
                    if state.units[m.unit].token == m.token and state.units[m.unit].status == "DISPATCHED"]


def _live_handover(state: ExecutionState, m: WakeMessage) -> bool:
    token, _, unit = m.id[len(HANDOFF):].partition(":")
    u = state.units.get(unit)
    return u is not None and u.inline is not None and u.token == token and u.status == SCHEDULED


def taking_handover(engine: Any) -> bool:
    """Whether this thread's decision takes hand-over wakes only (their check is `_taken_over`'s)."""
    runner = engine.inline
    return runner is not None and bool(getattr(runner._local, "taking", False))


def dispatch_of(state: ExecutionState, unit: str) -> DispatchTask:
    u = state.units[unit]
    return DispatchTask(state.id, unit, u.task, u.queue, u.input, u.attempt, u.token or "", u.idempotency_key,
                        u.deadline_ms, u.redelivery, u.heartbeat_timeout_ms, u.inline)


def recover(engine: Any, eid: str, state: ExecutionState, since_ms: int | None = None,
            done: Any = ()) -> None:
    """A redelivered message: the invocation that handled it may have died inside a chain. A live
    inline attempt whose lease passed is woken now; one still leased gets a timer at the lease's
    end, in case its owner is gone (a spare wake finds nothing due and changes nothing)."""
    # A chain carries out each commit's effects before it runs the next step, but the sends of a
    # decider invocation leave together at its end (queues.batched): a crash or a refused send can
    # leave the effects of every commit of the chain unsent (a worker dispatch, a child's start...).
    # Those commits handled the chain's own results and started records, which no queue redelivers;
    # other commits may have landed in between (a signal). So every internal commit since
    # `since_ms` (the handled commit's time, or the redelivered message's send time) has its still
    # due effects sent again, oldest first; `done`: first seqs already re-sent. Without a time, the
    # newest commit only (docs/decisions/delivery-engine-outbox.md).
    engine._local.recovered = since_ms if since_ms is not None else -1
    if engine._overtaken(eid, state):  # a cached state another decider overtook: filter on the stored one
        engine._cache.pop(eid, None)
        state, since_snapshot = engine._state(eid, create=False)
        engine._remember(eid, state, since_snapshot)
    now = engine.clock.now_ms()
    expiry = None
    for commit in _internal_commits(engine, eid, state, since_ms):
        if commit.first_seq in done:
            continue
        # Its hook rows get the expiry of what is written for the execution now, as a decision's do.
        expiry = expiry or engine._write_expiry(state, now)
        engine._carry_out(eid, still_due(state, commit.effects), expiry, fresh=False, seq=commit.last_seq)
    for key in list(state.active):
        u = state.units.get(key)
        if u is None or u.inline is None or u.deadline_ms is None:
            continue
        if u.status not in (SCHEDULED, "DISPATCHED"):
            continue
        if u.deadline_ms <= now:
            engine.queues.send_decision({"kind": "wake", "execution_id": eid, "id": f"wake:{eid}:{now}"})
            return
        engine.timers.arm(eid, u.deadline_ms, state.last_seq)


def _internal_commits(engine: Any, eid: str, state: ExecutionState, since_ms: int | None) -> list[Any]:
    """The commits since `since_ms` (or the newest one) that touched an inline unit, oldest first."""
    if not any(u.inline is not None for u in state.units.values()):
        return []  # no inline unit, no internal commit: nothing to read
    if since_ms is None:
        last = max(state.inbound.values(), default=None)
        newest = engine.store.read_commit(eid, last) if last is not None else None
        commits = [newest] if newest is not None else []
    else:
        commits = []
        for c in engine.store.scan_commits(eid, newest_first=True):
            if c.timestamp_ms < since_ms:
                break
            commits.append(c)
    return [c for c in reversed(commits)
            if any(_inline_unit(state, getattr(r.event, "step", None)) for r in c.events)]


def _inline_unit(state: ExecutionState, unit: Any) -> bool:
    u = state.units.get(unit) if isinstance(unit, str) else None
    return u is not None and u.inline is not None
