"""`orbit dev` and `orbit ui` answer only their own pages and non-browser clients (issue 25, item 2).

Over plain HTTP: a forged Host (DNS rebinding), a foreign Origin or Sec-Fetch-Site, and a body
that is not JSON on a mutating route are refused on every route before the router sees them, with
one JSON line; the CLI's kind of request (no Origin, application/json) still passes. The browser
side of the same rules is tests/e2e/test_dev_origin_browser.py.
"""

from __future__ import annotations

import json
import socket
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from orbit.console.server import ConsoleServer
from orbit.local import LocalStack
from orbit.local.devserver import DevServer

from tests.e2e.http_servers import dev_serving

pytestmark = pytest.mark.e2e
VICTIM = {"orbit": 1, "name": "victim", "version": "1",
          "steps": {"wait": {"wait_for": "go"}, "done": {"compute": "{% 1 %}"}}}
EVIL = {"orbit": 1, "name": "evil", "version": "1", "steps": {"a": {"compute": "{% 1 %}"}}}


@pytest.fixture(scope="module")
def dev() -> Iterator[DevServer]:
    with LocalStack(mode="inprocess") as stack:
        stack.register(VICTIM)
        stack.start("victim", {}, id="target")
        stack.run_until_idle()
        server = DevServer(stack, port=0)
        routed: list[tuple[str, str]] = []
        inner = server.request

        def recording(method: str, target: str, raw: bytes) -> tuple[int, Any]:
            routed.append((method, target))
            return inner(method, target, raw)

        server.request = recording  # type: ignore[method-assign]
        server.routed = routed  # type: ignore[attr-defined]
        with dev_serving(server):
            yield server


def send(port: int, method: str, path: str, body: bytes | None = None, **headers: str) -> tuple[int, Any]:
    """One request with exactly these headers (`host` defaults to the served address)."""
    head = {"host": f"127.0.0.1:{port}", **{k.replace("_", "-"): v for k, v in headers.items()}}
    lines = [f"{method} {path} HTTP/1.1", *(f"{k}: {v}" for k, v in head.items() if v is not None),
             f"content-length: {len(body or b'')}", "connection: close", "", ""]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall("\r\n".join(lines).encode() + (body or b""))
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head_bytes, _, payload = answer.partition(b"\r\n\r\n")
    return int(head_bytes.split(b" ", 2)[1]), json.loads(payload)


def state(dev: DevServer) -> tuple[list[str], list[str], list[str]]:
    """(workflows, execution ids, target's event types), read in process, past the HTTP checks."""
    engine = dev.stack.engine
    names = [w["name"] for w in engine.workflows()]
    entries, _ = engine.list(None, None, 100, None)
    events = [e["type"] for e in engine.history("target", 0, 1000, True)]
    return names, sorted(e.to_dict()["execution_id"] for e in entries), events


HOSTILE = [
    ("POST", "/definitions", json.dumps(EVIL)),
    ("POST", "/executions", json.dumps({"workflow": "victim", "id": "pwned"})),
    ("POST", "/executions/target/signals/go", json.dumps({"payload": 1})),
    ("POST", "/executions/target/cancel", "{}"),
    ("GET", "/executions", None),
    ("GET", "/executions/target/history", None),
]


@pytest.mark.parametrize("method,path,body", HOSTILE)
def test_a_forged_host_a_foreign_origin_and_a_text_body_are_refused_on_every_route(
        dev: DevServer, method: str, path: str, body: str | None) -> None:
    before = state(dev)
    raw = None if body is None else body.encode()
    json_type = {"content_type": "application/json"}
    cases = [
        ({"host": f"evil.example:{dev.port}", **json_type}, 421, "MISDIRECTED"),  # DNS rebinding
        ({"host": f"127.0.0.1:{dev.port + 1}", **json_type}, 421, "MISDIRECTED"),
        ({"origin": "http://127.0.0.1:9", **json_type}, 403, "CROSS_ORIGIN"),
        ({"origin": "null", **json_type}, 403, "CROSS_ORIGIN"),
        ({"sec_fetch_site": "same-site", **json_type}, 403, "CROSS_ORIGIN"),
    ]
    if method == "POST":
        cases += [({"content_type": "text/plain"}, 415, "UNSUPPORTED_MEDIA_TYPE"),
                  ({"content_type": "application/x-www-form-urlencoded"}, 415, "UNSUPPORTED_MEDIA_TYPE"),
                  ({}, 415, "UNSUPPORTED_MEDIA_TYPE")]
    routed = len(dev.routed)  # type: ignore[attr-defined]
    for headers, status, code in cases:
        got, answer = send(dev.port, method, path, raw, **headers)
        assert (got, answer["error"]["code"]) == (status, code), headers
        assert "\n" not in answer["error"]["message"] and len(answer["error"]["message"]) < 300
    assert len(dev.routed) == routed  # type: ignore[attr-defined]  # the router saw none of them
    assert state(dev) == before


def test_the_message_names_what_was_refused(dev: DevServer) -> None:
    status, answer = send(dev.port, "POST", "/executions", b"{}", host=f"rebind.example:{dev.port}",
                          content_type="application/json")
    assert answer["error"]["message"].startswith(f"Host 'rebind.example:{dev.port}' is not an address")
    status, answer = send(dev.port, "POST", "/executions", b"{}", content_type="text/plain;charset=UTF-8")
    assert status == 415 and "application/json" in answer["error"]["message"]
    assert "'text/plain;charset=UTF-8'" in answer["error"]["message"]


def test_the_cli_kind_of_request_and_a_same_origin_page_still_pass(dev: DevServer) -> None:
    for host in (f"127.0.0.1:{dev.port}", f"localhost:{dev.port}", f"[::1]:{dev.port}"):
        assert send(dev.port, "GET", "/executions/target", host=host)[0] == 200
    same = {"origin": f"http://127.0.0.1:{dev.port}", "sec_fetch_site": "same-origin",
            "content_type": "application/json; charset=utf-8"}
    assert send(dev.port, "GET", "/workflows", **same)[0] == 200
    assert send(dev.port, "POST", "/executions/target/queries/nope", b"{}", **same)[0] == 400  # routed
    req = urllib.request.Request(f"{dev.url}/executions", method="GET")  # urllib, as orbit.Client
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200
    # a body-less POST (curl -X POST) carries nothing a page could forge a type for
    assert send(dev.port, "POST", "/executions/target/unpark")[0] == 409
    # the user's own click on a link to the server from another site is a navigation: it reads nothing
    link = {"sec_fetch_site": "cross-site", "sec_fetch_mode": "navigate"}
    assert send(dev.port, "GET", "/workflows", **link)[0] == 200


@pytest.fixture
def ui(dev: DevServer) -> Iterator[ConsoleServer]:
    server = ConsoleServer(lambda m, t, b: dev.call(m, t, b), port=0, target=dev.url).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("length,status", [("abc", 400), ("-1", 400), ("1e3", 400), ("²", 400),
                                           ("99999999999", 413)])
def test_orbit_ui_answers_a_bad_content_length_with_one_line_at_once(ui: ConsoleServer, length: str,
                                                                     status: int) -> None:
    request = (f"POST /console/api/executions/target/cancel HTTP/1.1\r\nhost: 127.0.0.1:{ui.port}\r\n"
               f"content-type: application/json\r\ncontent-length: {length}\r\n\r\n{{}}").encode()
    with socket.create_connection(("127.0.0.1", ui.port), timeout=5) as sock:  # a wait is a timeout here
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert int(head.split(b" ", 2)[1]) == status
    assert json.loads(body)["error"]["code"] in ("BAD_FRAMING", "PAYLOAD_TOO_LARGE")


def test_orbit_ui_refuses_a_forged_host_and_a_foreign_origin(ui: ConsoleServer) -> None:
    assert send(ui.port, "GET", "/console/api/executions", host=f"evil.example:{ui.port}")[0] == 421
    assert send(ui.port, "GET", "/console/api/executions", origin="http://127.0.0.1:9")[0] == 403
    assert send(ui.port, "GET", "/console/api/executions")[0] == 200
