"""Durable functions on the local stack, through the AWS path (docs/durable-functions.md): what
`template.yaml` deploys on AWS, with two loopback servers standing in for Lambda's two fronts.

- **The function URL** of `DurableApiFunction` (`AuthType: AWS_IAM`): a request is refused with
  403 unless its SigV4 signature for the service `lambda` verifies (orbit/local/sigv4.py, with the
  local stack's credentials), then handed to `functions/durable/app.py` as a function URL event
  (payload format 2.0, the caller in `requestContext.authorizer.iam`). This process's
  `AWS_ENDPOINT_URL_LAMBDA` points here, so the SDK's unmodified client signs and calls it.
- **Lambda's Invoke** for the durable functions (`<stack>-durable-<name>`): the decider's Lambda
  adapter (`orbit.adapters.lambda_functions`) calls it over HTTP as it calls Lambda; the
  function's Python handler runs in this process with a Lambda-like context. An asynchronous
  invoke (`X-Amz-Invocation-Type: Event`, what the decider sends) answers 202 at once and runs the
  handler on a thread of its own, then sends Lambda's invocation record (the same shape) to the
  function's destination, the template's `DurableAnswerQueue`, as the EventInvokeConfig of
  docs/durable-functions.md does on AWS (docs/decisions/dur4-async-invoke.md). The stack's pump
  waits a little for such invocations when it has nothing else to do (`_pump_once`), so
  `run_until_idle` sees their records; one still running after that leaves the stack idle.

The decider handles the durable messages of the decision queue in the local stack's pump, as on
AWS; waits and retries ride on the queue's delays, on the stack's virtual clock.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import threading
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

import boto3
from botocore.config import Config

from orbit.adapters.lambda_functions import LambdaFunctions
from orbit.local.durable_runtime import LambdaContext, python_handler
from orbit.local.sigv4 import AUTH, refusal
from orbit.service.durable import DurableFunction

INVOKE = "/2015-03-31/functions/"
CALLER_ARN = "arn:aws:iam::123456789012:user/orbit-local"  # who signs with the local credentials
RECORD_WAIT_S = 0.5  # how long an idle pump waits for a running asynchronous invocation


class LocalDurableAws:
    def __init__(self, stack: Any) -> None:
        self.stack = stack
        self.deployment = stack.cloud.deployment
        self.prefix = f"{stack.cloud.stack_name}-durable-"
        self.handlers: dict[str, str] = {}  # deployed name -> Python import path
        self.callers: dict[str, str] = {}  # access key -> the userArn the URL's authorizer reports
        self.url_server = self._server(self._serve_url)
        self.lambda_server = self._server(self._serve_invoke)
        self.url = f"http://127.0.0.1:{self.url_server.server_address[1]}"
        self.lambda_url = f"http://127.0.0.1:{self.lambda_server.server_address[1]}"
        os.environ["AWS_ENDPOINT_URL_LAMBDA"] = self.url  # the SDK's client (it reads this)
        client = boto3.session.Session().client(
            "lambda", endpoint_url=self.lambda_url, region_name="us-east-1",
            config=Config(retries={"mode": "standard", "max_attempts": 1}, read_timeout=905))
        self.stack.services.durable.functions = LambdaFunctions(client)  # the decider's adapter
        self.answer_queue = self.deployment.queues["DurableAnswerQueue"].url  # the destination
        self.running: set[threading.Thread] = set()  # asynchronous invocations Lambda is running
        self._running_lock = threading.Lock()
        cloud = stack.cloud
        inner = cloud.pump_once

        def _pump_once() -> int:  # the cloud's pump round, then the invocations' records
            handled = int(inner())
            if handled:
                return handled
            return 1 if self.settle(RECORD_WAIT_S) else 0

        cloud.pump_once = _pump_once

    def _server(self, serve: Any) -> ThreadingHTTPServer:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _go(self, method: str) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                status, headers, body = serve(method, self.path, dict(self.headers), raw)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._go("GET")

            def do_POST(self) -> None:
                self._go("POST")

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, name="durable-aws", daemon=True).start()
        return server

    def close(self) -> None:
        for server in (self.url_server, self.lambda_server):
            server.shutdown()
            server.server_close()
        if os.environ.get("AWS_ENDPOINT_URL_LAMBDA") == self.url:
            os.environ.pop("AWS_ENDPOINT_URL_LAMBDA", None)

    def settle(self, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for the running asynchronous invocations: True when one ended
        (its record is on the answer queue)."""
        with self._running_lock:
            running = list(self.running)
        if not running:
            return False
        running[0].join(timeout_s)
        with self._running_lock:
            return any(t not in self.running for t in running)

    def register(self, name: str, handler: str) -> str:
        """Deploy a durable function (a Python handler): returns its Lambda name, `<prefix><name>`."""
        full = name if name.startswith(self.prefix) else f"{self.prefix}{name}"
        DurableFunction(full, "python", handler)  # the name's checks
        python_handler(handler)  # imports now: a wrong path fails here, with one line
        self.handlers[full] = handler
        return full

    # -- the function URL ---------------------------------------------------------------------

    def _serve_url(self, method: str, target: str, headers: dict[str, str],
                   raw: bytes) -> tuple[int, dict[str, str], bytes]:
        from .lambdas import invoke

        secret = os.environ.get("AWS_SECRET_ACCESS_KEY", "orbit-local")
        # SigV4 dates are wall-clock times (the signer's), not the stack's virtual clock
        now = dt.datetime.now(dt.timezone.utc)  # noqa: TID251 - the edge owns the wall clock
        why = refusal(method, self.url + target, headers, raw,
                      lambda key: secret if key == os.environ.get("AWS_ACCESS_KEY_ID", "orbit-local")
                      else None, now)
        if why is not None:  # as Lambda answers an unsigned or badly signed request to the URL
            return 403, {"Content-Type": "application/json", "X-Amzn-ErrorType": "AccessDeniedException"}, (
                json.dumps({"Message": f"Forbidden: {why}"}).encode())
        auth = AUTH.match({k.lower(): v for k, v in headers.items()}.get("authorization", ""))
        key = auth["key"] if auth else ""
        path, _, qs = target.partition("?")
        event = {
            "version": "2.0", "rawPath": path, "rawQueryString": qs,
            "headers": {k.lower(): v for k, v in headers.items()},
            "requestContext": {
                "http": {"method": method, "path": path},
                "authorizer": {"iam": {"userArn": self.callers.get(key, CALLER_ARN)}},
                "requestId": uuid.uuid4().hex,
            },
            "body": base64.b64encode(raw).decode(), "isBase64Encoded": True,
        }
        fn = self.deployment.functions["DurableApiFunction"]
        answer = invoke(fn, self.stack.cloud.handlers["DurableApiFunction"], event)
        raw_body = answer["body"]
        body = base64.b64decode(raw_body) if answer.get("isBase64Encoded") else str(raw_body).encode()
        return int(answer["statusCode"]), dict(answer.get("headers") or {}), body

    # -- Lambda's Invoke of a durable function ------------------------------------------------

    def _serve_invoke(self, method: str, target: str, headers: dict[str, str],
                      raw: bytes) -> tuple[int, dict[str, str], bytes]:
        path = target.split("?", 1)[0]
        name = unquote(path[len(INVOKE):].split("/", 1)[0]) if path.startswith(INVOKE) else ""
        if method != "POST" or not path.endswith("/invocations") or name not in self.handlers:
            return 404, {"X-Amzn-ErrorType": "ResourceNotFoundException"}, json.dumps(
                {"Message": f"Function not found: {name or path}"}).encode()
        fn = DurableFunction(name, "python", self.handlers[name])
        rid = uuid.uuid4().hex
        arn = f"arn:aws:lambda:us-east-1:123456789012:function:{name}"
        event = json.loads(raw or b"{}")
        kind = {k.lower(): v for k, v in headers.items()}.get("x-amz-invocation-type", "RequestResponse")
        if kind == "Event":  # queued: run on a thread, the record to the destination
            thread = threading.Thread(target=self._run_async, args=(fn, arn, rid, event),
                                      name=f"durable-async-{name}", daemon=True)
            with self._running_lock:
                self.running.add(thread)
            thread.start()
            return 202, {"x-amzn-RequestId": rid}, b""
        output, crash = self._run(fn, arn, rid, event)
        if crash is not None:
            body = {"errorType": crash["ErrorType"], "errorMessage": crash["ErrorMessage"]}
            return 200, {"X-Amz-Function-Error": "Unhandled"}, json.dumps(body).encode()
        return 200, {"X-Amz-Executed-Version": "$LATEST"}, json.dumps(output).encode()

    def _run(self, fn: DurableFunction, arn: str, rid: str, event: Any) -> tuple[Any, dict[str, Any] | None]:
        try:
            return python_handler(fn.handler)(event, LambdaContext(rid, fn, arn)), None
        except Exception as e:  # noqa: BLE001 - the function's own failure, as Lambda reports it
            return None, {"ErrorType": type(e).__name__, "ErrorMessage": str(e)[:1000]}

    def _run_async(self, fn: DurableFunction, arn: str, rid: str, event: Any) -> None:
        """One asynchronous invocation (MaximumRetryAttempts 0): run it, send its record."""
        from orbit.aws.durable_answers import invocation_record

        try:
            output, crash = self._run(fn, arn, rid, event)
            now = dt.datetime.now(dt.timezone.utc)  # noqa: TID251 - the record's timestamp, as Lambda's
            record = invocation_record(arn, rid, event, output, crash,
                                       now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z")
            boto3.client("sqs", region_name="us-east-1").send_message(
                QueueUrl=self.answer_queue, MessageBody=json.dumps(record))
        except Exception:  # noqa: BLE001 - a destination Lambda could not deliver: the record is lost
            traceback.print_exc()
        finally:
            with self._running_lock:
                self.running.discard(threading.current_thread())
