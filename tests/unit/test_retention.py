"""Retention, trace headers and per-workflow counters: the pure parts."""

from __future__ import annotations

from typing import Any

import pytest
from orbit.core.definition import parse_definition, validate_definition
from orbit.core.definition.retention import DAY_MS, expires_at_s, retention_of, retention_problem
from orbit.core.tracing import parse_header
from orbit.errors import ExecutionExpired, NotFound, ValidationError


def doc(**top: Any) -> dict[str, Any]:
    return {"orbit": 1, "name": "w", "steps": {"a": {"task": "t"}}, **top}


def test_a_definition_sets_its_retention() -> None:
    assert parse_definition(doc(retention="7d")).retention_ms == 7 * DAY_MS
    assert parse_definition(doc()).retention_ms is None
    # The retention is part of the definition: changing it is a new build.
    assert parse_definition(doc(retention="7d")).hash != parse_definition(doc(retention="8d")).hash


@pytest.mark.parametrize("value, text", [
    ("10m", "at least 1h"), ("3651d", "at most 3650d"), (7, "has no unit"), ("soon", "not a duration"),
    ("0s", "longer than 0"),
])
def test_a_bad_retention_is_named(value: Any, text: str) -> None:
    problems = {p.path: p.message for p in validate_definition(doc(retention=value))}
    assert list(problems) == ["retention"] and text in problems["retention"], problems


def test_the_decorator_takes_a_retention() -> None:
    from orbit.workflow import CodeRegistry, workflow

    reg = CodeRegistry()
    wf = workflow("kept", retention="90d", registry=reg)(lambda ctx, inp: inp)
    assert wf.retention_ms == 90 * DAY_MS
    assert workflow("plain", registry=reg)(lambda ctx, inp: inp).retention_ms is None
    with pytest.raises(ValidationError, match="retention '5m' must be at least 1h"):
        workflow("short", retention="5m", registry=reg)
    with pytest.raises(ValidationError, match="not a duration"):
        workflow("bad", retention="a while", registry=reg)


def test_the_workflow_retention_wins_over_the_stack_default() -> None:
    class Wf:
        retention_ms: Any = 2 * DAY_MS

    assert retention_of(Wf(), 30 * DAY_MS) == 2 * DAY_MS
    Wf.retention_ms = None
    assert retention_of(Wf(), 30 * DAY_MS) == 30 * DAY_MS
    assert retention_of(None, 30 * DAY_MS) == 30 * DAY_MS  # an unknown build: the default
    assert retention_problem(3600_000) is None


def test_expiry_is_the_end_plus_the_retention_in_epoch_seconds_rounded_up() -> None:
    assert expires_at_s(1_000, DAY_MS) == 86_401
    assert expires_at_s(1_001, DAY_MS) == 86_402  # never a fraction of a second early
    assert expires_at_s(0, DAY_MS) == 86_400


def test_an_expired_execution_is_not_found_with_a_clear_message() -> None:
    e = ExecutionExpired("order-7", 1_767_225_600)
    assert isinstance(e, NotFound)
    assert str(e) == ("execution 'order-7' expired at 2026-01-01 00:00:00Z: it ended and its retention "
                      "has passed, so its history is no longer available")


def test_trace_headers_parse_and_tolerate_junk() -> None:
    assert parse_header("Root=1-abc-def;Parent=53995c3f42cd8ad8;Sampled=1") == {
        "Root": "1-abc-def", "Parent": "53995c3f42cd8ad8", "Sampled": "1"}
    assert parse_header(None) == {} and parse_header("garbage;=x;Root=") == {}


def test_the_trace_leaves_the_body_and_rides_as_an_attribute() -> None:
    from orbit.adapters.sqs import _without_trace, trace_of

    body, trace = _without_trace({"kind": "bundle", "execution_id": "e", "messages": [
        {"kind": "started", "trace": "Root=1-a"}, {"kind": "result", "trace": "Root=1-a"}]})
    assert trace == "Root=1-a" and "trace" not in str(body)
    assert _without_trace({"kind": "wake"}) == ({"kind": "wake"}, None)
    assert trace_of({"messageAttributes": {"orbit-trace": {"stringValue": "Root=1-b"}}}) == "Root=1-b"
    assert trace_of({"MessageAttributes": {"orbit-trace": {"StringValue": "Root=1-c"}}}) == "Root=1-c"
    assert trace_of({"messageAttributes": {}}) is None


def test_the_meter_keeps_counts_and_observations_per_workflow() -> None:
    from orbit.aws.observability import Meter

    m = Meter()
    m.count_workflow("a", "StepAttempts")
    m.count_workflow("a", "StepAttempts", 2)
    m.observe("b", "DecisionLatency", 5.0)
    m.observe("b", "DecisionLatency", 7.0)
    assert m.drain_by_workflow() == {("StepAttempts", "a"): [3.0], ("DecisionLatency", "b"): [5.0, 7.0]}
    assert m.drain_by_workflow() == {}


def test_stream_records_name_the_objects_to_collect() -> None:
    from orbit.adapters.dynamodb.retention import collect_removed, digest_of

    asked: list[str] = []

    class Blobs:
        def collect(self, digest: str, delete: Any) -> bool:
            asked.append(digest)
            if digest == "bad":
                raise RuntimeError("throttled")
            return digest == "d1"

    def removed(pk: str, sk: str, seq: str) -> dict[str, Any]:
        return {"eventName": "REMOVE", "dynamodb": {"Keys": {"pk": {"S": pk}, "sk": {"S": sk}},
                                                     "SequenceNumber": seq}}

    records = [removed("BLOB#d1", "R#e1", "1"), removed("BLOB#d1", "R#e2", "2"),
               removed("BLOB#bad", "R#e1", "3"), removed("EXEC#e1", "C#1", "4")]
    assert collect_removed(records, Blobs(), lambda d: None) == (1, ["3"])  # type: ignore[arg-type]
    assert asked == ["d1", "bad"]  # once per object, whatever the number of its expired references
    assert digest_of("s3://b/payloads/abc") == "abc"
    assert digest_of("s3://b/messages/abc") is None and digest_of("mem://abc") is None


def test_what_an_ended_execution_leaves_and_what_a_decision_counts() -> None:
    from orbit.core.history.events import Recorded, StepFailed, StepScheduled
    from orbit.core.history.lifecycle import decision_metrics, retirement
    from orbit.core.history.state import ExecutionState, UnitState

    s = ExecutionState("e", workflow="wf", status="FAILED", created=True, finished_at_ms=5_000,
                       updated_at_ms=9_000)
    s.hooks = {"approve": {"token": "tok1", "resumed": False}, "odd": {"resumed": True}}
    s.units = {"a": UnitState(idempotency_key="e:a", tokens={"t1": 1, "t2": 2}), "w": UnitState()}
    r = retirement(s)
    assert (r.ended_at_ms, r.hook_tokens) == (5_000, ["tok1"])
    assert r.dedupe_keys == ["e:a", "cancel#t1", "cancel#t2"]
    from orbit.core.history.events import TaskError

    events = [Recorded(1, 0, StepScheduled("a", 1, idempotency_key="e:a", token="tok")),
              Recorded(2, 0, StepFailed("a", TaskError("X", "no", False)))]
    assert decision_metrics(s, ("RUNNING", False), events) == [
        "ExecutionsStarted", "ExecutionsFailed", "StepAttempts", "StepFailures"]
    assert decision_metrics(s, ("FAILED", True), []) == []  # a late message to an ended execution
