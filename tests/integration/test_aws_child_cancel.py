"""On moto: a parent's cancel that overtakes its child's start (standard queue, no order).

The child's start message is held in flight while the parent is cancelled; the CancelChild
message reaches the decider first and is recorded as a tombstone instead of failing until the
DLQ. When the start comes back, the child is created already cancelled and runs no step.
"""

from __future__ import annotations

from typing import Any

import pytest
from orbit.adapters.sqs import decode_bodies
from orbit.aws import wiring as aws
from orbit.errors import NotFound

PARENT = {
    "orbit": 1, "name": "parent-c", "version": "1",
    "steps": {"invoice": {"workflow": "child-c", "input": {"n": "{% input.n %}"}}},
}
CHILD = {"orbit": 1, "name": "child-c", "version": "1", "steps": {"bill": {"task": "test.never"}}}


def test_cancel_overtaking_the_child_start_cancels_the_child(cloud: Any, clients: Any) -> None:
    for d in (CHILD, PARENT):
        assert cloud.api("POST", "/definitions", d)[0] == 201
    request = {"workflow": "parent-c", "input": {"n": 1}, "id": "pc-1"}
    assert cloud.api("POST", "/executions", request)[0] == 201
    # The API started the parent at once; its child's start waits on the decision queue.
    url = cloud.stack.queues["DecisionQueue"]
    got = clients.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=600)
    held = got["Messages"]
    bodies = [b for m in held for b in decode_bodies(m["Body"], aws.services().payloads)]
    assert [(b["kind"], b["execution_id"]) for b in bodies] == [("start", "pc-1/invoice")]

    assert cloud.api("POST", "/executions/pc-1/cancel", {"reason": "changed mind"})[0] == 202
    cloud.run_until_idle()  # parent cancelled; its cancel reaches the child first
    engine = aws.services().engine
    assert [e["type"] for e in engine.history("pc-1/invoice")] == ["CancelRequested"]
    with pytest.raises(NotFound):
        engine.describe("pc-1/invoice")
    assert cloud.depth("DecisionDLQ") == 0

    for m in held:  # the start comes back
        clients.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"],
                                              VisibilityTimeout=0)
    cloud.run_until_idle()
    child = engine.describe("pc-1/invoice")
    assert child["status"] == "CANCELLED" and child["steps"] == {}
    assert [e["type"] for e in engine.history("pc-1/invoice")] == [
        "CancelRequested", "WorkflowCreated", "WorkflowStarted", "WorkflowCancelled"]
    assert cloud.api("GET", "/executions/pc-1")[1]["status"] == "CANCELLED"
    assert cloud.depth("DecisionDLQ") == 0 and cloud.depth("DefaultTaskQueue") == 0
