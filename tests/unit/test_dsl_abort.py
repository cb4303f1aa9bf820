"""Scenarios: cancellation, workflow timeout, compensation, contracts, expression errors,
idempotent start, version pinning, and the http error codes as the decider sees them."""

from __future__ import annotations

import pytest
from orbit.errors import ExecutionExists
from orbit.testing.simulator import fail, hang, succeed

from tests.unit.dsl_harness import T0, definition, events, sim_with, unit_types

SAGA = {
    "reserve": {
        "task": "inv.reserve",
        "compensate": {"task": "inv.release", "input": {"r": "{% steps.reserve.output %}"}},
    },
    "charge": {
        "task": "pay.charge",
        "after": ["reserve"],
        "compensate": {"task": "pay.refund", "input": {"c": "{% steps.charge.output %}"}},
    },
    "ship": {"task": "ship.it", "after": ["charge"]},
}


def test_cancel_withdraws_queued_tells_running_and_compensates() -> None:
    sim = sim_with(
        {
            "a": {"task": "t.a", "compensate": {"task": "t.undo"}},
            "slow": {"task": "t.slow", "after": ["a"]},
            "queued": {"task": "nobody.serves", "after": ["a"]},
        }
    )
    sim.worker("t.a", succeed("A"))
    sim.worker("t.slow", hang())
    sim.worker("t.undo", succeed())
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    assert sim.describe(eid)["steps"]["slow"]["status"] == "DISPATCHED"
    assert sim.describe(eid)["steps"]["queued"]["status"] == "SCHEDULED"
    sim.cancel(eid, "stop")
    sim.run()
    tail = sim.types(eid)[sim.types(eid).index("CancelRequested") :]
    assert tail == [
        "CancelRequested",
        "StepCancelled",
        "StepCancelled",
        "CompensationStarted",
        "StepScheduled",
        "StepDispatched",
        "StepSucceeded",
        "CompensationCompleted",
        "WorkflowCancelled",
    ]
    assert {c["unit"] for c in sim.cancelled_tasks} == {"slow", "queued"}  # both told via CancelTask
    d = sim.describe(eid)
    assert d["status"] == "CANCELLED" and d["error"]["code"] == "CANCELLED"
    assert d["compensation"] == "completed" and d["steps"]["compensate:a"]["status"] == "SUCCEEDED"
    assert events(sim, eid, "WorkflowCancelled")[0]["reason"] == "stop"


def test_forced_cancel_skips_compensation() -> None:
    sim = sim_with(
        {"a": {"task": "t.a", "compensate": {"task": "t.undo"}}, "b": {"task": "t.b", "after": ["a"]}}
    )
    sim.worker("t.a", succeed())
    sim.worker("t.b", hang())
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    sim.cancel(eid, "now", force=True)
    sim.run()
    assert sim.types(eid)[-3:] == ["CancelRequested", "StepCancelled", "WorkflowCancelled"]
    assert sim.describe(eid)["compensation"] == "none"


def test_compensation_runs_in_reverse_order_of_success() -> None:
    sim = sim_with(SAGA)
    sim.worker("inv.reserve", succeed("R1"))
    sim.worker("pay.charge", succeed("C1"))
    sim.worker("ship.it", fail("NO_TRUCK", retryable=False))
    sim.worker("inv.release", lambda inp, ctx: inp)
    sim.worker("pay.refund", lambda inp, ctx: inp)
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    started = events(sim, eid, "CompensationStarted")[0]
    assert started["steps"] == ["charge", "reserve"]
    comp = [e["step"] for e in events(sim, eid, "StepScheduled") if e["step"].startswith("compensate:")]
    assert comp == ["compensate:charge", "compensate:reserve"]
    d = sim.describe(eid)
    assert d["status"] == "FAILED" and d["error"]["code"] == "NO_TRUCK" and d["compensation"] == "completed"
    assert d["steps"]["compensate:reserve"]["output"] == {"r": "R1"}
    assert d["steps"]["compensate:charge"]["output"] == {"c": "C1"}
    assert events(sim, eid, "WorkflowFailed")[0]["compensation"] == "completed"


def test_failed_compensation_is_recorded_and_the_rest_still_run() -> None:
    sim = sim_with(SAGA)
    sim.worker("inv.reserve", succeed("R1"))
    sim.worker("pay.charge", succeed("C1"))
    sim.worker("ship.it", fail("NO_TRUCK", retryable=False))
    sim.worker("pay.refund", fail("REFUND_DOWN", retryable=False))
    sim.worker("inv.release", succeed())
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    types = sim.types(eid)
    assert types[types.index("CompensationStarted") :] == [
        "CompensationStarted",
        "StepScheduled",
        "StepDispatched",
        "StepAttemptFailed",
        "StepFailed",
        "CompensationFailed",
        "StepScheduled",
        "StepDispatched",
        "StepSucceeded",
        "CompensationCompleted",
        "WorkflowFailed",
    ]
    d = sim.describe(eid)
    assert d["compensation"] == "failed" and d["steps"]["compensate:reserve"]["status"] == "SUCCEEDED"
    assert events(sim, eid, "WorkflowFailed")[0]["compensation"] == "failed"


def test_workflow_timeout_times_out_and_compensates() -> None:
    sim = sim_with(
        {"a": {"task": "t.a", "compensate": {"task": "t.undo"}}, "b": {"task": "t.b", "after": ["a"]}},
        timeout="2h",
    )
    sim.worker("t.a", succeed())
    sim.worker("t.b", hang())
    sim.worker("t.undo", succeed())
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert events(sim, eid, "WorkflowStarted")[0]["deadline_ms"] == T0 + 7_200_000
    tail = sim.types(eid)[sim.types(eid).index("WorkflowTimeoutReached") :]
    assert tail == [
        "WorkflowTimeoutReached",
        "StepCancelled",
        "CompensationStarted",
        "StepScheduled",
        "StepDispatched",
        "StepSucceeded",
        "CompensationCompleted",
        "WorkflowTimedOut",
    ]
    d = sim.describe(eid)
    assert d["status"] == "TIMED_OUT" and d["error"]["code"] == "WORKFLOW_TIMEOUT"
    assert events(sim, eid, "WorkflowTimeoutReached")[0]["timestamp_ms"] == T0 + 7_200_000


def test_input_contract_violation_fails_at_start() -> None:
    sim = sim_with({"a": {"task": "t.a"}}, input={"type": "object", "required": ["order_id"]})
    eid = sim.start("wf", {"x": 1}, id="e1")
    assert sim.types(eid) == ["WorkflowCreated", "WorkflowStarted", "FailRequested", "WorkflowFailed"]
    err = sim.describe(eid)["error"]
    assert err["code"] == "INPUT_CONTRACT_VIOLATION" and "order_id" in err["message"]
    assert err["retryable"] is False


def test_output_contract_violation_fails_at_the_end() -> None:
    sim = sim_with(
        {"a": {"compute": "{% 5 %}"}}, output="{% steps.a.output %}", output_schema={"type": "string"}
    )
    eid = sim.start("wf", {}, id="e1")
    assert sim.types(eid) == [
        "WorkflowCreated",
        "WorkflowStarted",
        "StepSucceeded",
        "FailRequested",
        "WorkflowFailed",
    ]
    assert sim.describe(eid)["error"]["code"] == "OUTPUT_CONTRACT_VIOLATION"


def test_expression_error_fails_the_step_without_retry() -> None:
    sim = sim_with(
        {"a": {"task": "t.a", "retry": {"max_attempts": 5}, "input": {"n": "{% $number('not a number') %}"}}}
    )
    eid = sim.start("wf", {}, id="e1")
    assert sim.types(eid) == ["WorkflowCreated", "WorkflowStarted", "StepFailed", "WorkflowFailed"]
    err = sim.describe(eid)["error"]
    assert err["code"] == "EXPRESSION_ERROR" and err["retryable"] is False and "a.task" in err["message"]


def test_http_error_is_retried_and_adapter_disabled_is_not() -> None:
    sim = sim_with(
        {
            "h": {
                "http": {"method": "GET", "url": "https://x.example"},
                "retry": {"max_attempts": 3, "backoff": "1s"},
            },
            "off": {
                "http": {"method": "GET", "url": "http://127.0.0.1"},
                "retry": {"max_attempts": 3},
                "on_failure": "continue",
            },
        }
    )

    def http(inp, ctx):  # type: ignore[no-untyped-def]
        from orbit import TaskError

        if "127.0.0.1" in inp["url"]:
            raise TaskError("ADAPTER_DISABLED", "loopback not allowed", retryable=True)
        if ctx.attempt < 3:
            raise TaskError("HTTP_ERROR", "503", retryable=True, details={"status": 503})
        return {"status": 200, "headers": {}, "body": None}

    sim.worker("orbit.http", http)
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert unit_types(sim, eid, "off") == [
        "StepScheduled",
        "StepDispatched",
        "StepAttemptFailed",
        "StepFailed",
    ]
    assert unit_types(sim, eid, "h").count("RetryScheduled") == 2
    d = sim.describe(eid)
    assert d["status"] == "COMPLETED" and d["steps"]["off"]["error"]["code"] == "ADAPTER_DISABLED"


def test_start_is_idempotent_for_the_same_input_and_refused_otherwise() -> None:
    sim = sim_with({"a": {"task": "t.a"}})
    assert sim.start("wf", {"x": 1}, id="e1") == "e1"
    n = len(sim.history("e1"))
    assert sim.start("wf", {"x": 1}, id="e1") == "e1"
    assert len(sim.history("e1")) == n
    with pytest.raises(ExecutionExists, match="different input"):
        sim.start("wf", {"x": 2}, id="e1")


def test_execution_finishes_on_the_version_it_started_with() -> None:
    sim = sim_with({"a": {"task": "t.a"}}, output="v1")
    sim.worker("t.a", hang())
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    sim.register(
        definition({"a": {"task": "t.a"}, "extra": {"compute": "{% 1 %}"}}, version="2", output="v2")
    )
    token = events(sim, eid, "StepScheduled")[0]["token"]
    sim.engine.handle(
        {"kind": "result", "execution_id": eid, "id": "r", "unit": "a", "token": token, "output": 1}
    )
    d = sim.describe(eid)
    assert d["version"] == "1" and d["output"] == "v1" and "extra" not in d["steps"]
    assert sim.describe(sim.start("wf", {}, id="e2"))["version"] == "2"


def test_start_with_the_same_input_but_another_explicit_version_is_refused() -> None:
    sim = sim_with({"a": {"task": "t.a"}}, output="v1")
    sim.register(definition({"a": {"task": "t.a"}}, version="2", output="v2"))
    assert sim.start("wf", {"x": 1}, id="e1", version="1") == "e1"
    assert sim.start("wf", {"x": 1}, id="e1", version="1") == "e1"
    # no version: the existing execution, whatever the latest version is now
    assert sim.start("wf", {"x": 1}, id="e1") == "e1"
    with pytest.raises(ExecutionExists, match=r"'e1' already exists with version 1; you asked for version 2"):
        sim.start("wf", {"x": 1}, id="e1", version="2")
    assert sim.describe("e1")["version"] == "1"
