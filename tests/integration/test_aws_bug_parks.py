"""A bug in a code workflow parks the execution on the local stack (issue 31 §1), through the real
decider, worker, timers and API handlers on moto: the build raises AttributeError once the signal
came; the execution parks with the traceback; a fixed build is deployed and the park's retry timer
(the timers function) carries it on to COMPLETED without a redrive, every step run once."""

from __future__ import annotations

from typing import Any

from crash_code import NAME, SIGNAL, UNITS
from crash_matrix import RECORDER, check
from crash_points import Call
from crash_world import EXECUTION, Scenario, fresh_world

BUG = Scenario((), {"v": 3}, SIGNAL, code=(NAME, UNITS, "buggy"), after_signal=("deploy:v1",))


def test_an_attribute_error_parks_and_a_fixed_deploy_completes_it(clients: Any) -> None:
    parked: list[Any] = []
    with fresh_world(clients, RECORDER, BUG, None) as world:
        act = world.act

        def act_and_look(action: str) -> None:  # what describe shows just before the fix ships
            parked.append(world.container().engine.describe(EXECUTION))
            act(action)

        world.act = act_and_look  # type: ignore[method-assign]
        world.run()
        problems, _ = check(world, {"a": 6, "b": 12, "by": "ops"})
        history = world.container().engine.history(EXECUTION)
        calls = list(RECORDER.calls)
    assert problems == []
    before = parked[0]
    assert before["status"] == "RUNNING" and before["error"] is None
    assert before["parked"]["code"] == "WORKFLOW_ERROR"
    assert before["parked"]["message"].startswith("AttributeError: 'dict' object has no attribute 'by' at ")
    frame = before["parked"]["details"]["traceback"][-1]
    assert frame["file"].endswith("crash_code.py") and frame["function"] == "buggy"
    assert '"by": by.by}' in frame["code"]
    types = [e["type"] for e in history]
    assert types.index("SignalReceived") < types.index("ExecutionParked") < types.index("ExecutionUnparked")
    assert "WorkflowFailed" not in types and "ExecutionRedriven" not in types
    assert Call("timers", "sqs", "SendMessage", "DecisionQueue: wake") in calls
