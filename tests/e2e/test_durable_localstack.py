"""Durable functions on the local stack through the AWS path (orbit/local/durable_aws.py): the
decider invokes the function asynchronously through its Lambda adapter with the SDK's invocation
event, the invocation's record comes back on the answer queue in Lambda's destination shape, the
unmodified SDK checkpoints to the durable API behind a function URL that checks SigV4 for the
service `lambda`, and waits and retries ride on the decision queue's delays (virtual time)."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterator
from typing import Any

import boto3
import durable_handlers
import pytest
from aws_durable_execution_sdk_python.lambda_service import LambdaClient
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from orbit.local.stack import LocalStack


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[LocalStack, Any, Any]]:
    LambdaClient._cached_boto_client = None  # the SDK caches its client per process
    with LocalStack(mode="inprocess") as stack:
        aws = stack.durable()
        for name in ("step_wait_step", "flaky", "approval", "held", "big_steps"):
            aws.register(name.replace("_", "-"), f"durable_handlers.{name}")
        client = boto3.client("lambda", region_name="us-east-1", endpoint_url=aws.url)
        yield stack, aws, client
    LambdaClient._cached_boto_client = None
    durable_handlers.RUNS.clear()  # the step counts other modules' tests read start from nothing


def _run(stack: LocalStack, client: Any, arn: str, seconds: int = 30) -> dict[str, Any]:
    for _ in range(seconds):
        stack.run_until_idle()
        got: dict[str, Any] = client.get_durable_execution(DurableExecutionArn=arn)
        if got["Status"] != "RUNNING":
            return got
        stack.advance(1)
    return dict(client.get_durable_execution(DurableExecutionArn=arn))


def test_a_step_a_wait_and_a_step_through_the_decider(world: tuple[LocalStack, Any, Any]) -> None:
    stack, aws, client = world
    durable_handlers.RUNS.clear()
    r = client.invoke(FunctionName=f"{aws.prefix}step-wait-step", InvocationType="Event",
                      Payload=json.dumps({"name": "orbit"}))
    assert r["StatusCode"] == 202
    arn = r["DurableExecutionArn"]
    got = _run(stack, client, arn)
    assert got["Status"] == "SUCCEEDED", got
    assert json.loads(got["Result"]) == "hello orbit!"
    assert durable_handlers.RUNS["first"] == 1  # replayed after the wait, never run again
    events = client.get_durable_execution_history(DurableExecutionArn=arn)["Events"]
    kinds = [e["EventType"] for e in events]
    assert kinds.count("InvocationCompleted") == 2  # before and after the wait, each by the decider
    assert "WaitSucceeded" in kinds
    # in Orbit's own index and history, like any execution
    described = stack.describe(arn.rsplit("/", 1)[-1])
    assert described["status"] == "COMPLETED"


def test_a_retry_is_invoked_again_after_its_delay(world: tuple[LocalStack, Any, Any]) -> None:
    stack, aws, client = world
    arn = client.invoke(FunctionName=f"{aws.prefix}flaky", InvocationType="Event",
                        Payload=b"{}")["DurableExecutionArn"]
    got = _run(stack, client, arn)
    assert got["Status"] == "SUCCEEDED", got
    assert json.loads(got["Result"]) == "attempt 2"


def test_a_callback_answered_by_a_caller(world: tuple[LocalStack, Any, Any]) -> None:
    stack, aws, client = world
    arn = client.invoke(FunctionName=f"{aws.prefix}approval", InvocationType="Event",
                        Payload=b"{}")["DurableExecutionArn"]
    stack.run_until_idle()
    events = client.get_durable_execution_history(DurableExecutionArn=arn,
                                                  IncludeExecutionData=True)["Events"]
    started = [e for e in events if e["EventType"] == "CallbackStarted"]
    assert started, [e["EventType"] for e in events]
    cid = started[0]["CallbackStartedDetails"]["CallbackId"]
    client.send_durable_execution_callback_success(CallbackId=cid, Result=b"yes")
    got = _run(stack, client, arn)
    assert got["Status"] == "SUCCEEDED", got
    assert json.loads(got["Result"]) == {"decision": "yes"}  # the SDK reads the bytes as text


def test_a_function_running_longer_than_the_deciders_timeout_completes(
        world: tuple[LocalStack, Any, Any]) -> None:
    stack, aws, client = world
    durable_handlers.HELD.clear()
    arn = client.invoke(FunctionName=f"{aws.prefix}held", InvocationType="Event",
                        Payload=b"{}")["DurableExecutionArn"]
    stack.run_until_idle()  # the decider queued the invocation and returned: the function still runs
    assert aws.running and durable_handlers.RUNS.get("held") == 1
    assert client.get_durable_execution(DurableExecutionArn=arn)["Status"] == "RUNNING"
    decider_s = stack.cloud.deployment.functions["DeciderFunction"].timeout_s
    stack.advance(decider_s + 60)  # (virtual) longer than the decider may run
    durable_handlers.HELD.set()
    assert aws.settle(20) and not aws.running
    # Lambda's invocation record, on the destination queue the EventInvokeConfig names
    sqs = boto3.client("sqs", region_name="us-east-1")
    got = sqs.receive_message(QueueUrl=aws.answer_queue, VisibilityTimeout=0).get("Messages", [])
    assert len(got) == 1
    record = json.loads(got[0]["Body"])
    assert set(record) == {"version", "timestamp", "requestContext", "requestPayload", "responseContext",
                           "responsePayload"}
    ctx = record["requestContext"]
    assert ctx["condition"] == "Success" and ctx["approximateInvokeCount"] == 1
    assert ctx["functionArn"].endswith(f":function:{aws.prefix}held:$LATEST") and ctx["requestId"]
    assert record["requestPayload"]["DurableExecutionArn"] == arn
    assert record["responseContext"] == {"statusCode": 200, "executedVersion": "$LATEST"}
    assert record["responsePayload"]["Status"] == "SUCCEEDED"
    done = _run(stack, client, arn)
    assert done["Status"] == "SUCCEEDED" and json.loads(done["Result"]) == "released", done
    events = client.get_durable_execution_history(DurableExecutionArn=arn)["Events"]
    spans = [e["InvocationCompletedDetails"] for e in events if e["EventType"] == "InvocationCompleted"]
    assert len(spans) == 1 and "Error" not in spans[0]  # one invocation, answered, not timed out
    took = spans[0]["EndTimestamp"] - spans[0]["StartTimestamp"]
    took_s = took.total_seconds() if hasattr(took, "total_seconds") else took / 1000
    assert took_s >= decider_s + 60, took
    assert durable_handlers.RUNS["held"] == 1


def test_operations_past_the_asynchronous_event_budget_are_read_by_the_sdk(
        world: tuple[LocalStack, Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from orbit.aws import durable as aws_durable

    stack, aws, client = world
    sizes: list[int] = []
    uncut: list[int] = []
    fit = aws_durable.fit_event

    def measured(event: dict[str, Any]) -> dict[str, Any]:
        out = fit(event)
        sizes.append(len(json.dumps(out)))
        uncut.append(len(json.dumps(event)))
        return out

    monkeypatch.setattr(aws_durable, "fit_event", measured)
    arn = client.invoke(FunctionName=f"{aws.prefix}big-steps", InvocationType="Event",
                        Payload=b"{}")["DurableExecutionArn"]
    got = _run(stack, client, arn)
    assert got["Status"] == "SUCCEEDED" and json.loads(got["Result"]) == 200_000, got
    assert all(durable_handlers.RUNS[f"big{i}"] == 1 for i in range(5))  # replayed, not run again
    assert len(sizes) == 2 and max(sizes) <= 128 * 1024 < uncut[1], (sizes, uncut)  # the second was cut


def _signed(aws: Any, path: str, secret: str, service: str = "lambda") -> Any:
    req = AWSRequest(method="GET", url=aws.url + path, headers={})
    SigV4Auth(Credentials(os.environ["AWS_ACCESS_KEY_ID"], secret, os.environ.get("AWS_SESSION_TOKEN")),
              service, "us-east-1").add_auth(req)
    return req


def test_the_url_accepts_sigv4_for_lambda_and_refuses_the_rest(world: tuple[LocalStack, Any, Any]) -> None:
    import urllib.error
    import urllib.request

    _, aws, _ = world
    path = f"/2025-12-01/functions/{aws.prefix}flaky/durable-executions"

    def status(req: Any) -> int:
        r = urllib.request.Request(req.url, headers=dict(req.headers.items()), method=req.method)
        try:
            with urllib.request.urlopen(r, timeout=10) as resp:
                return int(resp.status)
        except urllib.error.HTTPError as e:
            return int(e.code)

    good = _signed(aws, path, os.environ["AWS_SECRET_ACCESS_KEY"])
    assert status(good) == 200
    assert status(_signed(aws, path, "not-the-secret")) == 403
    assert status(_signed(aws, path, os.environ["AWS_SECRET_ACCESS_KEY"], service="execute-api")) == 403
    assert status(AWSRequest(method="GET", url=aws.url + path, headers={})) == 403  # unsigned
    # a signed request replayed against another path: the signature covers the path
    moved = _signed(aws, path, os.environ["AWS_SECRET_ACCESS_KEY"])
    moved.url = aws.url + path.replace("flaky", "approval")
    assert status(moved) == 403
    _ = dt
