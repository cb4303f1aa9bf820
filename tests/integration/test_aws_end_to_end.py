"""A 3-step workflow through the real handlers (API -> decider -> worker -> decider ...) on moto."""

from __future__ import annotations

import hashlib
from typing import Any

from orbit import worker
from orbit.aws import wiring as aws
from orbit.aws.wiring import services

HELLO = {
    "orbit": 1, "name": "hello3", "version": "1",
    "steps": {
        "greet": {"task": "example.greet", "input": {"name": "{% input.name %}"}},
        "digest": {"task": "example.checksum", "input": {"texts": ["{% steps.greet.output.greeting %}"]}},
        "shout": {"task": "test.upper", "after": ["digest"],
                  "input": {"text": "{% steps.greet.output.greeting %}"}},
    },
    "output": {"greeting": "{% steps.shout.output.text %}", "sha": "{% steps.digest.output.sha256[0] %}"},
}
CALLS: dict[str, int] = {}


@worker.task("test.upper")
def upper(input: Any, ctx: worker.TaskContext) -> dict[str, str]:
    CALLS[ctx.idempotency_key] = CALLS.get(ctx.idempotency_key, 0) + 1
    return {"text": str(input["text"]).upper()}


def start(cloud: Any, eid: str, name: str = "Ada") -> None:
    status, body = cloud.api("POST", "/definitions", HELLO)
    assert status == 201, body
    request = {"workflow": "hello3", "input": {"name": name}, "id": eid}
    status, body = cloud.api("POST", "/executions", request)
    assert (status, body) == (201, {"id": eid})


def test_three_steps_complete_through_the_handlers(cloud: Any) -> None:
    start(cloud, "h-1")
    cloud.run_until_idle()
    status, desc = cloud.api("GET", "/executions/h-1")
    assert status == 200 and desc["status"] == "COMPLETED", desc
    assert desc["output"] == {"greeting": "HELLO, ADA!",
                              "sha": hashlib.sha256(b"Hello, Ada!").hexdigest()}
    assert {k: v["status"] for k, v in desc["steps"].items()} == {
        "greet": "SUCCEEDED", "digest": "SUCCEEDED", "shout": "SUCCEEDED"}
    status, history = cloud.api("GET", "/executions/h-1/history")
    assert status == 200
    assert [e["seq"] for e in history] == list(range(1, len(history) + 1))
    types = [e["type"] for e in history]
    assert types.count("StepSucceeded") == 3 and types[-1] == "WorkflowCompleted"
    # The example checksum task heartbeats: recorded against the step.
    assert any(e["type"] == "StepHeartbeat" and e.get("unit", e.get("step")) == "digest" for e in history)
    status, listed = cloud.api("GET", "/executions", query={"workflow": "hello3"})
    assert [(e["execution_id"], e["status"]) for e in listed["executions"]] == [("h-1", "COMPLETED")]
    assert cloud.depth("DecisionDLQ") == 0 and cloud.depth("DefaultTaskDLQ") == 0


def test_api_errors_name_the_problem(cloud: Any) -> None:
    assert cloud.api("GET", "/executions/nope")[0] == 404
    status, body = cloud.api("POST", "/executions", {"input": {}})
    assert status == 400 and body["error"]["problems"][0]["path"] == "body.workflow"
    start(cloud, "h-2")
    other = {"workflow": "hello3", "input": {"name": "Bob"}, "id": "h-2"}
    status, body = cloud.api("POST", "/executions", other)
    assert status == 409 and "h-2" in body["error"]["message"]
    assert cloud.api("DELETE", "/executions/h-2")[0] == 405


def test_metrics_count_decisions_and_steps(cloud: Any) -> None:
    from orbit.aws.observability import METER

    METER.drain()
    start(cloud, "h-3")
    counts: dict[str, int] = {}
    original = METER.drain

    def capture() -> dict[str, int]:
        got = original()
        for k, v in got.items():
            counts[k] = counts.get(k, 0) + v
        return got

    METER.drain = capture  # type: ignore[method-assign]
    try:
        cloud.run_until_idle()
    finally:
        METER.drain = original  # type: ignore[method-assign]
    assert counts.get("StepsSucceeded") == 3 and counts.get("Decisions", 0) >= 3
    assert services().engine.describe("h-3")["status"] == "COMPLETED"


def test_a_start_that_fans_out_sends_its_dispatches_in_one_request(cloud: Any) -> None:
    fan = {"orbit": 1, "name": "fan", "version": "1", "steps": {
        "each": {"for": "{% input.names %}", "task": "test.upper", "input": {"text": "{% item %}"}}},
        "output": "{% steps.each.output %}"}
    assert cloud.api("POST", "/definitions", fan)[0] == 201
    sqs = aws.services().sqs
    calls: list[str] = []

    def note(model: Any, **_: Any) -> None:
        calls.append(model.name)

    sqs.meta.events.register("before-call.sqs.*", note)
    try:
        status, _ = cloud.api("POST", "/executions", {"workflow": "fan", "id": "fan-1",
                                                      "input": {"names": ["a", "b", "c", "d"]}})
    finally:
        sqs.meta.events.unregister("before-call.sqs.*", note)
    assert status == 201 and calls == ["SendMessageBatch"]
    cloud.run_until_idle()
    desc = aws.services().engine.describe("fan-1")
    assert desc["status"] == "COMPLETED" and len(desc["output"]) == 4, desc
