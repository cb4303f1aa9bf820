"""The console server's routing and safety checks, with a recording backend instead of an API."""

from __future__ import annotations

import json
from typing import Any

import pytest
from orbit.console.server import PREFIX, ConsoleApp, allowed_hosts

HOST = "127.0.0.1:8780"


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []

    def __call__(self, method: str, target: str, body: Any) -> tuple[int, Any]:
        self.calls.append((method, target, body))
        if target.endswith("/workflow"):
            return 200, {"kind": "definition", "name": "wf", "signals": {
                "approval": {"type": "object", "required": ["approved"]}, "any": None}}
        if "/cancel" in target:
            return 409, {"error": {"code": "CONFLICT", "message": "execution 'e' has already ended (FAILED)"}}
        return 200, {"ok": True}


@pytest.fixture
def app() -> tuple[ConsoleApp, Recorder]:
    rec = Recorder()
    return ConsoleApp(rec, allowed_hosts("127.0.0.1", 8780), "http://api"), rec


def call(app: ConsoleApp, method: str, path: str, body: Any = None, **headers: str) -> tuple[int, Any]:
    h = {"host": HOST, **{k.replace("_", "-"): v for k, v in headers.items()}}
    raw = b"" if body is None else json.dumps(body).encode()
    status, hdrs, out = app.handle(method, path, h, raw)
    return status, (json.loads(out) if hdrs.get("content-type") == "application/json" and out else out)


def post(app: ConsoleApp, path: str, body: Any, **headers: str) -> tuple[int, Any]:
    base = {"x_orbit_csrf": app.csrf, "content_type": "application/json", "origin": f"http://{HOST}"}
    return call(app, "POST", path, body, **{**base, **headers})


def test_index_carries_the_csrf_token_and_a_csp(app: tuple[ConsoleApp, Recorder]) -> None:
    console, _ = app
    status, hdrs, body = console.handle("GET", PREFIX + "/", {"host": HOST}, b"")
    assert status == 200 and console.csrf.encode() in body and b"__CSRF__" not in body
    assert "script-src 'self'" in hdrs["content-security-policy"]
    assert console.handle("GET", "/", {"host": HOST}, b"")[:2] == (302, {"location": PREFIX + "/"})


def test_reads_pass_only_the_console_routes(app: tuple[ConsoleApp, Recorder]) -> None:
    console, rec = app
    assert call(console, "GET", PREFIX + "/api/executions?status=FAILED&workflow=&id_prefix=a%26b")[0] == 200
    assert rec.calls[-1] == ("GET", "/executions?status=FAILED&id_prefix=a%26b", None)
    assert call(console, "GET", PREFIX + "/api/counts")[0] == 200
    status, body = call(console, "GET", PREFIX + "/api/_local/advance")
    assert status == 404 and len(rec.calls) == 2


def test_actions_need_token_origin_and_json(app: tuple[ConsoleApp, Recorder]) -> None:
    console, rec = app
    path = PREFIX + "/api/executions/e/signals/approval"
    assert post(console, path, {}, x_orbit_csrf="wrong")[0] == 403
    assert post(console, path, {}, origin="http://evil.example")[0] == 403
    assert post(console, path, {}, content_type="text/plain")[0] == 415
    assert rec.calls == []
    assert post(console, path, {"payload": {"approved": True}})[0] == 202
    assert rec.calls == [("POST", "/executions/e/signals/approval", {"payload": {"approved": True}})]
    assert post(console, PREFIX + "/api/definitions", {"text": "x"})[0] == 404  # not an action
    assert call(console, "GET", PREFIX + "/api/x", host="evil.example:8780")[0] == 421  # DNS rebinding


def test_a_refusal_comes_back_as_the_api_said_it(app: tuple[ConsoleApp, Recorder]) -> None:
    console, _ = app
    status, body = post(console, PREFIX + "/api/executions/e/cancel", {"force": True})
    assert status == 409 and body["error"]["message"] == "execution 'e' has already ended (FAILED)"


def test_signal_payloads_are_checked_against_the_contract(app: tuple[ConsoleApp, Recorder]) -> None:
    console, _ = app
    check = PREFIX + "/api/_check_signal/e/"
    assert post(console, check + "approval", {"payload": {"approved": True}}) == (200, {"ok": True})
    status, body = post(console, check + "approval", {"payload": {}})
    assert status == 400 and body["error"]["code"] == "PAYLOAD_REFUSED"
    assert "approved" in body["error"]["message"]
    assert post(console, check + "any", {"payload": [1]})[0] == 200
    status, body = post(console, check + "nope", {"payload": {}})
    assert status == 400 and "it knows: any, approval" in body["error"]["message"]


def test_static_files_stay_inside_the_package(app: tuple[ConsoleApp, Recorder]) -> None:
    console, _ = app
    assert call(console, "GET", PREFIX + "/app.js")[0] == 200
    assert call(console, "GET", PREFIX + "/vendor/dagre.min.js")[0] == 200
    for bad in ("/../server.py", "/%2e%2e/server.py", "/vendor/../../data.py", "/nope.js"):
        assert call(console, "GET", PREFIX + bad)[0] == 404, bad


def test_a_console_on_every_address_answers_ip_literals_and_its_names_but_not_a_rebound_one() -> None:
    rec = Recorder()
    console = ConsoleApp(rec, allowed_hosts("0.0.0.0", 8780))
    loopback = allowed_hosts("localhost", 1)
    assert loopback.allows("localhost:1") and loopback.allows("[::1]:1")
    assert not allowed_hosts("localhost", 1).allows("localhost:2")
    assert allowed_hosts("192.168.1.5", 1).allows("192.168.1.5:1")
    assert not allowed_hosts("192.168.1.5", 1).allows("10.0.0.1:1")
    headers = {"host": "192.168.1.5:8780", "x-orbit-csrf": console.csrf, "content-type": "application/json"}
    path = PREFIX + "/api/executions/e/signals/approval"
    assert console.handle("POST", path, {**headers, "origin": "http://192.168.1.5:8780"}, b"{}")[0] == 202
    assert console.handle("POST", path, {**headers, "origin": "http://evil.example"}, b"{}")[0] == 403
    rebound = {**headers, "host": "evil.example:8780", "origin": "http://evil.example:8780"}
    assert console.handle("POST", path, rebound, b"{}")[0] == 421
    assert len(rec.calls) == 1


def test_schedules_redrive_unpark_start_query_update_fork_pass_as_csrf_checked_actions(
    app: tuple[ConsoleApp, Recorder],
) -> None:
    console, rec = app
    assert call(console, "GET", PREFIX + "/api/schedules?limit=50")[0] == 200
    assert call(console, "GET", PREFIX + "/api/schedules/nightly")[0] == 200
    assert call(console, "GET", PREFIX + "/api/executions/e/history/12")[0] == 200
    assert rec.calls == [("GET", "/schedules?limit=50", None), ("GET", "/schedules/nightly", None),
                         ("GET", "/executions/e/history/12", None)]
    rec.calls.clear()
    actions = ["/schedules/nightly/pause", "/schedules/nightly/resume", "/executions/e/redrive",
               "/executions/e/unpark", "/executions/e/pause", "/executions/e/unpause",
               # issue 31 §3: start, query, update and fork from the console, under the same checks
               "/executions", "/executions/e/queries/stage", "/executions/e/updates/add_item",
               "/executions/e/fork"]
    for path in actions:
        assert post(console, PREFIX + "/api" + path, {}, x_orbit_csrf="wrong")[0] == 403
        assert post(console, PREFIX + "/api" + path, {}, origin="http://evil.example")[0] == 403
    assert rec.calls == []
    for path in actions:
        assert post(console, PREFIX + "/api" + path, {"note": "n"})[0] == 202
    assert [c[1] for c in rec.calls] == actions
    # what the console does not send, even though the API has it
    for path in ("/schedules/nightly/trigger", "/schedules/nightly/backfill", "/schedules",
                 "/definitions", "/executions/e/queries", "/executions/e/fork/x"):
        assert post(console, PREFIX + "/api" + path, {})[0] == 404, path
    assert call(console, "DELETE", PREFIX + "/api/schedules/nightly")[0] == 405
    assert call(console, "GET", PREFIX + "/api/executions/e/history/x")[0] == 404


def test_history_pages_are_read_without_the_values_kept_in_s3(app: tuple[ConsoleApp, Recorder]) -> None:
    console, rec = app
    assert call(console, "GET", PREFIX + "/api/_history/e?after_seq=0&limit=25")[0] == 200
    assert rec.calls == [("GET", "/executions/e/history?after_seq=0&limit=25&values=inline", None)]


def test_the_pinned_workflow_is_read_once_per_execution(app: tuple[ConsoleApp, Recorder]) -> None:
    console, rec = app
    first = call(console, "GET", PREFIX + "/api/executions/e/workflow")
    assert first[0] == 200 and first[1]["name"] == "wf"
    assert call(console, "GET", PREFIX + "/api/executions/e/workflow") == first
    assert post(console, PREFIX + "/api/_check_signal/e/approval", {"payload": {"approved": True}})[0] == 200
    assert rec.calls == [("GET", "/executions/e/workflow", None)]  # its first event never changes


def test_the_limits_page_reads_get_limits(app: tuple[ConsoleApp, Recorder]) -> None:
    console, rec = app
    assert call(console, "GET", PREFIX + "/api/limits")[0] == 200  # flow control (docs/flow-control.md)
    assert rec.calls[-1] == ("GET", "/limits", None)
    status, body = call(console, "GET", PREFIX + "/limits.js")
    assert status == 200 and b"Orbit.views.limits" in body
    status, _, index = console.handle("GET", PREFIX + "/", {"host": HOST}, b"")
    assert b'src="limits.js"' in index and b'href="#/limits"' in index


def test_a_step_story_and_a_start_check_come_from_the_api_answers() -> None:
    """/_step reads the history the API gives (no token copied); /_check_start refuses an input
    that breaks the workflow's input schema before anything is started."""
    def ev(seq: int, at: int, type_: str, attempt: int, **extra: Any) -> dict[str, Any]:
        return {"seq": seq, "timestamp_ms": at, "type": type_, "step": "pay", "attempt": attempt, **extra}

    history = [
        {"seq": 1, "timestamp_ms": 0, "type": "WorkflowCreated"},
        ev(2, 10, "StepScheduled", 1, input={"n": 1}, token="secret-1", task="t"),
        ev(3, 20, "StepDispatched", 1, token="secret-1", worker_id="w1"),
        ev(4, 30, "StepAttemptFailed", 1, error={"code": "E", "message": "<b>no</b>"}),
        ev(5, 40, "StepScheduled", 2, input={"n": 1}, token="secret-2"),
        ev(6, 45, "StepDispatched", 2, token="secret-2"),
        ev(7, 90, "StepSucceeded", 2, output={"ok": 1}),
    ]
    wf = {"kind": "definition", "definition": {"input": {"type": "object", "required": ["n"]}}}

    def backend(method: str, path: str, body: Any) -> tuple[int, Any]:
        if path.startswith("/executions/e/history"):
            return 200, history if "after_seq=0" in path else []
        if path.startswith("/workflows/w?version=1&build=b"):
            return 200, wf
        return 404, {"error": {"code": "NOT_FOUND", "message": path}}

    console = ConsoleApp(backend, allowed_hosts("127.0.0.1", 8780))
    status, story = call(console, "GET", PREFIX + "/api/_step/e/pay")
    assert status == 200 and "secret" not in json.dumps(story)
    assert [(a["attempt"], a["outcome"]) for a in story["attempts"]] == [(1, "failed"), (2, "succeeded")]
    assert (story["status"], story["output"], story["duration_ms"]) == ("SUCCEEDED", {"ok": 1}, 80)
    assert call(console, "GET", PREFIX + "/api/_step/e/nothing")[0] == 404
    refused = post(console, PREFIX + "/api/_check_start/w", {"version": "1", "build": "b", "input": {}})
    assert refused[0] == 400 and "'n'" in refused[1]["error"]["message"], refused
    good = {"version": "1", "build": "b", "input": {"n": 2}}
    assert post(console, PREFIX + "/api/_check_start/w", good)[0] == 200
    assert post(console, PREFIX + "/api/_check_start/w", {"input": {"n": 2}}, x_orbit_csrf="wrong")[0] == 403
