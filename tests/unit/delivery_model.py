"""A stateful model of the delivery invariants (issue 24), run by tests/unit/test_delivery_model.py.

Two `Engine` instances (two decider environments, each with its own state cache) share one
in-memory history store, timer table, registry and payload store, behind a model of SQS (a
decision and a task queue; receive counts, visibility). The rules hand messages to either
environment (alone, in a shuffled batch, or racing the other's commit), lose deletes, fail a send
after a commit, copy messages, run tasks, fire timers, move the clock and signal. Workloads: a
chain; a sleep, a task, a signal wait (30-day timeout), a 16-minute sleep, a task (findings 1 and
2); a fan-out with a join. The `@invariant` methods are the invariants, in prose in
docs/decisions/model24-delivery-model.md.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from orbit.adapters.memory import (
    ManualClock,
    MemoryHistoryStore,
    MemoryPayloadStore,
    MemoryRegistry,
    MemoryTimers,
    SeededIds,
)
from orbit.core.definition import parse_definition
from orbit.core.history.messages import ResultMessage
from orbit.core.history.state import DISPATCHED, SCHEDULED, TERMINAL_WORKFLOW
from orbit.service.engine import Engine

T0 = 1_767_225_600_000
DECISION_VISIBILITY_MS = 180_000  # template.yaml's DecisionQueue
TASK_VISIBILITY_MS = 900_000  # and its task queues
TERMINAL = ("WorkflowCompleted", "WorkflowFailed", "WorkflowCancelled", "WorkflowTimedOut")
SIGNAL_N = 5



def _add(v: str, k: int, **extra: Any) -> dict[str, Any]:
    return {"task": "m.add", "input": {"v": v, "k": k}, **extra}


def _wf(name: str, steps: dict[str, Any], output: Any) -> dict[str, Any]:
    return {"orbit": 1, "name": name, "version": "1", "steps": steps, "output": output}


WORKLOADS: dict[str, tuple[dict[str, Any], Any]] = {  # name -> (definition, expected output for v=1)
    "chain": (_wf("m-chain", {"a": _add("{% input.v %}", 1), "b": _add("{% steps.a.output.v %}", 10),
                              "c": _add("{% steps.b.output.v %}", 100)}, "{% steps.c.output.v %}"), 112),
    "signal-sleep": (_wf("m-signal-sleep", {
        "pause": {"sleep": "2m"},
        "first": _add("{% input.v %}", 1, after=["pause"]),
        "go": {"wait_for": "go", "after": ["first"], "timeout": "30d"},
        "nap": {"sleep": "16m", "after": ["go"]},
        "done": _add("{% steps.first.output.v + steps.go.output.n %}", 1, after=["nap"])},
        "{% steps.done.output.v %}"), 1 + 1 + SIGNAL_N + 1),
    "fanout": (_wf("m-fanout", {
        "each": {"for": "{% [1, 2, 3] %}", "task": "m.add", "input": {"v": "{% item %}", "k": 1}},
        "p": _add("{% input.v %}", 10),
        "join": _add("{% steps.p.output.v %}", 0, after=["each"])},
        {"each": "{% steps.each.output.v %}", "join": "{% steps.join.output.v %}"}),
        {"each": [2, 3, 4], "join": 11}),
}


@dataclass
class Msg:
    n: int  # the model's MessageId
    queue: str  # "d" (decisions) or "t" (tasks)
    body: dict[str, Any]
    visible_at: int
    receives: int = 0

    @property
    def execution(self) -> str:
        return str(self.body.get("execution_id", ""))


class ModelQueues:
    """The `Queues` port: every send lands in the model's queues."""

    def __init__(self, world: DeliveryModel) -> None:
        self.world = world
        self.fail_next = False  # the next send fails (SQS throttled after the SDK's retries)

    def _throttle(self) -> None:
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("ThrottlingException (model): the send failed")

    def send_decision(self, message: dict[str, Any], delay_s: int = 0) -> None:
        self._throttle()
        body = dict(message)
        body.setdefault("sent_at_ms", self.world.clock.now_ms())  # as SqsQueues
        self.world.put("d", body, delay_s)

    def send_task(self, queue: str, body: dict[str, Any], delay_s: int = 0) -> None:
        self._throttle()
        self.world.put("t", dict(body), delay_s)


class WatchedTimers(MemoryTimers):
    """The one timer row per execution, noting the newest seq that armed it since it last fired."""

    def __init__(self) -> None:
        super().__init__()
        self.newest: dict[str, int] = {}

    def arm(self, execution_id: str, fire_at_ms: int, seq: int | None = None) -> None:
        super().arm(execution_id, fire_at_ms, seq)
        if seq is not None:
            self.newest[execution_id] = max(seq, self.newest.get(execution_id, seq))

    def disarm(self, execution_id: str, fire_at_ms: int | None = None) -> None:
        had = self._at.get(execution_id)
        super().disarm(execution_id, fire_at_ms)
        if had is not None and execution_id not in self._at:
            self.newest.pop(execution_id, None)


class RacingStore(MemoryHistoryStore):
    """The shared history; `before_commit`, when set, runs once just before the next commit (the
    other decider environment deciding in the middle of this one's decision)."""

    before_commit: Any = None

    def commit(self, execution_id: str, commit: Any, expires_at_s: int | None = None,
               provisional: bool = False) -> None:
        hook, self.before_commit = self.before_commit, None
        if hook is not None:
            hook()
        super().commit(execution_id, commit, expires_at_s, provisional)


class DeliveryModel(RuleBasedStateMachine):
    timers_class: type[WatchedTimers] = WatchedTimers

    def __init__(self) -> None:
        super().__init__()
        self.clock = ManualClock(T0)
        self.store = RacingStore()
        self.timers = self.timers_class()
        self.registry = MemoryRegistry()
        for definition, _ in WORKLOADS.values():
            self.registry.register(parse_definition(definition))
        self.queues = ModelQueues(self)
        payloads = MemoryPayloadStore()
        self.engines = [
            Engine(self.store, self.queues, self.timers, payloads, self.registry, self.clock,
                   SeededIds(f"env{i}"), backoff=lambda attempt: None)
            for i in (1, 2)
        ]
        self.msgs: list[Msg] = []
        self.next_id = 0
        self.expected: dict[str, Any] = {}
        self.signals_due: list[str] = []
        self.runs: Counter[tuple[str, str, int]] = Counter()
        self.touched: set[str] = set()  # executions a fault reached (a copy, a lost delete, a failure)
        self.trace: list[str] = []
        self.unsent: dict[str, Msg] = {}  # execution -> the message whose decision lost a send

    # ------------------------------------------------------------------ the model of SQS
    def put(self, queue: str, body: dict[str, Any], delay_s: int = 0) -> None:
        self.next_id += 1
        self.msgs.append(Msg(self.next_id, queue, body, self.clock.now_ms() + delay_s * 1000))

    def visible(self, queue: str) -> list[Msg]:
        now = self.clock.now_ms()
        return [m for m in self.msgs if m.queue == queue and m.visible_at <= now]

    def _pick(self, queue: str, pick: int) -> Msg:
        seen = self.visible(queue)
        return seen[pick % len(seen)]

    def _decide(self, env: int, batch: list[Msg], lose_delete: bool = False) -> None:
        now = self.clock.now_ms()
        for m in batch:
            m.receives += 1
        self.trace.append(f"env{env + 1} decides {[(m.n, m.body.get('id'), m.receives) for m in batch]}"
                          + (" (delete lost)" if lose_delete else ""))
        failures = self.engines[env].handle_batch([dict(m.body) for m in batch], [m.receives for m in batch])
        failed = {i for i, _ in failures}
        for i, m in enumerate(batch):
            if i in failed or lose_delete:  # back after the visibility timeout
                self.touched.add(m.execution)
                m.visible_at = now + DECISION_VISIBILITY_MS
            elif m in self.msgs:
                self.msgs.remove(m)

    def _work(self, m: Msg, lose_delete: bool = False) -> None:
        body = m.body
        m.receives += 1
        if lose_delete:
            self.touched.add(m.execution)
            m.visible_at = self.clock.now_ms() + TASK_VISIBILITY_MS
        else:
            self.msgs.remove(m)
        if body.get("kind") == "cancel_task":
            return
        eid, unit, token, attempt = body["execution_id"], body["unit"], body["token"], int(body["attempt"])
        self.runs[(eid, unit, attempt)] += 1
        self.trace.append(f"worker runs {unit} attempt {attempt} of {eid}")
        value = {"v": int(body["input"]["v"]) + int(body["input"].get("k", 1))}
        self.queues.send_decision(ResultMessage(eid, f"result:{token}", unit, token, value, None).to_dict())

    # ------------------------------------------------------------------ rules
    @initialize(names=st.lists(st.sampled_from(sorted(WORKLOADS)), min_size=1, max_size=3, unique=True))
    def start(self, names: list[str]) -> None:
        for i, name in enumerate(names):
            definition, output = WORKLOADS[name]
            eid = self.engines[i % 2].start(definition["name"], None, {"v": 1}, execution_id=f"{name}-{i}")
            self.expected[eid] = output
            if name == "signal-sleep":
                self.signals_due.append(eid)

    @precondition(lambda self: self.visible("d"))
    @rule(env=st.integers(0, 1), pick=st.integers(0, 1_000))
    def deliver(self, env: int, pick: int) -> None:
        self._decide(env, [self._pick("d", pick)])

    @precondition(lambda self: len(self.visible("d")) >= 2)
    @rule(env=st.integers(0, 1), data=st.data())
    def deliver_batch(self, env: int, data: st.DataObject) -> None:
        """A batch of visible messages in any order (SQS's standard queue reorders)."""
        seen = self.visible("d")
        batch = data.draw(st.lists(st.sampled_from(seen), min_size=2, max_size=min(4, len(seen)),
                                   unique_by=id))
        self._decide(env, batch)

    @precondition(lambda self: len(self.visible("d")) >= 2)
    @rule(env=st.integers(0, 1), pick=st.integers(0, 1_000), other=st.integers(0, 1_000))
    def deliver_racing(self, env: int, pick: int, other: int) -> None:
        """Two environments at once: before `env`'s first commit, the other one decides another
        visible message (its commit lands first; `env`'s conditional commit then loses)."""
        first = self._pick("d", pick)
        rest = [m for m in self.visible("d") if m is not first]
        second = rest[other % len(rest)]
        self.store.before_commit = lambda: self._decide(1 - env, [second]) if second in self.msgs else None
        try:
            self._decide(env, [first])
        finally:
            self.store.before_commit = None

    @precondition(lambda self: self.visible("d"))
    @rule(env=st.integers(0, 1), pick=st.integers(0, 1_000))
    def deliver_send_fails(self, env: int, pick: int) -> None:
        """The decision's first send fails after its commit: the invocation reports the message
        failed, and it comes back (its redelivery must carry out what was committed)."""
        m = self._pick("d", pick)
        self.queues.fail_next = True
        try:
            self._decide(env, [m])
        finally:
            failed = not self.queues.fail_next  # the send was tried, and failed
            self.queues.fail_next = False
        if failed and m in self.msgs:
            self.unsent[m.execution] = m

    @precondition(lambda self: self.visible("d"))
    @rule(env=st.integers(0, 1), pick=st.integers(0, 1_000))
    def deliver_lose_delete(self, env: int, pick: int) -> None:
        self._decide(env, [self._pick("d", pick)], lose_delete=True)

    @precondition(lambda self: self.msgs)
    @rule(pick=st.integers(0, 1_000), later_s=st.sampled_from([0, 30, 600]))
    def duplicate(self, pick: int, later_s: int) -> None:
        """A spurious copy: the same body, a first receive, now or later."""
        m = self.msgs[pick % len(self.msgs)]
        self.touched.add(m.execution)
        self.trace.append(f"copy of {m.n} ({m.body.get('id', m.body.get('unit'))}) in {later_s} s")
        self.put(m.queue, dict(m.body), later_s)

    @precondition(lambda self: self.visible("t"))
    @rule(pick=st.integers(0, 1_000), lose_delete=st.booleans())
    def run_task(self, pick: int, lose_delete: bool) -> None:
        self._work(self._pick("t", pick), lose_delete)

    @rule(env=st.integers(0, 1))
    def fire_timers(self, env: int) -> None:
        self.engines[env].fire_timers(self.clock.now_ms())

    @rule(ms=st.sampled_from([1_000, 60_000, 181_000, 960_000]))
    def advance(self, ms: int) -> None:
        self.clock.advance(ms)

    @precondition(lambda self: self.signals_due)
    @rule(env=st.integers(0, 1))
    def signal(self, env: int) -> None:
        eid = self.signals_due.pop(0)
        self.trace.append(f"signal go to {eid}")
        self.engines[env].signal(eid, "go", {"n": SIGNAL_N})

    # ------------------------------------------------------------------ invariants
    def _histories(self) -> dict[str, list[dict[str, Any]]]:
        return {eid: self.engines[0].recorded_history(eid) for eid in self.store.execution_ids()}

    @invariant()
    def histories_sound(self) -> None:
        for eid, events in self._histories().items():
            seqs = [e["seq"] for e in events]
            assert seqs == list(range(1, len(seqs) + 1)), f"{eid}: history not contiguous: {seqs}"
            ends = [i for i, e in enumerate(events) if e["type"] in TERMINAL]
            assert len(ends) <= 1, f"{eid}: {len(ends)} terminal events"
            assert not ends or ends[0] == len(events) - 1, f"{eid}: events after the terminal one"
            won = Counter(e["step"] for e in events if e["type"] == "StepSucceeded")
            assert all(n == 1 for n in won.values()), f"{eid}: a unit succeeded twice: {won}"
            for kind in ("SignalReceived", "SignalConsumed"):
                ids = Counter(e["signal_id"] for e in events if e["type"] == kind)
                assert all(n == 1 for n in ids.values()), f"{eid}: {kind} twice: {ids}"

    @invariant()
    def timer_never_older_than_its_newest_arm(self) -> None:
        """Finding 2: an older commit's wake-up never replaces a pending newer one."""
        for eid, newest in self.timers.newest.items():
            if eid in self.timers._at:
                row = self.timers._seq.get(eid)
                assert row is not None and row >= newest, (
                    f"{eid}: the pending timer was armed by seq {row}, "
                    f"a newer commit (seq {newest}) armed one")

    @invariant()
    def no_lost_wakeup(self) -> None:
        queued = {m.execution for m in self.msgs}
        for eid in self.store.execution_ids():
            state = self.store.load(eid).fold()
            wake = state.next_wake_ms()
            if state.status in TERMINAL_WORKFLOW or wake is None or eid in queued:
                continue
            armed = self.timers._at.get(eid)
            assert armed is not None and armed <= wake, (
                f"{eid}: needs a wake-up at {wake}, the timer is {armed} and nothing of it is queued")

    @invariant()
    def no_lost_dispatch(self) -> None:
        """An attempt the stored state has open (scheduled or taken, no answer recorded) has its
        dispatch or its result still queued, unless a send failed and the message whose decision
        lost it is still queued: once that one is decided again, the send has been made."""
        tokens = {str(m.body.get("token")) for m in self.msgs}
        for eid, m in list(self.unsent.items()):
            if m not in self.msgs:  # decided since: what its first decision committed is sent
                del self.unsent[eid]
        for eid in self.store.execution_ids():
            state = self.store.load(eid).fold()
            if state.status in TERMINAL_WORKFLOW or eid in self.unsent:
                continue
            for key, u in state.units.items():
                if u.status in (SCHEDULED, DISPATCHED) and u.kind == "task":
                    assert u.token in tokens, (
                        f"{eid}: {key} attempt {u.attempt} is open, nothing of it queued")

    @invariant()
    def untouched_attempts_run_once(self) -> None:
        for (eid, unit, attempt), n in self.runs.items():
            assert n == 1 or eid in self.touched, f"{eid}: {unit} attempt {attempt} ran {n} times, no fault"

    # ------------------------------------------------------------------ the end
    def teardown(self) -> None:
        """Faults off: deliver everything (both environments still decide), then check each end."""
        if not self.expected:
            return
        for eid in list(self.signals_due):
            self.engines[0].signal(eid, "go", {"n": SIGNAL_N})
        self.signals_due.clear()
        turn = 0
        for _ in range(5_000):
            now = self.clock.now_ms()
            self.engines[turn % 2].fire_timers(now)
            ready = sorted(self.visible("d") + self.visible("t"), key=lambda m: m.n)
            if ready:
                m = ready[0]
                if m.queue == "d":
                    self._decide(turn % 2, [m])
                else:
                    self._work(m)
                turn += 1
                self.histories_sound()
                self.timer_never_older_than_its_newest_arm()
                self.no_lost_wakeup()
                self.no_lost_dispatch()
                self.untouched_attempts_run_once()
                continue
            queued = min((m.visible_at for m in self.msgs), default=None)
            nxt = [t for t in (self.timers.next_fire_ms(), queued) if t is not None]
            if not nxt:
                break
            self.clock.set(max(min(nxt), now))
        else:
            raise AssertionError("the world did not drain in 5000 steps")
        histories = self._histories()
        for eid, output in self.expected.items():
            last = histories[eid][-1]
            assert last["type"] == "WorkflowCompleted" and last["output"] == output, (
                f"{eid} ended with {last} (expected output {output!r}); trace:\n"
                + "\n".join(self.trace[-40:]))
