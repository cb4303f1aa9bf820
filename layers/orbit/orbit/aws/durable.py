"""Durable functions on AWS (docs/durable-functions.md, "On AWS"; docs/decisions/dur3-aws-path.md).

A durable function is a plain Lambda of the app's template, named with Orbit's durable prefix
(`<OrbitStack>-durable-`). Three handlers share `AwsDurable`:

- **the durable API** (`functions/durable/app.py`) behind a Lambda function URL with
  `AuthType: AWS_IAM`: Lambda verifies the SDK's SigV4 signature (service `lambda`) before the
  request reaches Orbit, and `authorize` then lets a durable function's own role reach only
  `CheckpointDurableExecution` and `GetDurableExecutionState` of its own executions;
- **the decider** (`functions/decider/app.py`): a `durable` message on the decision queue invokes
  the function asynchronously through the one Lambda adapter (`orbit.adapters.lambda_functions`)
  with the event the SDK expects, or fires what is due; the invocation's answer comes back as
  Lambda's destination record on the answer queue (`orbit.aws.durable_answers`,
  docs/decisions/dur4-async-invoke.md);
- both carry out a commit's `Followups` by sending those messages (SQS, the decision queue),
  never on a thread of their own.

Timers: a `fire` message is sent with SQS DelaySeconds (at most 15 minutes); one that arrives
before its time sends itself on again, so a wait of a year costs one message every 15 minutes and
no table item. Each message carries the invocation tag it was armed under (`invocations`,
`invoking`): an older chain that arrives after a newer invocation armed its own fires what is due
and stops, so an execution has one live timer chain.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from orbit.adapters.lambda_functions import LambdaInvokeError
from orbit.aws.durable_answers import fit_event
from orbit.core.history.durable import DurableFollowup, DurableState, next_due_ms
from orbit.errors import ConflictError
from orbit.service.durable import (
    EXECUTION_ID,
    DurableApiError,
    DurableFunction,
    DurableService,
    execution_id,
    function_name,
)

KIND = DurableFollowup.KIND  # the decision-queue message kind
MAX_DELAY_S = 900  # SQS DelaySeconds' ceiling
SDK_ROUTES = ("checkpoint", "state")  # what a durable function's own role may call
POLL_S = 0.5  # a synchronous Invoke on the URL reads the execution's status this often
CHECK_DELAY_S = 30  # a start's first timer: when a lost first invoke is sent again


DEFAULT_TIMEOUT_S = 10 * 366 * 86_400  # no one-year ceiling: ten years, StopDurableExecution ends one sooner


class DeployedFunctions(DurableService):
    """The durable service on AWS: a function is any Lambda named with the durable prefix (IAM lets
    the decider invoke those and no other); an execution times out after DEFAULT_TIMEOUT_S."""

    def __init__(self, *args: Any, prefix: str, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.prefix = prefix

    def function(self, name: str) -> DurableFunction:
        short = function_name(name)
        if short in self.functions:
            return self.functions[short]
        if not self.prefix or not short.startswith(self.prefix):
            raise DurableApiError(
                "ResourceNotFoundException",
                f"Function not found: {short} (a durable function's name starts with {self.prefix!r})",
                404,
            )
        return DurableFunction(short, "lambda", short, DEFAULT_TIMEOUT_S)


@dataclass
class AwsDurable:
    service: DurableService
    queues: Any  # the Queues port: send_decision(message, delay_s)
    functions: Any  # orbit.adapters.lambda_functions.LambdaFunctions
    clock: Any
    sync_budget_s: float = 0.0  # how long a synchronous Invoke may wait (the URL handler's time)

    # -- the runtime interface of orbit.service.durable_http.route ------------------------------

    def invoke(self, function: str, payload: str | None, sync: bool, name: str | None = None,
               parent: dict[str, str] | None = None, arn: str | None = None) -> DurableState:
        fn = self.service.function(function)
        if arn is None:
            if name is not None and not EXECUTION_ID.match(name):
                raise DurableApiError("InvalidParameterValueException",
                                      f"invalid DurableExecutionName {name!r}")
            eid = self.service.new_id()
            name = name or eid
            arn = f"{self.service.function_arn(fn.name)}:$LATEST/durable-execution/{name}/{eid}"
        # Before the commit, the execution's first timer: a check that invokes it if the start's own
        # message is lost after the commit (a crash, a throttled send). Without the commit it finds
        # no execution and is dropped.
        due = self.clock.now_ms() + fn.timeout_s * 1000
        self.queues.send_decision(self.message("fire", arn, due_ms=due, tag=[0, False]), CHECK_DELAY_S)
        s = self.service.start(function, payload, name, parent, arn)
        self.react(s, arm=False)
        if not sync:
            return s
        deadline = time.monotonic() + self.sync_budget_s
        while time.monotonic() < deadline:
            time.sleep(POLL_S)
            s = self.service.load(s.arn)[0]
            if s.ended:
                break
        return s

    def checkpoint(self, arn: str, token: str, client_token: str | None,
                   updates: list[Any]) -> dict[str, Any]:
        s, answer = self.service.checkpoint(arn, token, client_token, updates)
        self.react(s, arm=False)  # the invocation's end arms the timers of what it checkpointed
        return answer

    def callback(self, callback_id: str, outcome: str, result: str | None, error: Any) -> None:
        self.react(self.service.callback(callback_id, outcome, result, error), arm=False)

    def stop(self, arn: str, error: Any) -> DurableState:
        s = self.service.stop(arn, error)
        self.react(s, arm=False)
        return s

    # -- followups: messages to the decision queue ------------------------------------------------

    def react(self, s: DurableState, arm: bool = True) -> None:
        f = self.service.follow(s)
        if f.ended:
            if s.parent:
                self.react(self.service.child_ended(s.parent["arn"], s.parent["operation"], s))
            return
        if arm:
            self.arm(s)
        for child in f.children:
            self._start_child(s.arn, child)
        if f.invoke:
            self.queues.send_decision(self.message("invoke", s.arn), 0)

    def message(self, op: str, arn: str, due_ms: int = 0, tag: list[Any] | None = None) -> dict[str, Any]:
        return DurableFollowup(op, arn, execution_id(arn), due_ms, tuple(tag or ())).to_dict()

    def arm(self, s: DurableState) -> None:
        due = next_due_ms(s)
        if due is None:
            return
        tag = [s.invocations, bool(s.invoking)]
        self._send_fire(s.arn, due, tag)

    def _send_fire(self, arn: str, due: int, tag: list[Any]) -> None:
        delay = max(0, min(MAX_DELAY_S, -(-(due - self.clock.now_ms()) // 1000)))
        self.queues.send_decision(self.message("fire", arn, due_ms=due, tag=tag), delay)

    def _start_child(self, parent_arn: str, child: dict[str, Any]) -> None:
        try:
            self.invoke(str(child["function"]), child.get("input"), False,
                        parent={"arn": parent_arn, "operation": child["op"]}, arn=child["arn"])
        except ConflictError:  # started already (a repeated followup): what it still needs, again
            self.react(self.service.load(str(child["arn"]))[0], arm=False)
        except DurableApiError as e:
            failed = DurableState(status="FAILED", error={"ErrorType": e.code, "ErrorMessage": str(e)})
            self.react(self.service.child_ended(parent_arn, child["op"], failed))

    # -- the decider's side -----------------------------------------------------------------------

    def handle(self, body: dict[str, Any], received: int = 1) -> None:
        """One `durable` message of the decision queue (`received`: its SQS receive count). Raises
        (so the queue retries it) when the store was too busy; a message for a gone execution is
        dropped."""
        m = DurableFollowup.from_dict(body)
        try:
            if m.op == "invoke":
                self._invocation(m.arn, received > 1)
            elif m.op == "fire":
                self._fire(m.arn, m.due_ms, list(m.tag))
        except DurableApiError as e:
            if e.status == 404:
                return
            raise

    def _fire(self, arn: str, due: int, tag: list[Any]) -> None:
        s = self.service.load(arn)[0]
        if s.ended:
            return
        if tag != [s.invocations, bool(s.invoking)]:
            # A newer invocation armed its own chain (it covers every due time): this one stops. It
            # may be this very message come back after its commit (a timeout, a retry due) landed
            # and its invoke was lost: what the state still asks for goes again.
            self.react(s, arm=False)
            return
        if self.clock.now_ms() < due:
            # what a commit asked for but a crash or a throttled send lost (the first invocation of
            # an execution whose start answered 5xx after its commit, a child's start) goes again
            self.react(s, arm=False)
            self._send_fire(arn, due, tag)  # not yet: on again, at most 15 minutes at a time
            return
        self.react(self.service.fire(arn))

    def _invocation(self, arn: str, redelivered: bool) -> None:
        begun = self.service.begin_invocation(arn)
        if begun is None:
            # ended, or an invocation is open. A redelivery may follow a crash between the opening
            # commit and its timer: arm it again (the invocation's timeout ends it and reruns it)
            s = self.service.load(arn)[0]
            if redelivered and s.invoking:
                self.arm(s)
            return
        s, event = begun
        fn = self.service.function(s.function)
        try:  # queued (InvocationType=Event): the answer comes back on the answer queue
            self.functions.invoke_async(fn.name, fit_event(event))
        except LambdaInvokeError as e:  # throttled, gone, not allowed: a failed invocation (3 in a
            crash = {"ErrorType": "Orbit.InvokeRefused", "ErrorMessage": str(e)}  # row fail it)
            self.react(self.service.finish_invocation(arn, s.request_id or "", None, crash))
            return
        # The answer's record may never come (a destination Lambda could not deliver): the
        # invocation's timeout ends it then, and the handler is invoked again.
        self.arm(s)


# -- the function URL's side ------------------------------------------------------------------------


def caller_function(request_context: dict[str, Any], prefix: str) -> str | None:
    """The durable function a request comes from, or None for another principal. A Lambda
    function's role session is named after the function (`assumed-role/<role>/<function>`), which
    the URL's IAM authorizer puts in the request context after verifying the signature."""
    iam = ((request_context or {}).get("authorizer") or {}).get("iam") or {}
    arn = str(iam.get("userArn") or "")
    parts = arn.split(":", 5)
    if len(parts) < 6 or not parts[5].startswith("assumed-role/"):
        return None
    session = parts[5].split("/")[-1]
    return session if prefix and session.startswith(prefix) else None


def authorize(route: str | None, path: str, request_context: dict[str, Any], prefix: str) -> None:
    """Refuse what a durable function's role may not do: anything but the SDK's two calls, and
    those on another function's execution. Other principals are as IAM lets them (the URL's
    `lambda:InvokeFunctionUrl`)."""
    fn = caller_function(request_context, prefix)
    if fn is None:
        return
    if route not in SDK_ROUTES:
        raise DurableApiError("AccessDeniedException", f"durable function {fn} may call only "
                              "CheckpointDurableExecution and GetDurableExecutionState", 403)
    arn = path.split("/")[3] if path.count("/") >= 4 else ""
    from urllib.parse import unquote

    owner = unquote(arn).split(":")[6] if unquote(arn).count(":") >= 6 else ""
    if owner != fn:
        raise DurableApiError("AccessDeniedException",
                              f"durable function {fn} may not checkpoint another function's execution", 403)


def url_response(durable: AwsDurable, event: dict[str, Any], prefix: str,
                 remaining_s: float = 0.0) -> dict[str, Any]:
    """A function URL event (payload format 2.0) -> its answer: the Lambda REST paths of
    `orbit.service.durable_http`, after `authorize`."""
    import base64

    from orbit.service import durable_http

    ctx = event.get("requestContext") or {}
    method = str((ctx.get("http") or {}).get("method") or "GET")
    path = str(event.get("rawPath") or "/")
    qs = str(event.get("rawQueryString") or "")
    raw = event.get("body") or ""
    body = base64.b64decode(raw) if event.get("isBase64Encoded") else str(raw).encode()
    try:
        authorize(durable_http.route_name(method, path), path, ctx, prefix)
    except DurableApiError as e:
        status, headers, out = durable_http.error(e)
    else:
        durable.sync_budget_s = max(0.0, remaining_s - 5.0)  # a synchronous Invoke answers in time
        status, headers, out = durable_http.route(durable, method, f"{path}?{qs}" if qs else path,
                                                  dict(event.get("headers") or {}), body)
    return {"statusCode": status, "headers": headers, "body": base64.b64encode(out).decode(),
            "isBase64Encoded": True}


def handle_messages(svc: Any, messages: list[tuple[str, dict[str, Any]]], received: list[int],
                    function_arn: str) -> dict[str, Exception]:
    """The decider's durable messages, one at a time: the failed ones by SQS message id, so only
    they return to the queue."""
    durable: AwsDurable = svc.durable
    durable.service.account = str(function_arn).split(":")[4]
    errors: dict[str, Exception] = {}
    for (message_id, body), count in zip(messages, received):
        try:
            with svc.queues.batched():  # its followups leave together, after its commits
                durable.handle(body, count)
        except Exception as e:  # noqa: BLE001 - this message only: retried by the queue
            errors[message_id] = e
    return errors
