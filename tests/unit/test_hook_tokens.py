"""Hook tokens as credentials (issue 17, item 10): with a stack key the engine derives each token
(HMAC of the key over execution id and hook name), records and indexes only its SHA-256, checks a
resume by hashing, and shows only a shortened digest. Histories that recorded plain tokens (before
the key, or on a key-less engine) keep resuming and replaying as they did."""

from __future__ import annotations

import json
from typing import Any

import pytest
from orbit.core.history.hook_tokens import derive, sha256_hex, token_of
from orbit.errors import NotFound
from orbit.service.http import handle_request
from orbit.testing.simulator import Simulator

from tests.unit.code_harness import Harness
from tests.unit.dsl_harness import T0, definition

KEY = b"k" * 48


def keyed(steps: dict[str, Any], key: bytes | None = KEY, **extra: Any) -> Simulator:
    sim = Simulator(start_ms=T0, hook_key=key)
    sim.register(definition(steps, **extra))
    return sim


def stored_text(sim: Simulator, eid: str) -> str:
    """Everything the store holds for an execution: commits (events, effects, inbound ids),
    snapshots and hook lookup items."""
    return repr(sim.store.__dict__) + json.dumps(sim.history(eid))


NOTIFY = {"notify": {"task": "mail.send", "input": {"resume_with": "{% hooks.approval.token %}"}},
          "wait": {"wait_for": "approval", "after": ["notify"]}}


@pytest.mark.parametrize("signal", ["approval", "go-ahead"])
def test_a_keyed_engine_records_only_the_hash_and_the_derived_token_resumes(signal: str) -> None:
    steps = {"wait": {"wait_for": signal}}
    sim = keyed(steps, signals={signal: {"schema": {"type": "object"}}})
    sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    token = derive(KEY, "e1", signal)
    assert sim.engine.hook_token("e1", signal) == token and len(token) == 43
    created = next(e for e in sim.history("e1") if e["type"] == "HookCreated")
    assert created["name"] == signal and created["token_sha256"] == sha256_hex(token)
    assert "token" not in created
    assert token not in stored_text(sim, "e1")  # not in history, snapshots, effects or the hook index
    assert handle_request(sim.engine, "POST", f"/hooks/{token}", {"payload": {"ok": 1}})[0] == 202
    sim.run()
    assert sim.describe("e1")["steps"]["wait"]["output"] == {"ok": 1}
    assert token not in stored_text(sim, "e1")
    resumed = next(e for e in sim.history("e1") if e["type"] == "HookResumed")
    assert resumed["token_sha256"] == sha256_hex(token) and "token" not in resumed
    consumed = next(e for e in sim.history("e1") if e["type"] == "SignalConsumed")
    assert consumed["signal_id"] == f"hook:sha256:{sha256_hex(token)}"
    shown = handle_request(sim.engine, "GET", "/executions/e1/history")[1]
    assert {e["token_sha256"] for e in shown if e["type"].startswith("Hook")} == {
        "sha256:" + sha256_hex(token)[:16]}
    assert next(e for e in shown if e["type"] == "SignalConsumed")["signal_id"] == (
        "hook:sha256:" + sha256_hex(token)[:16])


def test_the_token_is_delivered_only_where_the_definition_sends_it() -> None:
    sim = keyed(NOTIFY, signals={"approval": {}})
    seen: list[Any] = []
    sim.worker("mail.send", lambda inp, ctx: seen.append(inp) or {})
    sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    token = derive(KEY, "e1", "approval")
    assert seen == [{"resume_with": token}]
    places = [e["type"] for e in sim.history("e1") if token in json.dumps(e)]
    assert places == ["StepScheduled"]  # the step input the definition chose to put it in
    sim.resume_hook(token, {"by": "mail"})
    sim.run()
    assert sim.describe("e1")["status"] == "COMPLETED"


@pytest.mark.parametrize("wrong", ["sha256:{digest}", "{digest}", "{other}", "x", "\ud800"])
def test_anything_but_the_token_is_refused_and_nothing_is_recorded(wrong: str) -> None:
    sim = keyed({"wait": {"wait_for": "approval"}}, signals={"approval": {}})
    sim.start("wf", {}, id="e1")
    sim.start("wf", {}, id="e2")
    sim.run_until_idle()
    token = derive(KEY, "e1", "approval")
    presented = wrong.format(digest=sha256_hex(token), other=derive(b"another key" * 4, "e1", "approval"))
    before = len(sim.history("e1"))
    status, body = handle_request(sim.engine, "POST", f"/hooks/{presented}", {"payload": {}})
    assert status in (400, 404), body
    assert "Traceback" not in json.dumps(body)
    sim.run()
    assert len(sim.history("e1")) == before and sim.describe("e1")["status"] == "RUNNING"
    with pytest.raises(NotFound):  # e2's token does not resume e1, nor e1's twice
        sim.engine.resume_hook(derive(KEY, "e3", "approval"))


def test_a_history_with_plain_tokens_keeps_resuming_after_the_key_arrives() -> None:
    sim = keyed({"wait": {"wait_for": "approval"}}, key=None, signals={"approval": {}})
    sim.start("wf", {}, id="old")
    sim.run_until_idle()
    legacy = sim.engine.load_state("old").hooks["approval"]["token"]
    sim.engine.ids.hook_key = lambda: KEY  # the stack gets its secret (an upgrade)
    sim.engine._cache.clear()
    assert sim.engine.hook_token("old", "approval") == legacy  # read from history, not derived
    assert handle_request(sim.engine, "GET", "/executions/old")[0] == 200
    assert legacy not in json.dumps(handle_request(sim.engine, "GET", "/executions/old/history")[1])
    sim.resume_hook(legacy, {"v": 1})
    sim.run()
    assert sim.describe("old")["steps"]["wait"]["output"] == {"v": 1}
    resumed = next(e for e in sim.history("old") if e["type"] == "HookResumed")
    assert list(resumed) == ["seq", "timestamp_ms", "type", "name", "token", "payload"]  # as before
    assert resumed["token"] == legacy


def test_a_resume_message_sent_before_the_upgrade_still_resumes() -> None:
    sim = keyed({"wait": {"wait_for": "approval"}}, key=None, signals={"approval": {}})
    sim.start("wf", {}, id="old")
    sim.run_until_idle()
    legacy = sim.engine.load_state("old").hooks["approval"]["token"]
    sim.engine.ids.hook_key = lambda: KEY
    sim.queues.send_decision({"kind": "hook", "execution_id": "old", "id": f"hook:{legacy}",
                              "token": legacy, "payload": {"v": 2}})
    sim.run()
    assert sim.describe("old")["steps"]["wait"]["output"] == {"v": 2}


def test_a_code_workflow_reads_the_derived_token_on_every_replay() -> None:
    from orbit.workflow import CodeRegistry, workflow

    reg = CodeRegistry()

    @workflow("keyed-hook", registry=reg)
    def wf(ctx: Any, input: Any) -> Any:
        token = ctx.hook_token("approval")
        ctx.step("notify.send", {"resume_with": token})
        ctx.step("notify.send", {"again": token})  # a later decision derives the same token
        return ctx.wait_for("approval")

    h = Harness(wf, workers={"notify.send": lambda inp, attempt: inp})
    h.engine.ids.hook_key = lambda: KEY
    h.start("keyed-hook")
    token = derive(KEY, "ex-1", "approval")
    assert [c[1] for c in h.calls] == [{"resume_with": token}, {"again": token}]
    assert "token" not in h.state().hooks["approval"]
    h.resume_hook(token, {"approved": True})
    assert h.describe()["output"] == {"approved": True}


def test_outside_a_decision_there_is_no_key_and_no_token() -> None:
    assert token_of("e1", "approval", {"token_sha256": "ab" * 32, "resumed": False}) == "<hook token>"
    assert token_of("e1", "approval", {"token": "plain", "resumed": False}) == "plain"


def test_a_keyless_simulator_still_records_the_token_as_before() -> None:
    sim = keyed({"wait": {"wait_for": "approval"}}, key=None, signals={"approval": {}})
    sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    created = next(e for e in sim.history("e1") if e["type"] == "HookCreated")
    assert list(created) == ["seq", "timestamp_ms", "type", "name", "token"]



@pytest.mark.parametrize("key", [KEY, None])
def test_the_console_never_sees_a_token(key: bytes | None) -> None:
    from orbit.console.data import ConsoleData

    sim = keyed(NOTIFY, key=key, signals={"approval": {}})
    sim.worker("mail.send", lambda inp, ctx: {})
    sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    token = sim.engine.hook_token("e1", "approval")
    console = ConsoleData(lambda method, target, body: handle_request(
        sim.engine, method, target.split("?")[0], body,
        dict(p.split("=") for p in target.split("?", 1)[1].split("&")) if "?" in target else {}))
    status, live = console.live("e1")
    assert status == 200 and live["hooks"] == [{"name": "approval", "resumed": False}]
    assert token not in json.dumps(live)


def test_a_code_query_replays_a_workflow_that_sent_its_token() -> None:
    from orbit.service.queries import run_query
    from orbit.workflow import CodeRegistry, workflow

    reg = CodeRegistry()

    @workflow("keyed-query", registry=reg)
    def wf(ctx: Any, input: Any) -> Any:
        sent = ctx.step("notify.send", {"resume_with": ctx.hook_token("approval")})
        ctx.query_handler("sent", lambda q: sent)
        return ctx.wait_for("approval")

    h = Harness(wf, workers={"notify.send": lambda inp, attempt: {"ok": True}})
    h.engine.ids.hook_key = lambda: KEY
    h.start("keyed-query")
    assert run_query(h.engine, "ex-1", "sent") == {"ok": True}  # the replay matched the recorded input
