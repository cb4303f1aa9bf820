"""Asynchronous invocation of durable functions on AWS (orbit/aws/durable_answers.py,
docs/decisions/dur4-async-invoke.md): the decider queues the invocation (InvocationType=Event) and
returns; Lambda's destination record on the answer queue completes it. A function that runs longer
than the decider's timeout completes; a stale, repeated, forged or malformed record changes
nothing; a record that never comes is covered by the invocation's timeout; a function's failure
and an event Lambda dropped are failed invocations, invoked again."""

from __future__ import annotations

import io
import json
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from orbit.adapters.lambda_functions import LambdaFunctions, LambdaInvokeError
from orbit.aws.durable_answers import (
    destination_record,
    fit_event,
    handle_answer,
    invocation_record,
    read_record,
    record_body,
)
from orbit.core.history.durable_ops import INVOCATION_TIMEOUT_S
from test_durable_aws import PREFIX, pump, world

DECIDER_TIMEOUT_S = 180  # the longest DeciderTimeout the template allows


def _completed(s: Any) -> list[dict[str, Any]]:
    return [e["InvocationCompletedDetails"] for e in s.events if e["EventType"] == "InvocationCompleted"]


def test_a_function_running_longer_than_the_deciders_timeout_completes() -> None:
    durable, queue, script, clock = world(wait_s=30)
    script.run_s = 600  # ten minutes per invocation: the decider returned long before
    arn = durable.invoke(f"{PREFIX}f", "{}", False).arn
    pump(durable, queue, clock)
    s, _ = durable.service.load(arn)
    assert s.status == "SUCCEEDED" and s.result == '"done"', s.error
    assert script.runs == {"a": 1, "b": 1} and script.invocations == 2
    spans = [d["EndTimestamp"] - d["StartTimestamp"] for d in _completed(s)]
    assert len(spans) == 2 and min(spans) >= 600_000 > DECIDER_TIMEOUT_S * 1000, spans
    assert all("Error" not in d for d in _completed(s))  # neither timed out
    assert queue.items == []


def _first_record(durable: Any, queue: Any, clock: Any) -> tuple[str, dict[str, Any]]:
    """Start an execution, let the decider queue its first invocation: (arn, that record)."""
    arn = durable.invoke(f"{PREFIX}f", "{}", False).arn
    queue.items.sort(key=lambda x: x[0])
    invoke = next(m for m in queue.items if m[1].get("op") == "invoke")
    queue.items.remove(invoke)
    durable.handle(invoke[1])
    record = next(m for m in queue.items if "requestContext" in m[1])
    return arn, record[1]


def test_a_repeated_or_stale_record_changes_nothing() -> None:
    durable, queue, script, clock = world(wait_s=30)
    arn, record = _first_record(durable, queue, clock)
    assert handle_answer(durable, record) is True
    s, last = durable.service.load(arn)
    sent = queue.sent
    assert handle_answer(durable, record) is False  # Lambda or SQS delivering it twice
    pump(durable, queue, clock)  # the wait fires, a second invocation runs and the execution ends
    s, last = durable.service.load(arn)
    assert s.status == "SUCCEEDED" and script.invocations == 2
    sent = queue.sent
    for received in (1, 2):  # the first invocation's record, long after: stale, even redelivered
        assert handle_answer(durable, record, received) is False
    assert durable.service.load(arn)[1] == last and queue.sent == sent


def test_a_record_of_another_invocation_or_function_is_not_its_answer() -> None:
    durable, queue, script, clock = world(wait_s=30)
    arn, record = _first_record(durable, queue, clock)
    _, last = durable.service.load(arn)
    forged = json.loads(json.dumps(record))
    n, zero, rid = forged["requestPayload"]["CheckpointToken"].split(".", 2)
    forged["requestPayload"]["CheckpointToken"] = f"{n}.0.not-{rid}"  # an id it never saw
    other = json.loads(json.dumps(record))
    other["requestContext"]["functionArn"] = f"arn:aws:lambda:us-east-1:1:function:{PREFIX}g:$LATEST"
    for rec in (forged, other):
        assert handle_answer(durable, rec) is False
    assert durable.service.load(arn)[1] == last and durable.service.load(arn)[0].invoking
    assert handle_answer(durable, record) is True  # the real one still ends it


@pytest.mark.parametrize("body", [
    None, "text", [], {}, {"requestContext": {}, "requestPayload": {}},
    {"requestContext": {"condition": "Success"},
     "requestPayload": {"DurableExecutionArn": 1, "CheckpointToken": "1.0.r"}},
    {"requestContext": {"condition": "Success"},
     "requestPayload": {"DurableExecutionArn": "a", "CheckpointToken": "x"}},
    {"requestContext": {"condition": "Later"},
     "requestPayload": {"DurableExecutionArn": "a", "CheckpointToken": "1.0.r"}},
])
def test_a_malformed_record_is_dropped(body: Any) -> None:
    durable, _, _, _ = world(wait_s=1)
    assert read_record(body) is None and handle_answer(durable, body) is False
    assert record_body("{not json") is None


def test_a_record_that_never_comes_times_the_invocation_out_and_it_runs_again() -> None:
    durable, queue, script, clock = world(wait_s=30)
    arn, record = _first_record(durable, queue, clock)
    queue.items = [m for m in queue.items if "requestContext" not in m[1]]  # the destination failed
    start = clock.now_ms()
    pump(durable, queue, clock)
    s, _ = durable.service.load(arn)
    assert s.status == "SUCCEEDED", s.error
    first = _completed(s)[0]
    assert first["Error"]["Payload"]["ErrorType"] == "Sandbox.Timedout"
    assert clock.now_ms() - start >= INVOCATION_TIMEOUT_S * 1000
    assert script.runs == {"a": 1, "b": 1}  # the re-invocation replayed step a from its checkpoint


def test_a_functions_failure_and_a_dropped_event_are_failed_invocations() -> None:
    durable, queue, script, clock = world(wait_s=30)
    arn, record = _first_record(durable, queue, clock)
    queue.items = [m for m in queue.items if "requestContext" not in m[1]]
    crashed = invocation_record(record["requestContext"]["functionArn"].rsplit(":", 1)[0], "r",
                                record["requestPayload"], None,
                                {"ErrorType": "Runtime.ExitError", "ErrorMessage": "exit 1"})
    assert crashed["requestContext"]["condition"] == "RetriesExhausted"
    assert handle_answer(durable, crashed) is True
    s, _ = durable.service.load(arn)
    crash = {"ErrorType": "Runtime.ExitError", "ErrorMessage": "exit 1"}
    assert _completed(s)[0]["Error"]["Payload"] == crash
    assert s.failed_invocations == 1 and any(m[1].get("op") == "invoke" for m in queue.items)
    # the next invocation's event, dropped by Lambda after its maximum age: never run
    invoke = next(m for m in queue.items if m[1].get("op") == "invoke")
    queue.items.remove(invoke)
    runs = dict(script.runs)
    durable.functions = type("Dropped", (), {"invoke_async": lambda self, n, e: dropped.append(e) or "r"})()
    dropped: list[dict[str, Any]] = []
    durable.handle(invoke[1])
    aged = destination_record(f"arn:aws:lambda:us-east-1:1:function:{PREFIX}f", "r", dropped[0], None,
                              None, "EventAgeExceeded", 0)
    assert "responsePayload" not in aged
    assert handle_answer(durable, aged) is True
    s, _ = durable.service.load(arn)
    assert _completed(s)[1]["Error"]["Payload"]["ErrorType"] == "Orbit.InvokeRefused"
    assert s.failed_invocations == 2 and script.runs == runs
    durable.functions = script
    pump(durable, queue, clock)
    assert durable.service.load(arn)[0].status == "SUCCEEDED"


def test_the_lambda_adapter_queues_the_invocation() -> None:
    client = boto3.client("lambda", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b")
    fns, stub = LambdaFunctions(client), Stubber(client)
    stub.add_response("invoke", {"StatusCode": 202, "ResponseMetadata": {"RequestId": "req-1"}},
                      {"FunctionName": f"{PREFIX}f", "InvocationType": "Event", "Payload": b'{"a": 1}'})
    stub.add_response("invoke", {"StatusCode": 200, "Payload": io.BytesIO(b"{}")})
    stub.add_client_error("invoke", "ResourceNotFoundException", "Function not found", 404)
    with stub:
        assert fns.invoke_async(f"{PREFIX}f", {"a": 1}) == "req-1"
        with pytest.raises(LambdaInvokeError, match="not 202"):
            fns.invoke_async(f"{PREFIX}f", {})
        with pytest.raises(LambdaInvokeError, match="ResourceNotFoundException"):
            fns.invoke_async(f"{PREFIX}f", {})


def test_a_large_first_page_is_cut_to_fit_the_asynchronous_payload() -> None:
    ops = [{"Id": f"op{i}", "Type": "STEP", "Status": "SUCCEEDED", "StepDetails": {"Result": "x" * 1000}}
           for i in range(300)]
    event = {"DurableExecutionArn": "a", "CheckpointToken": "1.0.r",
             "InitialExecutionState": {"Operations": ops, "NextMarker": ""}}
    cut = fit_event(event, 64 * 1024)
    page = cut["InitialExecutionState"]
    assert len(json.dumps(cut)) <= 64 * 1024 and 0 < len(page["Operations"]) < 300
    kept = len(page["Operations"])
    assert page["NextMarker"] == str(kept) and page["Operations"] == ops[:kept]
    small = {**event, "InitialExecutionState": {"Operations": ops[:3], "NextMarker": ""}}
    assert fit_event(small) is small


def test_orbit_dev_drains_the_answer_queue_as_the_decider_not_as_a_worker() -> None:
    from types import SimpleNamespace

    from orbit.local.devserver import is_worker

    env = {"ORBIT_DECISION_QUEUE_URL": "http://q/decisions",
           "ORBIT_DURABLE_ANSWER_QUEUE_ARN": "arn:q:answers"}
    decider = SimpleNamespace(logical_id="DeciderFunction", env=env)

    def poller(url: str, arn: str) -> Any:
        queue = SimpleNamespace(url=url, arn=arn)
        return SimpleNamespace(mapping=SimpleNamespace(function=decider, queue=queue))

    assert not is_worker(poller("http://q/decisions", "arn:q:decisions"))
    assert not is_worker(poller("http://q/answers", "arn:q:answers"))  # serialized with the decider's
    assert is_worker(poller("http://q/tasks", "arn:q:tasks"))


def test_a_timeout_record_is_the_crash_lambda_reports() -> None:
    event = {"DurableExecutionArn": "a", "CheckpointToken": "2.0.inv"}
    timed_out = destination_record("arn:aws:lambda:us-east-1:1:function:f", "r", event,
                                   {"errorMessage": "Task timed out after 900.00 seconds"}, "Unhandled",
                                   "RetriesExhausted")
    a = read_record(timed_out)
    assert a is not None and a.request_id == "inv" and a.function == "f" and a.output is None
    assert a.crash == {"ErrorType": "Unhandled", "ErrorMessage": "Task timed out after 900.00 seconds"}
    odd = destination_record("arn:aws:lambda:us-east-1:1:function:f", "r", event, "not an object",
                             "Unhandled", "RetriesExhausted")
    assert read_record(odd).crash == {"ErrorType": "Unhandled", "ErrorMessage": ""}  # type: ignore[union-attr]
