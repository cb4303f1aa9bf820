"""A durable function under delivery chaos (docs/durable-functions.md, "On AWS"): the AWS path of
orbit/aws/durable.py through the real handlers. The client starts it with `Invoke` on the durable
API's function URL handler (functions/durable/app.py); each decider environment's Lambda adapter
is a scripted durable function that plays what AWS's SDK does (`Function`): it reads the
operations it was invoked with, checkpoints through the same URL handler (an invocation of its
own, so throttling reaches it; retried with the same ClientToken as botocore retries a 5xx), runs
each step's side effect between an accepted START and its SUCCEED, and waits 3 minutes between
its second and third step (a `fire` message delayed on the decision queue). A step found STARTED
on replay (its earlier run's outcome never recorded) is retried, never run again in that attempt:
AWS's AtMostOncePerRetry semantics, so every attempt's side effect runs at most once.

The invariants (`check`): the execution ends SUCCEEDED with the expected result, in Orbit's index
too (COMPLETED); each step succeeds exactly once; each recorded attempt of a step ran at most once
and no step ran more often than it was started.
"""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import quote

import chaos_workloads as W

STEPS = ("a", "b", "c")
WAIT_S = 180
PREFIX = "orbit-chaos-durable-"
FUNCTION = f"{PREFIX}three"
EXPECTED = '"abc"'
ATTEMPTS = 3  # botocore's default for the SDK's client: the first try and two retries


def url_event(method: str, path: str, body: bytes, caller: str, headers: dict[str, str] | None = None,
              query: str = "") -> dict[str, Any]:
    """A function URL event (payload format 2.0) as Lambda hands it over after checking SigV4."""
    return {"version": "2.0", "rawPath": path, "rawQueryString": query,
            "headers": {"content-type": "application/json", **(headers or {})},
            "requestContext": {"http": {"method": method, "path": path}, "requestId": "chaos",
                               "authorizer": {"iam": {"userArn": caller}}},
            "body": base64.b64encode(body).decode(), "isBase64Encoded": True}


def call(world: Any, method: str, path: str, body: Any, caller: str,
         headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """One request to the durable API, retried as botocore retries a 5xx or a failed invocation."""
    raw = json.dumps(body).encode() if body is not None else b""
    status, got = 599, None
    for _ in range(ATTEMPTS):
        try:
            event = url_event(method, path, raw, caller, headers)
            r = world.invoke(world.envs["durable"][0], "durable", event)
        except Exception as e:  # noqa: BLE001 - the URL answers 502 when its function fails
            status, got = 502, str(e)
            continue
        status = int(r["statusCode"])
        got = json.loads(base64.b64decode(r["body"]) or b"null")
        if status < 500:
            break
    return status, got


class Function:
    """The durable function, as the SDK runs it: the decider's Lambda adapter (`invoke_async`:
    Lambda runs it and its destination sends the invocation's record to the answer queue)."""

    def __init__(self, world: Any) -> None:
        self.world = world
        self.role = f"arn:aws:sts::123456789012:assumed-role/durable-role/{FUNCTION}"

    def invoke_async(self, name: str, event: dict[str, Any]) -> str:
        """Lambda's queue is at least once and a destination can fail: sometimes the event runs
        twice (the copy's checkpoints carry a token the first moved on), sometimes a record is
        lost (the invocation's timeout ends it)."""
        from orbit.aws.durable_answers import invocation_record

        w = self.world
        rid = f"req{w.rng.getrandbits(32):x}"
        fn_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{name}"
        runs = 2 if w.faulty and w.rng.random() < w.profile.dup_in_batch else 1
        for n in range(runs):
            if n:
                w.trace.append("    Lambda runs the queued event again")
            out, crash = self.invoke(name, event)
            if w.faulty and w.rng.random() < w.profile.lost_delete:
                w.trace.append("    the destination lost the invocation's record")
                continue
            w.answer(json.dumps(invocation_record(fn_arn, rid, event, out, crash)))
        return rid

    def invoke(self, name: str, event: dict[str, Any]) -> tuple[Any, Any]:
        assert name == FUNCTION, name
        w = self.world
        arn, token = event["DurableExecutionArn"], event["CheckpointToken"]
        ops = {o["Id"]: o for o in event["InitialExecutionState"]["Operations"]}
        w.trace.append(f"    durable invocation of {arn.rsplit('/', 1)[-1]}: "
                       + ",".join(f"{k}={o.get('Status')}" for k, o in sorted(ops.items())))

        def checkpoint(*updates: dict[str, Any]) -> bool:
            nonlocal token
            body = {"CheckpointToken": token, "Updates": list(updates),
                    "ClientToken": f"ct{w.rng.getrandbits(64):x}"}
            status, got = call(w, "POST", f"/2025-12-01/durable-executions/{quote(arn, safe='')}/checkpoint",
                               body, self.role)
            if status != 200:
                w.trace.append(f"    checkpoint refused: {status} {str(got)[:120]}")
                return False
            token = got.get("CheckpointToken", token)
            return True

        crash = {"ErrorType": "CheckpointError", "ErrorMessage": "a checkpoint failed after retries"}
        for sid in STEPS:
            op = ops.get(sid)
            status = (op or {}).get("Status")
            if status == "SUCCEEDED":
                continue
            if sid == "c":
                wait = ops.get("w")
                if wait is None:
                    ok = checkpoint({"Id": "w", "Type": "WAIT", "Action": "START",
                                     "WaitOptions": {"WaitSeconds": WAIT_S}})
                    return ({"Status": "PENDING"}, None) if ok else (None, crash)
                if wait.get("Status") != "SUCCEEDED":
                    return {"Status": "PENDING"}, None
            if status == "STARTED":  # interrupted: at most once per attempt, so a retry
                ok = checkpoint({"Id": sid, "Type": "STEP", "SubType": "Step", "Action": "RETRY",
                                 "Error": {"ErrorType": "StepInterruptedError",
                                           "ErrorMessage": "interrupted"},
                                 "StepOptions": {"NextAttemptDelaySeconds": 1}})
                return ({"Status": "PENDING"}, None) if ok else (None, crash)
            if status == "PENDING":
                return {"Status": "PENDING"}, None
            attempt = int(((op or {}).get("StepDetails") or {}).get("Attempt") or 0) + 1
            if not checkpoint({"Id": sid, "Type": "STEP", "SubType": "Step", "Action": "START", "Name": sid}):
                return None, crash
            W._record(W.Run(f"durable:{arn}:{sid}", attempt, W.CURRENT[0]))  # the side effect
            if not checkpoint({"Id": sid, "Type": "STEP", "SubType": "Step", "Action": "SUCCEED",
                               "Payload": json.dumps(sid)}):
                return None, crash
        return {"Status": "SUCCEEDED", "Result": EXPECTED}, None


def attach(world: Any) -> None:
    """Each decider environment invokes the scripted function through its Lambda adapter port."""
    for env in world.envs["decider"]:
        env.services.durable.functions = Function(world)


def start(world: Any, ex: Any) -> int:
    """The client's `Invoke` (asynchronous) through the URL, as an operator's role; the ARN is kept."""
    status, got = 599, None
    path = f"/2015-03-31/functions/{FUNCTION}/invocations"
    caller = "arn:aws:iam::123456789012:user/operator"
    try:
        r = world.invoke(world.envs["durable"][0], "durable", url_event(
            "POST", path, json.dumps(ex.workload.input).encode(), caller,
            {"x-amz-invocation-type": "Event", "x-amz-durable-execution-name": ex.id}))
        status = int(r["statusCode"])
        if status == 202:
            ex.arn = r["headers"]["X-Amz-Durable-Execution-Arn"]
    except Exception as e:  # noqa: BLE001 - the client retries later
        got = e
    world.trace.append(f"  durable start {ex.id}: {status} {str(got)[:80] if got else ''}")
    return status


def check(world: Any, ex: Any) -> list[str]:
    """The invariants of one durable execution, read cold from the table."""
    from orbit.aws import wiring as aws
    from orbit.errors import OrbitError

    arn = getattr(ex, "arn", None)
    if not arn:
        return [f"{ex.id}: its start never landed"]
    env = type(world.checker)("check-durable", world)
    aws_cached = aws._cached
    try:
        svc = env.services.durable.service
        s, _ = svc.load(arn)
        events = list(s.events)
        eid = arn.rsplit("/", 1)[-1]
        try:
            status = env.services.engine.describe(eid)["status"]
        except OrbitError as e:
            status = f"not described ({e})"
    finally:
        aws._cached = aws_cached
    out = []
    expected = json.dumps(ex.workload.output)
    if s.status != "SUCCEEDED" or s.result != expected:
        out.append(f"{ex.id}: ended {s.status} with {s.result!r} (error {s.error!r}); "
                   f"expected SUCCEEDED with {expected}")
    if status != "COMPLETED":
        out.append(f"{ex.id}: Orbit's index says {status}, expected COMPLETED")
    for sid in STEPS:
        succeeded = sum(1 for e in events if e.get("EventType") == "StepSucceeded" and e.get("Id") == sid
                        and not (e.get("StepSucceededDetails") or {}).get("RetryDetails", {}).get(
                            "NextAttemptDelaySeconds"))
        started = sum(1 for e in events if e.get("EventType") == "StepStarted" and e.get("Id") == sid)
        runs = [r for r in W.LEDGER if r.key == f"durable:{arn}:{sid}"]
        by_attempt: dict[Any, int] = {}
        for r in runs:
            by_attempt[r.attempt] = by_attempt.get(r.attempt, 0) + 1
        if succeeded != 1:
            out.append(f"{ex.id}: step {sid} succeeded {succeeded} times")
        twice = {a: n for a, n in by_attempt.items() if n > 1}
        if twice:
            out.append(f"{ex.id}: step {sid} attempts ran more than once: {twice}")
        if len(runs) > started:
            out.append(f"{ex.id}: step {sid} ran {len(runs)} times for {started} StepStarted")
    return out
