"""A local endpoint for durable functions: the Lambda REST paths (`orbit.service.durable_http`),
the durable functions registry, and the two CloudFormation calls a deploy-and-invoke tool makes
(ListStackResources, DescribeStackResource) answered from that registry. The handlers run in
this process (`orbit.local.durable_runtime`) on the memory history store.

    python -m orbit.local.durable_server --port 9570 [--functions functions.json]

prints `listening on http://127.0.0.1:PORT` and serves until stopped. `functions.json` lists
`{"name", "language", "handler", "stack"?, "logical_id"?}`; POST /orbit/durable/functions adds
more (the `sam deploy` stand-in of `make conformance` does).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs
from xml.sax.saxutils import escape

from orbit.adapters.memory import MemoryHistoryStore
from orbit.aws.wiring import SystemClock
from orbit.errors import ValidationError
from orbit.local.durable_logs import LogCapture, install
from orbit.local.durable_runtime import DurableRuntime
from orbit.service import durable_http
from orbit.service.durable import DurableFunction, DurableService

CFN_NS = "http://cloudformation.amazonaws.com/doc/2010-05-15/"


class DurableEndpoint:
    """The registry of stacks (logical id -> function) and the runtime behind the server."""

    def __init__(self, runtime: DurableRuntime, logs: LogCapture | None = None) -> None:
        self.runtime, self.logs = runtime, logs
        self.stacks: dict[str, dict[str, str]] = {}

    def register(self, d: Any) -> DurableFunction:
        if not isinstance(d, dict):
            raise ValidationError("a durable function is an object {name, language, handler}", "function")
        fn = DurableFunction(
            str(d.get("name", "")),
            str(d.get("language", "python")),
            str(d.get("handler", "")),
            int(d.get("timeout_s") or 86_400),
        )
        self.runtime.service.register(fn)
        if d.get("stack") and d.get("logical_id"):
            self.stacks.setdefault(str(d["stack"]), {})[str(d["logical_id"])] = fn.name
        return fn

    def cloudformation(self, form: dict[str, str]) -> tuple[int, bytes]:
        action, stack = form.get("Action", ""), form.get("StackName", "")
        resources = self.stacks.get(stack)
        if action == "DeleteStack":
            self.stacks.pop(stack, None)
            return 200, _xml(action, "")
        if resources is None:
            return 400, (
                f'<ErrorResponse xmlns="{CFN_NS}"><Error><Type>Sender</Type><Code>ValidationError'
                f"</Code><Message>Stack with id {escape(stack)} does not exist</Message></Error>"
                "</ErrorResponse>"
            ).encode()
        if action == "ListStackResources":
            rows = "".join(
                f"<member><LogicalResourceId>{escape(k)}</LogicalResourceId><PhysicalResourceId>"
                f"{escape(v)}</PhysicalResourceId><ResourceType>AWS::Lambda::Function</ResourceType>"
                "<ResourceStatus>CREATE_COMPLETE</ResourceStatus><LastUpdatedTimestamp>"
                "2026-01-01T00:00:00Z</LastUpdatedTimestamp></member>"
                for k, v in resources.items()
            )
            return 200, _xml(action, f"<StackResourceSummaries>{rows}</StackResourceSummaries>")
        if action == "DescribeStackResource":
            lid = form.get("LogicalResourceId", "")
            phys = resources.get(lid, "")
            body = (
                f"<StackResourceDetail><StackName>{escape(stack)}</StackName><LogicalResourceId>{escape(lid)}"
                f"</LogicalResourceId><PhysicalResourceId>{escape(phys)}</PhysicalResourceId><ResourceType>"
                "AWS::Lambda::Function</ResourceType><ResourceStatus>CREATE_COMPLETE</ResourceStatus>"
                "<LastUpdatedTimestamp>2026-01-01T00:00:00Z</LastUpdatedTimestamp></StackResourceDetail>"
            )
            return 200, _xml(action, body)
        return (
            400,
            f"<ErrorResponse><Error><Code>InvalidAction</Code><Message>{escape(action)}</Message></Error></ErrorResponse>".encode(),
        )


def _xml(action: str, inner: str) -> bytes:
    return (
        f'<{action}Response xmlns="{CFN_NS}"><{action}Result>{inner}</{action}Result>'
        f"<ResponseMetadata><RequestId>{uuid.uuid4()}</RequestId></ResponseMetadata></{action}Response>"
    ).encode()


def make_handler(endpoint: DurableEndpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def setup(self) -> None:
            super().setup()
            # headers and body go out in two writes: without this, Nagle's algorithm holds the
            # body for the client's delayed ACK (~40 ms a request on loopback)
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def _read(self) -> bytes:
            n = int(self.headers.get("Content-Length") or 0)
            if n > durable_http.MAX_BODY:
                return b"x" * (durable_http.MAX_BODY + 1)
            return self.rfile.read(n) if n else b""

        def _respond(self, status: int, headers: dict[str, str], body: bytes) -> None:
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _serve(self, method: str) -> None:
            raw = self._read()
            path = self.path
            if durable_http.handles(method, path):
                self._respond(*durable_http.route(endpoint.runtime, method, path, dict(self.headers), raw))
            elif method == "POST" and path == "/orbit/durable/functions":
                try:
                    fn = endpoint.register(json.loads(raw or b"{}"))
                    self._respond(
                        200, {"Content-Type": "application/json"}, json.dumps({"name": fn.name}).encode()
                    )
                except (ValueError, ValidationError) as e:
                    self._respond(
                        400, {"Content-Type": "application/json"}, json.dumps({"message": str(e)}).encode()
                    )
            elif method == "POST" and self.headers.get("X-Amz-Target") == "Logs_20140328.FilterLogEvents":
                try:
                    answer = (
                        endpoint.logs.filter_log_events(json.loads(raw or b"{}"))
                        if endpoint.logs
                        else {"events": []}
                    )
                    self._respond(
                        200, {"Content-Type": "application/x-amz-json-1.1"}, json.dumps(answer).encode()
                    )
                except ValueError as e:
                    self._respond(
                        400,
                        {"Content-Type": "application/x-amz-json-1.1"},
                        json.dumps({"__type": "InvalidParameterException", "message": str(e)}).encode(),
                    )
            elif method == "POST" and path == "/" and b"Action=" in raw:
                form = {k: v[0] for k, v in parse_qs(raw.decode("utf-8", "replace")).items()}
                status, body = endpoint.cloudformation(form)
                self._respond(status, {"Content-Type": "text/xml"}, body)
            else:
                self._respond(
                    404,
                    {"Content-Type": "application/json", "X-Amzn-ErrorType": "ResourceNotFoundException"},
                    json.dumps({"message": f"no route {method} {path}"}).encode(),
                )

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def do_DELETE(self) -> None:
            self._serve("DELETE")

    return Handler


def serve(port: int = 0, host: str = "127.0.0.1",
          capture_stdout: bool = False) -> tuple[ThreadingHTTPServer, DurableEndpoint]:
    """Start the endpoint on a thread; the handlers' SDK client is pointed at it."""
    service = DurableService(MemoryHistoryStore(), SystemClock(), lambda: uuid.uuid4().hex)
    endpoint = DurableEndpoint(DurableRuntime(service), install(stdout=capture_stdout))
    endpoint.runtime.output = endpoint.logs.stdout_line if endpoint.logs else None
    server = ThreadingHTTPServer((host, port), make_handler(endpoint))
    server.daemon_threads = True
    url = f"http://{host}:{server.server_address[1]}"
    os.environ["AWS_ENDPOINT_URL_LAMBDA"] = url
    for k, v in (
        ("AWS_ACCESS_KEY_ID", "orbit-local"),
        ("AWS_SECRET_ACCESS_KEY", "orbit-local"),
        ("AWS_DEFAULT_REGION", "us-east-1"),
        ("AWS_REGION", "us-east-1"),
    ):
        os.environ.setdefault(k, v)
    threading.Thread(target=server.serve_forever, name="durable-server", daemon=True).start()
    return server, endpoint


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="orbit-durable-server")
    ap.add_argument("--port", type=int, default=9570)
    ap.add_argument("--functions", help="a JSON file listing durable functions to register")
    ap.add_argument("--path", action="append", default=[], help="a directory handlers are imported from")
    a = ap.parse_args(argv)
    sys.path[:0] = a.path
    server, endpoint = serve(a.port, capture_stdout=True)
    if a.functions:
        with open(a.functions) as f:
            for d in json.load(f):
                endpoint.register(d)
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def mount_on_dev(dev: Any) -> DurableEndpoint:
    """Serve durable functions from `orbit dev`'s server (a `DevServer`): the Lambda REST paths and
    `POST /orbit/durable/functions`, on the local stack's own history store and clock, so the
    executions are in `orbit list`, `describe` and the console like any other. The handlers' SDK
    client is pointed at the dev server; handler import paths resolve from the working directory."""
    store = dev.stack.engine.store
    service = DurableService(store, dev.stack, lambda: uuid.uuid4().hex)
    endpoint = DurableEndpoint(DurableRuntime(service), install())
    endpoint.runtime.output = endpoint.logs.stdout_line if endpoint.logs else None
    os.environ["AWS_ENDPOINT_URL_LAMBDA"] = dev.url
    for k, v in (
        ("AWS_ACCESS_KEY_ID", "orbit-local"),
        ("AWS_SECRET_ACCESS_KEY", "orbit-local"),
        ("AWS_DEFAULT_REGION", "us-east-1"),
        ("AWS_REGION", "us-east-1"),
    ):
        os.environ.setdefault(k, v)
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())

    def serve_durable(handler: BaseHTTPRequestHandler, method: str, target: str, raw: bytes) -> None:
        if target.split("?", 1)[0] == "/orbit/durable/functions" and method == "POST":
            try:
                fn = endpoint.register(json.loads(raw or b"{}"))
                status, headers, body = (
                    200,
                    {"Content-Type": "application/json"},
                    json.dumps({"name": fn.name}),
                )
            except (ValueError, ValidationError) as e:
                status, headers, body = (
                    400,
                    {"Content-Type": "application/json"},
                    json.dumps({"message": str(e)}),
                )
            answer = (status, headers, body.encode())
        else:
            answer = durable_http.route(endpoint.runtime, method, target, dict(handler.headers), raw)
        status, headers, payload = answer
        handler.send_response(status)
        for k, v in headers.items():
            handler.send_header(k, v)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    for prefix in ("/2015-03-31", "/2025-12-01", "/orbit/durable"):
        dev.mount(prefix, serve_durable)
    return endpoint
