"""Issue 25 item 2 and Low, against a real `orbit dev`: it refuses requests a web page could send
(a foreign Host after DNS rebinding, a cross-origin Origin or Sec-Fetch-Site, a body that is not
application/json on a mutating route) before anything is routed; caller text never reaches the
terminal raw; the same signal id with another payload is a 409. (Written against branch sec-http
before it was merged; each case failed on main before it.)"""

from __future__ import annotations

import time

import pytest

from tests.security.harness import DevProcess, in_child, one_line_error

REBOUND = "attacker.example"
EVIL = "http://attacker.example"
WAITS = {"orbit": 1, "name": "sec-waits", "version": "1", "steps": {"a": {"wait_for": "go"}}}


def _nothing_under(dev: DevProcess, eid: str, workflow: str) -> None:
    assert dev.request("GET", f"/executions/{eid}")[0] == 404, f"{eid} was started"
    status, body = dev.request("POST", "/executions", {"workflow": workflow, "id": f"probe-{eid}"})
    assert status == 404, f"{workflow} was registered: {body}"


def test_a_foreign_host_is_refused_on_every_route(dev: DevProcess) -> None:
    host = {"Host": f"{REBOUND}:{dev.port}"}
    for method, path, body in [("GET", "/executions", None), ("GET", "/definitions", None),
                               ("POST", "/definitions", {**WAITS, "name": "rebound"}),
                               ("POST", "/executions", {"workflow": "sec-plain", "id": "rebound-1"})]:
        status, answer = dev.request(method, path, body, headers=host)
        assert status == 421, (method, path, answer)
        assert REBOUND in one_line_error(answer)
    _nothing_under(dev, "rebound-1", "rebound")


@pytest.mark.parametrize("headers", [{"Origin": EVIL}, {"Origin": "null"},
                                     {"Sec-Fetch-Site": "cross-site"}], ids=["origin", "null", "fetch-site"])
def test_a_cross_origin_request_is_refused_and_nothing_is_read_or_done(dev: DevProcess,
                                                                       headers: dict[str, str]) -> None:
    eid = f"cross-{len(headers['Origin']) if 'Origin' in headers else 'site'}"
    name = f"cross-{eid}"
    for method, path, body in [("GET", "/executions", None),
                               ("POST", "/definitions", {**WAITS, "name": name}),
                               ("POST", "/executions", {"workflow": "sec-plain", "id": eid})]:
        status, answer = dev.request(method, path, body, headers=headers)
        assert status == 403, (method, path, answer)
        one_line_error(answer)
    _nothing_under(dev, eid, name)


def test_a_mutating_body_that_is_not_json_typed_is_refused(dev: DevProcess) -> None:
    """What `fetch(url, {method: "POST", mode: "no-cors", body})` sends: text/plain, no preflight."""
    raw = b'{"workflow": "sec-plain", "id": "plain-text-1", "input": {"n": 1}}'
    for ctype in ("text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                  "multipart/form-data; boundary=x"):
        status, answer = dev.request("POST", "/executions", raw=raw, headers={"Content-Type": ctype})
        assert status == 415, (ctype, answer)
        one_line_error(answer)
    assert dev.request("GET", "/executions/plain-text-1")[0] == 404


def test_caller_text_reaches_orbit_devs_terminal_escaped(dev: DevProcess) -> None:
    hostile = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\u202eevil"
    assert dev.request("POST", "/definitions", WAITS)[0] in (200, 201)
    assert dev.request("POST", "/executions", {"workflow": "sec-waits", "id": "escapes-1"})[0] == 201
    assert dev.request("POST", "/executions/escapes-1/cancel", {"reason": hostile})[0] in (200, 202)
    deadline = time.monotonic() + 15
    while not any("escapes-1" in line and "ended" in line for line in dev.lines):
        assert time.monotonic() < deadline, "orbit dev printed no ended line"
        time.sleep(0.05)
    printed = "".join(line for line in dev.lines if "escapes-1" in line)
    assert "pwned" in printed
    for ch in ("\x1b", "\x07", "\u202e"):
        assert ch not in printed, repr(printed)


def test_the_same_signal_id_with_another_payload_is_a_409_naming_the_difference() -> None:
    first, again, other = in_child("""
        sim = world()
        sim.register(definition("plain", {"w": {"wait_for": "go"},
                                          "x": {"wait_for": "stop", "after": ["w"]}}))
        call(sim, "POST", "/executions", {"workflow": "plain", "id": "e1"})
        sim.run()
        first = call(sim, "POST", "/executions/e1/signals/go", {"id": "s1", "payload": {"amount": 1}})
        sim.run()  # received: a signal still queued is not known yet
        again = call(sim, "POST", "/executions/e1/signals/go", {"id": "s1", "payload": {"amount": 1}})
        other = call(sim, "POST", "/executions/e1/signals/go", {"id": "s1", "payload": {"amount": 1000}})
        emit([first, again, other])
    """, "a signal id reused with another payload")
    assert first[0] == 202 and again[0] == 202, (first, again)
    status, body = other
    assert status == 409, body
    assert "payload" in one_line_error(body)
