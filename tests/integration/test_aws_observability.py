"""One trace per execution across the queues, and metrics per workflow, through the real handlers on moto."""

from __future__ import annotations

import json
from typing import Any

import pytest
from orbit.adapters.xray import XRayTracer
from orbit.aws import wiring as aws
from orbit.core.tracing import TRACE_ATTRIBUTE, parse_header
from test_aws_end_to_end import start

API_TRACE = "Root=1-6756d6a0-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1"


class CapturingEmitter:
    """Stands in for the UDP emitter that sends segments to the X-Ray daemon."""

    def __init__(self) -> None:
        self.segments: list[dict[str, Any]] = []

    def send_entity(self, entity: Any) -> None:
        self.segments.append(json.loads(entity.serialize()))

    def set_daemon_address(self, address: str | None) -> None:
        pass


def test_one_trace_follows_an_execution_through_api_queues_deciders_and_workers(
        cloud: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    emitter = CapturingEmitter()
    # The suite runs the handlers with POWERTOOLS_TRACE_DISABLED (no Lambda segment to attach
    # powertools' subsegments to), which switches the X-Ray SDK off: these segments are sent anyway.
    # Set before the engine and the worker are built (they take the tracer then).
    aws.services().__dict__["tracer"] = XRayTracer(emitter=emitter, enabled=lambda: True)
    sent: list[dict[str, Any]] = []

    def note(params: dict[str, Any], **_: Any) -> None:
        if "MessageBody" in params or "Entries" in params:  # SendMessage, SendMessageBatch
            sent.extend(params.get("Entries") or [params])

    sqs = aws.services().sqs
    sqs.meta.events.register("provide-client-params.sqs", note)
    try:
        cloud.api("POST", "/definitions", {"orbit": 1, "name": "hello3x", "version": "1", "steps": {
            "greet": {"task": "example.greet", "input": {"name": "{% input.name %}"}},
            "shout": {"task": "test.upper", "input": {"text": "{% steps.greet.output.greeting %}"}}}})
        monkeypatch.setenv("_X_AMZN_TRACE_ID", API_TRACE)  # Lambda's variable while the API request runs
        request = {"workflow": "hello3x", "id": "t-1", "input": {"name": "Ada"}}
        status, _ = cloud.api("POST", "/executions", request)
        monkeypatch.delenv("_X_AMZN_TRACE_ID")  # deciders and workers run in invocations of their own
        assert status == 201
        cloud.run_until_idle()
    finally:
        sqs.meta.events.unregister("provide-client-params.sqs", note)
    assert aws.services().engine.describe("t-1")["status"] == "COMPLETED"

    root = parse_header(API_TRACE)["Root"]
    # Every message carried the execution's trace in its attributes (none in its body).
    assert sent and all(parse_header(m["MessageAttributes"][TRACE_ATTRIBUTE]["StringValue"])["Root"] == root
                        for m in sent)
    assert not any("trace" in json.loads(m["MessageBody"]) for m in sent)
    segments = emitter.segments
    assert {s["trace_id"] for s in segments} == {root}
    decisions = [s for s in segments if s["name"] == "orbit.decide"]
    steps = [s for s in segments if s["name"] == "orbit.step"]
    assert len(decisions) >= 3 and len(steps) == 2
    assert all(s["annotations"]["execution_id"] == "t-1" and s["annotations"]["workflow"] == "hello3x"
               for s in decisions)
    assert sorted((s["annotations"]["step"], s["annotations"]["attempt"]) for s in steps) == [
        ("greet", 1), ("shout", 1)]
    # A tree under the API request: each segment's parent is the API's or another of these segments.
    ids = {s["id"] for s in segments} | {parse_header(API_TRACE)["Parent"]}
    assert all(s["parent_id"] in ids for s in segments)


def test_metrics_carry_the_workflow_name_as_their_dimension(cloud: Any,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from orbit.aws.observability import METER, publish_by_workflow

    METER.drain_by_workflow()
    seen: dict[tuple[str, str], list[float]] = {}
    original = METER.drain_by_workflow

    def capture() -> dict[tuple[str, str], list[float]]:
        got = original()
        for k, v in got.items():
            seen.setdefault(k, []).extend(v)
        return got

    METER.drain_by_workflow = capture  # type: ignore[method-assign]
    try:
        start(cloud, "m-1")
        cloud.run_until_idle()
    finally:
        METER.drain_by_workflow = original  # type: ignore[method-assign]
    assert sum(seen[("ExecutionsStarted", "hello3")]) == 1
    assert sum(seen[("ExecutionsCompleted", "hello3")]) == 1
    assert sum(seen[("StepAttempts", "hello3")]) == 3
    assert ("StepFailures", "hello3") not in seen
    assert len(seen[("DecisionLatency", "hello3")]) >= 3
    assert {wf for _, wf in seen} == {"hello3"}  # never an execution id: bounded cardinality

    capsys.readouterr()
    publish_by_workflow({("ExecutionsFailed", "billing"): [2.0]}, "Orbit")
    emf = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert emf["workflow"] == "billing" and emf["ExecutionsFailed"] == [2.0]
    assert ["workflow", "service"] in emf["_aws"]["CloudWatchMetrics"][0]["Dimensions"]
