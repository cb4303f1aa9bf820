"""The engine service: load -> decide -> inline work -> commit -> carry out effects.

`Engine._pipeline` is the decision pipeline, read top to bottom (docs/architecture.md, "The
decision pipeline"); its stages pass each other an `Turn`, never state on the thread.

`Engine` is the one place where the pure decider meets the ports. The commit
(conditional on the next seq) is the only synchronisation: a writer that loses
reloads and decides again. Effects run after the commit; a redelivered
inbound message gets its commit's stored effects re-sent unchanged, so a crash
between commit and send loses nothing. The state remembers the ids handled by
its last few commits (`state.inbound`); an older redelivery is found in the
commit log, read newest first back to the message's send time (`outbox.find_handled`),
so neither the state nor a snapshot grows with the messages an execution handled.

The stages of a decision live in modules of their own, and `Engine` runs them in order: the batch
sorted (`intake.sort_batch`), the state loaded (`state_cache.StateCache`, this process's cache,
checked against the history's head before anything acts on it without a commit), the messages
decided (`deciding.decide_messages`), inline work (`inline`), the commit and the index row
(`committing.Commits`), the effects carried out (`effects.Effects`), and a redelivery's recovery
(`redelivery.Redelivery`). Its other parts: starting an execution (`starts.Starts`), retention
(`retention.Retention`), redrive and fork (`recovery.Recovery`). The read and control operations
(`operations.EngineApi`) are its base class: they read the ports and `cached_state`, nothing else.
With a `FlowGate` (`Engine.flow`), flow control joins them (`flow_steps.Flow`, docs/flow-control.md):
built when the gate is set, handed to `Effects` (dispatches under a limit) and `Recovery` (a
redrive's slot); without one, nothing of it runs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from orbit.core.definition.retention import DAY_MS
from orbit.core.history.effects import Effect
from orbit.core.history.events import ExecutionParked
from orbit.core.history.messages import (
    CancelMessage,
    Message,
    RedriveMessage,
    StartMessage,
)
from orbit.core.history.state import TERMINAL_WORKFLOW, ExecutionState
from orbit.core.tracing import PassThrough, Tracer
from orbit.errors import ConflictError
from orbit.service import inline
from orbit.service.committing import Before, Commits
from orbit.service.conflict_backoff import sleep_after_conflict
from orbit.service.deciding import Decided, DecideWith, Deliveries, decide_messages, workflow_for
from orbit.service.effects import Effects
from orbit.service.flow_steps import Flow, registry_limits
from orbit.service.intake import sort_batch
from orbit.service.operations import EngineApi
from orbit.service.outbox import still_due
from orbit.service.ports import (
    Clock,
    HistoryStore,
    IdSource,
    PayloadStore,
    Queues,
    Registry,
    Timers,
)
from orbit.service.recovery import Recovery
from orbit.service.redelivery import Redelivery, redelivered_since, sent_since
from orbit.service.retention import Retention
from orbit.service.starts import Starts
from orbit.service.state_cache import StateCache
from orbit.service.turn import Turn

log = logging.getLogger("orbit.core.decider")

MAX_CONFLICT_RETRIES = 8


class _StaleNoop(Exception):  # a signal inside `_process`, never raised out of it
    """A decision on a cached state changed nothing: decide it again on the stored state."""


class Engine(EngineApi):
    schedules: Any = None  # orbit.service.schedules.ScheduleService, when the deployment has schedules
    batches: Any = None  # orbit.service.batches.BatchService (bulk actions)
    inline: Any = None  # orbit.service.inline.InlineRunner where inline steps run (the decider)
    inline_tasks: Callable[[], frozenset[str] | None] | None = None  # the API: InlineTaskModules' tasks
    decider_timeout_ms: int | None = None  # the decider function's timeout: inline steps must fit in it
    # The runtime that replays code workflows in its decisions, with its own cache of paused instances
    # (orbit.core.runtime.code.replayer.CodeRuntime; cache_size=0: every decision replays cold). None: the
    # process's. A cached instance is only an optimisation: a decision must not depend on it.
    code_runtime: Any = None
    archive: Any = None  # an orbit.service.ports.Archive when the stack keeps one (ORBIT_ARCHIVE_DAYS)

    def __init__(
        self,
        store: HistoryStore,
        queues: Queues,
        timers: Timers,
        payloads: PayloadStore | None,
        registry: Registry,
        clock: Clock,
        ids: IdSource,
        snapshot_every: int = 100,
        cache_size: int = 512,
        backoff: Callable[[int], None] = sleep_after_conflict,
        retention_ms: int = 30 * DAY_MS,
        tracer: Tracer | None = None,
        meter: Any = None,
        flow: Any = None,
    ) -> None:
        self.store, self.queues, self.timers, self.payloads = store, queues, timers, payloads
        self.backoff = backoff  # called with the attempt number after each lost commit race
        self._registry, self.clock, self.ids = registry, clock, ids
        self.snapshot_every = snapshot_every
        self.retention_ms = retention_ms  # for workflows that set no retention of their own
        self.tracer: Tracer = tracer or PassThrough()
        self.meter = meter  # per-workflow counters (orbit.aws.observability.Meter), or None
        self._cache = StateCache(store, cache_size)  # execution id -> (state, commits since its snapshot)
        # The stages, each given what it uses (the engine's methods late-bound: one may be replaced).
        self.starts = Starts(registry, ids, self.tracer,
                             lambda eid, msgs, trace: self._traced(eid, msgs, {}, trace),
                             lambda eid: self.load_state(eid))
        self.commits = Commits(store, meter)
        self.effects = Effects(queues, timers, store, clock)
        self.retention = Retention(store, timers, clock, registry, retention_ms)
        self.redelivery = Redelivery(store, timers, queues, clock, self._cache, self.retention, self.effects)
        self.recovery = Recovery(store, registry, ids, lambda eid: self.load_state(eid),
                                 lambda eid, msgs: self._process(eid, msgs),
                                 lambda eid: self.cached_state(eid))
        self.flow = flow  # a service.limits.FlowGate, or None: no flow control (builds `flow_control`)

    @property
    def flow(self) -> Any:
        """The `FlowGate` of concurrency and rate limits (docs/flow-control.md), or None."""
        return self._flow_gate

    @flow.setter
    def flow(self, gate: Any) -> None:
        """Setting a gate composes `Flow` (service/flow_steps.py) and gives it to the stages using it."""
        self._flow_gate = gate
        self.flow_control: Flow | None = None if gate is None else Flow(
            gate, self.clock, lambda name, version: self.registry.get(name, version),
            lambda state: self.workflow_for(state, None), lambda eid: self.cached_state(eid),
            lambda eid: self.load_state(eid), lambda now: registry_limits(self.registry, now),
            self.stored_after)
        self.effects.flow = self.recovery.flow = self.flow_control

    @property
    def registry(self) -> Registry:
        return self._registry

    @registry.setter
    def registry(self, registry: Registry) -> None:
        """A registry set after construction (a test's) is the one every stage reads."""
        self._registry = self.starts.registry = self.retention.registry = self.recovery.registry = registry

    # ---------------------------------------------------------------- the API the stages serve
    def start(self, workflow: str, version: str | None = None, input: Any = None,
              execution_id: str | None = None, parent: dict[str, str] | None = None,
              priority: int | None = None) -> str:
        """Start an execution now and return its id (`Starts.start`)."""
        return self.starts.start(workflow, version, input, execution_id, parent, priority)

    def redrive(self, execution_id: str, request_id: str | None = None) -> dict[str, Any]:
        """Continue a FAILED or TIMED_OUT execution (`Recovery.redrive`)."""
        return self.recovery.redrive(execution_id, request_id)

    def fork(self, execution_id: str, from_step: str, new_id: str | None = None,
             version: str | None = None, despite_compensation: bool = False) -> str:
        """A new execution from step `from_step` of `execution_id` (`Recovery.fork`)."""
        return self.recovery.fork(execution_id, from_step, new_id, version, despite_compensation)

    def fire_timers(self, now_ms: int | None = None, limit: int = 100, lead_ms: int = 0) -> int:
        """Hand timers due by `now + lead_ms` to SQS as delayed `wake` messages; returns how many
        (`Effects.fire_timers`, docs/decisions/timers-on-the-second.md)."""
        return self.effects.fire_timers(now_ms, limit, lead_ms)

    def sweep_young(self, now_ms: int | None = None, limit: int = 100) -> int:
        """One batch of the retention sweeper (`Retention.sweep_young`)."""
        return self.retention.sweep_young(now_ms, limit)

    # ---------------------------------------------------------------- inbound
    def handle(self, message: dict[str, Any] | Message) -> None:
        failures = self.handle_batch([message])
        if failures:
            raise failures[0][1]

    def handle_batch(
        self, messages: list[dict[str, Any] | Message], receive_counts: list[int] | None = None
    ) -> list[tuple[int, Exception]]:
        """Decide every message; one load and one commit per execution where possible.

        `receive_counts` (SQS ApproximateReceiveCount per message, when the caller has it) marks
        redeliveries: one whose id the state no longer remembers is looked up in the commit log.
        Returns (position, error) for the messages that failed (the caller reports them
        as partial batch failures so the queue redelivers only those).
        """
        batch = sort_batch(messages, receive_counts, self.flow_control, self.batches, self.schedules)
        failures = batch.failures
        for eid, items in batch.groups.items():
            try:
                msgs, trace = batch.messages(eid), batch.traces.get(eid)
                self._traced(eid, msgs, batch.delivery, trace, eid in batch.admitted)
            except Exception as e:  # reported per message, the queue retries them
                log.exception("decision failed for %s", eid)
                failures.extend((i, e) for i, _ in items)
        return sorted(failures, key=lambda f: f[0])

    def _traced(self, eid: str, msgs: list[Message], delivery: Deliveries, trace: str | None,
                admitted: bool = False) -> None:
        """One decision in its own span of the execution's trace; what it sends carries the span.
        `admitted`: its starts passed their flow-control gate already."""
        started = time.perf_counter()
        flow = self.flow_control
        with self.tracer.span("orbit.decide", trace, {"execution_id": eid}) as span:
            try:  # what the decision sends carries the span's header
                if flow is not None and not admitted:
                    msgs = flow.admit(eid, msgs)  # stage 0: a start that must wait is not decided
                    if not msgs:
                        return
                self._pipeline(eid, msgs, delivery, Turn(trace=span.header))
                if flow is not None:
                    flow.after_start(eid, msgs)
            finally:
                cached = self._cache.get(eid)
                workflow = cached[0].workflow if cached is not None else ""
                if workflow:
                    span.annotate("workflow", workflow)
                    if self.meter is not None:
                        elapsed_ms = (time.perf_counter() - started) * 1000
                        self.meter.observe(workflow, "DecisionLatency", elapsed_ms)

    def _pipeline(self, eid: str, msgs: list[Message], delivery: Deliveries, turn: Turn) -> None:
        """One execution's inbound messages, top to bottom (docs/architecture.md, "The decision pipeline"):
        1. `_process`: load -> decide -> inline work before the commit -> commit -> carry out effects;
        2. on a decider (a runner), a redelivery recovers what its first invocation may have left;
        3. hand-over wakes: take the attempts over (their started records first, one more `_process`);
        4. run the inline attempts the commits left, decide their results (`_process`), until none.
        Only decisions made here run inline work in this process; the API's (a redrive, a fork) hand
        it over."""
        runner = self.inline
        handed = inline.handed_over(msgs)
        turn.drives = runner is not None
        turn.taking = runner is not None and len(handed) == len(msgs)
        self._process(eid, msgs, delivery, turn)
        if runner is None:
            return
        turn.taking = False
        again, since = redelivered_since(msgs, delivery)
        cached = self.cached_state(eid)
        if again and cached is not None and turn.recovery_due(since):  # else: by its own commit, as far back
            self.recover(eid, cached, since, (), turn)
        pending = turn.take_pending()
        if handed:
            state = self.current_state(eid)
            if not inline.all_live(state, handed):  # a stale cached state drops nothing (take_over)
                state = self.reload_if_overtaken(eid, state)
                sent = sent_since(handed, delivery)
                if not inline.all_live(state, handed) and turn.recovery_due(sent):
                    # Taken over before, by an invocation that may have died mid-chain: a wake
                    # redriven from the DLQ is a first receive again (chaos seed 8687).
                    self.recover(eid, state, sent, (), turn)
            ready, starts = inline.take_over(runner, self.clock.now_ms(), state, handed)
            if starts:
                turn.taking = True  # this process runs them next: their lease needs no timer (carry_out)
                try:
                    self._process(eid, starts, None, turn)
                finally:
                    turn.taking = False
                after = self.cached_state(eid)
                ready += inline.started_attempts(after if after is not None else self.load_state(eid), starts)
            pending += ready
        while pending:
            results = inline.run_attempts(self, eid, pending)
            if not results:
                return
            self._process(eid, results, None, turn)  # one commit: these results + the decision after them
            pending = turn.take_pending()

    def _process(self, eid: str, msgs: list[Message], delivery: Deliveries | None = None,
                 turn: Turn | None = None) -> None:
        turn = turn if turn is not None else Turn()  # the API's decisions: no inline work here
        # A group of starts is decided on a blank state without reading the store first: the commit
        # of seq 1 is conditional, so if the execution exists it conflicts and the retry loads it
        # (a repeated start then costs one refused write instead of every start costing a read).
        assume_new = all(isinstance(m, StartMessage) for m in msgs)
        if any(isinstance(m, RedriveMessage) for m in msgs):
            # A redrive may be refused, which commits nothing: decided on a stale cached state (this
            # process saw the execution running) the refusal would never meet a conflicting write.
            self._cache.pop(eid, None)
        for attempt in range(MAX_CONFLICT_RETRIES):
            try:
                self._decide_and_commit(eid, msgs, delivery or {}, turn, assume_new)
                return
            except _StaleNoop:
                # Nothing changed on the cached state: another process (the API's redrive) may have
                # committed since, so the message is decided once more on the stored state.
                self._cache.pop(eid, None)
            except ConflictError:
                self._cache.pop(eid, None)  # somebody else committed: reload and decide again
                if not assume_new and attempt + 1 < MAX_CONFLICT_RETRIES:
                    self.backoff(attempt)  # a repeated start's conflict is no race: no wait
                assume_new = False
            except BaseException:
                self._cache.pop(eid, None)
                raise
        raise ConflictError(eid, -1, f"execution {eid!r}: gave up after {MAX_CONFLICT_RETRIES} conflicts")

    def _decide_and_commit(
        self,
        eid: str,
        msgs: list[Message],
        delivery: Deliveries,
        turn: Turn,
        assume_new: bool = False,
    ) -> None:
        """Stages 1-5 once. A lost commit race raises ConflictError, a no-op on a stale cached state
        `_StaleNoop`: `_process` decides again on the stored state."""
        cached = eid in self._cache
        state, since_snapshot = self._load(eid, msgs, assume_new)  # 1
        now = self.clock.now_ms()
        before = Before(state.last_seq + 1, (state.status, state.created), dict(state.attributes))
        with_ = DecideWith(self.store, self.registry, self.ids, self.retention_ms, self.code_runtime)
        d = decide_messages(with_, eid, state, msgs, delivery, now)  # 2; advances `state` in place
        if cached and self._commits_nothing(d, turn):
            overtaken = self._cache.overtaken(eid, state)  # one read of the head: a newer commit?
            if overtaken:
                raise _StaleNoop(eid)
        self._inline_work(state, d, now, turn)  # 3
        # What this decision writes expires with the execution: when it ended, or provisionally
        # while it is young (service/retention.py); None: no expiry (yet).
        expiry = self._write_expiry(state, now)  # the hooks _carry_out registers too
        since_snapshot = self.commits.commit(eid, state, d, before, now, expiry, since_snapshot,  # 4
                                             self.snapshot_every)
        self.commits.write_index(eid, state, d, before, expiry)
        self._cache.keep(eid, state, since_snapshot)
        self._after_commit(eid, state, d, expiry, turn)  # 5

    def _load(self, eid: str, msgs: list[Message], assume_new: bool) -> tuple[ExecutionState, int]:
        """Stage 1: the cached state, else the stored one. Only a start, or a parent's cancel that
        overtook its child's start (a tombstone), may write to an execution that does not exist
        yet; anything else is NotFound."""
        create = any(isinstance(m, StartMessage) or (isinstance(m, CancelMessage) and m.parent_id)
                     for m in msgs)
        return self._cache.take(eid, create=create, assume_new=assume_new)

    @staticmethod
    def _commits_nothing(d: Decided, turn: Turn) -> bool:
        """A decision that commits nothing meets no conflicting write, so acting on a stale cached
        state would go unnoticed: a no-op would drop the message for good (a child's notice after
        the API redrove the parent, a wake whose sleep another decider started), a re-arm would set
        an old wake-up, a resend would filter a commit's effects against units it does not know yet.
        Such a decision on a cached state reads the head once (`_decide_and_commit`); when it shows a
        newer commit, the messages are decided again on the stored state. A decision that commits
        pays nothing: its conditional commit is the check. (Hand-over wakes: `inline.take_over`
        checks.)"""
        return not d.events and bool(d.handled or d.resend) and not turn.taking

    def _inline_work(self, state: ExecutionState, d: Decided, now: int, turn: Turn) -> None:
        """Stage 3, on a decider: at_least_once steps run now, their results decided into this
        commit; at_most_once steps get their started records first."""
        if self.inline is not None:
            inline.run_before_commit(self, state, d.workflow, d.events, d.effects, d.handled, turn)
            inline.add_started(self, state, d.workflow, d.effects, d.events, now, turn)

    def _after_commit(self, eid: str, state: ExecutionState, d: Decided, expiry: tuple[int | None, bool],
                      turn: Turn) -> None:
        """Stage 5: a redelivery's commits re-sent, then this commit's effects; an execution that
        ended here retires last."""
        ended = state.created and state.status in TERMINAL_WORKFLOW
        # A redrive brings an ended (retired) execution back: lift the expiry its items got at the
        # first end before anything else runs, or TTL would delete a running execution's history.
        # A crash before this redelivers the redrive message, whose commit (resend) runs it again.
        if not ended and state.created:
            self._unretire_if_redriven(state, d.events, d.resend)
        if self.flow_control is not None:
            # Flow control: the slots of the holders this commit ended go back before its dispatches
            # take theirs (service/flow_steps.py); a redelivery gives them back again (a no-op).
            resent = [c.events for c in d.resend.values()]
            self.flow_control.release_ended(state, d.events, d.workflow, resent)
        for c in d.resend.values():
            self._carry_out(eid, still_due(state, c.effects), expiry, fresh=False, seq=c.last_seq, turn=turn)
        turn.resent.update(d.resend)  # keyed by first seq, as `recover` skips them
        if d.resend and state.created:
            # The invocation that handled it may have died mid-chain: every internal commit since
            # the oldest one found is recovered too (`recover`).
            self.recover(eid, state, min(c.timestamp_ms for c in d.resend.values()), d.resend, turn)
        self._carry_out(eid, d.effects, expiry, seq=state.last_seq, turn=turn)
        # Last, after every write of this decision: an ended execution's items get their expiry.
        # A crash before it redelivers the message, which (a resend) runs it again.
        expires = expiry[0]
        if ended and expires is not None and (d.events or d.resend):
            self._retire(state, expires)

    # ------------------------------------------- the stages' entry points, as the pipeline calls them
    def _carry_out(self, eid: str, effects: list[Effect], expiry: tuple[int | None, bool], fresh: bool = True,
                   seq: int | None = None, turn: Turn | None = None) -> None:
        self.effects.carry_out(eid, effects, expiry, fresh, seq, turn, self.inline)

    def _write_expiry(self, state: ExecutionState, now_ms: int) -> tuple[int | None, bool]:
        return self.retention.write_expiry(state, now_ms)

    def _retire(self, state: ExecutionState, expires: int) -> None:
        self.retention.retire(state, expires, self.archive)

    def _unretire_if_redriven(self, state: ExecutionState, events: list[Any], resend: dict[int, Any]) -> None:
        self.retention.unretire_if_redriven(state, events, resend)

    # ------------------------------------------- flow control, what users see (service/flow_steps.py)
    def describe(self, execution_id: str, steps_after: str | None = None,
                 steps_limit: int | None = None) -> dict[str, Any]:
        """The describe shape (service/operations.py) and, with flow control, where its steps wait."""
        if self.flow_control is None:
            return super().describe(execution_id, steps_after, steps_limit)
        return self.flow_control.describe(
            execution_id, lambda: super(Engine, self).describe(execution_id, steps_after, steps_limit))

    def limits(self) -> dict[str, Any]:
        """Every limit with its use now (`orbit limits`, GET /limits)."""
        return self.flow_control.limits() if self.flow_control is not None else {"limits": [], "rates": []}

    # ------------------------------------------- what inline work reads (inline.Decider)
    def cached_state(self, eid: str) -> ExecutionState | None:
        """This process's cached state of the execution, or None."""
        return self._cache.state(eid)

    def current_state(self, eid: str) -> ExecutionState:
        """The cached state (moved to the front of the cache), else the stored one, now cached."""
        return self._cache.current(eid)

    def reload_if_overtaken(self, eid: str, state: ExecutionState) -> ExecutionState:
        """`state` if no newer commit exists (one consistent read), else the stored state, now cached."""
        return self._cache.reload_if_overtaken(eid, state)

    def workflow_for(self, state: ExecutionState, m: Message | None) -> Any:
        """The workflow `m` is decided with (service/deciding.py)."""
        return workflow_for(self.registry, state, m)

    def recover(self, eid: str, state: ExecutionState, since_ms: int | None = None, done: Any = (),
                turn: Turn | None = None) -> None:
        """A redelivered message: the invocation that handled it may have died inside a chain; every
        internal commit since `since_ms` is carried out again (`Redelivery.recover`)."""
        self.redelivery.recover(eid, state, since_ms, done, turn, self.inline)

    def stored_after(self, eid: str, seq: int | None) -> ExecutionState | None:
        """The stored state, past every cache, if a commit after `seq` exists (one consistent read
        of the head; `seq` None: read anyway), else None. NotFound: no such execution."""
        return self._cache.stored_after(eid, seq)


__all__ = ["Engine", "ExecutionParked"]

