"""Issue 25 items 1 and 3, probed as an attacker would, over HTTP against a real `orbit dev`:
a definition naming `os:system` / `os:getenv` as an inline task is refused at registration and
nothing runs; ids the engine derives cannot be taken through fork or start."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from orbit.local import LocalStack
from orbit.local.devserver import DevServer

from tests.e2e.http_servers import dev_serving

DEFINITION = {"orbit": 1, "name": "plain", "version": "1", "steps": {"a": {"compute": "{% input.n + 1 %}"}}}


@pytest.fixture(scope="module")
def dev() -> Iterator[DevServer]:
    with LocalStack(mode="inprocess") as stack:
        stack.register(DEFINITION)
        server = DevServer(stack, port=0)
        with dev_serving(server):
            yield server


def call(dev: DevServer, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(dev.url + path, data=data, method=method,
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


@pytest.mark.parametrize("task", ["os:system", "os:getenv"])
def test_a_definition_naming_a_python_function_as_inline_task_is_refused_and_nothing_runs(
        dev: DevServer, tmp_path: Path, task: str) -> None:
    marker = tmp_path / "owned"
    hostile = {"orbit": 1, "name": f"hostile-{task.replace(':', '-')}", "steps": {
        "run": {"task": task, "inline": True, "input": "{% input.cmd %}"}},
        "output": "{% steps.run.output %}"}
    status, body = call(dev, "POST", "/definitions", hostile)
    assert status == 400, body
    message = body["error"]["message"]
    assert f"inline task {task!r} of step 'run' is not registered" in message and "\n" not in message
    status, body = call(dev, "POST", "/executions", {"workflow": hostile["name"],
                                                     "input": {"cmd": f"touch {marker}"}})
    assert status == 404, body  # nothing was registered, so nothing can be started
    assert not marker.exists()


@pytest.mark.parametrize("bad", ["P1/kid", "C1~1", "schedule:nightly", "nightly:2026-01-02T00:00:00Z",
                                 "x\ny", "<img src=x onerror=alert(1)>"])
def test_fork_and_start_refuse_ids_the_engine_derives_or_that_carry_markup(dev: DevServer, bad: str) -> None:
    status, body = call(dev, "POST", "/executions", {"workflow": "plain", "input": {"n": 1}, "id": "P1"})
    assert status == 201, body
    status, body = call(dev, "POST", "/executions/P1/fork", {"from_step": "a", "id": bad})
    assert status == 400 and body["error"]["problems"][0]["path"] == "body.id", body
    status, body = call(dev, "POST", "/executions", {"workflow": "plain", "input": {"n": 1}, "id": bad})
    assert status == 400 and body["error"]["problems"][0]["path"] == "body.id", body
    status, _ = call(dev, "GET", "/executions/" + urllib.request.quote(bad, safe=""))
    assert status == 404
