"""AWS's durable execution SDK (unmodified) against Orbit's durable endpoint, end to end through
the Lambda REST protocol: boto3's `lambda` client invokes, the SDK in the handler checkpoints and
reads state over HTTP, the history comes back in Lambda's Event shape. (The whole conformance suite
runs with `make conformance`; these are the few cases CI runs every time.)"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws_durable_execution_sdk_python.lambda_service import LambdaClient
from botocore.exceptions import ClientError
from orbit.local.durable_server import serve

ENV = (
    "AWS_ENDPOINT_URL_LAMBDA",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_DEFAULT_REGION",
    "AWS_REGION",
)


@pytest.fixture(scope="module")
def lam() -> Iterator[Any]:
    saved = {k: os.environ.get(k) for k in ENV}
    for k in ENV[1:]:
        os.environ.pop(k, None)
    LambdaClient._cached_boto_client = None  # the SDK caches its client per process
    server, endpoint = serve(0)
    for name in ("step_wait_step", "approval", "flaky", "three_steps"):
        endpoint.register(
            {"name": name.replace("_", "-"), "language": "python", "handler": f"durable_handlers.{name}"}
        )
    client = boto3.client(
        "lambda", region_name="us-east-1", endpoint_url=os.environ["AWS_ENDPOINT_URL_LAMBDA"]
    )
    yield client
    server.shutdown()
    endpoint.runtime.close()
    if endpoint.logs is not None:
        endpoint.logs.uninstall()
    LambdaClient._cached_boto_client = None
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def events(lam: Any, arn: str) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = lam.get_durable_execution_history(
        DurableExecutionArn=arn, IncludeExecutionData=True
    )["Events"]
    return got


def kinds(lam: Any, arn: str) -> list[str]:
    return [e["EventType"] for e in events(lam, arn)]


def test_a_step_a_wait_and_a_step_replay_to_the_result(lam: Any) -> None:
    r = lam.invoke(FunctionName="step-wait-step", Payload=json.dumps({"name": "orbit"}))
    arn = r["DurableExecutionArn"]
    assert json.loads(r["Payload"].read()) == "hello orbit!"
    assert kinds(lam, arn) == [
        "ExecutionStarted",
        "StepStarted",
        "StepSucceeded",
        "WaitStarted",
        "InvocationCompleted",
        "WaitSucceeded",
        "StepStarted",
        "StepSucceeded",
        "InvocationCompleted",
        "ExecutionSucceeded",
    ]
    hist = events(lam, arn)
    assert [e["EventId"] for e in hist] == list(range(1, 11))
    assert hist[3]["WaitStartedDetails"]["Duration"] == 1 and hist[3]["Name"] == "pause"
    assert hist[2]["StepSucceededDetails"]["Result"]["Payload"] == '"hello orbit"'
    from durable_handlers import RUNS

    assert RUNS["first"] == 1  # the replay took the first step's result from the history
    d = lam.get_durable_execution(DurableExecutionArn=arn)
    assert d["Status"] == "SUCCEEDED" and json.loads(d["Result"]) == "hello orbit!"
    listed = lam.list_durable_executions_by_function(FunctionName="step-wait-step")["DurableExecutions"]
    assert arn in [x["DurableExecutionArn"] for x in listed]


def test_a_callback_completed_from_outside_resumes_the_execution(lam: Any) -> None:
    r = lam.invoke(FunctionName="approval", InvocationType="Event", Payload=b"{}")
    assert r["StatusCode"] == 202
    arn = r["DurableExecutionArn"]
    deadline = time.monotonic() + 20
    while "InvocationCompleted" not in kinds(lam, arn):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    started = next(e for e in events(lam, arn) if e["EventType"] == "CallbackStarted")
    callback_id = started["CallbackStartedDetails"]["CallbackId"]
    lam.send_durable_execution_callback_heartbeat(CallbackId=callback_id)
    lam.send_durable_execution_callback_success(CallbackId=callback_id, Result=b"approved")
    with pytest.raises(ClientError):  # a second answer is refused
        lam.send_durable_execution_callback_failure(CallbackId=callback_id, Error={"ErrorType": "X"})
    while lam.get_durable_execution(DurableExecutionArn=arn)["Status"] == "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    d = lam.get_durable_execution(DurableExecutionArn=arn)
    assert d["Status"] == "SUCCEEDED" and json.loads(d["Result"]) == {"decision": "approved"}
    assert kinds(lam, arn).count("CallbackSucceeded") == 1
    with pytest.raises(ClientError) as e:
        lam.send_durable_execution_callback_success(CallbackId="not-a-callback", Result=b"1")
    assert e.value.response["Error"]["Code"] == "ResourceNotFoundException"


def test_a_failed_attempt_is_retried_after_its_delay(lam: Any) -> None:
    r = lam.invoke(FunctionName="flaky", Payload=b"null")
    arn = r["DurableExecutionArn"]
    assert json.loads(r["Payload"].read()) == "attempt 2"
    hist = events(lam, arn)
    failed = next(e for e in hist if e["EventType"] == "StepFailed")
    assert failed["StepFailedDetails"]["RetryDetails"] == {"CurrentAttempt": 1, "NextAttemptDelaySeconds": 1}
    succeeded = next(e for e in hist if e["EventType"] == "StepSucceeded")
    assert succeeded["StepSucceededDetails"]["RetryDetails"]["CurrentAttempt"] == 2
    assert (succeeded["EventTimestamp"] - failed["EventTimestamp"]).total_seconds() >= 1


def test_a_stale_checkpoint_token_is_refused_over_the_wire(lam: Any) -> None:
    r = lam.invoke(FunctionName="three-steps", Payload=b"null")
    arn = r["DurableExecutionArn"]
    assert json.loads(r["Payload"].read()) == 3
    before = kinds(lam, arn)
    with pytest.raises(ClientError) as e:
        lam.checkpoint_durable_execution(
            DurableExecutionArn=arn,
            CheckpointToken="1.1.stale",
            Updates=[{"Id": "x", "Type": "STEP", "Action": "START"}],
        )
    assert e.value.response["Error"]["Code"] == "InvalidParameterValueException"
    assert kinds(lam, arn) == before
    stopped = lam.stop_durable_execution(DurableExecutionArn=arn)  # already ended: changes nothing
    assert "StopTimestamp" in stopped
    assert lam.get_durable_execution(DurableExecutionArn=arn)["Status"] == "SUCCEEDED"
