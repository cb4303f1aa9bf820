"""Signal-with-start (`orbit.service.signal_start`, docs/triggers.md): one execution per id, every
signal recorded once and in the order the calls were accepted, the create/exists race, refusals."""

from __future__ import annotations

from typing import Any

import pytest
from orbit.errors import ExecutionEnded, ExecutionExists, PayloadRefused, ValidationError
from orbit.service import signal_start
from orbit.service.http import handle_request
from orbit.service.signal_start import signal_with_start

from tests.unit.dsl_harness import sim_with

SIGNALS = {"item": {"schema": {"type": "object", "required": ["n"]}}, "done": {}}


def _sim() -> Any:
    return sim_with({"w": {"wait_for": "done"}}, signals=SIGNALS)


def _received(sim: Any, eid: str) -> list[Any]:
    return [e["payload"] for e in sim.history(eid) if e["type"] == "SignalReceived"]


def test_the_first_call_creates_the_execution_with_its_signal_in_one_commit() -> None:
    sim = _sim()
    res = signal_with_start(sim.engine, "order-1", "wf", "item", {"n": 0}, {"order": 1}, signal_id="s0")
    assert res == {"id": "order-1", "signal_id": "s0", "started": True}
    history = sim.history("order-1")
    types = [e["type"] for e in history]
    assert types[:2] == ["WorkflowCreated", "WorkflowStarted"] and "SignalReceived" in types
    created = next(e for e in history if e["type"] == "WorkflowCreated")
    assert created["input"] == {"order": 1}
    first = sim.engine.store.read_commit("order-1", 1)  # the start's own commit holds the signal
    assert "SignalReceived" in [type(r.event).__name__ for r in first.events]
    assert first.all_inbound == ("start:order-1", "signal:s0") or set(first.all_inbound) == {
        "start:order-1", "signal:s0"}


def test_a_burst_for_one_id_makes_one_execution_receiving_every_signal_in_order() -> None:
    sim = _sim()
    answers = [signal_with_start(sim.engine, "order-1", "wf", "item", {"n": i}, {"first": i})
               for i in range(50)]
    assert [a["started"] for a in answers] == [True] + [False] * 49
    assert _received(sim, "order-1") == [{"n": i} for i in range(50)]
    assert [e.execution_id for e in sim.engine.list()[0]] == ["order-1"]
    assert sim.describe("order-1")["input"] == {"first": 0}  # later inputs are not a new start


def test_the_same_signal_id_again_is_received_once() -> None:
    sim = _sim()
    for _ in range(3):
        signal_with_start(sim.engine, "o", "wf", "item", {"n": 1}, {}, signal_id="same")
    signal_with_start(sim.engine, "o", "wf", "item", {"n": 2}, {}, signal_id="other")
    signal_with_start(sim.engine, "o", "wf", "item", {"n": 2}, {}, signal_id="other")
    assert _received(sim, "o") == [{"n": 1}, {"n": 2}]


def test_a_creator_that_loses_the_race_signals_the_execution_the_winner_created(
        monkeypatch: pytest.MonkeyPatch) -> None:
    sim = _sim()
    signal_with_start(sim.engine, "o", "wf", "item", {"n": 1}, {"a": 1})
    real = signal_start._existing
    calls = {"n": 0}

    def stale(engine: Any, eid: str) -> Any:  # the first look saw no execution (the winner had not committed)
        calls["n"] += 1
        if calls["n"] == 1:
            engine._cache.pop(eid, None)  # as another process would: it never saw the winner's commit
            return None
        return real(engine, eid)

    monkeypatch.setattr(signal_start, "_existing", stale)
    res = signal_with_start(sim.engine, "o", "wf", "item", {"n": 2}, {"b": 2})
    assert res["started"] is False and calls["n"] == 2
    assert _received(sim, "o") == [{"n": 1}, {"n": 2}]
    assert sim.describe("o")["input"] == {"a": 1}


def test_refusals_record_nothing() -> None:
    sim = _sim()
    with pytest.raises(PayloadRefused):
        signal_with_start(sim.engine, "o", "wf", "item", {"no_n": 1}, {})
    with pytest.raises(ValidationError, match="has no signal 'itme'"):
        signal_with_start(sim.engine, "o", "wf", "itme", {"n": 1}, {})
    with pytest.raises(ValidationError):
        signal_with_start(sim.engine, "", "wf", "item", {"n": 1}, {})
    assert sim.engine.list()[0] == []
    signal_with_start(sim.engine, "o", "wf", "done", None, {})
    sim.run()
    assert sim.describe("o")["status"] == "COMPLETED"
    with pytest.raises(ExecutionEnded):
        signal_with_start(sim.engine, "o", "wf", "item", {"n": 1}, {})
    sim.register({"orbit": 1, "name": "other", "version": "1", "signals": SIGNALS,
                  "steps": {"w": {"wait_for": "done"}}})
    with pytest.raises(ExecutionExists, match="is a run of 'wf'"):
        signal_with_start(sim.engine, "o", "other", "item", {"n": 1}, {})


def test_the_http_route_answers_202_with_whether_it_started() -> None:
    sim = _sim()
    path = "/executions/o-9/signal-with-start"
    body = {"workflow": "wf", "signal": "item", "payload": {"n": 1}, "input": {}, "signal_id": "a"}
    answer = handle_request(sim.engine, "POST", path, body)
    assert answer == (202, {"id": "o-9", "signal_id": "a", "started": True})
    status, again = handle_request(sim.engine, "POST", path, {**body, "signal_id": "b"})
    assert status == 202 and again["started"] is False
    status, err = handle_request(sim.engine, "POST", path, {"signal": "item"})
    assert status == 400 and err["error"]["problems"][0]["path"] == "body.workflow"
    status, err = handle_request(sim.engine, "POST", path, {**body, "payload": {}, "signal_id": "c"})
    assert status == 400 and err["error"]["code"] == "PAYLOAD_REFUSED"
    assert _received(sim, "o-9") == [{"n": 1}, {"n": 1}]
