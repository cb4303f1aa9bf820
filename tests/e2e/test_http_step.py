"""The HTTP step example against a server on loopback, allowed explicitly; refused by default."""

from __future__ import annotations

import pytest
from orbit.local import LocalStack

from tests.e2e.http_servers import echo, serve

ALLOW_LOOPBACK = {"HttpTaskEnabled": "true", "HttpAllowedHosts": "127.0.0.1", "HttpPrivateHosts": "127.0.0.1"}


@pytest.fixture
def echo_server():
    received: list[dict] = []
    with serve(echo(received, lambda body: {"you_sent": body})) as url:
        yield f"{url}/hook", received


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
