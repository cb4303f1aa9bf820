"""heartbeat_timeout through the real handlers on moto: API -> decider -> worker -> decider -> timers.

The first attempt hangs without heartbeating. Inside it, the test plays the rest of the
cloud while the task is still running (the worker Lambda would be busy meanwhile): the
decider handles the `started` the worker sent before running the function, the clock
passes the heartbeat timeout, the timers function fires, and the decider fails the
attempt with HEARTBEAT_TIMEOUT. The hung attempt's late answer is then stale, and the
retry, which heartbeats, succeeds.
"""

from __future__ import annotations

from typing import Any

from harness import load_event
from orbit import worker
from orbit.core.history.events import TaskError

DEFINITION = {
    "orbit": 1, "name": "crunch-hb", "version": "1",
    "steps": {
        "crunch": {"task": "test.crunch", "heartbeat_timeout": "30s", "timeout": "1h",
                   "retry": {"max_attempts": 2, "backoff": "1s"}, "input": {"n": "{% input.n %}"}},
    },
    "output": "{% steps.crunch.output %}",
}
WORLD: dict[str, Any] = {}


@worker.task("test.crunch")
def crunch(input: Any, ctx: worker.TaskContext) -> dict[str, Any]:
    cloud, clock = WORLD["cloud"], WORLD["clock"]
    if ctx.attempt == 1:
        assert ctx.heartbeat_timeout_ms == 30_000
        cloud.pump("DecisionQueue")  # the `started` sent before this function began
        WORLD["during"] = _types(cloud)
        clock.advance(31_000)  # no heartbeat for longer than the heartbeat timeout (+ the timers' 1s skew)
        cloud.invoke("timers", load_event("timers_schedule.json"))
        cloud.pump("DecisionQueue")
        WORLD["after_timeout"] = _types(cloud)
        # Give up late. (A late *success* would complete the step's idempotency key, and the
        # retry would answer that stored output without running: side effects happen once.)
        raise TaskError("STUCK", "gave up after the engine had moved on")
    ctx.heartbeat({"pct": 50})
    return {"n": input["n"], "attempt": ctx.attempt}


def _types(cloud: Any) -> list[str]:
    status, history = cloud.api("GET", "/executions/hb-1/history")
    assert status == 200, history
    return [e["type"] for e in history]


def test_a_silent_attempt_fails_with_heartbeat_timeout_and_the_retry_succeeds(cloud: Any, clock: Any) -> None:
    WORLD.update(cloud=cloud, clock=clock)
    assert cloud.api("POST", "/definitions", DEFINITION)[0] == 201
    assert cloud.api("POST", "/executions", {"workflow": "crunch-hb", "input": {"n": 7}, "id": "hb-1"}) == (
        201, {"id": "hb-1"})
    cloud.run_until_idle()  # runs attempt 1 (which plays the decider and the timers inside)
    assert WORLD["during"][-1] == "StepDispatched"  # `started` reached the engine while the task ran
    assert WORLD["after_timeout"][-2:] == ["StepAttemptFailed", "RetryScheduled"]
    clock.advance(2_000)  # the 1s backoff, and the timers function's 1s skew margin
    cloud.invoke("timers", load_event("timers_schedule.json"))
    cloud.run_until_idle()
    status, desc = cloud.api("GET", "/executions/hb-1")
    assert status == 200 and desc["status"] == "COMPLETED", desc
    assert desc["output"] == {"n": 7, "attempt": 2}
    history = cloud.api("GET", "/executions/hb-1/history")[1]
    failed = [e for e in history if e["type"] == "StepAttemptFailed"]
    assert [(e["error"]["code"], e["error"]["retryable"]) for e in failed] == [("HEARTBEAT_TIMEOUT", True)]
    stale = [e for e in history if e["type"] == "StaleResultIgnored"]
    assert [(e["step"], e["outcome"]) for e in stale] == [("crunch", "failed:STUCK")]
    scheduled = [e for e in history if e["type"] == "StepScheduled"]
    assert [e["heartbeat_timeout_ms"] for e in scheduled] == [30_000, 30_000]
    assert [e["details"] for e in history if e["type"] == "StepHeartbeat"] == [{"pct": 50}]
    assert cloud.depth("DecisionDLQ") == 0 and cloud.depth("DefaultTaskDLQ") == 0
