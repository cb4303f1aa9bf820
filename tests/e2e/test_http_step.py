"""The HTTP step example against a server on loopback, allowed explicitly; refused by default."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from orbit.local import LocalStack

ALLOW_LOOPBACK = {"HttpTaskEnabled": "true", "HttpAllowedHosts": "127.0.0.1", "HttpPrivateHosts": "127.0.0.1"}


@pytest.fixture
def echo_server():
    received: list[dict] = []

    class Echo(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the stdlib's name
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            received.append(body)
            out = json.dumps({"you_sent": body}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/hook", received
    httpd.shutdown()
    httpd.server_close()


def test_http_step_calls_an_allowed_loopback_server(echo_server):
    url, received = echo_server
    with LocalStack(mode="inprocess", parameters=ALLOW_LOOPBACK) as stack:
        stack.register("examples/http_ping.yaml")
        eid = stack.start("http-ping", {"url": url}, id="ping-1")
        desc = stack.run_until_done(eid)
    assert desc["status"] == "COMPLETED", desc
    assert received == [{"hello": "orbit", "id": "ping-1"}]
    assert desc["output"] == {"status": 200, "echoed": {"you_sent": {"hello": "orbit", "id": "ping-1"}}}


def test_http_step_is_refused_unless_enabled(echo_server):
    url, received = echo_server
    with LocalStack(mode="inprocess") as stack:  # the template's defaults: HTTP task off
        stack.register("examples/http_ping.yaml")
        desc = stack.run_until_done(stack.start("http-ping", {"url": url}))
    assert desc["status"] == "FAILED" and desc["error"]["code"] == "ADAPTER_DISABLED"
    assert received == []
