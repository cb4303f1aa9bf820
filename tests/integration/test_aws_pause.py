"""`orbit pause` / `unpause` through the real handlers on moto (issue 31 §2): API -> decider ->
worker -> decider -> timers.

Step `a` is paused while it runs on the worker: its answer is recorded, and `nap` (a 1 h timer)
does not start. Unpaused, the timer starts; paused again, the timer's time passes and the timers
function fires its wake-up, which is held. Unpaused, the timer fires at once and `b` runs.
"""

from __future__ import annotations

from typing import Any

from harness import load_event
from orbit import worker

DEFINITION = {
    "orbit": 1, "name": "pausable", "version": "1",
    "steps": {
        "a": {"task": "test.pz_a"},
        "nap": {"sleep": "1h", "after": ["a"]},
        "b": {"task": "test.pz_b", "after": ["nap"]},
    },
    "output": "{% steps.b.output %}",
}
WORLD: dict[str, Any] = {}


@worker.task("test.pz_a")
def pz_a(input: Any, ctx: worker.TaskContext) -> dict[str, Any]:
    cloud = WORLD["cloud"]
    assert cloud.api("POST", "/executions/pz-1/pause", {"reason": "supplier outage"})[0] == 202
    cloud.pump("DecisionQueue")  # `started` and the pause are recorded while `a` runs
    WORLD["during"] = _types(cloud)
    return {"a": 1}


@worker.task("test.pz_b")
def pz_b(input: Any, ctx: worker.TaskContext) -> dict[str, Any]:
    WORLD["b_runs"] = WORLD.get("b_runs", 0) + 1
    return {"b": 2}


def _types(cloud: Any) -> list[str]:
    status, history = cloud.api("GET", "/executions/pz-1/history")
    assert status == 200, history
    return [e["type"] for e in history]


def _fire_timers(cloud: Any, clock: Any, ms: int) -> None:
    clock.advance(ms)
    cloud.invoke("timers", load_event("timers_schedule.json"))
    cloud.run_until_idle()


def test_pause_and_unpause_around_a_running_step_and_a_timer(cloud: Any, clock: Any) -> None:
    WORLD.clear()
    WORLD.update(cloud=cloud, clock=clock)
    assert cloud.api("POST", "/definitions", DEFINITION)[0] == 201
    assert cloud.api("POST", "/executions", {"workflow": "pausable", "id": "pz-1"}) == (201, {"id": "pz-1"})
    cloud.run_until_idle()  # `a` runs, pausing the execution inside
    assert "ExecutionPaused" in WORLD["during"] and "StepSucceeded" not in WORLD["during"]
    types = _types(cloud)  # a's answer is recorded while paused; the timer does not start
    assert types[-1] == "StepSucceeded" and "TimerStarted" not in types
    desc = cloud.api("GET", "/executions/pz-1")[1]
    assert desc["status"] == "RUNNING" and desc["paused"]["reason"] == "supplier outage"
    assert cloud.api("POST", "/executions/pz-1/pause", {})[0] == 409  # already paused

    assert cloud.api("POST", "/executions/pz-1/unpause", {})[0] == 202
    cloud.run_until_idle()
    assert _types(cloud)[-2:] == ["ExecutionUnpaused", "TimerStarted"]
    _fire_timers(cloud, clock, 30 * 60_000)
    assert cloud.api("POST", "/executions/pz-1/pause", {"reason": "again"})[0] == 202
    cloud.run_until_idle()
    _fire_timers(cloud, clock, 2 * 3_600_000)  # the nap's wake-up comes while paused: held
    types = _types(cloud)
    assert types[-1] == "ExecutionPaused" and "TimerFired" not in types and "b_runs" not in WORLD

    status, body = cloud.api("POST", "/executions/pz-1/unpause", {"reason": "outage over"})
    assert status == 202 and body["id"].startswith("unpause:")
    cloud.run_until_idle()
    desc = cloud.api("GET", "/executions/pz-1")[1]
    assert desc["status"] == "COMPLETED" and desc["output"] == {"b": 2} and desc["paused"] is None, desc
    types = _types(cloud)
    assert types[types.index("ExecutionUnpaused", types.index("TimerStarted")):][:2] == [
        "ExecutionUnpaused", "TimerFired"]
    assert WORLD["b_runs"] == 1
    assert cloud.api("POST", "/executions/pz-1/unpause", {})[0] == 409  # ended
    assert cloud.depth("DecisionDLQ") == 0 and cloud.depth("DefaultTaskDLQ") == 0
