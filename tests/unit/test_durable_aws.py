"""Durable functions on AWS (orbit/aws/durable.py) over the memory store: the decider's `durable`
messages invoke the function through the Lambda adapter port and fire what is due, timers ride on
queue delays of at most 15 minutes (a year-long wait hops and then fires), one timer chain lives
per execution, a durable function's role reaches only its own executions' checkpoint and state,
and the Lambda adapter turns Lambda's answers into an invocation's output or crash."""

from __future__ import annotations

import io
import itertools
import json
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from orbit.adapters.lambda_functions import LambdaFunctions, LambdaInvokeError
from orbit.adapters.memory import ManualClock, MemoryHistoryStore
from orbit.aws.durable import MAX_DELAY_S, AwsDurable, DeployedFunctions, authorize, caller_function
from orbit.aws.durable_answers import handle_answer, invocation_record
from orbit.service.durable import DurableApiError

PREFIX = "orbit-durable-"


class Queue:
    """The decision queue: messages with their delay, delivered when due (at least once)."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock, self.items, self.sent = clock, [], 0

    def send_decision(self, message: dict[str, Any], delay_s: int = 0) -> None:
        assert 0 <= delay_s <= MAX_DELAY_S
        self.sent += 1
        self.items.append((self.clock.now_ms() + delay_s * 1000, json.loads(json.dumps(message))))


class Script:
    """A durable function as the SDK drives it: step `a`, a wait of `wait_s`, step `b`."""

    def __init__(self, wait_s: int) -> None:
        self.wait_s, self.runs, self.invocations = wait_s, {"a": 0, "b": 0}, 0
        self.durable: AwsDurable | None = None
        self.queue: Queue | None = None
        self.run_s = 0  # how long (virtual) each invocation runs

    def invoke_async(self, name: str, event: dict[str, Any]) -> str:
        """Lambda's asynchronous invoke: runs it, and its record reaches the answer queue."""
        assert self.queue is not None
        out, crash = self.invoke(name, event)
        record = invocation_record(f"arn:aws:lambda:us-east-1:1:function:{name}", "r", event, out, crash)
        due = self.queue.clock.now_ms() + self.run_s * 1000
        self.queue.items.append((due, json.loads(json.dumps(record))))
        return "r"

    def invoke(self, name: str, event: dict[str, Any]) -> tuple[Any, Any]:
        assert self.durable is not None and name.startswith(PREFIX)
        self.invocations += 1
        arn, token = event["DurableExecutionArn"], event["CheckpointToken"]
        ops = {o["Id"]: o for o in event["InitialExecutionState"]["Operations"]}

        def cp(update: dict[str, Any]) -> None:
            nonlocal token
            token = self.durable.checkpoint(arn, token, None, [update]).get("CheckpointToken", token)  # type: ignore[union-attr]

        for sid in ("a", "b"):
            if ops.get(sid, {}).get("Status") == "SUCCEEDED":
                continue
            if sid == "b" and ops.get("w", {}).get("Status") != "SUCCEEDED":
                if "w" not in ops:
                    cp({"Id": "w", "Type": "WAIT", "Action": "START",
                        "WaitOptions": {"WaitSeconds": self.wait_s}})
                return {"Status": "PENDING"}, None
            self.runs[sid] += 1
            cp({"Id": sid, "Type": "STEP", "SubType": "Step", "Action": "START"})
            cp({"Id": sid, "Type": "STEP", "SubType": "Step", "Action": "SUCCEED", "Payload": f'"{sid}"'})
        return {"Status": "SUCCEEDED", "Result": '"done"'}, None


def world(wait_s: int) -> tuple[AwsDurable, Queue, Script, ManualClock]:
    clock = ManualClock()
    counter = itertools.count()
    svc = DeployedFunctions(MemoryHistoryStore(), clock, lambda: f"id{next(counter)}", prefix=PREFIX)
    queue, script = Queue(clock), Script(wait_s)
    durable = AwsDurable(svc, queue, script, clock)
    script.durable, script.queue = durable, queue
    return durable, queue, script, clock


def pump(durable: AwsDurable, queue: Queue, clock: ManualClock, limit: int = 100_000) -> int:
    handled = 0
    while queue.items and handled < limit:
        queue.items.sort(key=lambda x: x[0])
        due, body = queue.items.pop(0)
        if due > clock.now_ms():
            clock.advance(due - clock.now_ms())
        if "requestContext" in body:  # an invocation's record, from the answer queue
            handle_answer(durable, body)
        else:
            durable.handle(body)
        handled += 1
    return handled


def test_the_decider_invokes_the_function_and_fires_its_wait() -> None:
    durable, queue, script, clock = world(wait_s=30)
    arn = durable.invoke(f"{PREFIX}f", "{}", False).arn
    pump(durable, queue, clock)
    s, _ = durable.service.load(arn)
    assert s.status == "SUCCEEDED" and s.result == '"done"'
    assert script.runs == {"a": 1, "b": 1} and script.invocations == 2
    assert queue.items == []  # no timer chain outlives the execution


def test_a_wait_longer_than_a_year_hops_and_fires() -> None:
    durable, queue, script, clock = world(wait_s=400 * 86_400)
    arn = durable.invoke(f"{PREFIX}f", "{}", False).arn
    start = clock.now_ms()
    handled = pump(durable, queue, clock)
    s, _ = durable.service.load(arn)
    assert s.status == "SUCCEEDED", s.error
    assert clock.now_ms() - start >= 400 * 86_400_000
    # one live chain: about one message per 15 minutes of the wait, not one per arm
    assert handled < 400 * 96 + 50


def test_an_unknown_prefix_is_not_a_durable_function() -> None:
    durable, _, _, _ = world(wait_s=1)
    with pytest.raises(DurableApiError, match="starts with 'orbit-durable-'"):
        durable.invoke("someone-elses-function", "{}", False)


def test_a_durable_function_role_reaches_only_its_own_checkpoint_and_state() -> None:
    ctx = {"authorizer": {"iam": {"userArn": f"arn:aws:sts::1:assumed-role/r/{PREFIX}f"}}}
    own = (f"/2025-12-01/durable-executions/arn:aws:lambda:us-east-1:1:function:{PREFIX}f:$LATEST"
           "/durable-execution/n/e/checkpoint")
    other = own.replace(f"{PREFIX}f:", f"{PREFIX}g:")
    assert caller_function(ctx, PREFIX) == f"{PREFIX}f"
    authorize("checkpoint", own, ctx, PREFIX)
    authorize("state", own.replace("/checkpoint", "/state"), ctx, PREFIX)
    with pytest.raises(DurableApiError, match="another function"):
        authorize("checkpoint", other, ctx, PREFIX)
    with pytest.raises(DurableApiError, match="may call only"):
        authorize("invoke", "/2015-03-31/functions/x/invocations", ctx, PREFIX)
    with pytest.raises(DurableApiError, match="may call only"):
        authorize("callback", "/2025-12-01/durable-execution-callbacks/c/succeed", ctx, PREFIX)
    operator = {"authorizer": {"iam": {"userArn": "arn:aws:iam::1:user/ops"}}}
    assert caller_function(operator, PREFIX) is None
    authorize("invoke", "/2015-03-31/functions/x/invocations", operator, PREFIX)


def _stubbed() -> tuple[LambdaFunctions, Stubber]:
    client = boto3.client("lambda", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b")
    return LambdaFunctions(client), Stubber(client)


def test_the_lambda_adapter_invokes_synchronously_and_reads_the_answer() -> None:
    fns, stub = _stubbed()
    stub.add_response("invoke", {"StatusCode": 200, "Payload": io.BytesIO(b'{"Status": "PENDING"}')},
                      {"FunctionName": f"{PREFIX}f", "InvocationType": "RequestResponse",
                       "Payload": b'{"a": 1}'})
    stub.add_response("invoke", {"StatusCode": 200, "FunctionError": "Unhandled",
                                 "Payload": io.BytesIO(b'{"errorType": "Runtime.ExitError", '
                                                       b'"errorMessage": "exit 1"}')})
    stub.add_client_error("invoke", "TooManyRequestsException", "Rate exceeded", 429)
    with stub:
        assert fns.invoke(f"{PREFIX}f", {"a": 1}) == ({"Status": "PENDING"}, None)
        crash = {"ErrorType": "Runtime.ExitError", "ErrorMessage": "exit 1"}
        assert fns.invoke(f"{PREFIX}f", {}) == (None, crash)
        with pytest.raises(LambdaInvokeError, match="TooManyRequestsException"):
            fns.invoke(f"{PREFIX}f", {})


def test_a_start_whose_invoke_message_was_lost_is_invoked_by_its_timer() -> None:
    durable, queue, script, clock = world(wait_s=30)
    arn = durable.invoke(f"{PREFIX}f", "{}", False).arn
    lost = [m for m in queue.items if m[1].get("op") == "invoke"]
    assert len(lost) == 1
    queue.items.remove(lost[0])  # the start committed, its send was throttled (the caller saw a 5xx)
    pump(durable, queue, clock)
    s, _ = durable.service.load(arn)
    assert s.status == "SUCCEEDED" and script.runs == {"a": 1, "b": 1}
    assert queue.items == []


def test_a_synchronous_invoke_on_the_url_answers_with_the_result() -> None:
    import base64
    import threading

    from orbit.aws.durable import url_response

    durable, queue, script, clock = world(wait_s=0)
    done = threading.Event()

    def decider() -> None:  # the decider, on its own: handles what is queued as it comes
        while not done.is_set():
            if queue.items:
                pump(durable, queue, clock, limit=1)
            else:
                done.wait(0.01)

    thread = threading.Thread(target=decider, daemon=True)
    thread.start()
    event = {"rawPath": f"/2015-03-31/functions/{PREFIX}f/invocations", "body": "{}",
             "headers": {}, "requestContext": {"http": {"method": "POST"},
                                               "authorizer": {"iam": {"userArn": "arn:aws:iam::1:user/ops"}}}}
    try:
        answer = url_response(durable, event, PREFIX, remaining_s=30)
    finally:
        done.set()
        thread.join(5)
    assert answer["statusCode"] == 200, answer
    assert base64.b64decode(answer["body"]) == b'"done"'
    assert "/durable-execution/" in answer["headers"]["X-Amz-Durable-Execution-Arn"]
    assert script.runs == {"a": 1, "b": 1}
