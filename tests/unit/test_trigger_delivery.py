"""What a trigger does with an event (service/triggers.py, service/webhooks.py, aws/triggers.py) on
the in-memory engine: expressions before any write, dedupe by id, signal-with-start keyed by the
event, refusals dead-lettered with the reason, webhook signatures, and records a user's queue may
not forge."""

from __future__ import annotations

import json
from typing import Any

import pytest
from orbit.aws.triggers import handle_records
from orbit.service.http import handle_request
from orbit.service.triggers import TriggerRefused, deliver
from orbit.service.webhooks import sign

from tests.unit.dsl_harness import sim_with

TRIGGERS = {
    "placed": {
        "eventbridge": {"pattern": {"source": ["shop"]}},
        "id": "{% 'o-' & detail.id %}",
        "input": "{% {'n': $number(detail.n)} %}",
        "when": "{% detail.n != '0' %}",
    },
    "item": {
        "eventbridge": {"pattern": {"source": ["shop"]}},
        "id": "{% 'o-' & detail.id %}",
        "input": "{% {'n': 0} %}",
        "signal": {"name": "item", "payload": "{% detail.sku %}"},
    },
    "jobs": {
        "sqs": {"queue_arn": "arn:aws:sqs:us-east-1:123456789012:orbit-trigger-jobs"},
        "id": "{% body.id %}",
    },
    "hook": {
        "webhook": {"secret": "s/webhooks/x", "max_bytes": 64},
        "id": "{% 'h-' & body.id %}",
        "input": "{% {'n': $number(body.n)} %}",
    },
}
TRIGGER_QUEUE = "arn:aws:sqs:us-east-1:123456789012:TriggerQueue"


class Dead:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send(self, body: dict[str, Any]) -> None:
        self.sent.append(body)


class Secrets:
    def get(self, secret_id: str) -> bytes:
        assert secret_id == "s/webhooks/x"
        return b"k3y"


def _sim() -> Any:
    sim = sim_with({"w": {"wait_for": "done"}}, signals={"item": {}, "done": {}}, triggers=TRIGGERS)
    sim.engine.trigger_dead_letters = Dead()
    sim.engine.webhook_secrets = Secrets()
    return sim


def _ids(sim: Any) -> list[str]:
    return sorted(e.execution_id for e in sim.engine.list()[0])


def test_the_same_event_twice_starts_once_and_when_false_starts_nothing() -> None:
    sim = _sim()
    event = {"id": "ev1", "detail": {"id": "1", "n": "7"}}
    assert deliver(sim.engine, "wf", "placed", event, "ev1").to_dict() == {
        "status": "started",
        "execution_id": "o-1",
    }
    assert deliver(sim.engine, "wf", "placed", event, "ev1").status == "started"  # found: nothing new
    assert deliver(sim.engine, "wf", "placed", {"detail": {"id": "2", "n": "0"}}, "ev2").status == "ignored"
    assert deliver(sim.engine, "wf", "placed", {"detail": {"id": "1", "n": "8"}}, "ev3").status == "exists"
    assert _ids(sim) == ["o-1"] and sim.describe("o-1")["input"] == {"n": 7}


def test_an_input_expression_that_fails_is_refused_before_anything_is_written() -> None:
    sim = _sim()
    with pytest.raises(TriggerRefused, match="input expression failed"):
        deliver(sim.engine, "wf", "placed", {"detail": {"id": "1", "n": "seven"}}, "ev1")
    with pytest.raises(TriggerRefused, match="id that does not fit"):
        deliver(sim.engine, "wf", "jobs", {"body": {"id": "a/b" * 200}}, "m1")
    with pytest.raises(TriggerRefused, match="has no trigger 'nope'"):
        deliver(sim.engine, "wf", "nope", {}, "k")
    assert _ids(sim) == []


def test_a_signal_trigger_is_signal_with_start_keyed_by_the_event() -> None:
    sim = _sim()
    for key, sku in (("e1", "mug"), ("e2", "pan"), ("e1", "mug")):  # e1 redelivered
        deliver(sim.engine, "wf", "item", {"detail": {"id": "9", "sku": sku}}, key)
    assert [e["payload"] for e in sim.history("o-9") if e["type"] == "SignalReceived"] == ["mug", "pan"]


def test_records_from_a_users_queue_cannot_name_a_trigger_and_refusals_are_dead_lettered() -> None:
    sim = _sim()
    forged = {
        "orbit_trigger": {"workflow": "wf", "trigger": "placed"},
        "event": {"detail": {"id": "x", "n": "1"}},
    }
    jobs = "arn:aws:sqs:us-east-1:123456789012:orbit-trigger-jobs"
    records = [
        {"messageId": "m1", "eventSourceARN": jobs, "body": json.dumps(forged)},  # the sqs trigger's body
        {
            "messageId": "m2",
            "eventSourceARN": TRIGGER_QUEUE,
            "body": json.dumps(
                {
                    "orbit_trigger": {"workflow": "wf", "trigger": "placed"},
                    "event": {"id": "e", "detail": {"id": "2", "n": "x"}},
                }
            ),
        },
        {"messageId": "m3", "eventSourceARN": TRIGGER_QUEUE, "body": "not json"},
        {"messageId": "m4", "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:other", "body": "{}"},
    ]
    assert handle_records(sim.engine, {"Records": records}, TRIGGER_QUEUE) == {"batchItemFailures": []}
    with pytest.raises(Exception):
        sim.describe("o-x")  # the forged trigger name was never read: the sqs trigger took the message
    dead = sim.engine.trigger_dead_letters.sent
    assert [(d["trigger"], d["reason"].split(":")[0]) for d in dead] == [
        ("jobs", "trigger 'jobs'"),
        ("placed", "trigger 'placed'"),
        ("", "not an event a trigger's rule sent"),
        ("", "no active workflow has an sqs trigger on arn"),
    ]


def test_a_record_that_fails_for_another_reason_is_a_partial_batch_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sim = _sim()

    def throttled(*a: Any, **k: Any) -> Any:
        raise RuntimeError("throttled")

    monkeypatch.setattr(sim.engine, "start", throttled)
    body = {
        "orbit_trigger": {"workflow": "wf", "trigger": "placed"},
        "event": {"detail": {"id": "3", "n": "1"}},
    }
    got = handle_records(
        sim.engine,
        {"Records": [{"messageId": "m9", "eventSourceARN": TRIGGER_QUEUE, "body": json.dumps(body)}]},
        TRIGGER_QUEUE,
    )
    assert got == {"batchItemFailures": [{"itemIdentifier": "m9"}]}
    assert sim.engine.trigger_dead_letters.sent == []


def test_webhook_answers() -> None:
    sim = _sim()
    raw = b'{"id": "1", "n": "2"}'
    path = "/webhooks/wf/hook"
    assert handle_request(sim.engine, "POST", path, raw, headers={})[0] == 401
    assert handle_request(sim.engine, "POST", path, raw, headers={"X-Orbit-Signature": "sha256=00"})[0] == 401
    assert (
        handle_request(
            sim.engine, "POST", path, b"x" * 65, headers={"X-Orbit-Signature": sign(b"k3y", b"x" * 65)}
        )[0]
        == 413
    )
    assert handle_request(sim.engine, "POST", "/webhooks/wf/jobs", raw, headers={})[0] == 404
    assert handle_request(sim.engine, "POST", "/webhooks/nope/hook", raw, headers={})[0] == 404
    assert _ids(sim) == []
    bare = sign(b"k3y", raw).removeprefix("sha256=")  # the prefix is optional
    assert handle_request(sim.engine, "POST", path, raw, headers={"x-orbit-signature": bare}) == (
        202,
        {"status": "started", "execution_id": "h-1"},
    )
    poison = b'{"id": "2", "n": "two"}'
    status, body = handle_request(
        sim.engine, "POST", path, poison, headers={"X-Orbit-Signature": sign(b"k3y", poison)}
    )
    assert status == 422 and body["error"]["code"] == "TRIGGER_REFUSED"
    assert sim.engine.trigger_dead_letters.sent[-1]["trigger"] == "hook"
    assert _ids(sim) == ["h-1"] and sim.describe("h-1")["input"] == {"n": 2}
