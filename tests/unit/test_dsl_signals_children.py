"""Scenarios: wait_for with signals (before and after the wait), hooks, child workflows."""

from __future__ import annotations

import pytest
from orbit.errors import ExecutionEnded, HookAlreadyResumed, NotFound, PayloadRefused, ValidationError
from orbit.testing.simulator import fail, hang, succeed

from tests.unit.dsl_harness import definition, events, sim_with, unit_types

SIGNALS = {"approval": {"schema": {"type": "object", "required": ["approved"]}}}


def test_signal_after_the_wait_completes_it() -> None:
    sim = sim_with(
        {"approval": {"wait_for": "approval", "timeout": "7d"}},
        signals=SIGNALS,
        output="{% steps.approval.output %}",
    )
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    assert sim.describe(eid)["steps"]["approval"]["status"] == "WAITING"
    sim.signal(eid, "approval", {"approved": True})
    sim.run()
    assert sim.types(eid) == [
        "WorkflowCreated",
        "WorkflowStarted",
        "HookCreated",
        "WaitStarted",
        "SignalReceived",
        "SignalConsumed",
        "StepSucceeded",
        "WorkflowCompleted",
    ]
    assert sim.describe(eid)["output"] == {"approved": True}


def test_signal_before_the_wait_is_buffered() -> None:
    sim = sim_with(
        {"work": {"task": "t.work"}, "approval": {"wait_for": "approval", "after": ["work"]}},
        signals=SIGNALS,
        output="{% steps.approval.output %}",
    )
    sim.worker("t.work", hang())
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    sim.signal(eid, "approval", {"approved": "early"})
    sim.run_until_idle()
    assert "approval" not in sim.describe(eid)["steps"]
    token = events(sim, eid, "StepScheduled")[0]["token"]
    sim.engine.handle(
        {"kind": "result", "execution_id": eid, "id": "r1", "unit": "work", "token": token, "output": 1}
    )
    sim.run()
    assert unit_types(sim, eid, "approval") == ["WaitStarted", "SignalConsumed", "StepSucceeded"]
    assert sim.describe(eid)["output"] == {"approved": "early"}


def test_signal_payload_breaking_the_schema_is_refused_and_nothing_recorded() -> None:
    sim = sim_with({"approval": {"wait_for": "approval"}}, signals=SIGNALS)
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    before = sim.history(eid)
    with pytest.raises(PayloadRefused) as info:
        sim.signal(eid, "approval", {"nope": 1})
    assert "approved" in str(info.value)
    sim.run_until_idle()
    assert sim.history(eid) == before


def test_wait_timeout_fails_the_step_with_timeout() -> None:
    sim = sim_with({"approval": {"wait_for": "approval", "timeout": "1h"}}, signals=SIGNALS)
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert unit_types(sim, eid, "approval") == ["WaitStarted", "StepAttemptFailed", "StepFailed"]
    assert sim.describe(eid)["error"]["code"] == "TIMEOUT"


def test_hook_token_known_from_start_resumes_once() -> None:
    sim = sim_with(
        {
            "notify": {"compute": {"approve": "{% hooks.approval.token %}"}},
            "approval": {"wait_for": "approval", "after": ["notify"]},
        },
        signals=SIGNALS,
        output="{% steps.approval.output %}",
    )
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    token = sim.describe(eid)["steps"]["notify"]["output"]["approve"]
    assert len(token) >= 32 and token == events(sim, eid, "HookCreated")[0]["token"]  # >= 128 bits
    with pytest.raises(PayloadRefused):
        sim.resume_hook(token, {"bad": 1})
    assert sim.resume_hook(token, {"approved": True}) == eid
    sim.run()
    assert sim.describe(eid)["output"] == {"approved": True}
    assert [e["type"] for e in events(sim, eid, "HookResumed", "SignalConsumed")] == [
        "HookResumed",
        "SignalConsumed",
    ]
    with pytest.raises(HookAlreadyResumed):
        sim.resume_hook(token, {"approved": False})
    with pytest.raises(NotFound):
        sim.resume_hook("not-a-token", {})


def _parent_and_child(child_steps: dict, parent_extra: dict | None = None):  # type: ignore[no-untyped-def]
    sim = sim_with(
        {
            "invoice": {"workflow": "invoicing", "input": {"order": "{% input.order %}"}},
            **(parent_extra or {}),
        },
        name="orders",
        output="{% steps.invoice.output %}",
    )
    sim.register(definition(child_steps, name="invoicing", output="{% input.order & '-inv' %}"))
    return sim


def test_child_workflow_output_becomes_the_step_output() -> None:
    sim = _parent_and_child({"bill": {"task": "b.bill"}})
    sim.worker("b.bill", succeed())
    eid = sim.start("orders", {"order": "o1"}, id="p1")
    sim.run()
    assert sim.types(eid) == [
        "WorkflowCreated",
        "WorkflowStarted",
        "ChildStarted",
        "StepSucceeded",
        "WorkflowCompleted",
    ]
    child = sim.describe("p1/invoice")  # deterministic child id
    assert child["status"] == "COMPLETED" and child["parent"] == {"execution_id": "p1", "step": "invoice"}
    assert sim.describe(eid)["output"] == "o1-inv"


def test_child_failure_fails_the_parent_step() -> None:
    sim = _parent_and_child({"bill": {"task": "b.bill"}})
    sim.worker("b.bill", fail("NO_MONEY", retryable=False))
    eid = sim.start("orders", {"order": "o1"}, id="p1")
    sim.run()
    d = sim.describe(eid)
    assert d["status"] == "FAILED" and d["error"]["code"] == "NO_MONEY"
    assert sim.describe("p1/invoice")["status"] == "FAILED"


def test_cancelling_the_parent_cancels_the_child() -> None:
    sim = _parent_and_child({"bill": {"task": "b.bill"}})
    sim.worker("b.bill", hang())
    eid = sim.start("orders", {"order": "o1"}, id="p1")
    sim.run_until_idle()
    sim.cancel(eid, "customer changed mind")
    sim.run()
    assert sim.types(eid)[-3:] == ["CancelRequested", "StepCancelled", "WorkflowCancelled"]
    child = sim.describe("p1/invoice")
    assert child["status"] == "CANCELLED"
    assert [e["type"] for e in sim.history("p1/invoice")][-3:] == [
        "CancelRequested",
        "StepCancelled",
        "WorkflowCancelled",
    ]
    # the child's notice reaches a parent that has ended: ignored, nothing recorded
    assert sim.types(eid)[-1] == "WorkflowCancelled"


def test_unknown_child_workflow_fails_the_step() -> None:
    sim = sim_with({"invoice": {"workflow": "nothing-registered"}})
    eid = sim.start("wf", {}, id="p1")
    sim.run()
    d = sim.describe(eid)
    assert d["status"] == "FAILED" and d["error"]["code"] == "UNKNOWN_WORKFLOW"


def test_a_signal_the_definition_does_not_know_is_refused_and_nothing_recorded() -> None:
    sim = sim_with({"approval": {"wait_for": "approval"}, "note": {"wait_for": "note"}}, signals=SIGNALS)
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    before = sim.history(eid)
    with pytest.raises(ValidationError) as info:
        sim.signal(eid, "aproval", {"approved": True})  # misspelt
    assert info.value.problems[0].path == "signal"
    assert "no signal 'aproval'" in str(info.value) and "approval, note" in str(info.value)
    sim.run_until_idle()
    assert sim.history(eid) == before


def test_signal_hook_and_cancel_for_an_ended_execution_are_refused_clearly() -> None:
    sim = sim_with({"a": {"compute": "{% 1 %}"}, "approval": {"wait_for": "approval"}}, signals=SIGNALS)
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    token = next(e["token"] for e in sim.history(eid) if e["type"] == "HookCreated")
    sim.cancel(eid, "stop")
    sim.run()
    before = sim.history(eid)
    with pytest.raises(ExecutionEnded, match=r"'e1' has already ended \(CANCELLED\); nothing to cancel"):
        sim.cancel(eid, "again")
    with pytest.raises(ExecutionEnded, match="signal 'approval' was not sent"):
        sim.signal(eid, "approval", {"approved": True})
    with pytest.raises(ExecutionEnded, match="hook 'approval' was not resumed"):
        sim.resume_hook(token, {"approved": True})
    sim.run()
    assert sim.history(eid) == before


def test_a_second_different_resume_is_refused_even_before_the_first_is_decided() -> None:
    # as on DynamoDB: the token is claimed atomically; the same payload again is a retry
    sim = sim_with({"approval": {"wait_for": "approval"}}, signals=SIGNALS)
    eid = sim.start("wf", {}, id="e1")
    token = next(e["token"] for e in sim.history(eid) if e["type"] == "HookCreated")
    sim.resume_hook(token, {"approved": True})
    sim.resume_hook(token, {"approved": True})  # a retried request: accepted
    with pytest.raises(HookAlreadyResumed):
        sim.resume_hook(token, {"approved": False})
    sim.run()
    assert sim.describe(eid)["steps"]["approval"]["output"] == {"approved": True}
