"""One caller's code does not block every caller of `orbit dev` (issue 25, item 6).

- A query handler that loops is stopped after the bound and answered with USER_CODE_TIMEOUT, while
  other requests are served meanwhile and the pump goes on: the engine lock is let go.
- An update validator that loops: the same.
- SystemExit raised by a query handler is that query's failure (400), not the server's.
- An inline step that raises SystemExit fails its invocation only: the pump lives on and other
  executions still run to their end.
Each runs against a real DevServer over HTTP; every wait is bounded, so a regression fails.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import orbit
import pytest
from orbit import worker
from orbit.local import LocalStack
from orbit.local.devserver import DevServer

from tests.e2e.http_servers import dev_serving

pytestmark = pytest.mark.e2e
BOUND_S = 1.5
QUICK = {"orbit": 1, "name": "quick", "version": "1", "steps": {"a": {"compute": "{% input.n + 1 %}"}}}
EXITS = {"orbit": 1, "name": "exits", "version": "1",  # the inline step runs in the pump's decider
         "steps": {"w": {"wait_for": "go"},
                   "a": {"task": "sec-http-tests.exit", "inline": True, "timeout": "2s", "after": ["w"]}}}
EXITS_AT_START = {"orbit": 1, "name": "exits-at-start", "version": "1",  # in the start request's decision
                  "steps": {"a": {"task": "sec-http-tests.exit", "inline": True, "timeout": "2s"}}}


@worker.task("sec-http-tests.exit")
def exits(input: Any, ctx: Any) -> Any:
    raise SystemExit(3)


@orbit.workflow("loops", version="1")
def loops(ctx: Any, input: Any) -> Any:
    def spin(_: Any) -> Any:
        while True:
            pass

    def leave(_: Any) -> Any:
        raise SystemExit("bye")

    def check(_: Any) -> None:
        while True:
            pass

    ctx.query_handler("spin", spin)
    ctx.query_handler("leave", leave)
    ctx.query_handler("ok", lambda _: "fine")
    ctx.update_handler("add", lambda x: x, validator=check)
    ctx.wait_for("never")
    return None


@pytest.fixture(scope="module")
def dev() -> Iterator[DevServer]:
    with LocalStack(mode="inprocess") as stack:
        for d in (QUICK, EXITS, EXITS_AT_START):
            stack.register(d)
        stack.register(loops)
        server = DevServer(stack, port=0, user_code_timeout_s=BOUND_S)
        with dev_serving(server):
            yield server


def call(dev: DevServer, method: str, path: str, body: Any = None, timeout: float = 20) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(dev.url + path, data=data, method=method,
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def completes(dev: DevServer, eid: str, timeout_s: float = 20) -> None:
    assert call(dev, "POST", "/executions", {"workflow": "quick", "id": eid, "input": {"n": 1}})[0] == 201
    deadline = time.monotonic() + timeout_s
    while (d := call(dev, "GET", f"/executions/{eid}")[1])["status"] != "COMPLETED":
        assert time.monotonic() < deadline, d
        time.sleep(0.05)
    assert d["output"] == {"a": 2}


def waiting(dev: DevServer, eid: str) -> None:
    assert call(dev, "POST", "/executions", {"workflow": "loops", "id": eid})[0] == 201
    deadline = time.monotonic() + 20
    while not any(e["type"] == "WaitStarted" for e in call(dev, "GET", f"/executions/{eid}/history")[1]):
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_a_looping_query_is_stopped_and_blocks_no_other_request(dev: DevServer) -> None:
    waiting(dev, "q1")
    answers: dict[str, Any] = {}

    def ask() -> None:
        started = time.monotonic()
        answers["spin"] = call(dev, "POST", "/executions/q1/queries/spin", {})
        answers["took"] = time.monotonic() - started

    asker = threading.Thread(target=ask)
    asker.start()
    time.sleep(0.3)  # the handler is spinning now
    meanwhile = time.monotonic()
    completes(dev, "during-spin")  # start, pump, describe: all while the handler loops
    assert call(dev, "POST", "/executions/q1/queries/ok", {}) == (200, {"result": "fine"})
    assert time.monotonic() - meanwhile < BOUND_S + 5
    asker.join(timeout=30)
    status, body = answers["spin"]
    assert status == 400 and body["error"]["code"] == "USER_CODE_TIMEOUT", body
    assert body["error"]["message"].startswith(f"query 'spin' of execution 'q1' ran past {BOUND_S:g} s")
    assert BOUND_S <= answers["took"] < BOUND_S + 5
    # the spinning thread was stopped, not left burning a core
    deadline = time.monotonic() + 5
    while any(t.name == "orbit-user-code" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the looping handler is still running"
        time.sleep(0.05)


def test_a_looping_update_validator_is_stopped_too(dev: DevServer) -> None:
    waiting(dev, "u1")
    status, body = call(dev, "POST", "/executions/u1/updates/add", {"input": 1, "timeout": 1})
    assert status == 400 and body["error"]["code"] == "USER_CODE_TIMEOUT", body
    assert "the validator of update 'add' of execution 'u1' ran past" in body["error"]["message"]
    assert not any(e["type"].startswith("Update") for e in call(dev, "GET", "/executions/u1/history")[1])
    completes(dev, "after-validator")


def test_system_exit_from_a_query_handler_is_its_failure(dev: DevServer) -> None:
    waiting(dev, "q2")
    status, body = call(dev, "POST", "/executions/q2/queries/leave", {})
    assert status == 400 and body["error"] == {
        "code": "USER_CODE_ERROR", "message": "query 'leave' of execution 'q2' raised SystemExit: bye"}
    completes(dev, "after-exit")


def test_an_inline_step_raising_system_exit_does_not_kill_the_pump(dev: DevServer) -> None:
    assert call(dev, "POST", "/executions", {"workflow": "exits", "id": "x1"})[0] == 201
    deadline = time.monotonic() + 20
    while not any(e["type"] == "WaitStarted" for e in call(dev, "GET", "/executions/x1/history")[1]):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    errors = len(dev.stack.cloud.errors)
    assert call(dev, "POST", "/executions/x1/signals/go", {})[0] == 202
    deadline = time.monotonic() + 20
    while len(dev.stack.cloud.errors) == errors:  # the decider's invocation ended with SystemExit
        assert time.monotonic() < deadline, "the inline step never ran"
        time.sleep(0.05)
    assert isinstance(dev.stack.cloud.errors[-1][1], SystemExit)
    assert dev._pump.is_alive()
    completes(dev, "after-inline-exit")  # the pump still advances other executions
    assert dev._pump.is_alive()


def test_an_inline_step_raising_system_exit_in_a_start_fails_that_request_only(dev: DevServer) -> None:
    status, body = call(dev, "POST", "/executions", {"workflow": "exits-at-start", "id": "x2"})
    assert status == 500 and body["error"] == {
        "code": "USER_CODE_ERROR", "message": "POST /executions stopped: code it ran raised SystemExit: 3"}
    completes(dev, "after-start-exit")

