"""What each call of the Lambda durable execution API records: pure functions of the state, the
call and `now`, returning the Orbit events (`durable_events.py`) to commit. No clock, no ids of
their own (the caller passes the ids it drew), never raising for a well-typed call: a call the
state refuses returns a `Refused` with the API's error name and message.

The operation and event shapes follow the Lambda service model (2025-12-01); what an update does
to an operation follows AWS's backend: a STEP's attempt counts RETRY, SUCCEED and FAIL; a RETRY
leaves it PENDING until its next attempt is due (then READY); a WAIT ends SUCCEEDED at its
scheduled end; a CALLBACK ends when the outside world answers or a timeout passes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from orbit.core.history import durable_events as D
from orbit.core.history.durable import ORBIT, TERMINAL_OPERATION, DurableState
from orbit.core.history.events import JSON, Event

TYPES = frozenset({"EXECUTION", "CONTEXT", "STEP", "WAIT", "CALLBACK", "CHAINED_INVOKE"})
ACTIONS = frozenset({"START", "SUCCEED", "FAIL", "RETRY", "CANCEL"})
CALLBACK_TIMEOUT = "Callback.Timeout"
CALLBACK_HEARTBEAT = "Callback.Heartbeat"
INVOCATION_TIMEOUT_S = 1020  # Lambda's longest invocation (900 s) after up to 60 s in its async queue, + 60 s
MAX_ID = 256  # an operation's Id, ParentId, Name, SubType
MAX_SECONDS = 10 * 366 * 86_400  # a wait, a retry delay, a callback timeout: ten years at most


@dataclass(frozen=True)
class Refused:
    code: str  # the API's exception name, e.g. InvalidParameterValueException
    message: str


def _result(payload: Any) -> dict[str, JSON]:
    return {"Payload": payload, "Truncated": False} if payload is not None else {"Truncated": False}


def _error(error: Any) -> dict[str, JSON]:
    return {"Payload": error, "Truncated": False}


def _event(op: dict[str, Any], kind: str, now: int, details: dict[str, JSON] | None) -> dict[str, Any]:
    ev: dict[str, Any] = {"EventType": kind, "EventTimestamp": now}
    for k in ("SubType", "Id", "Name", "ParentId"):
        if op.get(k) is not None:
            ev[k] = op[k]
    ev[f"{kind}Details"] = details or {}
    return ev


def start(
    arn: str,
    function: str,
    name: str,
    payload: str | None,
    timeout_s: int,
    now: int,
    parent: dict[str, str] | None = None,
) -> list[Event]:
    """An Invoke: the execution and its EXECUTION operation (id: the arn's last part)."""
    op: dict[str, Any] = {
        "Id": arn.rsplit("/", 1)[-1],
        "Name": name,
        "Type": "EXECUTION",
        "Status": "STARTED",
        "StartTimestamp": now,
        "ExecutionDetails": {"InputPayload": payload},
    }
    ev = _event(
        {"Id": op["Id"], "Name": name},
        "ExecutionStarted",
        now,
        {"Input": _result(payload), "ExecutionTimeout": timeout_s},
    )
    return [
        D.DurableStarted(function, arn, name, payload, timeout_s, parent),
        D.DurableOperationRecorded(op, ev),
    ]


def begin_invocation(s: DurableState, request_id: str) -> list[Event]:
    return [D.DurableInvocationStarted(request_id, f"{s.invocations + 1}.0.{request_id}")]


def _end(
    s: DurableState, status: str, now: int, result: str | None = None, error: dict[str, JSON] | None = None
) -> list[Event]:
    exe = s.operations.get(s.execution_id, {"Id": s.execution_id, "Type": "EXECUTION"})
    op = {**exe, "Status": status, "EndTimestamp": now}
    kind = {
        "SUCCEEDED": "ExecutionSucceeded",
        "FAILED": "ExecutionFailed",
        "STOPPED": "ExecutionStopped",
        "TIMED_OUT": "ExecutionTimedOut",
    }[status]
    details = {"Result": _result(result)} if status == "SUCCEEDED" else {"Error": _error(error)}
    ev = _event({"Id": exe["Id"], "Name": exe.get("Name")}, kind, now, details)
    return [D.DurableOperationRecorded(op, ev), D.DurableEnded(status, result, error)]


def _malformed(u: dict[str, Any]) -> str | None:
    """What is wrong with an update's fields (the service model's types and lengths), or None."""
    for k in ("Id", "ParentId", "Name", "SubType"):
        v = u.get(k)
        if v is not None and (not isinstance(v, str) or not 0 < len(v) <= MAX_ID):
            return f"{k} must be a string of 1-{MAX_ID} characters"
    if u.get("Payload") is not None and not isinstance(u["Payload"], str):
        return "Payload must be a string"
    err = u.get("Error")
    if err is not None and (not isinstance(err, dict) or not all(
            isinstance(v, str) or (k == "StackTrace" and isinstance(v, list)) for k, v in err.items())):
        return "Error must be an object of strings (ErrorType, ErrorMessage, ErrorData, StackTrace)"
    for k in ("StepOptions", "WaitOptions", "CallbackOptions", "ChainedInvokeOptions", "ContextOptions"):
        if u.get(k) is not None and not isinstance(u[k], dict):
            return f"{k} must be an object"
    for opts, k in (("StepOptions", "NextAttemptDelaySeconds"), ("WaitOptions", "WaitSeconds"),
                    ("CallbackOptions", "TimeoutSeconds"), ("CallbackOptions", "HeartbeatTimeoutSeconds")):
        v = (u.get(opts) or {}).get(k)
        if v is not None and (type(v) is not int or not 0 <= v <= MAX_SECONDS):
            return f"{opts}.{k} must be a whole number of seconds from 0 to {MAX_SECONDS}"
    return None


def _apply(
    u: dict[str, Any], cur: dict[str, Any] | None, now: int, new_id: Callable[[str, str], str]
) -> tuple[dict[str, Any], dict[str, Any] | None] | Refused:
    """One OperationUpdate against the operation it names: (its new record, its event)."""
    kind, action, oid = u.get("Type"), u.get("Action"), u.get("Id")
    bad = _malformed(u)
    if bad:
        return Refused("InvalidParameterValueException", f"operation update {str(oid)[:64]!r}: {bad}")
    if kind not in TYPES or action not in ACTIONS or not isinstance(oid, str) or not oid:
        return Refused(
            "InvalidParameterValueException",
            f"invalid operation update {oid!r}: Type {kind!r}, Action {action!r}",
        )
    if cur is not None and cur.get("Type") != kind:
        return Refused(
            "InvalidParameterValueException", f"operation {oid!r} is a {cur.get('Type')}, not {kind}"
        )
    base: dict[str, Any] = dict(cur) if cur else {"Id": oid, "Type": kind, "StartTimestamp": now}
    for k in ("ParentId", "Name", "SubType"):
        if u.get(k) is not None and base.get(k) is None:
            base[k] = u[k]
    payload, error = u.get("Payload"), u.get("Error")
    if cur is not None and cur.get("Status") in TERMINAL_OPERATION:
        return Refused("InvalidParameterValueException", f"operation {oid!r} has already ended")

    def done(status: str) -> dict[str, Any]:
        return {**base, "Status": status, "EndTimestamp": now}

    if kind == "STEP":
        det = dict(base.get("StepDetails") or {"Attempt": 0})
        attempt = int(det.get("Attempt") or 0)
        if action == "START":
            return {**base, "Status": "STARTED", "StepDetails": det}, _event(base, "StepStarted", now, {})
        det["Attempt"] = attempt + 1
        det.pop("NextAttemptTimestamp", None)
        if action == "RETRY":
            delay = int((u.get("StepOptions") or {}).get("NextAttemptDelaySeconds") or 0)
            det.update(NextAttemptTimestamp=now + delay * 1000, Result=payload, Error=error)
            retry = {"CurrentAttempt": attempt + 1, "NextAttemptDelaySeconds": delay}
            op = {**base, "Status": "PENDING", "StepDetails": det}
            if error is not None:
                return op, _event(base, "StepFailed", now, {"Error": _error(error), "RetryDetails": retry})
            return op, _event(base, "StepSucceeded", now, {"Result": _result(payload), "RetryDetails": retry})
        if action == "SUCCEED":
            det.update(Result=payload)
            return (
                {**done("SUCCEEDED"), "StepDetails": det},
                _event(
                    base,
                    "StepSucceeded",
                    now,
                    {"Result": _result(payload), "RetryDetails": {"CurrentAttempt": attempt + 1}},
                ),
            )
        if action == "FAIL":
            det.update(Error=error)
            return (
                {**done("FAILED"), "StepDetails": det},
                _event(
                    base,
                    "StepFailed",
                    now,
                    {"Error": _error(error), "RetryDetails": {"CurrentAttempt": attempt + 1}},
                ),
            )
    elif kind == "CONTEXT":
        replay = bool((u.get("ContextOptions") or {}).get("ReplayChildren"))
        if action == "START":
            return {**base, "Status": "STARTED"}, _event(base, "ContextStarted", now, {})
        if action == "SUCCEED":
            det = {"Result": payload, "ReplayChildren": replay}
            return (
                {**done("SUCCEEDED"), "ContextDetails": det},
                _event(base, "ContextSucceeded", now, {"Result": _result(payload)}),
            )
        if action == "FAIL":
            det = {"Error": error, "ReplayChildren": replay}
            return (
                {**done("FAILED"), "ContextDetails": det},
                _event(base, "ContextFailed", now, {"Error": _error(error)}),
            )
    elif kind == "WAIT":
        if action == "START" and cur is None:
            secs = int((u.get("WaitOptions") or {}).get("WaitSeconds") or 0)
            end = now + secs * 1000
            op = {
                **base,
                "Status": "STARTED",
                "WaitDetails": {"ScheduledEndTimestamp": end},
                ORBIT: {"Duration": secs},
            }
            return op, _event(base, "WaitStarted", now, {"Duration": secs, "ScheduledEndTimestamp": end})
        if action == "CANCEL":
            return done("CANCELLED"), _event(base, "WaitCancelled", now, {})
    elif kind == "CALLBACK":
        if action == "START" and cur is None:
            opts = u.get("CallbackOptions") or {}
            timeout, beat = (
                int(opts.get("TimeoutSeconds") or 0),
                int(opts.get("HeartbeatTimeoutSeconds") or 0),
            )
            cid = new_id("callback", oid)
            orbit: dict[str, Any] = {}
            details: dict[str, Any] = {"CallbackId": cid}
            if timeout:
                orbit["TimeoutAt"], details["Timeout"] = now + timeout * 1000, timeout
            if beat:
                orbit.update(HeartbeatAt=now + beat * 1000, Heartbeat=beat)
                details["HeartbeatTimeout"] = beat
            op = {**base, "Status": "STARTED", "CallbackDetails": {"CallbackId": cid}, ORBIT: orbit}
            return op, _event(base, "CallbackStarted", now, details)
    elif kind == "CHAINED_INVOKE":
        if action == "START" and cur is None:
            opts = u.get("ChainedInvokeOptions") or {}
            fn = opts.get("FunctionName")
            if not isinstance(fn, str) or not fn:
                return Refused(
                    "InvalidParameterValueException", f"chained invoke {oid!r} names no FunctionName"
                )
            child = new_id("invoke", oid)
            op = {
                **base,
                "Status": "STARTED",
                "ChainedInvokeDetails": {},
                ORBIT: {"Function": fn, "ChildArn": child, "Input": payload},
            }
            details = {
                "FunctionName": fn,
                "Input": _result(payload),
                "ExecutedVersion": "$LATEST",
                "DurableExecutionArn": child,
            }
            return op, _event(base, "ChainedInvokeStarted", now, details)
    elif kind == "EXECUTION":
        if action in ("SUCCEED", "FAIL"):
            return done("SUCCEEDED" if action == "SUCCEED" else "FAILED"), None
    if cur is not None and action == "START":
        return cur, None  # a repeated START of a live operation changes nothing
    return Refused(
        "InvalidParameterValueException", f"action {action} is not valid for {kind} operation {oid!r}"
    )


def checkpoint(
    s: DurableState,
    token: str,
    client_token: str | None,
    updates: list[Any],
    now: int,
    new_id: Callable[[str, str], str],
) -> list[Event] | Refused:
    """CheckpointDurableExecution. A repeated ClientToken records nothing (the caller answers
    as before); a token that is not the open invocation's current one is refused."""
    if client_token and client_token in s.client_tokens:
        return []
    if s.ended or s.token is None or token != s.token:
        return Refused("InvalidParameterValueException", "Invalid checkpoint token")
    ops = dict(s.operations)
    out: list[Event] = []
    touched = list(s.changed)
    finish: list[Event] = []
    for u in updates:
        if not isinstance(u, dict):
            return Refused("InvalidParameterValueException", "each update must be an object")
        got = _apply(u, ops.get(str(u.get("Id"))), now, new_id)
        if isinstance(got, Refused):
            return got
        op, ev = got
        if op is ops.get(op["Id"]):
            continue
        if op["Type"] == "EXECUTION":
            status = op["Status"]
            finish = _end(
                s,
                status,
                now,
                u.get("Payload") if status == "SUCCEEDED" else None,
                u.get("Error") if status == "FAILED" else None,
            )
            continue
        ops[op["Id"]] = op
        out.append(D.DurableOperationRecorded(op, ev))
        if op["Id"] not in touched:
            touched.append(op["Id"])
    n = s.checkpoints + 1
    new_token = "" if finish else f"{s.invocations}.{n}.{s.request_id}"
    return [*out, D.DurableCheckpointed(new_token, client_token or None, touched), *finish]


def fire_due(s: DurableState, now: int) -> list[Event]:
    """What the clock does at `now`: waits end, retries fall due, callbacks time out, and the
    execution itself times out."""
    if s.ended:
        return []
    if now >= s.start_ms + s.timeout_s * 1000:
        return _end(s, "TIMED_OUT", now, error={"ErrorType": "Execution.Timeout",
                                                 "ErrorMessage": "the execution timed out"})
    out: list[Event] = []
    if s.invoking and now >= s.invocation_start_ms + INVOCATION_TIMEOUT_S * 1000:
        # the invocation never answered (the handler's process died, or Orbit's did before it
        # recorded the answer): it ends as timed out and the handler is invoked again
        err = {"ErrorType": "Sandbox.Timedout", "ErrorMessage": "the invocation did not answer in time"}
        out.append(D.DurableInvocationCompleted(s.request_id or "", s.invocation_start_ms, "ERROR", err))
    for op in s.operations.values():
        kind, st = op.get("Type"), op.get("Status")
        if kind == "WAIT" and st == "STARTED" and int(op["WaitDetails"]["ScheduledEndTimestamp"]) <= now:
            secs = (op.get(ORBIT) or {}).get("Duration")
            ev = _event(op, "WaitSucceeded", now, {"Duration": secs} if secs is not None else {})
            out.append(
                D.DurableOperationRecorded({**op, "Status": "SUCCEEDED", "EndTimestamp": now}, ev, True)
            )
        elif kind == "STEP" and st == "PENDING":
            det = op.get("StepDetails") or {}
            if int(det.get("NextAttemptTimestamp") or 0) <= now:
                out.append(D.DurableOperationRecorded({**op, "Status": "READY"}, None, True))
        elif kind == "CALLBACK" and st == "STARTED":
            orbit = op.get(ORBIT) or {}
            if any(orbit.get(k) and int(orbit[k]) <= now for k in ("TimeoutAt", "HeartbeatAt")):
                beat = bool(orbit.get("HeartbeatAt") and int(orbit["HeartbeatAt"]) <= now)
                err = (
                    {"ErrorType": CALLBACK_HEARTBEAT, "ErrorMessage": "Callback heartbeat timed out"}
                    if beat
                    else {"ErrorType": CALLBACK_TIMEOUT, "ErrorMessage": "Callback timed out"}
                )
                out.append(_callback_end(op, "TIMED_OUT", now, None, err))
    return out


def _callback_end(op: dict[str, Any], status: str, now: int, result: Any, error: Any) -> Event:
    det = dict(op.get("CallbackDetails") or {})
    if status == "SUCCEEDED":
        det["Result"] = result
        kind, details = "CallbackSucceeded", {"Result": _result(result)}
    else:
        det["Error"] = error
        kind = "CallbackFailed" if status == "FAILED" else "CallbackTimedOut"
        details = {"Error": _error(error)}
    new = {**op, "Status": status, "EndTimestamp": now, "CallbackDetails": det}
    return D.DurableOperationRecorded(new, _event(op, kind, now, details), True)


def complete_callback(
    s: DurableState,
    op: dict[str, Any],
    outcome: str,
    result: str | None,
    error: dict[str, JSON] | None,
    now: int,
) -> list[Event] | Refused:
    """SendDurableExecutionCallback{Success,Failure,Heartbeat} for the callback operation `op`."""
    if s.ended or op.get("Status") != "STARTED":
        return Refused("InvalidParameterValueException", "the callback has already completed")
    if outcome == "heartbeat":
        orbit = dict(op.get(ORBIT) or {})
        if orbit.get("Heartbeat"):
            orbit["HeartbeatAt"] = now + int(orbit["Heartbeat"]) * 1000
        return [D.DurableOperationRecorded({**op, ORBIT: orbit})]
    if outcome == "success":
        return [_callback_end(op, "SUCCEEDED", now, result, None)]
    return [_callback_end(op, "FAILED", now, None, error or {})]


def complete_chained(
    s: DurableState, op_id: str, status: str, result: str | None, error: dict[str, JSON] | None, now: int
) -> list[Event]:
    """A chained invoke's child ended: its operation in the parent ends the same way."""
    op = s.operations.get(op_id)
    if s.ended or op is None or op.get("Status") != "STARTED":
        return []
    st = (
        "SUCCEEDED"
        if status == "SUCCEEDED"
        else "TIMED_OUT"
        if status == "TIMED_OUT"
        else ("STOPPED" if status == "STOPPED" else "FAILED")
    )
    det = {"Result": result} if st == "SUCCEEDED" else {"Error": error}
    kind = {
        "SUCCEEDED": "ChainedInvokeSucceeded",
        "FAILED": "ChainedInvokeFailed",
        "TIMED_OUT": "ChainedInvokeTimedOut",
        "STOPPED": "ChainedInvokeStopped",
    }[st]
    details = {"Result": _result(result)} if st == "SUCCEEDED" else {"Error": _error(error)}
    new = {**op, "Status": st, "EndTimestamp": now, "ChainedInvokeDetails": det}
    return [D.DurableOperationRecorded(new, _event(op, kind, now, details), True)]


def invocation_done(
    s: DurableState, request_id: str, now: int, output: Any, crash: dict[str, JSON] | None = None
) -> list[Event]:
    """The handler answered `output` ({Status, Result?, Error?}), or crashed (`crash`: the runtime's
    error, e.g. Runtime.ExitError): a crash is recorded on the invocation and the handler is
    invoked again (three crashes in a row fail the execution)."""
    if s.request_id != request_id:
        return []
    status = output.get("Status") if isinstance(output, dict) else None
    if status not in ("SUCCEEDED", "FAILED", "PENDING"):
        err = crash or {
            "ErrorType": "Runtime.InvalidResponse",
            "ErrorMessage": "the handler returned no durable answer",
        }
        done: list[Event] = [D.DurableInvocationCompleted(request_id, s.invocation_start_ms, "ERROR", err)]
        if s.failed_invocations + 1 >= 3 and not s.ended:
            done += _end(s, "FAILED", now, error=err)
        return done
    assert isinstance(output, dict)
    failure = output.get("Error") if status == "FAILED" else None
    out: list[Event] = [D.DurableInvocationCompleted(request_id, s.invocation_start_ms, status)]
    if s.ended:
        return out
    if status == "SUCCEEDED":
        out += _end(s, "SUCCEEDED", now, result=output.get("Result"))
    elif status == "FAILED":
        out += _end(s, "FAILED", now, error=failure if isinstance(failure, dict) else {})
    return out


def stop(s: DurableState, error: dict[str, JSON] | None, now: int) -> list[Event]:
    if s.ended:
        return []
    return _end(
        s,
        "STOPPED",
        now,
        error=error or {"ErrorType": "Execution.Stopped", "ErrorMessage": "stopped by StopDurableExecution"},
    )
