"""Hypothesis fuzz over the API as a hostile caller sees it: request bodies, ids and definitions.

Fixed seed (derandomize) and a bounded number of examples, so it runs the same in every suite
run. Each example registers a random definition, sends a random sequence of requests through
the API router (the one the Lambda and `orbit dev` use) over a simulator engine, runs the
engine until idle and asserts:

- no response is a 500 and none carries a traceback;
- nothing accepted is lost: a 201 start can be described, a 202 signal is in its execution's
  history, no message is dead-lettered and no decision fails;
- no execution is left in a state no message will move: every running one has a timer due,
  a step waiting for a signal or hook, a task with a worker queue, or a running child.

Every string may hold lone surrogates; ids may hold ':' and '/' and may look like the engine's
own message ids (`start:E`, `hook:T`, ...) or a child's id (`fuzz-1/s0`): internal ids are
namespaced (docs/security.md), so none of these may collide with what the engine keeps for itself.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from dsl_harness import T0
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from orbit.service.http import handle_request
from orbit.testing.simulator import Simulator, fail, succeed

# Lone surrogates (category Cs) included: they must be a 400, never a 500 or a stuck execution.
TEXT = st.text(st.characters(), max_size=12)
# Caller ids shaped like the engine's own message ids and child ids: a signal or start with one of
# these must never be taken for an internal message (dropped as a duplicate) or squat a child.
INTERNAL_LOOKING_IDS = [
    "start:fuzz-1", "hook:x", "hook:sha256:" + "0" * 64, "result:t", "started:t:s", "heartbeat:t:s:1",
    "child_done:fuzz-1/s0", "cancel:c", "wake:fuzz-1:0", "signal:go", "continue:fuzz-1:3",
    "redrive:r", "unpark:u", "fuzz-1/s0", "fuzz-1/s1", "fuzz-1~1", "fuzz-1/s2[0]",
]
ID = (st.text(st.characters(), min_size=1, max_size=10)
      | st.text(st.sampled_from("ab:/~-"), min_size=1, max_size=8)
      | st.sampled_from(INTERNAL_LOOKING_IDS))
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)

EXPRESSIONS = [
    "{% input.n %}", "{% $count(input.items) %}", "{% input.n * 2 %}", "{% $string(input) %}",
    "{% $eval(input.code) %}", "{% ($f := function($n){ $f($n + 1) }; $f(0)) %}",
    "{% [1..10000000] %}", "{% $match($string(input), /(a+)+$/) %}", "{% $pad('x', input.n) %}",
    "{% input.n > 1 %}", "{% $sum(input.items) %}", "{% $uppercase(input.s) %}", "{% 1 / 0 %}",
    "{% $reduce([1..40], function($a, $b){ $a & $a }, 'ab') %}", "{% input.items[0] %}",
]


@st.composite
def definitions(draw: Any) -> dict[str, Any]:
    n = draw(st.integers(1, 4))
    steps: dict[str, Any] = {}
    for i in range(n):
        kind = draw(st.sampled_from(["compute", "task", "sleep", "wait_for", "workflow", "for"]))
        body: dict[str, Any]
        if kind == "compute":
            body = {"compute": draw(st.sampled_from(EXPRESSIONS))}
        elif kind == "task":
            body = {"task": draw(st.sampled_from(["w.ok", "w.fails", "nobody.serves"])),
                    "input": {"v": draw(st.sampled_from(EXPRESSIONS))}, "queue_timeout": "1m"}
        elif kind == "sleep":
            body = {"sleep": draw(st.sampled_from(["1s", "2h", {"until": "{% input.s %}"}]))}
        elif kind == "wait_for":
            body = {"wait_for": draw(st.sampled_from(["go", "approve"])), "timeout": "1h"}
        elif kind == "workflow":
            body = {"workflow": "child", "input": {"n": "{% input.n %}"}}
        else:
            body = {"for": draw(st.sampled_from(EXPRESSIONS)), "compute": "{% item %}"}
        if i and draw(st.booleans()):
            body["after"] = [f"s{draw(st.integers(0, i - 1))}"]
        if draw(st.integers(0, 4)) == 0:
            body["when"] = draw(st.sampled_from(EXPRESSIONS))
        steps[f"s{i}"] = body
    if draw(st.booleans()):  # a gate: the execution stays up for the requests that follow
        steps["gate"] = {"wait_for": "go", "timeout": "1h"}
    return {"orbit": 1, "name": "fuzz", "version": "1", "steps": steps,
            "output": draw(st.sampled_from([None, "{% steps.s0.output %}", "{% $string(input) %}"]))}


def q(text: str) -> str:
    """A path segment as an HTTP client sends it (a lone surrogate as its UTF-8-like bytes)."""
    return quote(text, safe="", errors="surrogatepass")


def requests(eids: list[str]) -> Any:
    eid = st.sampled_from(eids) | st.sampled_from(eids) | ID  # mostly an execution that exists
    start_body = st.fixed_dictionaries(
        {"workflow": st.sampled_from(["fuzz", "child", "missing"]) | TEXT},
        optional={"input": JSON_VALUES, "id": ID | JSON_VALUES, "version": JSON_VALUES})
    signal_body = st.fixed_dictionaries({}, optional={"payload": JSON_VALUES, "id": ID | ID | JSON_VALUES})
    # the gate's signal to the running execution, with ids of every shape (internal-looking ones
    # included): drawn often, so that accepted signals are checked for being kept
    gate_signal = st.tuples(st.just("POST"), st.just("/executions/fuzz-1/signals/go"),
                            st.fixed_dictionaries({"id": ID}, optional={"payload": JSON_VALUES}))
    return st.one_of(
        gate_signal, gate_signal,
        st.tuples(st.just("POST"), st.just("/executions"), start_body),
        st.tuples(st.just("POST"), eid.map(lambda e: f"/executions/{q(e)}/signals/")
                  .flatmap(lambda p: st.sampled_from(["go", "go", "approve", "other"]).map(lambda n: p + n)),
                  signal_body),
        st.tuples(st.just("POST"), eid.map(lambda e: f"/executions/{q(e)}/cancel"),
                  st.fixed_dictionaries({}, optional={"reason": JSON_VALUES, "force": JSON_VALUES})),
        st.tuples(st.just("GET"), eid.map(lambda e: f"/executions/{q(e)}"), st.none()),
        st.tuples(st.just("GET"), eid.map(lambda e: f"/executions/{q(e)}/history"), st.none()),
        st.tuples(st.just("POST"), ID.map(lambda t: f"/hooks/{q(t)}"),
                  st.fixed_dictionaries({}, optional={"payload": JSON_VALUES})),
        st.tuples(st.just("POST"), st.just("/definitions"), JSON_VALUES | definitions()),
        st.tuples(st.sampled_from(["GET", "DELETE", "PUT"]), TEXT.map(lambda t: "/" + t), JSON_VALUES),
        st.tuples(st.just("POST"), st.just("/executions"),  # not JSON (nor always UTF-8)
                  TEXT.map(lambda t: t.encode("utf-8", "surrogatepass"))),
    )


def simulator() -> Simulator:
    sim = Simulator(start_ms=T0, max_receives=3)
    sim.worker("w.ok", *[succeed({"ok": True})] * 50)
    sim.worker("w.fails", *[fail("BOOM", "no", retryable=False)] * 50)
    sim.register({"orbit": 1, "name": "child", "version": "1", "steps": {"c": {"compute": "{% input.n %}"}}})
    return sim


def check_response(status: int, payload: Any, request: Any) -> None:
    text = json.dumps(payload, default=str)
    assert status != 500 and status < 600, (request, status, payload)
    assert "Traceback" not in text, (request, payload)


def movable(sim: Simulator, eid: str) -> bool:
    """Some message can still move this running execution."""
    state = sim.engine.load_state(eid)
    if state.parked is not None or state.next_wake_ms() is not None:
        return True
    return any(u.status in ("WAITING", "SCHEDULED", "DISPATCHED") or (u.child_id and u.status == "RUNNING")
               for u in state.units.values())


@settings(max_examples=60, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(definition=definitions(), data=st.data())
def test_hostile_requests_never_500_never_lose_and_never_strand(
    definition: dict[str, Any], data: Any
) -> None:
    sim = simulator()
    status, payload = handle_request(sim.engine, "POST", "/definitions", json.dumps(definition))
    check_response(status, payload, definition)
    eids = ["fuzz-1"]
    if status == 201:
        start = {"workflow": "fuzz", "id": "fuzz-1", "input": data.draw(JSON_VALUES)}
        status, payload = handle_request(sim.engine, "POST", "/executions", start)
        check_response(status, payload, "start fuzz-1")
    started: list[str] = [payload["id"]] if status == 201 else []
    signals: list[tuple[str, str]] = []  # (execution, signal id) answered 202
    for request in data.draw(st.lists(requests(eids), max_size=6)):
        method, path, body = request
        raw = body if isinstance(body, bytes) else json.dumps(body)
        status, payload = handle_request(sim.engine, method, path, raw, {})
        check_response(status, payload, request)
        if method == "POST" and path == "/executions" and status == 201:
            started.append(payload["id"])
        if "/signals/" in path and status == 202:
            target = handle_request(sim.engine, "GET", path.split("/signals/")[0])[1]["id"]
            signals.append((target, payload["id"]))
        sim.run_until_idle()  # raises if a decision fails
        sim.advance(90_000)  # queue timeouts, sleeps and wait timeouts come due
    sim.advance(2 * 3_600_000)
    assert sim.dead_letters == []
    event(f"signals accepted: {min(len(signals), 2)}+, executions started: {min(len(started), 3)}+")
    for eid, signal_id in signals:
        # the engine files a caller's id under `signal:` (docs/security.md)
        received = {e.get("signal_id") for e in sim.history(eid) if e["type"] == "SignalReceived"}
        assert f"signal:{signal_id}" in received, (eid, signal_id, "accepted (202) and then dropped")
    for eid in started:
        desc = sim.describe(eid)  # accepted: it exists
        if desc["status"] in ("RUNNING", "COMPENSATING"):
            assert movable(sim, eid), (eid, desc, sim.history(eid)[-5:])
