"""The service around the decider: conflicts, batches, snapshots, outbox, parking, custom runtimes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from orbit.adapters.memory import (
    ManualClock,
    MemoryHistoryStore,
    MemoryQueues,
    MemoryRegistry,
    MemoryTimers,
    SeededIds,
)
from orbit.core.history.events import TaskError
from orbit.core.history.model import fold
from orbit.core.history.state import ExecutionState
from orbit.core.runtime.commands import Complete, ContinueAsNew, Park, RecordProgress
from orbit.errors import ConflictError, NotFound, UnknownWorkflow, ValidationError
from orbit.service.engine import Engine
from orbit.service.ports import Commit
from orbit.testing.simulator import Simulator, fail, hang, succeed

from tests.unit.dsl_harness import T0, definition, events, sim_with


def engine_pair() -> tuple[Engine, Engine, MemoryQueues]:
    store, queues, timers, reg, clock = (
        MemoryHistoryStore(),
        MemoryQueues(),
        MemoryTimers(),
        MemoryRegistry(),
        ManualClock(T0),
    )
    from orbit.core.definition import parse_definition

    reg.register(parse_definition(definition({"a": {"task": "t.a"}, "b": {"task": "t.b"}})))
    a = Engine(store, queues, timers, None, reg, clock, SeededIds("a"))
    b = Engine(store, queues, timers, None, reg, clock, SeededIds("b"))
    return a, b, queues


def _token(engine: Engine, eid: str, unit: str) -> str:
    return engine.load_state(eid).units[unit].token or ""


def test_a_stale_cached_state_conflicts_reloads_and_decides_again() -> None:
    a, b, _ = engine_pair()
    eid = a.start("wf", input={}, execution_id="e1")  # engine a caches the state at seq N
    b.handle(
        {
            "kind": "result",
            "execution_id": eid,
            "id": "r-a",
            "unit": "a",
            "token": _token(b, eid, "a"),
            "output": 1,
        }
    )  # b commits behind a's back
    a.handle(
        {
            "kind": "result",
            "execution_id": eid,
            "id": "r-b",
            "unit": "b",
            "token": _token(b, eid, "b"),
            "output": 2,
        }
    )
    state = a.load_state(eid)
    assert state.status == "COMPLETED" and state.output == {"a": 1, "b": 2}
    seqs = [e["seq"] for e in a.history(eid)]
    assert seqs == list(range(1, len(seqs) + 1))  # history never forks


def test_a_batch_for_one_execution_is_one_commit_listing_every_message() -> None:
    a, _, _ = engine_pair()
    eid = a.start("wf", input={}, execution_id="e1")
    before = a.load_state(eid).last_seq
    msgs = [
        {
            "kind": "result",
            "execution_id": eid,
            "id": f"r-{u}",
            "unit": u,
            "token": _token(a, eid, u),
            "output": u,
        }
        for u in ("a", "b")
    ]
    assert a.handle_batch(msgs) == []
    c = a.store.read_commit(eid, before + 1)
    assert c is not None and c.inbound_id == "r-a" and c.inbound_ids == ("r-b",)
    assert [r.event.type for r in c.events] == ["StepSucceeded", "StepSucceeded", "WorkflowCompleted"]


def test_bad_messages_are_reported_by_position_and_the_rest_handled() -> None:
    a, _, _ = engine_pair()
    eid = a.start("wf", input={}, execution_id="e1")
    good = {
        "kind": "result",
        "execution_id": eid,
        "id": "r",
        "unit": "a",
        "token": _token(a, eid, "a"),
        "output": 1,
    }
    failures = a.handle_batch([{"kind": "result", "execution_id": eid}, good, {"kind": "bogus"}])
    assert [i for i, _ in failures] == [0, 2]
    assert all(isinstance(e, ValidationError) for _, e in failures)
    assert "message.unit: is required" in str(failures[0][1])
    assert a.load_state(eid).units["a"].status == "SUCCEEDED"


def test_unknown_execution_and_unknown_workflow() -> None:
    a, _, _ = engine_pair()
    with pytest.raises(NotFound):
        a.handle({"kind": "wake", "execution_id": "ghost", "id": "w"})
    with pytest.raises(UnknownWorkflow):
        a.start("nope", input={})


def test_snapshots_are_taken_and_load_equals_the_full_fold() -> None:
    sim = Simulator(start_ms=T0, snapshot_every=3)
    sim.register(definition({"s": {"for": "{% input %}", "concurrency": 2, "task": "t.x"}}))
    sim.worker("t.x", succeed(1))
    eid = sim.start("wf", list(range(10)), id="e1")
    sim.run()
    loaded = sim.store.load(eid)
    assert loaded.snapshot_seq > 0 and len(loaded.commits) < 3
    from orbit.core.history.model import recorded_from_dict

    full = fold(eid, [recorded_from_dict(e) for e in sim.history(eid)])
    got = loaded.fold().to_dict()
    got.pop("inbound_log")
    got.pop("signal_log")
    want = full.to_dict()
    want.pop("inbound_log")
    want.pop("signal_log")
    assert got == want


def test_effects_are_not_sent_when_the_commit_fails() -> None:
    a, _, queues = engine_pair()
    eid = a.start("wf", input={}, execution_id="e1")
    sent = len(queues.tasks["t"])

    def refuse(execution_id: str, commit: Commit, *expiry: Any) -> None:
        raise ConflictError(execution_id, commit.first_seq)

    a.store.commit = refuse  # type: ignore[method-assign]
    with pytest.raises(ConflictError, match="gave up"):
        a.handle({"kind": "cancel", "execution_id": eid, "id": "c", "reason": "x"})
    assert len(queues.tasks["t"]) == sent


def test_fire_timers_sends_wake_messages_once() -> None:
    sim = sim_with({"z": {"sleep": "1m"}})
    eid = sim.start("wf", {}, id="e1")
    assert sim.timers.next_fire_ms() == T0 + 60_000
    assert sim.engine.fire_timers(T0 + 59_999) == 0
    assert sim.engine.fire_timers(T0 + 60_000) == 1 and sim.engine.fire_timers(T0 + 60_000) == 0
    sim.clock.set(T0 + 60_000)
    sim.run_until_idle()
    assert sim.describe(eid)["status"] == "COMPLETED"


def test_index_follows_status_and_lists() -> None:
    sim = sim_with({"a": {"task": "t.a"}})
    sim.worker("t.a", hang())
    sim.start("wf", {}, id="e1")
    sim.start("wf", {}, id="e2")
    sim.run_until_idle()
    sim.cancel("e2")
    sim.run()
    rows, _ = sim.engine.list(status="RUNNING")
    assert [r.execution_id for r in rows] == ["e1"]
    rows, _ = sim.engine.list(workflow="wf")
    assert {r.execution_id: r.status for r in rows} == {"e1": "RUNNING", "e2": "CANCELLED"}


def test_history_is_paged_through_the_store() -> None:
    sim = sim_with({"s": {"for": "{% input %}", "task": "t.x"}})
    sim.worker("t.x", succeed())
    eid = sim.start("wf", list(range(400)), id="e1")
    sim.run()
    h = sim.history(eid)
    assert len(h) > 1000 and [e["seq"] for e in h] == list(range(1, len(h) + 1))
    assert [e["seq"] for e in sim.engine.history(eid, after_seq=10, limit=5)] == [11, 12, 13, 14, 15]


@dataclass
class ScriptedRuntime:
    """A tiny hand-written runtime: proves the command contract without the DSL."""

    plan: list[Any]
    calls: list[int] = field(default_factory=list)

    def run(self, workflow: Any, state: ExecutionState, now_ms: int) -> list[Any]:
        self.calls.append(state.last_seq)
        return list(self.plan)


@dataclass
class CodeLike:
    name: str
    runtime: ScriptedRuntime
    version: str = "1"
    build: str = "build-1"
    timeout_ms: int | None = None
    signals: dict[str, Any] = field(default_factory=dict)


def test_progress_is_recorded_once_and_complete_ends() -> None:
    sim = Simulator(start_ms=T0)
    sim.register(CodeLike("p", ScriptedRuntime([RecordProgress({"pct": 50}), Complete({"ok": True})])))
    eid = sim.start("p", {}, id="e1")
    assert sim.types(eid) == ["WorkflowCreated", "WorkflowStarted", "ProgressRecorded", "WorkflowCompleted"]
    assert sim.describe(eid)["progress"] == {"pct": 50}


def test_continue_as_new_starts_the_successor() -> None:
    rt = ScriptedRuntime([ContinueAsNew({"n": 2})])
    sim = Simulator(start_ms=T0)
    sim.register(CodeLike("c", rt))
    eid = sim.start("c", {"n": 1}, id="loop")
    rt.plan = [Complete("done")]
    sim.run()
    assert sim.types(eid)[-1] == "WorkflowContinuedAsNew"
    assert sim.describe(eid)["continued_as"] == "loop~1"
    nxt = sim.describe("loop~1")
    assert nxt["status"] == "COMPLETED" and nxt["input"] == {"n": 2}


def test_park_stops_deciding_and_build_mismatch_parks() -> None:
    sim = Simulator(start_ms=T0)
    sim.register(CodeLike("k", ScriptedRuntime([Park(TaskError("NON_DETERMINISM", "x", False))])))
    eid = sim.start("k", {}, id="e1")
    assert sim.types(eid)[-1] == "ExecutionParked"
    assert sim.describe(eid)["parked"]["code"] == "NON_DETERMINISM"

    sim2 = sim_with({"a": {"task": "t.a"}})
    sim2.worker("t.a", hang())
    eid2 = sim2.start("wf", {}, id="e2")
    sim2.run_until_idle()
    sim2.engine.registry = MemoryRegistry()  # the pinned build is gone
    sim2.registry = sim2.engine.registry
    sim2.register(definition({"a": {"task": "t.a"}, "b": {"compute": "{% 1 %}"}}))
    sim2.engine._cache.clear()
    sim2.engine.handle({"kind": "wake", "execution_id": eid2, "id": "w1"})
    assert sim2.types(eid2)[-1] == "ExecutionParked"
    assert sim2.describe(eid2)["parked"]["code"] == "BUILD_MISMATCH"
    assert events(sim2, eid2, "ExecutionParked")[0]["error"]["retryable"] is False


def test_a_parked_execution_records_answers_and_can_be_cancelled() -> None:
    sim = Simulator(start_ms=T0)
    sim.register(CodeLike("k", ScriptedRuntime([Park(TaskError("NON_DETERMINISM", "x", False))])))
    eid = sim.start("k", {}, id="e1")
    sim.engine.handle({"kind": "signal", "execution_id": eid, "id": "s1", "name": "go", "payload": 1})
    assert sim.types(eid)[-1] == "SignalReceived"
    sim.cancel(eid, "operator gave up", force=False)
    sim.run()
    assert sim.types(eid)[-2:] == ["CancelRequested", "WorkflowCancelled"]
    assert sim.describe(eid)["status"] == "CANCELLED" and sim.describe(eid)["compensation"] == "none"


class CountingRuntime:
    """Continues as new until input.n reaches 3, then completes with n."""

    def run(self, workflow: Any, state: ExecutionState, now_ms: int) -> list[Any]:
        n = state.input["n"]
        return [Complete(n)] if n >= 3 else [ContinueAsNew({"n": n + 1})]


def test_a_child_that_continues_as_new_answers_its_parent_from_the_last_run() -> None:
    sim = Simulator(start_ms=T0)
    sim.register(CodeLike("counter", CountingRuntime()))  # type: ignore[arg-type]
    sim.register(
        definition({"count": {"workflow": "counter", "input": {"n": 1}}}, output="{% steps.count.output %}")
    )
    eid = sim.start("wf", {}, id="p")
    sim.run()
    assert sim.describe("p/count")["continued_as"] == "p/count~1"
    assert sim.describe("p/count~2")["parent"] == {"execution_id": "p", "step": "count"}
    d = sim.describe(eid)
    assert d["status"] == "COMPLETED" and d["output"] == 3
    assert sim.types(eid) == [
        "WorkflowCreated",
        "WorkflowStarted",
        "ChildStarted",
        "StepSucceeded",
        "WorkflowCompleted",
    ]


def test_a_repeated_start_does_not_resend_dispatches_of_finished_steps() -> None:
    # The outbox resend on a repeated start must not hand a worker a task again once the
    # step finished (the worker answered again and StaleResultIgnored was recorded).
    a, _, queues = engine_pair()
    eid = a.start("wf", input={"n": 1}, execution_id="e1")
    first = queues.receive_tasks("t", T0, 10)
    assert sorted(m["unit"] for m in first) == ["a", "b"]
    tok_a = _token(a, eid, "a")
    a.handle({"kind": "started", "execution_id": eid, "id": "s-a", "unit": "a", "token": tok_a})
    a.handle({"kind": "result", "execution_id": eid, "id": "r-a", "unit": "a", "token": tok_a, "output": 1})
    assert a.start("wf", input={"n": 1}, execution_id="e1") == eid
    again = queues.receive_tasks("t", T0, 10)
    # `b` is still live, so the outbox sends it again (a lost send is repaired); `a` is done
    assert [m["unit"] for m in again] == ["b"]


def test_a_redelivered_message_does_not_resend_a_dispatch_whose_unit_waits_for_a_retry() -> None:
    sim = sim_with({"a": {"task": "t.a", "retry": {"max_attempts": 3, "backoff": "1h"}}})
    sim.worker("t.a", fail("DOWN", "try later"))
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    assert sim.describe(eid)["steps"]["a"]["status"] == "RETRY_WAIT"
    sent = len(sim.queues.tasks["t"])
    sim.engine.start("wf", input={}, execution_id="e1")  # the start's commit held attempt 1's dispatch
    assert len(sim.queues.tasks["t"]) == sent


def test_input_and_payloads_that_are_not_json_are_refused_before_anything_is_recorded() -> None:
    import math
    from datetime import datetime

    sim = sim_with({"w": {"wait_for": "go"}})
    for bad in ({1, 2}, {"at": datetime(2020, 1, 1)}, math.nan):
        with pytest.raises(ValidationError) as info:
            sim.start("wf", bad, id="e-bad")
        assert info.value.problems[0].path == "input" and "JSON" in str(info.value)
    with pytest.raises(NotFound):
        sim.describe("e-bad")
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    with pytest.raises(ValidationError, match="payload: must be JSON data"):
        sim.signal(eid, "go", {"at": datetime(2020, 1, 1)})


def test_a_start_reads_nothing_first_and_a_repeat_on_a_cold_decider_still_finds_the_execution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from orbit.errors import ExecutionExists

    a, b, queues = engine_pair()
    loads: list[str] = []
    real_load = a.store.load
    monkeypatch.setattr(a.store, "load", lambda eid: loads.append(eid) or real_load(eid))
    assert a.start("wf", input={"n": 1}, execution_id="e1") == "e1"
    assert loads == []  # the conditional commit of seq 1 is the existence check
    dispatched = len(queues.receive_tasks("t", T0, 10))
    # Another decider instance (nothing cached) gets the same start: its blank-state commit is
    # refused, it loads the execution and answers like any repeated start.
    assert b.start("wf", input={"n": 1}, execution_id="e1") == "e1"
    assert len(b.history("e1")) == len(a.history("e1"))  # nothing recorded twice
    with pytest.raises(ExecutionExists, match="different input"):
        b.start("wf", input={"n": 2}, execution_id="e1")
    assert dispatched == 2 and [e["type"] for e in a.history("e1")].count("WorkflowStarted") == 1


def test_the_same_message_twice_in_one_batch_is_decided_once() -> None:
    a, _, queues = engine_pair()
    eid = a.start("wf", input={"n": 1}, execution_id="e1")
    tok = _token(a, eid, "a")
    result = {"kind": "result", "execution_id": eid, "id": "r-a", "unit": "a", "token": tok, "output": 1}
    assert a.handle_batch([result, dict(result)]) == []
    types = [e["type"] for e in a.history(eid)]
    assert types.count("StepSucceeded") == 1 and "StaleResultIgnored" not in types


def test_a_no_op_on_a_stale_cached_state_is_decided_again_on_the_stored_one() -> None:
    """Engine `a` caches the state; `b` records attempt 1's failure and dispatches attempt 2 (no
    backoff). `a` then gets attempt 2's `started`: on its cached state the token is unknown, which
    changes nothing and so would meet no conflicting write; it is decided again on the stored state."""
    from orbit.core.definition import parse_definition

    a, b, _ = engine_pair()
    a.registry.register(parse_definition(definition(
        {"r": {"task": "t.r", "retry": {"max_attempts": 2, "backoff": "0s"}}}, name="retried")))
    eid = a.start("retried", input={}, execution_id="e-stale")
    first = _token(b, eid, "r")
    b.handle({"kind": "result", "execution_id": eid, "id": "r-1", "unit": "r", "token": first,
              "error": {"code": "X", "message": "no", "retryable": True}})
    second = _token(b, eid, "r")
    assert second != first and a._cache[eid][0].units["r"].token == first  # a's copy is stale
    a.handle({"kind": "started", "execution_id": eid, "id": "s-2", "unit": "r", "token": second,
              "worker_id": "w", "worker_session": "s"})
    state = b.load_state(eid)
    assert state.units["r"].status == "DISPATCHED" and state.units["r"].worker_id == "w"
