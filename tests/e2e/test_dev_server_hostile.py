"""`orbit dev` as a real HTTP server facing hostile clients (issue 17, classes 1, 6 and 8).

Each test checks together: nothing fetched (a loopback server counts GETs), nothing accepted
and then lost (a normal execution started afterwards completes, and only accepted ones exist),
and another client is answered within 1 s of CPU time while the hostile one is being handled.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from orbit.local import LocalStack
from orbit.local.devserver import DevServer

from tests.e2e.http_servers import Quiet, dev_serving, serve
from tests.unit.meanwhile import answered_meanwhile

# How long a client silent mid-request keeps its connection: long enough that another client is
# surely answered meanwhile on a loaded machine, short enough for the test.
READ_TIMEOUT_S = 4.0
DEFINITION = {"orbit": 1, "name": "wf", "version": "1", "steps": {"a": {"compute": "{% input.n + 1 %}"}}}


class _Counting(Quiet):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        _Counting.hits.append(self.path)
        self.reply(200, b'{"type": "object"}')


@pytest.fixture(scope="module")
def dev() -> Iterator[DevServer]:
    with LocalStack(mode="inprocess") as stack:
        stack.register(DEFINITION)
        server = DevServer(stack, port=0, read_timeout_s=READ_TIMEOUT_S)
        with dev_serving(server):
            yield server


@pytest.fixture
def loopback() -> Iterator[tuple[str, list[str]]]:
    _Counting.hits = []
    with serve(_Counting) as url:
        yield url, _Counting.hits


def _call(dev: DevServer, method: str, path: str, body: Any = None, timeout: float = 5) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(dev.url + path, data=data, method=method,
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def _raw(dev: DevServer, data: bytes, read: bool = True) -> tuple[int, dict[str, Any], socket.socket]:
    """Send `data` as is, but for `host: x`, which becomes the served address and a JSON content type
    (what a hostile client that passes the origin checks sends); (status, JSON body, the open socket)."""
    host = f"host: 127.0.0.1:{dev.port}\r\n".encode()
    if b"content-type" not in data:
        host += b"content-type: application/json\r\n"
    data = data.replace(b"host: x\r\n", host)
    sock = socket.create_connection(("127.0.0.1", dev.port), timeout=5)
    try:
        sock.sendall(data)
    except OSError:
        pass  # the server may close on us once it has answered
    if not read:
        return 0, {}, sock
    answer = b""
    try:
        while chunk := sock.recv(65536):
            answer += chunk
    except OSError:
        pass
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    assert b"content-type: application/json" in head.lower(), head
    return status, json.loads(body), sock


def _still_answers(dev: DevServer, hostile: Callable[[], Any] | None = None,
                   must_overlap: bool = False) -> Any:
    """Another client is answered within 1 s of CPU time while `hostile` runs (the server runs in
    this process, so its threads count: tests/unit/meanwhile.py; one try, no best-of-three).
    `must_overlap`: answered before the hostile client's exchange ended. Returns what `hostile` did."""
    def other() -> None:
        status, body = _call(dev, "GET", "/executions?limit=5", timeout=30)
        assert status == 200 and "executions" in body

    return answered_meanwhile(hostile or (lambda: None), other, must_overlap=must_overlap)


def _nothing_lost(dev: DevServer, eid: str) -> None:
    assert _call(dev, "POST", "/executions", {"workflow": "wf", "id": eid, "input": {"n": 1}})[0] == 201
    deadline = time.monotonic() + 20
    while (d := _call(dev, "GET", f"/executions/{eid}")[1])["status"] != "COMPLETED":
        assert time.monotonic() < deadline, d
        time.sleep(0.05)
    assert d["output"] == {"a": 2}


@pytest.mark.parametrize("length,send", [(6 * 1024 * 1024 + 1, 0), (100 * 1024 * 1024, 64 * 1024)])
def test_an_over_large_body_is_a_413_before_it_is_read(dev, length: int, send: int) -> None:
    request = (f"POST /executions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
               f"content-length: {length}\r\n\r\n").encode() + b" " * send
    status, body, sock = _still_answers(dev, lambda: _raw(dev, request))
    sock.close()
    assert status == 413 and body["error"]["code"] == "PAYLOAD_TOO_LARGE"
    _nothing_lost(dev, f"after-413-{length}")


@pytest.mark.parametrize("header", ["abc", "-1", "1e3", "12, 12"])
def test_a_bad_content_length_is_a_400(dev, header: str) -> None:
    request = f"POST /executions HTTP/1.1\r\nhost: x\r\ncontent-length: {header}\r\n\r\n{{}}".encode()
    status, body, sock = _still_answers(dev, lambda: _raw(dev, request))
    sock.close()
    assert status == 400 and body["error"]["code"] == "BAD_FRAMING", body
    _nothing_lost(dev, f"after-bad-length-{sorted(['abc', '-1', '1e3', '12, 12']).index(header)}")


@pytest.mark.parametrize("request_bytes", [
    b"POST /executions HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    b"GARBAGE\r\n\r\n",
    b"GET /executions HTTP/1.1 extra\r\nhost: x\r\n\r\n",
])
def test_malformed_framing_is_a_json_400(dev, request_bytes: bytes) -> None:
    status, body, sock = _still_answers(dev, lambda: _raw(dev, request_bytes))
    sock.close()
    assert status == 400 and "error" in body, body


@pytest.mark.parametrize("method", ["HEAD", "OPTIONS", "PATCH", "TRACE", "BREW"])
def test_unsupported_methods_get_a_json_405(dev, method: str) -> None:
    status, body, sock = _raw(dev, f"{method} /executions HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
                              .encode()) if method != "HEAD" else (0, {}, None)
    if method == "HEAD":  # no body to a HEAD: the status and the JSON content type
        conn = socket.create_connection(("127.0.0.1", dev.port), timeout=5)
        conn.sendall(b"HEAD /executions HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        head = conn.recv(65536)
        conn.close()
        assert head.startswith(b"HTTP/1.0 405") and b"application/json" in head.lower(), head
    else:
        sock.close()
        assert status == 405 and body["error"]["code"] == "METHOD_NOT_ALLOWED", body
    _still_answers(dev)
    _nothing_lost(dev, f"after-{method.lower()}")


@pytest.mark.parametrize("sent", [b"", b'{"workflow": "wf", "in'])
def test_a_slow_client_never_holds_the_lock_and_is_dropped(dev, sent: bytes) -> None:
    request = b"POST /executions HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n" + sent
    _, _, slow = _raw(dev, request, read=False)  # announces 100 bytes, sends fewer, then goes silent

    def stuck_until_dropped() -> bytes:
        slow.settimeout(READ_TIMEOUT_S + 30)
        answer = b""
        while chunk := slow.recv(65536):  # dropped after the read timeout, with a 400 saying why
            answer += chunk
        return answer

    try:
        # Waiting on a silent socket costs no CPU: the order of events shows a held lock instead.
        # Another client is answered while this one is still stuck mid-body (READ_TIMEOUT_S).
        answer = _still_answers(dev, stuck_until_dropped, must_overlap=True)
        assert b" 400 " in answer.split(b"\r\n")[0] and b"BAD_FRAMING" in answer, answer
    finally:
        slow.close()
    ids = [e["execution_id"] for e in _call(dev, "GET", "/executions?limit=1000")[1]["executions"]]
    assert not any(i.startswith("slow") for i in ids)
    _still_answers(dev)
    _nothing_lost(dev, f"after-slow-{len(sent)}")


def test_many_concurrent_clients_are_all_answered(dev) -> None:
    answers: list[Any] = []

    def one() -> None:
        try:  # a generous timeout: 2 shared cores; what must never happen is a reset
            answers.append(_call(dev, "GET", "/executions?limit=1", timeout=60)[0])
        except OSError as e:
            answers.append(repr(e))

    threads = [threading.Thread(target=one) for _ in range(48)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=90)
    assert answers.count(200) == 48, answers
    assert dev.httpd.request_queue_size >= 128
    _still_answers(dev)


@pytest.mark.parametrize("payload", ['{"x": "\\ud800"}', "[" * 5000 + "]" * 5000])
def test_lone_surrogates_and_deep_json_are_a_400_over_the_wire(dev, payload: str) -> None:
    text = '{"workflow": "wf", "id": "bad-input", "input": ' + payload + "}"
    request = (f"POST /executions HTTP/1.1\r\nhost: x\r\ncontent-length: {len(text)}\r\n"
               f"connection: close\r\n\r\n{text}").encode()
    status, body, sock = _still_answers(dev, lambda: _raw(dev, request))
    sock.close()
    assert status == 400 and body["error"]["code"] == "VALIDATION_ERROR", body
    assert _call(dev, "GET", "/executions/bad-input")[0] == 404  # refused, so nothing recorded


@pytest.mark.parametrize("ref", ["{url}/s.json", "file:///etc/passwd"])
def test_a_definition_with_a_remote_schema_is_refused_over_the_wire(dev, loopback, ref: str) -> None:
    url, hits = loopback
    doc = {**DEFINITION, "name": "remote", "input": {"$ref": ref.format(url=url)}}
    status, body = _still_answers(dev, lambda: _call(dev, "POST", "/definitions", doc))
    assert status == 400 and "input: invalid JSON Schema: $ref" in body["error"]["message"], body
    assert _call(dev, "POST", "/executions", {"workflow": "remote"})[0] == 404
    assert hits == []


@pytest.mark.parametrize("body", [{"seconds": "nan"}, {"seconds": -5}, {"seconds": 1e300}, [1], "[" * 5000])
def test_the_local_advance_route_refuses_what_is_not_a_sane_duration(dev, body: Any) -> None:
    text = body if isinstance(body, str) else json.dumps(body)
    request = (f"POST /_local/advance HTTP/1.1\r\nhost: x\r\ncontent-length: {len(text)}\r\n"
               f"connection: close\r\n\r\n{text}").encode()
    status, answer, sock = _still_answers(dev, lambda: _raw(dev, request))
    sock.close()
    assert status == 400 and answer["error"]["code"] == "VALIDATION_ERROR", answer
