"""Hostile input through the HTTP router and the engine (issue 17, classes 1, 2, 3 and 6).

Every test checks three things together: nothing was fetched (a loopback server counts hits),
nothing that was accepted got lost (every accepted request is visible in history or answered with
a refusal that records nothing), and the engine still answers another request within 1 s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread
from typing import Any

import pytest
from orbit.core.definition import parse_definition
from orbit.core.definition.contracts import check_schema
from orbit.errors import ValidationError
from orbit.service.http import handle_request
from orbit.testing.simulator import Simulator, succeed

from tests.unit.dsl_harness import T0, definition, events, sim_with
from tests.unit.meanwhile import answered_meanwhile


class _Counter(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # the stdlib's name
        _Counter.hits.append(self.path)
        body = b'{"type": "object"}'
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def loopback() -> Iterator[tuple[str, list[str]]]:
    """A loopback URL that records every GET: a schema that fetches would show up here."""
    _Counter.hits = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Counter)
    Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", _Counter.hits
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(autouse=True)
def nothing_fetched(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Every outbound connection the engine tries is recorded (and fails): none is allowed."""
    import socket

    tried: list[Any] = []

    def connect(self: socket.socket, address: Any) -> None:
        tried.append(address)
        raise OSError(f"test: the engine tried to connect to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect)
    yield tried
    assert tried == [], f"the engine reached the network: {tried}"


def _still_answers(sim: Simulator, hostile: Callable[[], Any] | None = None) -> Any:
    """Another caller's request is answered within 1 s of CPU time while `hostile` is handled
    (tests/unit/meanwhile.py: one try, no best-of-three); returns what `hostile` returned."""
    def other() -> None:
        status, body = handle_request(sim.engine, "GET", "/executions", query={"limit": "5"})
        assert status == 200 and "executions" in body

    return answered_meanwhile(hostile or (lambda: None), other)


# ------------------------------------------------------------------ 1. schemas never fetch
@pytest.mark.parametrize("ref", [
    "{url}/schema.json",
    "{url}/defs.json#/$defs/x",
    "file:///etc/passwd",
    "file:{tmp}/local.json",
    "other.json",
    "//127.0.0.1:1/schema",
])
@pytest.mark.parametrize("where", ["input", "signal"])
def test_a_schema_ref_outside_the_schema_is_refused_with_its_path(loopback, tmp_path, ref, where) -> None:
    url, hits = loopback
    (tmp_path / "local.json").write_text('{"type": "object"}')
    ref = ref.format(url=url, tmp=tmp_path)
    schema = {"type": "object", "properties": {"order": {"$ref": ref}}}
    doc = definition({"w": {"wait_for": "go"}}, signals={"go": {"schema": schema}}) if where == "signal" \
        else definition({"a": {"compute": "{% 1 %}"}}, input=schema)
    with pytest.raises(ValidationError) as raised:
        parse_definition(doc)
    text = str(raised.value)
    prefix = "signals.go.schema" if where == "signal" else "input"
    assert f"{prefix}: invalid JSON Schema: properties.order.$ref: {ref!r} points outside" in text, text
    sim = Simulator(start_ms=T0)
    status, body = _still_answers(sim, lambda: handle_request(sim.engine, "POST", "/definitions", doc))
    assert status == 400 and "properties.order.$ref" in body["error"]["message"]
    assert hits == []


def test_local_refs_into_defs_keep_working_and_check_the_input(loopback) -> None:
    url, hits = loopback
    schema = {"type": "object", "required": ["item"], "$defs": {"item": {"type": "integer", "minimum": 1}},
              "properties": {"item": {"$ref": "#/$defs/item"}, "again": {"$ref": "#/properties/item"}}}
    sim = sim_with({"a": {"compute": "{% input.item %}"}}, input=schema)
    sim.start("wf", {"item": 3}, id="good")
    sim.start("wf", {"item": 0}, id="bad")
    _still_answers(sim, sim.run)
    assert sim.describe("good")["status"] == "COMPLETED"
    bad = sim.describe("bad")
    assert bad["status"] == "FAILED" and bad["error"]["code"] == "INPUT_CONTRACT_VIOLATION"
    assert "input.item" in bad["error"]["message"]
    assert hits == []


@pytest.mark.parametrize("ref", ["{url}/s.json", "{url}/x#/a", "file:///etc/hostname"])
def test_evaluation_never_retrieves_even_a_schema_that_slipped_past_validation(loopback, ref) -> None:
    url, hits = loopback
    err = check_schema({"$ref": ref.format(url=url)}, {"a": 1}, "INPUT_CONTRACT_VIOLATION")
    assert err is not None and "the schema cannot be applied" in err.message
    assert hits == []


# ------------------------------------------------------------------ 2. signal ids vs internal ids
@pytest.mark.parametrize("chosen", ["start:e1", "hook:abc", "result:e1:w", "child_done:e1/c", "wake:e1:1",
                                    "cancel:x", "signal:start:e1"])
def test_a_caller_signal_id_never_equals_an_internal_message_id(chosen: str) -> None:
    sim = sim_with({"w": {"wait_for": "go"}})
    sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    path = "/executions/e1/signals/go"
    status, body = _still_answers(sim, lambda: handle_request(sim.engine, "POST", path,
                                                              {"payload": 7, "id": chosen}))
    assert (status, body) == (202, {"id": chosen})
    sim.run()
    d = sim.describe("e1")
    assert d["status"] == "COMPLETED" and d["steps"]["w"]["output"] == 7  # accepted, so not lost
    received = events(sim, "e1", "SignalReceived")
    assert [e["signal_id"] for e in received] == [f"signal:{chosen}"]
    # the same id again is the same signal: answered, deduplicated
    sim2 = sim_with({"w": {"wait_for": "go"}, "v": {"wait_for": "go", "after": ["w"]}})
    sim2.start("wf", {}, id="e1")
    sim2.run_until_idle()
    for _ in range(2):
        assert handle_request(sim2.engine, "POST", path, {"payload": 1, "id": chosen})[0] == 202
    sim2.run_until_idle()
    assert len(events(sim2, "e1", "SignalReceived")) == 1


@pytest.mark.parametrize("bad", ["x" * 201, "a b", "tab\there", "new\nline", "\ud800", "é", "", 5])
def test_a_signal_id_that_does_not_fit_is_a_400_and_nothing_is_sent(bad: Any) -> None:
    sim = sim_with({"w": {"wait_for": "go"}})
    sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    status, body = _still_answers(sim, lambda: handle_request(
        sim.engine, "POST", "/executions/e1/signals/go", {"payload": 1, "id": bad}))
    assert status == 400 and body["error"]["problems"][0]["path"] == "body.id", body
    sim.run_until_idle()
    assert events(sim, "e1", "SignalReceived") == [] and sim.describe("e1")["status"] == "RUNNING"


# ------------------------------------------------------------------ 3. a child belongs to its parent
def _parent_and_child(step: str) -> Simulator:
    sim = Simulator(start_ms=T0)
    sim.register(definition({"c": {"compute": "{% input.n * 2 %}"}}, name="child"))
    sim.register(definition({step: {"workflow": "child", "input": {"n": "{% input.n %}"}}}, name="parent"))
    return sim


@pytest.mark.parametrize("step", ["invoice", "sub_flow"])
@pytest.mark.parametrize("squat_id", ["P1/{step}", "P1~1", "P1/{step}~1"])
def test_a_caller_cannot_start_an_execution_in_the_child_namespace(step: str, squat_id: str) -> None:
    sim = _parent_and_child(step)
    squat = squat_id.format(step=step)
    for same_input in ({"n": 2}, {"n": 99}):
        status, body = _still_answers(sim, lambda: handle_request(
            sim.engine, "POST", "/executions", {"workflow": "child", "id": squat, "input": same_input}))
        assert status == 400 and body["error"]["problems"][0]["path"] == "body.id", body
        assert "reserves" in body["error"]["message"]
    with pytest.raises(ValidationError):
        sim.start("child", {"n": 2}, id=squat)
    sim.start("parent", {"n": 2}, id="P1")
    sim.run()
    d = sim.describe("P1")
    assert d["status"] == "COMPLETED" and d["steps"][step]["output"] == {"c": 4}
    assert sim.describe(f"P1/{step}")["status"] == "COMPLETED"


@pytest.mark.parametrize("step", ["invoice", "sub_flow"])
@pytest.mark.parametrize("same_input", [True, False])
def test_a_squatter_written_before_the_rule_never_strands_the_parent(step: str, same_input: bool) -> None:
    sim = _parent_and_child(step)
    # As if created before callers were refused the namespace: straight through the engine's message.
    sim.engine.handle({"kind": "start", "execution_id": f"P1/{step}", "id": f"start:P1/{step}",
                       "workflow": "child", "input": {"n": 2 if same_input else 5}})
    sim.start("parent", {"n": 2}, id="P1")
    _still_answers(sim, sim.run)
    d = sim.describe("P1")
    assert d["status"] == "FAILED", d
    assert d["steps"][step]["error"]["code"] == "CHILD_ID_TAKEN"
    assert sim.describe(f"P1/{step}")["status"] == "COMPLETED"  # the squatter is not adopted


@pytest.mark.parametrize("step", ["invoice", "sub_flow"])
def test_a_child_started_twice_by_its_parent_is_adopted_once(step: str) -> None:
    sim = _parent_and_child(step)
    sim.start("parent", {"n": 3}, id="P1")
    sim.run()
    child = f"P1/{step}"
    start = {"kind": "start", "execution_id": child, "id": f"start:{child}", "workflow": "child",
             "input": {"n": 3}, "parent": {"execution_id": "P1", "step": step}}
    sim.engine.handle(start)  # the parent's StartChild effect re-sent (a crash after the send)
    _still_answers(sim, lambda: sim.engine.handle({**start, "input": {"n": 4}}))  # not a second child
    sim.run()
    assert sim.describe("P1")["status"] == "COMPLETED"
    assert [e["type"] for e in events(sim, child, "WorkflowCreated")] == ["WorkflowCreated"]
    assert len(events(sim, "P1", "StepSucceeded")) == 1


# ------------------------------------------------------------------ 6. bad input 400, bad output fails
def _deep(n: int) -> Any:
    value: Any = 1
    for _ in range(n):
        value = [value]
    return value


@pytest.mark.parametrize("route,body", [
    ("/executions", {"workflow": "wf", "input": {"x": "\ud800"}}),
    ("/executions", {"workflow": "wf", "id": "e\udfff"}),
    ("/executions", {"workflow": "wf", "input": _deep(65)}),
    ("/executions/e1/signals/go", {"payload": "\udc00"}),
    ("/executions/e1/signals/go", {"payload": {"deep": _deep(100)}}),
    ("/executions/e1/cancel", {"reason": "bye \ud800"}),
])
@pytest.mark.parametrize("raw", [False, True])
def test_lone_surrogates_and_deep_nesting_in_requests_are_a_400(route: str, body: Any, raw: bool) -> None:
    import json

    sim = sim_with({"w": {"wait_for": "go"}})
    sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    before = sim.history("e1")
    sent = json.dumps(body) if raw else body  # ensure_ascii: "\ud800" travels as the escape
    status, answer = _still_answers(sim, lambda: handle_request(sim.engine, "POST", route, sent))
    assert status == 400, answer
    assert answer["error"]["code"] == "VALIDATION_ERROR"
    sim.run_until_idle()
    assert sim.describe("e1")["status"] == "RUNNING" and sim.history("e1") == before


@pytest.mark.parametrize("depth", [10_000, 100_000])
def test_json_nested_beyond_the_parsers_reach_is_a_400(depth: int) -> None:
    sim = sim_with({"a": {"compute": "{% 1 %}"}})
    text = '{"workflow": "wf", "input": ' + "[" * depth + "]" * depth + "}"
    status, answer = _still_answers(sim, lambda: handle_request(sim.engine, "POST", "/executions", text))
    assert status == 400 and "body" in answer["error"]["message"], answer
    status, answer = _still_answers(sim, lambda: handle_request(sim.engine, "POST", "/executions",
                                                                text.encode()))
    assert status == 400


@pytest.mark.parametrize("size", [6 * 1024 * 1024 + 1, 20 * 1024 * 1024])
def test_an_over_large_body_is_refused_before_it_is_parsed(size: int) -> None:
    sim = sim_with({"a": {"compute": "{% 1 %}"}})
    status, answer = _still_answers(sim, lambda: handle_request(sim.engine, "POST", "/executions",
                                                                b" " * size))
    assert status == 413 and answer["error"]["code"] == "PAYLOAD_TOO_LARGE"
    assert sim.engine.list()[0] == []


@pytest.mark.parametrize("expr,where", [
    ('{% "a\\ud800b" %}', "steps.a.output"),
    ('{% {"k": "\\udfff"} %}', "steps.a.output.k"),
    # iterative, so within the expression budget's depth; the value is 70 objects deep
    ("{% $reduce([1..70], function($acc, $i){ {\"x\": $acc} }, 1) %}", "steps.a.output"),
])
def test_a_value_the_execution_produces_that_cannot_be_stored_fails_the_step(expr: str, where: str) -> None:
    sim = sim_with({"a": {"compute": expr}, "b": {"compute": "{% 1 %}"}})
    sim.start("wf", {}, id="e1")
    _still_answers(sim, sim.run)
    d = sim.describe("e1")
    assert d["status"] == "FAILED", d
    err = d["steps"]["a"]["error"]
    assert err["code"] == "VALUE_NOT_STORABLE" and err["message"].startswith(where), err



@pytest.mark.parametrize("output", ["\ud800", {"a": [float("nan")]}, _deep(80)])
def test_a_worker_answer_that_cannot_be_stored_fails_the_step_instead_of_every_decision(output: Any) -> None:
    sim = sim_with({"t": {"task": "svc.do"}, "after": {"compute": "{% 1 %}", "after": ["t"]}})
    sim.worker("svc.do", succeed(output))
    sim.start("wf", {}, id="e1")
    _still_answers(sim, sim.run)
    d = sim.describe("e1")
    assert d["status"] == "FAILED" and d["steps"]["t"]["error"]["code"] == "VALUE_NOT_STORABLE", d



def test_output_that_cannot_be_stored_fails_the_execution() -> None:
    sim = sim_with({"a": {"compute": "{% 1 %}"}}, output={"x": '{% "\\ud800" %}'})
    sim.start("wf", {}, id="e1")
    sim.run()
    d = sim.describe("e1")
    assert d["status"] == "FAILED" and d["error"]["code"] == "VALUE_NOT_STORABLE"
    assert d["error"]["message"].startswith("output.x:")


# ------------------------------------------------------------------ 10. hook tokens are credentials
@pytest.mark.parametrize("signal", ["approval", "go_ahead"])
def test_history_readers_never_see_a_hook_token(signal: str) -> None:
    sim = sim_with({"w": {"wait_for": signal}}, signals={signal: {"schema": {"type": "object"}}})
    sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    token = sim.engine.load_state("e1").hooks[signal]["token"]
    resume = _still_answers(sim, lambda: handle_request(sim.engine, "POST", f"/hooks/{token}",
                                                        {"payload": {"ok": 1}}))
    assert resume[0] == 202
    sim.run()
    status, shown = handle_request(sim.engine, "GET", "/executions/e1/history")
    assert status == 200 and token not in repr(shown)
    assert token not in repr(handle_request(sim.engine, "GET", "/executions/e1")[1])
    created = next(e for e in shown if e["type"] == "HookCreated")
    assert created["token_sha256"].startswith("sha256:") and "token" not in created
    assert sim.describe("e1")["steps"]["w"]["output"] == {"ok": 1}  # accepted, not lost
    assert any(e.get("token") == token for e in sim.history("e1"))  # the store keeps what the engine needs



@pytest.mark.parametrize("kind", ["compute", "task"])
def test_an_unstorable_value_with_on_failure_continue_lets_the_execution_go_on(kind: str) -> None:
    bad = '{% "\\ud800" %}'
    step = {"compute": bad} if kind == "compute" else {"task": "svc.do", "input": {"x": bad}}
    sim = sim_with({"a": {**step, "on_failure": "continue"}, "b": {"compute": "{% 1 %}", "after": ["a"]}})
    sim.worker("svc.do", succeed({}))
    sim.start("wf", {}, id="e1")
    _still_answers(sim, sim.run)
    d = sim.describe("e1")
    assert d["status"] == "COMPLETED", d
    assert d["steps"]["a"]["error"]["code"] == "VALUE_NOT_STORABLE"
    assert d["steps"]["b"]["output"] == 1



@pytest.mark.parametrize("ref", ["https://example.com/s.json", "file:///etc/passwd"])
def test_a_code_workflows_signal_schema_is_held_to_the_same_rule(ref: str) -> None:
    from orbit.workflow import CodeRegistry, workflow

    with pytest.raises(ValidationError) as raised:
        workflow("code-remote", signals={"go": {"schema": {"$ref": ref}}}, registry=CodeRegistry())
    assert "workflow.signals.go: invalid JSON Schema: $ref" in str(raised.value)


@pytest.mark.parametrize("call", ["cancel", "signal_name", "signal_payload"])
def test_in_process_callers_get_the_same_refusals(call: str) -> None:
    sim = sim_with({"w": {"wait_for": "go"}})
    sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    before = sim.history("e1")
    with pytest.raises(ValidationError):
        if call == "cancel":
            sim.cancel("e1", "bye \ud800")
        elif call == "signal_name":
            sim.signal("e1", "go\udc00", 1)
        else:
            sim.signal("e1", "go", {"deep": _deep(80)})
    sim.run_until_idle()
    assert sim.history("e1") == before and sim.describe("e1")["status"] == "RUNNING"
    _still_answers(sim)
