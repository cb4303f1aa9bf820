"""A paused code-workflow instance after a lost commit (issue 24, finding 5), on the memory adapters.

Two decider environments (two engines, each with its own state cache, inline runner and
`CodeRuntime`) over one store and one set of queues. Environment 1 decides a_go on its cached
(stale) state: branch A's inline step runs and is decided into the same commit, then A asks for
its sleep. The commit loses (environment 2 committed B's signal and steps), environment 1 reloads
and decides again. The instance may not be kept: its branch is past a step the reloaded history
never recorded. The integration twin, through the real handlers on moto:
tests/integration/test_delivery_findings_code_worker.py.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import orbit
from orbit.adapters.memory import (
    ManualClock,
    MemoryHistoryStore,
    MemoryQueues,
    MemoryRegistry,
    MemoryTimers,
    SeededIds,
)
from orbit.service.engine import Engine
from orbit.service.inline import InlineRunner
from orbit.service.replay_host import CodeRuntime
from orbit.worker.inline import InlineTasks
from orbit.worker.sdk import Worker
from orbit.workflow import CodeRegistry
from test_code_golden import replay

RUNS: Counter[int] = Counter()
A = "1.parallel()/0/"


def bump(v: int) -> int:
    RUNS[v] += 1
    return v + 1


def two_branches(ctx: Any, input: Any) -> Any:
    def a(c: Any) -> Any:
        c.wait_for("a_go")
        v = c.run(bump, 1)
        c.sleep("16m")
        return v

    def b(c: Any) -> Any:
        c.wait_for("b_go")
        return [c.step("w.b", {"i": i}) for i in range(3)]

    return ctx.parallel(a, b)


WF = orbit.workflow("witness-branches", registry=CodeRegistry())(two_branches)


class World:
    def __init__(self) -> None:
        self.store, self.queues, self.timers = MemoryHistoryStore(), MemoryQueues(), MemoryTimers()
        self.registry, self.clock = MemoryRegistry(), ManualClock(1_767_225_600_000)
        self.queues.bind_clock(self.clock)
        self.registry.register(WF)
        self.worker = Worker(self.queues, None, self.clock, tasks={"w.b": lambda inp, ctx: inp["i"] * 10})
        self.lost: list[int] = []
        self.reader = Engine(self.store, self.queues, self.timers, None, self.registry, self.clock,
                             SeededIds("r"))

    def history(self) -> list[dict[str, Any]]:
        return self.reader.recorded_history("x")

    def environment(self, name: str) -> Engine:
        e = Engine(self.store, self.queues, self.timers, None, self.registry, self.clock, SeededIds(name),
                   backoff=self.lost.append)
        e.inline = InlineRunner(InlineTasks((), tasks={}), name)
        e.code_runtime = CodeRuntime()
        return e

    def decide_in(self, engine: Engine) -> None:
        while True:
            batch = self.queues.receive_decisions(self.clock.now_ms())
            now = self.clock.now_ms()
            tasks = [t for q in list(self.queues.tasks) for t in self.queues.receive_tasks(q, now)]
            for t in tasks:
                self.worker.process(t)
            if batch:
                assert not engine.handle_batch(batch, [1] * len(batch))
            elif not tasks:
                return


def play(two_environments: bool) -> tuple[World, Engine]:
    RUNS.clear()
    w = World()
    e1 = w.environment("e1")
    e2 = w.environment("e2") if two_environments else e1
    e1.start("witness-branches", None, None, execution_id="x")
    w.decide_in(e1)
    e2.signal("x", "b_go", 1)
    w.decide_in(e2)
    e1.signal("x", "a_go", 2)
    w.decide_in(e1)
    w.clock.advance(17 * 60_000)
    e1.fire_timers()
    w.decide_in(e1)
    return w, e1


def branch_a(w: World) -> list[tuple[str, str]]:
    kinds = {"WaitStarted", "StepScheduled", "StepSucceeded", "TimerStarted", "TimerFired"}
    return [(e["type"], e["step"]) for e in w.history()
            if str(e.get("step", "")).startswith(A) and e["type"] in kinds]


EXPECTED = [("WaitStarted", A + "1.wait_for(a_go)"), ("StepSucceeded", A + "1.wait_for(a_go)"),
            ("StepScheduled", A + "2.bump"), ("StepSucceeded", A + "2.bump"),
            ("TimerStarted", A + "3.sleep()"), ("TimerFired", A + "3.sleep()")]


def test_an_instance_whose_branch_consumed_a_lost_result_is_replayed_cold() -> None:
    w, e1 = play(two_environments=True)
    assert w.lost == [0]  # environment 1's commit lost once
    assert branch_a(w) == EXPECTED
    state = w.store.load("x").fold()
    assert (state.status, state.output) == ("COMPLETED", [2, [0, 10, 20]])
    assert RUNS[1] == 2  # at_least_once: the lost run, then the run that was recorded
    assert replay(WF, w.history()) == []  # a cold replay at every prefix asks for what is recorded


def test_control_one_environment_no_lost_commit() -> None:
    w, e1 = play(two_environments=False)
    assert w.lost == []
    assert branch_a(w) == EXPECTED
    assert RUNS[1] == 1
