"""Scenarios: dependencies, parallel branches, when/skip, for, compute, http, sleep, output."""

from __future__ import annotations

from orbit.testing.simulator import fail, succeed

from tests.unit.dsl_harness import T0, events, scheduled_running_peak, sim_with, unit_types


def test_sequential_tasks_default_queue_and_output() -> None:
    sim = sim_with(
        {
            "reserve": {"task": "inventory.reserve", "input": {"items": "{% input.items %}"}},
            "charge": {"task": "payments.charge", "after": ["reserve"], "queue": "cards"},
        },
        output={"r": "{% steps.reserve.output.id %}", "c": "{% steps.charge.output %}"},
    )
    sim.worker("inventory.reserve", lambda inp, ctx: {"id": len(inp["items"])})
    sim.worker("payments.charge", succeed("ok"))
    eid = sim.start("wf", {"items": [1, 2]}, id="e1")
    sim.run()
    assert sim.types(eid) == [
        "WorkflowCreated",
        "WorkflowStarted",
        "StepScheduled",
        "StepDispatched",
        "StepSucceeded",
        "StepScheduled",
        "StepDispatched",
        "StepSucceeded",
        "WorkflowCompleted",
    ]
    sched = events(sim, eid, "StepScheduled")
    assert [(e["task"], e["queue"]) for e in sched] == [
        ("inventory.reserve", "inventory"),
        ("payments.charge", "cards"),
    ]
    assert sched[0]["input"] == {"items": [1, 2]} and sched[0]["idempotency_key"] == "e1:reserve"
    d = sim.describe(eid)
    assert d["status"] == "COMPLETED" and d["output"] == {"r": 2, "c": "ok"}
    assert d["steps"]["charge"] == {"status": "SUCCEEDED", "attempt": 1, "output": "ok", "error": None}


def test_reference_creates_dependency_and_independent_steps_run_in_parallel() -> None:
    sim = sim_with(
        {
            "a": {"task": "t.a"},
            "b": {"task": "t.b"},
            "c": {"task": "t.c", "input": {"x": "{% steps.b.output %}"}},
        }
    )
    for t in ("t.a", "t.b", "t.c"):
        sim.worker(t, succeed(t))
    eid = sim.start("wf", {}, id="e1")
    first_decision = [e["step"] for e in events(sim, eid, "StepScheduled")]
    assert first_decision == ["a", "b"]  # both ready at start: one decision schedules both
    sim.run()
    c = [e for e in events(sim, eid, "StepScheduled") if e["step"] == "c"][0]
    b_done = [e for e in events(sim, eid, "StepSucceeded") if e["step"] == "b"][0]
    assert c["seq"] > b_done["seq"] and c["input"] == {"x": "t.b"}
    assert sim.describe(eid)["status"] == "COMPLETED"


def test_when_false_skips_and_skipped_counts_as_ended() -> None:
    sim = sim_with(
        {
            "charge": {"task": "p.charge", "when": "{% input.total > 0 %}"},
            "after_it": {"compute": "{% steps.charge.status %}", "after": ["charge"]},
        },
        output={"charge": "{% steps.charge.output %}", "s": "{% steps.after_it.output %}"},
    )
    eid = sim.start("wf", {"total": 0}, id="e1")
    sim.run()
    assert sim.types(eid) == [
        "WorkflowCreated",
        "WorkflowStarted",
        "StepSkipped",
        "StepSucceeded",
        "WorkflowCompleted",
    ]
    d = sim.describe(eid)
    assert d["steps"]["charge"]["status"] == "SKIPPED" and d["output"] == {"charge": None, "s": "SKIPPED"}


def test_for_fans_out_with_concurrency_and_keeps_order() -> None:
    sim = sim_with(
        {
            "ship": {
                "for": "{% input.items %}",
                "concurrency": 2,
                "task": "s.ship",
                "input": {"sku": "{% item %}", "line": "{% index %}"},
            }
        },
        output="{% steps.ship.output %}",
    )
    sim.worker("s.ship", lambda inp, ctx: f"{inp['sku']}#{inp['line']}")
    eid = sim.start("wf", {"items": ["a", "b", "c", "d", "e"]}, id="e1")
    sim.run()
    assert scheduled_running_peak(sim, eid, "ship") == 2
    assert events(sim, eid, "StepFanOut")[0]["items"] == ["a", "b", "c", "d", "e"]
    assert unit_types(sim, eid, "ship[4]") == ["StepScheduled", "StepDispatched", "StepSucceeded"]
    assert sim.describe(eid)["output"] == ["a#0", "b#1", "c#2", "d#3", "e#4"]
    assert sim.types(eid)[-2:] == ["StepSucceeded", "WorkflowCompleted"]


def test_for_tolerates_failures_up_to_the_limit() -> None:
    steps = {
        "ship": {"for": "{% input.items %}", "tolerated_failures": 1, "task": "s.ship", "input": "{% item %}"}
    }
    sim = sim_with(steps, output="{% steps.ship.output %}")
    sim.worker("s.ship", fail("NOPE", retryable=False), succeed("ok"))
    eid = sim.start("wf", {"items": [1, 2, 3]}, id="e1")
    sim.run()
    d = sim.describe(eid)
    assert d["status"] == "COMPLETED" and d["output"] == [None, "ok", "ok"]
    assert d["steps"]["ship[0]"]["error"]["code"] == "NOPE"


def test_for_fails_beyond_tolerated_failures() -> None:
    steps = {
        "ship": {"for": "{% input.items %}", "tolerated_failures": 1, "concurrency": 1, "task": "s.ship"}
    }
    sim = sim_with(steps)
    sim.worker("s.ship", fail("NOPE", retryable=False))
    eid = sim.start("wf", {"items": [1, 2, 3]}, id="e1")
    sim.run()
    d = sim.describe(eid)
    assert d["status"] == "FAILED" and d["error"]["code"] == "TOO_MANY_FAILURES"
    assert "ship[2]" not in d["steps"]  # the third element never started
    assert [e["type"] for e in events(sim, eid)][-2:] == ["StepFailed", "WorkflowFailed"]


def test_empty_for_succeeds_with_empty_list() -> None:
    sim = sim_with({"ship": {"for": "{% input.items %}", "task": "s.ship"}}, output="{% steps.ship.output %}")
    eid = sim.start("wf", {"items": []}, id="e1")
    sim.run()
    assert sim.types(eid) == [
        "WorkflowCreated",
        "WorkflowStarted",
        "StepFanOut",
        "StepSucceeded",
        "WorkflowCompleted",
    ]
    assert sim.describe(eid)["output"] == []


def test_compute_step_runs_inline() -> None:
    sim = sim_with(
        {"a": {"task": "t.a"}, "total": {"compute": "{% $sum(steps.a.output.costs) %}"}},
        output="{% steps.total.output %}",
    )
    sim.worker("t.a", succeed({"costs": [1, 2, 3.5]}))
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert unit_types(sim, eid, "total") == ["StepSucceeded"]
    assert sim.describe(eid)["output"] == 6.5


def test_http_step_is_a_task_on_the_http_queue() -> None:
    sim = sim_with(
        {
            "notify": {
                "http": {"method": "POST", "url": "https://example.com/x", "body": {"id": "{% input.id %}"}}
            }
        }
    )
    sim.worker("orbit.http", lambda inp, ctx: {"status": 200, "headers": {}, "body": inp["body"]})
    eid = sim.start("wf", {"id": 7}, id="e1")
    sim.run()
    s = events(sim, eid, "StepScheduled")[0]
    assert (s["task"], s["queue"], s["kind"]) == ("orbit.http", "http", "http")
    assert s["input"] == {"method": "POST", "url": "https://example.com/x", "body": {"id": 7}}
    assert sim.describe(eid)["steps"]["notify"]["output"]["status"] == 200


def test_sleep_seven_days_takes_no_wall_time() -> None:
    sim = sim_with(
        {"cool": {"sleep": "7d"}, "then": {"compute": "{% $millis() %}", "after": ["cool"]}},
        output="{% steps.then.output %}",
    )
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert sim.types(eid) == [
        "WorkflowCreated",
        "WorkflowStarted",
        "TimerStarted",
        "TimerFired",
        "StepSucceeded",
        "WorkflowCompleted",
    ]
    assert events(sim, eid, "TimerStarted")[0]["fire_at_ms"] == T0 + 7 * 86_400_000
    assert sim.describe(eid)["output"] == T0 + 7 * 86_400_000  # $millis() is the decision time
    assert sim.describe(eid)["steps"]["cool"]["output"] == {}


def test_sleep_until_an_expression_time() -> None:
    sim = sim_with({"wait": {"sleep": {"until": "{% input.at %}"}}})
    eid = sim.start("wf", {"at": "2023-11-15T00:00:00Z"}, id="e1")
    sim.run()
    fire = events(sim, eid, "TimerStarted")[0]["fire_at_ms"]
    assert fire == 1_700_006_400_000
    assert events(sim, eid, "TimerFired")[0]["timestamp_ms"] == fire


def test_sleep_until_in_the_past_fires_at_once() -> None:
    sim = sim_with({"wait": {"sleep": {"until": "{% 0 %}"}}})
    eid = sim.start("wf", {}, id="e1")
    assert sim.describe(eid)["status"] == "COMPLETED"
    assert sim.types(eid)[2:4] == ["TimerStarted", "TimerFired"]


def test_on_failure_continue_lets_the_execution_go_on() -> None:
    sim = sim_with(
        {
            "optional": {"task": "t.opt", "on_failure": "continue"},
            "next": {"compute": "{% steps.optional.error.code %}", "after": ["optional"]},
        },
        output="{% steps.next.output %}",
    )
    sim.worker("t.opt", fail("BROKEN", retryable=False))
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    d = sim.describe(eid)
    assert d["status"] == "COMPLETED" and d["output"] == "BROKEN"
    assert d["steps"]["optional"]["status"] == "FAILED"
    failed = events(sim, eid, "StepFailed")[0]
    assert failed["fatal"] is False


def test_sleep_until_a_non_time_names_the_json_value() -> None:
    sim = sim_with({"wait": {"sleep": {"until": "{% input.at %}"}}})
    for i, (at, shown) in enumerate([(None, "null"), (True, "true"), ({"d": 1}, '{"d": 1}')]):
        eid = sim.start("wf", {"at": at}, id=f"e{i}")
        sim.run()
        err = sim.describe(eid)["error"]
        assert err["code"] == "EXPRESSION_ERROR"
        assert err["message"].endswith(f"expected an ISO 8601 time or epoch milliseconds, got {shown}")
