"""Bulk actions (orbit/service/batches.py) over an in-memory engine: a filter's executions acted on
page by page, once each, even when a page's message is delivered twice or its handler dies
between the writes and sends; a batch can be stopped; the API, the Client and `orbit batch`."""

from __future__ import annotations

from typing import Any

import pytest
from orbit.adapters.memory_schedules import MemoryScheduleStore
from orbit.cli import main as orbit_cli
from orbit.service import batches as batches_mod
from orbit.service.batches import BatchService
from orbit.service.http import handle_request
from test_paged_reads import InProcessClient

from tests.unit.dsl_harness import events, sim_with


def waiting(n: int, twice: bool = False) -> Any:
    """n executions w0..w(n-1) of `wf`, each waiting for the signal `go` (`twice`: two of them),
    tier gold for even ones."""
    steps: dict[str, Any] = {"w": {"wait_for": "go"}}
    if twice:
        steps["w2"] = {"after": ["w"], "wait_for": "go"}
    sim = sim_with(steps, attributes={"tier": "{% input.tier %}"})
    sim.engine.batches = BatchService(MemoryScheduleStore(), sim.engine)
    for i in range(n):
        sim.start("wf", {"tier": "gold" if i % 2 == 0 else "silver"}, id=f"w{i}")
    sim.run_until_idle()
    sim.advance(1000)  # the batches below start after every execution above
    return sim


def take_pages(sim: Any) -> list[dict[str, Any]]:
    """The batch page messages on the decision queue, taken off it (the rest stay)."""
    q = sim.queues.decisions
    pages = [m for _, m in q if m.get("kind") == "batch_page"]
    rest = [(t, m) for t, m in q if m.get("kind") != "batch_page"]
    q.clear()
    q.extend(rest)
    return pages


def statuses(sim: Any, n: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in range(n):
        s = sim.describe(f"w{i}")["status"]
        out[s] = out.get(s, 0) + 1
    return out


def test_a_bulk_cancel_acts_once_on_each_matching_execution_page_by_page() -> None:
    sim = waiting(250)
    where = "workflow = wf AND status = RUNNING AND tier = gold"
    request = {"where": where, "reason": "outage", "id": "b1"}
    status, body = handle_request(sim.engine, "POST", "/batches/cancel", request)
    assert status == 202 and body["status"] == "RUNNING", body
    sim.run_until_idle()
    status, b = handle_request(sim.engine, "GET", "/batches/b1")
    assert status == 200 and b["status"] == "COMPLETED"
    assert (b["seen"], b["acted"], b["skipped"], b["failed"], b["pages"]) == (125, 125, 0, 0, 2)
    assert statuses(sim, 250) == {"CANCELLED": 125, "RUNNING": 125}
    assert [e["reason"] for e in events(sim, "w0", "CancelRequested")] == ["outage"]
    assert events(sim, "w1", "CancelRequested") == []
    # the same request again is the same batch; another action under its id is refused
    assert handle_request(sim.engine, "POST", "/batches/cancel", request)[1]["status"] == "COMPLETED"
    other = {"where": "tier = gold", "id": "b1"}
    assert handle_request(sim.engine, "POST", "/batches/pause", other)[0] == 409
    mismatch = {"action": "cancel", "where": where}
    status, answer = handle_request(sim.engine, "POST", "/batches/pause", mismatch)
    assert status == 400 and answer["error"]["problems"][0]["path"] == "body.action"


def test_a_page_delivered_twice_or_cut_short_by_a_crash_acts_once_on_each(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batches_mod, "PAGE", 7)
    sim = waiting(30, twice=True)  # a second signal would take them past `w2`
    svc = sim.engine.batches
    svc.create("signal", "status = RUNNING", {"signal": "go", "payload": {"ok": 1}}, "b2")
    crashes = {"act": 0, "advance": 0}
    real_act, real_put = svc._act, svc.store.put

    def act(b: dict[str, Any], eid: str) -> Any:  # dies after acting on the page's 4th execution, once
        out = real_act(b, eid)
        if b["page"] == 1 and eid == b["pending"][3] and not crashes["act"]:
            crashes["act"] += 1
            raise RuntimeError("crash while acting")
        return out

    def put(bid: str, state: dict[str, Any], rev: int | None) -> int:  # dies before the advance of page 2
        if state.get("page") == 3 and state.get("pending") is None and not crashes["advance"]:
            crashes["advance"] += 1
            raise RuntimeError("crash before the advance")
        return real_put(bid, state, rev)

    monkeypatch.setattr(svc, "_act", act)
    monkeypatch.setattr(svc.store, "put", put)
    delivered = 0
    while True:  # a hand-driven queue: every message delivered twice; a failed one comes back
        msgs = take_pages(sim)
        if not msgs:
            break
        for m in msgs:
            for _ in range(2):
                delivered += 1
                try:
                    svc.handle(m)
                except RuntimeError:
                    sim.queues.send_decision(m)  # the visibility timeout hands it out again
    assert crashes == {"act": 1, "advance": 1}
    sim.run_until_idle()
    b = svc.describe("b2")
    assert b["status"] == "COMPLETED" and b["seen"] == 30 and b["acted"] + b["skipped"] == 30
    assert statuses(sim, 30) == {"RUNNING": 30}
    for i in range(30):  # one signal each, whatever the redeliveries
        received = events(sim, f"w{i}", "SignalReceived")
        assert [e["signal_id"] for e in received] == ["signal:batch:b2"], (i, received)


def test_a_stopped_batch_acts_on_no_further_page(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batches_mod, "PAGE", 10)
    sim = waiting(40)
    client = InProcessClient(sim.engine)
    res = client.batch("pause", "status = RUNNING", id="b3", reason="maintenance")
    first = take_pages(sim)
    sim.engine.batches.handle(first[0])  # page 0 acts on 10
    assert client.stop_batch("b3")["status"] == "STOPPED"
    sim.run_until_idle()
    b = client.describe_batch(res["id"])
    assert b["status"] == "STOPPED" and b["acted"] == 10 and b["pages"] == 1
    assert sum(1 for i in range(40) if sim.describe(f"w{i}").get("paused")) == 10
    client.batch("unpause", "status = RUNNING", id="b4")
    sim.run_until_idle()
    assert client.describe_batch("b4")["acted"] == 10 and client.describe_batch("b4")["skipped"] == 30


def test_refusals_name_what_is_wrong() -> None:
    sim = waiting(2)
    for body, code, text in [
        ({"action": "cancel", "where": "tier != gold"}, 400, "would read the whole table"),
        ({"action": "cancel"}, 400, "a filter is required"),
        ({"action": "reset", "where": "status = RUNNING"}, 400, "Orbit has no reset"),
        ({"action": "explode", "where": "status = RUNNING"}, 400, "unknown action 'explode'"),
        ({"action": "signal", "where": "status = RUNNING"}, 400, "needs the signal's name"),
        ({"action": "cancel", "where": "status = RUNNING", "id": "../x"}, 400, "must be 1-80 letters"),
    ]:
        status, answer = handle_request(sim.engine, "POST", f"/batches/{body.pop('action')}", body)
        assert status == code and text in answer["error"]["message"], (body, answer)
    assert handle_request(sim.engine, "GET", "/batches/nope")[0] == 404
    status, answer = handle_request(sim.engine, "POST", "/batches/preview", {"where": "tier = gold"})
    assert status == 200 and answer["count"] == 1 and answer["first"] == ["w0"]


def test_orbit_batch_previews_asks_and_acts(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    sim = waiting(6)
    client = InProcessClient(sim.engine)
    monkeypatch.setattr(orbit_cli, "_client", lambda args: client)
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    assert orbit_cli.main(["batch", "cancel", "--where", "tier = gold"]) == 1
    err = capsys.readouterr().err
    assert "cancel would act on 3 execution(s) matching: tier = gold (first: w4, w2, w0)" in err
    assert "nothing done" in err and statuses(sim, 6) == {"RUNNING": 6}
    assert orbit_cli.main(["batch", "cancel", "--where", "tier = gold", "--yes", "--id", "b5"]) == 0
    assert "orbit batch describe b5" in capsys.readouterr().out
    sim.run_until_idle()
    assert orbit_cli.main(["batch", "describe", "b5"]) == 0
    assert "seen: 3  acted: 3  skipped: 0  failed: 0" in capsys.readouterr().out
    assert orbit_cli.main(["batch", "reset", "--where", "tier = gold"]) == 2
    assert "Orbit has no reset" in capsys.readouterr().err
    assert orbit_cli.main(["batch", "cancel", "--where", "tier > gold"]) == 2
    assert "--where: `tier > gold` alone would read the whole table" in capsys.readouterr().err


def test_two_deciders_on_one_page_at_once_act_once_on_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """A duplicate delivery handled by a second decider while the first is in the middle of the
    page (the chaos harness's two environments): both act, each execution is acted on once, the
    pages' duplicate messages collapse."""
    monkeypatch.setattr(batches_mod, "PAGE", 4)
    sim = waiting(10, twice=True)
    first = sim.engine.batches
    second = BatchService(first.store, sim.engine)  # another environment, the same table
    first.create("signal", "status = RUNNING", {"signal": "go"}, "b6")
    real_act = BatchService._act
    interleaved: list[int] = []

    def act(self: BatchService, b: dict[str, Any], eid: str) -> Any:
        out = real_act(self, b, eid)
        if self is first and eid == b["pending"][1] and b["page"] not in interleaved:
            interleaved.append(b["page"])
            second.handle({"kind": "batch_page", "batch_id": "b6", "page": b["page"]})  # the whole page
        return out

    monkeypatch.setattr(BatchService, "_act", act)
    for _ in range(20):
        pages = take_pages(sim)
        if not pages:
            break
        for m in pages:
            first.handle(m)
    sim.run_until_idle()
    b = first.describe("b6")
    assert interleaved == [0, 1, 2] and b["status"] == "COMPLETED" and b["seen"] == 10
    for i in range(10):
        assert [e["signal_id"] for e in events(sim, f"w{i}", "SignalReceived")] == ["signal:batch:b6"]
    assert statuses(sim, 10) == {"RUNNING": 10}
