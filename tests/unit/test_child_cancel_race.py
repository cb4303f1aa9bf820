"""A parent's cancel can overtake its child's start (two messages on a standard queue).

Before: the cancel of the missing child raised NotFound until it was dead-lettered, and the
child then started and ran to the end. Now the cancel is recorded as the child's first commit
(a tombstone) and the start honours it: the child ends CANCELLED without running a step.
"""

from __future__ import annotations

from typing import Any

import pytest
from orbit.core.history.messages import CancelMessage, message_from_dict
from orbit.errors import NotFound
from orbit.testing.simulator import Simulator, hang, succeed

from tests.unit.dsl_harness import definition, sim_with


def parent_and_child() -> Simulator:
    sim = sim_with(
        {"invoice": {"workflow": "invoicing", "input": {"order": "{% input.order %}"}}}, name="orders"
    )
    sim.register(definition({"bill": {"task": "b.bill"}}, name="invoicing", signals={"nudge": {}}))
    sim.worker("b.bill", succeed("billed"))
    return sim


def hold_back(sim: Simulator, execution_id: str, kind: str, ms: int) -> dict[str, Any]:
    """Delay one queued decision message, as a standard queue may."""
    q = sim.queues.decisions
    for i, (at, body) in enumerate(q):
        if body["execution_id"] == execution_id and body["kind"] == kind:
            q[i] = (at + ms, body)
            return body
    raise AssertionError(f"no {kind} message for {execution_id} queued")


def test_a_cancel_that_overtakes_the_child_start_cancels_the_child_before_any_step() -> None:
    sim = parent_and_child()
    parent = sim.start("orders", {"order": "o1"}, id="p1")
    child = "p1/invoice"
    hold_back(sim, child, "start", 60_000)
    sim.cancel(parent, "customer changed mind")
    sim.run_until_idle()  # parent cancels, its CancelChild reaches the child first

    assert sim.describe(parent)["status"] == "CANCELLED"
    assert [e["type"] for e in sim.history(child)] == ["CancelRequested"]  # the tombstone
    with pytest.raises(NotFound, match="p1/invoice"):
        sim.describe(child)  # not an execution yet
    with pytest.raises(NotFound):
        sim.cancel(child)
    assert [e.execution_id for e in sim.store.list_executions()[0]] == [parent]

    sim.run()  # the start arrives late
    assert [e["type"] for e in sim.history(child)] == [
        "CancelRequested",
        "WorkflowCreated",
        "WorkflowStarted",
        "HookCreated",
        "WorkflowCancelled",
    ]
    d = sim.describe(child)
    assert d["status"] == "CANCELLED" and d["steps"] == {} and d["error"]["code"] == "CANCELLED"
    assert d["parent"] == {"execution_id": parent, "step": "invoice"}
    assert sim.scripts["b.bill"].seen == []  # no task ever reached a worker
    assert sim.dead_letters == [] and sim.queues.pending() == 0
    assert {e.execution_id: e.status for e in sim.store.list_executions()[0]} == {
        parent: "CANCELLED",
        child: "CANCELLED",
    }
    # the child's notice finds the parent ended: nothing more is recorded there
    assert sim.types(parent)[-1] == "WorkflowCancelled"


def test_a_tombstone_is_written_once_and_the_normal_order_is_unchanged() -> None:
    sim = parent_and_child()
    sim.worker("b.bill", hang())
    parent = sim.start("orders", {"order": "o1"}, id="p1")
    sim.run_until_idle()  # the child started and its task is running
    sim.cancel(parent, "stop")
    sim.run()
    types = sim.types("p1/invoice")
    assert types[0] == "WorkflowCreated" and types[-3:] == [
        "CancelRequested",
        "StepCancelled",
        "WorkflowCancelled",
    ]

    # a redelivered parent cancel to a tombstoned child records nothing more
    sim2 = parent_and_child()
    sim2.start("orders", {"order": "o1"}, id="p1")
    start = hold_back(sim2, "p1/invoice", "start", 60_000)
    sim2.cancel("p1", "stop")
    sim2.run_until_idle()
    cancel = {"kind": "cancel", "execution_id": "p1/invoice", "id": "cancel:p1/invoice", "parent_id": "p1"}
    sim2.engine.handle(cancel)
    sim2.engine.handle({**cancel, "id": "another"})
    assert [e["type"] for e in sim2.history("p1/invoice")] == ["CancelRequested"]
    assert start["parent"] == {"execution_id": "p1", "step": "invoice"}


def test_a_plain_cancel_of_an_unknown_execution_is_not_found() -> None:
    sim = parent_and_child()
    with pytest.raises(NotFound, match="'nope' not found"):
        sim.cancel("nope")
    # the same message on the queue (no parent): refused, so nothing is written for it
    with pytest.raises(NotFound):
        sim.engine.handle({"kind": "cancel", "execution_id": "nope", "id": "c1", "reason": "x"})
    with pytest.raises(NotFound):
        sim.store.load("nope")


def test_the_child_cancel_message_names_its_parent() -> None:
    m = message_from_dict({"kind": "cancel", "execution_id": "p/c", "id": "cancel:p/c", "parent_id": "p"})
    assert isinstance(m, CancelMessage) and m.parent_id == "p"
    assert message_from_dict({"kind": "cancel", "execution_id": "e", "id": "1"}).parent_id is None  # type: ignore[attr-defined]
    with pytest.raises(Exception, match="parent_id"):
        message_from_dict({"kind": "cancel", "execution_id": "e", "id": "1", "parent_id": 3})


def test_a_code_child_whose_start_is_overtaken_runs_no_step() -> None:
    from orbit.workflow import CodeRegistry, workflow

    reg = CodeRegistry()

    @workflow("kid", registry=reg)
    def kid(ctx: Any, input: Any) -> Any:
        return ctx.step("b.bill", {})

    @workflow("parent", registry=reg)
    def parent(ctx: Any, input: Any) -> Any:
        return ctx.child("kid", {})

    sim = Simulator()
    sim.register(parent)
    sim.register(kid)
    sim.worker("b.bill", succeed("billed"))
    sim.start("parent", {}, id="p1")
    child = "p1/1.child(kid)"
    hold_back(sim, child, "start", 60_000)
    sim.cancel("p1", "stop")
    sim.run()
    assert sim.describe("p1")["status"] == "CANCELLED"
    d = sim.describe(child)
    assert d["status"] == "CANCELLED" and d["steps"] == {}
    assert sim.types(child)[:2] == ["CancelRequested", "WorkflowCreated"]
    assert sim.scripts["b.bill"].seen == []
