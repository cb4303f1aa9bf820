"""Reconciliation through the real handlers on moto (issue 31, docs/definitions.md).

Attempt 1 runs past its timeout: inside it, the test plays the rest of the cloud (the decider
records `started`, the clock passes the timeout, the timers function fires, the decider fails the
attempt with TIMEOUT and schedules a retry 1 min later). Then attempt 1 answers with a success:
the step is still unresolved, so that answer resolves it, and the retry never runs.
"""

from __future__ import annotations

from typing import Any

from harness import load_event
from orbit import worker

DEFINITION = {
    "orbit": 1, "name": "slow-charge", "version": "1",
    "steps": {
        "charge": {"task": "test.slow_charge", "timeout": "30s",
                   "retry": {"max_attempts": 3, "backoff": "1m"}, "input": {"n": "{% input.n %}"}},
    },
    "output": "{% steps.charge.output %}",
}
WORLD: dict[str, Any] = {"attempts": []}


@worker.task("test.slow_charge")
def slow_charge(input: Any, ctx: worker.TaskContext) -> dict[str, Any]:
    cloud, clock = WORLD["cloud"], WORLD["clock"]
    WORLD["attempts"].append(ctx.attempt)
    if ctx.attempt == 1:
        cloud.pump("DecisionQueue")  # the `started` sent before this function began
        clock.advance(32_000)  # past the 30 s timeout (+ the timers' 1 s skew)
        cloud.invoke("timers", load_event("timers_schedule.json"))
        cloud.pump("DecisionQueue")
        WORLD["after_timeout"] = _types(cloud)
    return {"n": input["n"], "attempt": ctx.attempt}


def _types(cloud: Any) -> list[str]:
    status, history = cloud.api("GET", "/executions/rc-1/history")
    assert status == 200, history
    return [e["type"] for e in history]


def test_a_late_success_of_a_timed_out_attempt_resolves_the_step(cloud: Any, clock: Any) -> None:
    WORLD.update(cloud=cloud, clock=clock, attempts=[])
    assert cloud.api("POST", "/definitions", DEFINITION)[0] == 201
    assert cloud.api("POST", "/executions", {"workflow": "slow-charge", "input": {"n": 7}, "id": "rc-1"}) == (
        201, {"id": "rc-1"})
    cloud.run_until_idle()  # attempt 1, which times out inside and then answers
    assert WORLD["after_timeout"][-2:] == ["StepAttemptFailed", "RetryScheduled"]
    status, desc = cloud.api("GET", "/executions/rc-1")
    assert status == 200 and desc["status"] == "COMPLETED", desc
    assert desc["output"] == {"n": 7, "attempt": 1}
    history = cloud.api("GET", "/executions/rc-1/history")[1]
    ok = [e for e in history if e["type"] == "StepSucceeded"]
    assert [(e["attempt"], e.get("reconciled_attempt")) for e in ok] == [(2, 1)]
    assert not [e for e in history if e["type"] == "StaleResultIgnored"]
    clock.advance(120_000)  # the retry's time passes: nothing is due any more
    cloud.invoke("timers", load_event("timers_schedule.json"))
    cloud.run_until_idle()
    assert WORLD["attempts"] == [1]  # attempt 2 never ran
    assert len(cloud.api("GET", "/executions/rc-1/history")[1]) == len(history)
    assert cloud.depth("DecisionDLQ") == 0 and cloud.depth("DefaultTaskDLQ") == 0
