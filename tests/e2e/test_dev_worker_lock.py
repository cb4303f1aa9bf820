"""A worker's task code does not hold `orbit dev`'s engine lock (issue 25, item 6): while a task
sleeps, other requests are answered at once. `orbit dev`'s own mode (moto behind HTTP), in a module
of its own: an in-process stack cannot be open beside it."""

from __future__ import annotations

import json
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
QUICK = {"orbit": 1, "name": "quick", "version": "1", "steps": {"a": {"compute": "{% input.n + 1 %}"}}}

SLEEPS = {"orbit": 1, "name": "sleeps", "version": "1",
          "steps": {"a": {"task": "sec-http-tests.sleep", "timeout": "30s", "input": "{% input %}"}}}


@orbit.workflow("dev-warm-chain")
def warm_chain(ctx: Any, input: Any) -> Any:
    n = input["n"]
    for i in range(4):
        n = ctx.step("dev-warm.add", {"n": n, "i": i})
    return n


@worker.task("dev-warm.add")
def add(input: Any, ctx: Any) -> Any:
    return input["n"] + 1


@worker.task("sec-http-tests.sleep")
def sleeps(input: Any, ctx: Any) -> Any:
    time.sleep(input["s"])
    return "slept"


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


@pytest.fixture(scope="module")
def served() -> Iterator[DevServer]:
    """`orbit dev`'s own mode: moto behind HTTP."""
    with LocalStack(mode="server") as stack:
        for d in (QUICK, SLEEPS, warm_chain):
            stack.register(d)
        server = DevServer(stack, port=0)
        with dev_serving(server):
            yield server


def test_a_sleeping_task_holds_up_no_other_request(served: DevServer) -> None:
    start = {"workflow": "sleeps", "id": "s1", "input": {"s": 4}}
    assert call(served, "POST", "/executions", start)[0] == 201
    deadline = time.monotonic() + 20
    while not any(e["type"] == "StepScheduled" for e in call(served, "GET", "/executions/s1/history")[1]):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.5)  # the worker has the message and sleeps in it now
    began = time.monotonic()
    completes(served, "beside-the-sleeper")  # a start decides at once: no pump needed
    assert call(served, "GET", "/executions?limit=5")[0] == 200
    assert time.monotonic() - began < 2.0  # not the 3 s the task still sleeps
    deadline = time.monotonic() + 30
    while (d := call(served, "GET", "/executions/s1")[1])["status"] == "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert d["status"] == "COMPLETED" and d["output"] == {"a": "slept"}, d


def test_a_code_workflows_decisions_find_their_paused_instance(served: DevServer) -> None:
    """`orbit dev` keeps its invocation threads warm (local/dev_invocations.py): a code workflow's
    next decision runs on the thread that paused its instance and goes on from there, instead of
    replaying every step from the first (with a thread per invocation, every decision was cold)."""
    from orbit.service.replay_host import default_runtime

    stats = default_runtime().stats
    before = dict(stats)
    start = {"workflow": "dev-warm-chain", "id": "w1", "input": {"n": 0}}
    assert call(served, "POST", "/executions", start)[0] == 201
    deadline = time.monotonic() + 30
    while (d := call(served, "GET", "/executions/w1")[1])["status"] == "RUNNING":
        assert time.monotonic() < deadline, d
        time.sleep(0.05)
    assert d["status"] == "COMPLETED" and d["output"] == 4, d
    warm, cold = stats["warm"] - before["warm"], stats["cold"] - before["cold"]
    assert warm >= 3 and cold <= 2, (warm, cold)  # one cold start; each step's result warm
