"""The answers of durable functions' asynchronous invocations (docs/decisions/dur4-async-invoke.md).

The decider invokes a durable function with `InvocationType=Event` and does not wait: Lambda queues
the invocation, runs it, and sends its *invocation record* to the function's asynchronous-invocation
destination (the function's `EventInvokeConfig`: `OnSuccess` and `OnFailure` both Orbit's
`DurableAnswerQueue`). The decider reads that queue (its second event source mapping) and records
the record as the invocation's completion, as the synchronous answer was recorded before.

A record is matched to the open invocation by the checkpoint token of its request payload (the
event Orbit built: `<n>.0.<request id>`, the request id being Orbit's own random invocation id,
which only the invoked function saw): a record of another invocation (stale: its invocation timed
out and a newer one opened) or one already recorded (Lambda or SQS delivering it twice) changes
nothing. A record that never comes (a destination that could not be delivered) is covered by the
invocation's timeout, armed when the invocation is queued (orbit/aws/durable.py).

The record's shape is Lambda's (requestContext: requestId, functionArn, condition, approximateInvokeCount;
requestPayload; responseContext: statusCode, executedVersion, functionError; responsePayload);
`destination_record` builds it for the local stack's emulation (orbit/local/durable_aws.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from orbit.core.history import durable_ops as ops
from orbit.core.history.durable import DurableState
from orbit.service.durable import DurableApiError

ASYNC_EVENT_BUDGET = 128 * 1024  # the event's bytes at most: the rest of the 1 MiB record is the answer's
CONDITIONS = ("Success", "RetriesExhausted", "EventAgeExceeded")


def fit_event(event: dict[str, Any], budget: int = ASYNC_EVENT_BUDGET) -> dict[str, Any]:
    """The handler's event with its first page of operations cut to fit `budget` bytes: the SDK
    reads the rest with GetDurableExecutionState from `NextMarker` (an index, as the service pages)."""
    state = event.get("InitialExecutionState") or {}
    page = list(state.get("Operations") or [])
    size = len(json.dumps({**event, "InitialExecutionState": {"Operations": [], "NextMarker": "x" * 12}}))
    kept = 0
    for op in page:
        size += len(json.dumps(op)) + 2
        if size > budget:
            break
        kept += 1
    if kept == len(page):
        return event
    return {**event, "InitialExecutionState": {"Operations": page[:kept], "NextMarker": str(kept)}}


def destination_record(function_arn: str, request_id: str, event: Any, answer: Any,
                       function_error: str | None, condition: str = "Success", invoke_count: int = 1,
                       timestamp: str = "1970-01-01T00:00:00.000Z") -> dict[str, Any]:
    """Lambda's invocation record, as its asynchronous destinations send it (`answer`: the function's
    answer, or its error `{errorType, errorMessage}` when `function_error` is Unhandled; None and no
    response when the event was never run, e.g. EventAgeExceeded)."""
    rec: dict[str, Any] = {
        "version": "1.0",
        "timestamp": timestamp,
        "requestContext": {"requestId": request_id, "functionArn": f"{function_arn}:$LATEST",
                           "condition": condition, "approximateInvokeCount": invoke_count},
        "requestPayload": event,
    }
    if invoke_count > 0:
        ctx: dict[str, Any] = {"statusCode": 200, "executedVersion": "$LATEST"}
        if function_error:
            ctx["functionError"] = function_error
        rec["responseContext"], rec["responsePayload"] = ctx, answer
    return rec


@dataclass(frozen=True)
class Answer:
    arn: str
    request_id: str  # Orbit's invocation id (from the event's checkpoint token)
    function: str  # the function the record says it comes from
    output: Any
    crash: dict[str, Any] | None


def read_record(body: Any) -> Answer | None:
    """An invocation record -> the answer it carries, or None for anything else (dropped). Every
    field is checked for its type: the queue takes messages from the durable functions' roles."""
    if not isinstance(body, dict):
        return None
    ctx, req = body.get("requestContext"), body.get("requestPayload")
    if not isinstance(ctx, dict) or not isinstance(req, dict):
        return None
    arn, token = req.get("DurableExecutionArn"), req.get("CheckpointToken")
    if not isinstance(arn, str) or not isinstance(token, str) or token.count(".") < 2:
        return None
    n, zero, rid = token.split(".", 2)
    condition = ctx.get("condition")
    if not (n.isdigit() and zero == "0" and rid) or condition not in CONDITIONS:
        return None
    fn_arn = str(ctx.get("functionArn") or "")
    function = fn_arn.split(":")[6] if fn_arn.count(":") >= 6 else ""
    response = body.get("responseContext")
    payload = body.get("responsePayload")
    error = response.get("functionError") if isinstance(response, dict) else None
    if condition == "Success" and not error:
        return Answer(arn, rid, function, payload, None)
    if error:  # the function's own failure (an exception, a timeout, the runtime exiting): a crash
        body = payload if isinstance(payload, dict) else {}
        crash = {"ErrorType": str(body.get("errorType") or error)[:200],
                 "ErrorMessage": str(body.get("errorMessage") or "")[:1000]}
    else:  # never run (EventAgeExceeded), or no readable error: the invocation was refused
        crash = {"ErrorType": "Orbit.InvokeRefused",
                 "ErrorMessage": f"Lambda's asynchronous invocation ended {condition} "
                                 f"after {ctx.get('approximateInvokeCount')} attempt(s)"[:1000]}
    return Answer(arn, rid, function, None, crash)


def _answered_last(s: DurableState, request_id: str) -> bool:
    """No invocation is open and the last one that ended is this record's."""
    if s.invoking:
        return False
    last = next((e for e in reversed(s.events) if e.get("EventType") == "InvocationCompleted"), None)
    return last is not None and (last.get("InvocationCompletedDetails") or {}).get("RequestId") == request_id


def handle_answer(durable: Any, body: Any, received: int = 1) -> bool:
    """One record of the answer queue (`received`: its SQS receive count): True when it ended its
    invocation. Raises (so the queue retries it) when the store was too busy."""
    a = read_record(body)
    if a is None:
        return False
    service = durable.service

    def decide(s: DurableState, now: int) -> list[Any]:
        if a.function and a.function != s.function:  # another function's record: not its answer
            return []
        return ops.invocation_done(s, a.request_id, now, a.output, a.crash)

    try:
        s, got = service.commit(a.arn, decide)
    except DurableApiError as e:
        if e.status == 404:  # a gone execution, or an ARN that names none
            return False
        raise
    if got:
        durable.react(s)
        return True
    if received > 1 and _answered_last(s, a.request_id):
        # this record's commit landed and the decider died before its messages left: send them
        durable.react(s)
    return False


def handle_answer_messages(svc: Any, messages: list[tuple[str, Any]], received: list[int],
                           function_arn: str) -> dict[str, Exception]:
    """The decider's batch from the answer queue: the failed records by SQS message id."""
    durable = svc.durable
    durable.service.account = str(function_arn).split(":")[4]
    errors: dict[str, Exception] = {}
    for (message_id, body), count in zip(messages, received):
        try:
            with svc.queues.batched():  # its followups leave together, after its commit
                handle_answer(durable, body, count)
        except Exception as e:  # noqa: BLE001 - this record only: retried by the queue
            errors[message_id] = e
    return errors


def record_body(raw: Any) -> Any:
    """An SQS message body -> the record (None when it is not JSON: `read_record` drops it)."""
    try:
        return json.loads(raw)
    except (TypeError, ValueError):
        return None


def invocation_record(function_arn: str, request_id: str, event: Any, output: Any,
                      crash: dict[str, Any] | None,
                      timestamp: str = "1970-01-01T00:00:00.000Z") -> dict[str, Any]:
    """The record Lambda sends after running `event` once (MaximumRetryAttempts 0): its answer
    (OnSuccess), or its crash `{ErrorType, ErrorMessage}` as Lambda reports an unhandled error
    (OnFailure, RetriesExhausted)."""
    if crash is None:
        return destination_record(function_arn, request_id, event, output, None, timestamp=timestamp)
    error = {"errorType": crash.get("ErrorType"), "errorMessage": crash.get("ErrorMessage")}
    return destination_record(function_arn, request_id, event, error, "Unhandled", "RetriesExhausted",
                              timestamp=timestamp)
