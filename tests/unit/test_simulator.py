"""The simulator itself: manual time, jumping to the next wake-up, dead-lettering crashes."""

from __future__ import annotations

from orbit.testing.simulator import call, crash, succeed
from orbit.worker import TaskContext

from tests.unit.dsl_harness import T0, sim_with


def test_advance_moves_time_only_when_asked() -> None:
    sim = sim_with({"nap": {"sleep": "1h"}})
    eid = sim.start("wf", {}, id="e1")
    sim.advance(59 * 60_000)
    assert sim.describe(eid)["status"] == "RUNNING" and sim.clock.now_ms() == T0 + 59 * 60_000
    sim.advance(60_000)
    assert sim.describe(eid)["status"] == "COMPLETED"


def test_run_jumps_over_two_weeks_in_three_clock_jumps() -> None:
    # A step count, not wall time: one jump to each timer and a last pass that finds nothing due.
    # A simulator that walked the clock forward in steps (or slept) would need thousands.
    sim = sim_with({"a": {"sleep": "7d"}, "b": {"sleep": "7d", "after": ["a"]}})
    eid = sim.start("wf", {}, id="e1")
    sim.run(max_jumps=3)  # raises "the simulation did not finish" past three
    assert sim.describe(eid)["status"] == "COMPLETED" and sim.clock.now_ms() == T0 + 14 * 86_400_000


def test_a_worker_that_always_crashes_is_dead_lettered() -> None:
    sim = sim_with({"a": {"task": "t.a", "timeout": "10m"}})
    sim.max_receives = 3
    sim.worker("t.a", crash())
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert len(sim.dead_letters) == 1 and sim.scripts["t.a"].deliveries == 3
    assert sim.types(eid).count("StepAttemptUncertain") == 2
    assert sim.describe(eid)["error"]["code"] == "TIMEOUT"


def test_function_workers_see_the_task_context() -> None:
    seen = []
    sim = sim_with({"a": {"task": "t.a", "input": {"x": 1}}})
    sim.worker("t.a", lambda inp, ctx: seen.append((inp, ctx.step, ctx.attempt, ctx.idempotency_key)) or "ok")
    sim.start("wf", {}, id="e1")
    sim.run()
    assert seen == [({"x": 1}, "a", 1, "e1:a")]
    assert sim.scripts["t.a"].seen[0]["queue"] == "t"
    assert succeed(1).output == 1


def test_a_scripted_call_gets_the_workers_task_context() -> None:
    """The simulator hands `call(fn)` the same TaskContext a worker does: a real task function
    that heartbeats or reads its deadline runs in the simulator too."""
    seen: list[TaskContext] = []

    def task(inp: object, ctx: TaskContext) -> dict[str, bool]:
        ctx.heartbeat({"at": 1})  # nothing to send it to in a scripted call: it must not raise
        seen.append(ctx)
        return {"cancelled": ctx.cancelled}

    sim = sim_with({"a": {"task": "t.a", "timeout": "10m"}})
    sim.worker("t.a", call(task))
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert sim.describe(eid)["status"] == "COMPLETED"
    assert isinstance(seen[0], TaskContext) and seen[0].step == "a" and seen[0].attempt == 1
    assert seen[0].redelivery is False and seen[0].deadline_ms is not None
