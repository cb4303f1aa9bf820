"""`orbit pause` / `orbit unpause` (issue 31 §2) on the simulator with the real engine.

A paused execution dispatches nothing new and fires no timer; answers of work already running,
signals and cancels are recorded. On unpause everything that came due runs.
"""

from __future__ import annotations

import pytest
from orbit.errors import ExecutionEnded, PauseRefused, ValidationError
from orbit.testing.simulator import hang, late, succeed

from tests.unit.dsl_harness import T0, events, sim_with


def test_a_paused_execution_fires_no_timer_and_runs_it_on_unpause() -> None:
    sim = sim_with({"nap": {"sleep": "1h"}, "b": {"task": "t.b", "after": ["nap"]}})
    sim.worker("t.b", succeed("done"))
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    sim.pause(eid, "supplier outage")
    sim.run_until_idle()
    d = sim.describe(eid)
    assert d["status"] == "RUNNING" and d["paused"] == {"since_ms": T0, "reason": "supplier outage"}
    sim.advance(3 * 3_600_000)  # the timer's time passes (its wake-up comes and is held)
    assert "TimerFired" not in sim.types(eid) and "StepScheduled" not in sim.types(eid)
    assert sim.queues.tasks.get("t") in (None, []) or not any(
        body.get("unit") == "b" for _, body in sim.queues.tasks["t"])
    sim.unpause(eid)
    sim.run()
    d = sim.describe(eid)
    assert d["status"] == "COMPLETED" and d["paused"] is None and d["output"] == {"nap": {}, "b": "done"}
    fired = events(sim, eid, "TimerFired")[0]
    unpaused = events(sim, eid, "ExecutionUnpaused")[0]
    assert fired["timestamp_ms"] == unpaused["timestamp_ms"] == T0 + 3 * 3_600_000
    assert events(sim, eid, "ExecutionPaused")[0]["reason"] == "supplier outage"


def test_answers_and_signals_are_recorded_while_paused_and_nothing_new_is_dispatched() -> None:
    sim = sim_with({
        "a": {"task": "t.a"},
        "b": {"task": "t.b", "after": ["a"]},
        "go": {"wait_for": "go", "after": ["a"]},
    }, output={"a": "{% steps.a.output %}", "b": "{% steps.b.output %}", "go": "{% steps.go.output %}"})
    sim.worker("t.a", late(10_000, "A"))
    sim.worker("t.b", succeed("B"))
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()  # a is running on a worker; its answer comes at 10 s
    sim.pause(eid)
    sim.run_until_idle()
    sim.advance(60_000)  # a's answer comes at 10 s
    sim.signal(eid, "go", {"ok": True})
    sim.run_until_idle()
    types = sim.types(eid)
    assert types[types.index("ExecutionPaused"):] == ["ExecutionPaused", "StepSucceeded", "SignalReceived"]
    assert sim.describe(eid)["steps"]["a"]["status"] == "SUCCEEDED"
    assert "b" not in sim.describe(eid)["steps"]  # not scheduled while paused
    sim.unpause(eid, "outage over")
    sim.run()
    d = sim.describe(eid)
    assert d["status"] == "COMPLETED" and d["output"] == {"a": "A", "b": "B", "go": {"ok": True}}
    b = [e for e in sim.history(eid) if e.get("step") == "b"][0]
    assert b["type"] == "StepScheduled" and b["timestamp_ms"] == T0 + 60_000  # at the unpause


def test_a_retry_without_backoff_waits_for_the_unpause() -> None:
    sim = sim_with({"a": {"task": "t.a", "retry": {"max_attempts": 2, "backoff": "0s"}}})
    sim.worker("t.a", hang(), succeed("second"))
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    sim.pause(eid)
    sim.run_until_idle()
    token = events(sim, eid, "StepScheduled")[0]["token"]  # attempt 1 fails while paused
    sim.engine.handle({"kind": "result", "execution_id": eid, "id": f"result:{token}", "unit": "a",
                       "token": token, "error": {"code": "BUSY", "message": "busy", "retryable": True}})
    sim.advance(60_000)
    assert sim.types(eid)[-2:] == ["StepAttemptFailed", "RetryScheduled"]
    assert len(events(sim, eid, "StepScheduled")) == 1  # the retry is not sent
    sim.unpause(eid)
    sim.run()
    assert sim.describe(eid)["output"] == {"a": "second"}
    assert len(events(sim, eid, "StepScheduled")) == 2


def test_a_cancel_is_not_held_by_a_pause() -> None:
    sim = sim_with({"nap": {"sleep": "1h"}})
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    sim.pause(eid)
    sim.run_until_idle()
    sim.cancel(eid, "not needed")
    sim.run()
    d = sim.describe(eid)
    assert d["status"] == "CANCELLED" and d["paused"] is None
    types = sim.types(eid)
    assert types.index("ExecutionUnpaused") + 1 == types.index("CancelRequested")


def test_pause_and_unpause_refusals_are_clear() -> None:
    sim = sim_with({"nap": {"sleep": "1h"}})
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    with pytest.raises(PauseRefused, match="execution 'e1' is not paused \\(RUNNING\\)"):
        sim.unpause(eid)
    sim.pause(eid)
    sim.run_until_idle()
    with pytest.raises(PauseRefused, match="execution 'e1' is already paused"):
        sim.pause(eid)
    with pytest.raises(ValidationError, match="reason must be a string of at most 1000 characters"):
        sim.unpause(eid, "x" * 1001)
    sim.unpause(eid)
    sim.run()
    with pytest.raises(ExecutionEnded):
        sim.pause(eid)


def test_a_pause_message_for_an_already_paused_execution_records_nothing() -> None:
    sim = sim_with({"nap": {"sleep": "1h"}})
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    for n in range(2):  # both accepted before either was recorded (two operators at once)
        sim.queues.send_decision({"kind": "pause", "execution_id": eid, "id": f"pause:{n}"})
    sim.run_until_idle()
    assert sim.types(eid).count("ExecutionPaused") == 1


def test_a_paused_code_workflow_is_not_replayed_until_the_unpause() -> None:
    from orbit.workflow import CodeRegistry, workflow

    from tests.unit.code_harness import Harness

    @workflow("pause-code", registry=CodeRegistry())
    def wf(ctx, input):
        a = ctx.step("p.first", {"n": 1})
        ctx.sleep("10m")
        return [a, ctx.step("p.second", {"n": 2})]

    h = Harness(wf, workers={"p.first": lambda i, n: "A", "p.second": lambda i, n: "B"})
    h.held.add("p.first")
    h.start("pause-code")
    h.pause("ex-1")
    h.run_until_idle()
    h.release("p.first")  # its answer is recorded; the code does not go on to the sleep
    types = h.types()
    assert types.index("ExecutionPaused") < types.index("StepSucceeded") == len(types) - 1
    h.advance(3_600_000)
    assert [t for t, _ in h.calls] == ["p.first"] and "TimerStarted" not in h.types()
    h.unpause("ex-1")
    h.run()
    d = h.describe()
    assert d["status"] == "COMPLETED" and d["output"] == ["A", "B"]
