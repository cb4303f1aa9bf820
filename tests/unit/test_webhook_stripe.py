"""Stripe's signature scheme on a webhook trigger (service/webhook_signatures.py, docs/triggers.md):
`Stripe-Signature: t=<unix>,v1=<hex>[,v1=...]`, HMAC-SHA256 over "<t>.<raw body>", within a
tolerance of the service clock. The bodies are signed here with hmac directly, as Stripe signs them
(not with Orbit's helper), on the simulator's virtual clock (2026, far from the wall clock: a check
on wall time would refuse them all)."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import pytest
from orbit.core.definition import parse_definition
from orbit.errors import ValidationError
from orbit.service.http import handle_request
from orbit.service.webhook_signatures import sign_stripe

from tests.unit.dsl_harness import sim_with

SECRET = "whsec_5oCX8aSRnAt2pcGzsfTfeMgzrgXSmFrD"  # an endpoint signing secret, used as it is
EVENT = {  # a Stripe event as Stripe posts it
    "id": "evt_1QdGv2LkdIwHu7ix0nM7bD3R", "object": "event", "api_version": "2024-06-20",
    "created": 1767225600, "livemode": False, "pending_webhooks": 1, "type": "payment_intent.succeeded",
    "request": {"id": "req_Qx3vDoP4d7c3aE", "idempotency_key": "5f8e7c3d-0a1b-4e2f-9c8d-7b6a5e4d3c2b"},
    "data": {"object": {"id": "pi_3QdGv1LkdIwHu7ix1Xyz", "object": "payment_intent", "amount": 2000,
                        "amount_received": 2000, "currency": "usd", "status": "succeeded",
                        "metadata": {"order_id": "A-1001"}}},
}
TRIGGERS = {
    "stripe": {
        "webhook": {"signature": {"scheme": "stripe", "secret": "orbit/webhooks/stripe"}},
        "id": "{% 'pay-' & body.data.object.metadata.order_id %}",
        "input": "{% {'amount': body.data.object.amount, 'event': body.id} %}",
        "when": "{% body.type = 'payment_intent.succeeded' %}",
    },
    "strict": {
        "webhook": {"signature": {"scheme": "stripe", "secret": "orbit/webhooks/stripe", "tolerance": "10s",
                                  "header": "X-Stripe-Sig"}},
        "id": "{% 'strict-' & body.id %}",
    },
}
PATH = "/webhooks/wf/stripe"
SIG = "triggers.t.webhook.signature"


class Secrets:
    def get(self, secret_id: str) -> bytes:
        assert secret_id == "orbit/webhooks/stripe"
        return SECRET.encode()


def _sim() -> Any:
    sim = sim_with({"a": {"compute": "{% input %}"}}, triggers=TRIGGERS)
    sim.engine.webhook_secrets = Secrets()
    return sim


def _stripe_header(raw: bytes, t: int, secret: str = SECRET) -> str:
    v1 = hmac.new(secret.encode(), f"{t}.".encode() + raw, hashlib.sha256).hexdigest()
    return f"t={t},v1={v1}"


def _post(sim: Any, raw: bytes, headers: dict[str, str], path: str = PATH) -> tuple[int, Any]:
    return handle_request(sim.engine, "POST", path, raw, headers=headers)


def _ids(sim: Any) -> list[str]:
    return sorted(e.execution_id for e in sim.engine.list()[0])


def test_a_stripe_signed_event_starts_and_a_resend_starts_nothing_more() -> None:
    sim = _sim()
    raw = json.dumps(EVENT, indent=2).encode()  # the raw bytes, as sent (not re-serialised)
    now = sim.engine.clock.now_ms() // 1000
    header = {"Stripe-Signature": _stripe_header(raw, now - 30)}
    assert _post(sim, raw, header) == (202, {"status": "started", "execution_id": "pay-A-1001"})
    assert _post(sim, raw, header)[0] == 202  # Stripe retries: the same id and input, one execution
    assert _ids(sim) == ["pay-A-1001"]
    assert sim.describe("pay-A-1001")["input"] == {"amount": 2000, "event": EVENT["id"]}
    assert sign_stripe(SECRET.encode(), raw, now - 30) == header["Stripe-Signature"]  # the helper agrees


def test_while_a_secret_is_rolled_any_v1_may_match_and_other_schemes_are_ignored() -> None:
    sim = _sim()
    raw = json.dumps(EVENT).encode()
    t = sim.engine.clock.now_ms() // 1000
    old = _stripe_header(raw, t, "whsec_old").split(",v1=")[1]
    new = _stripe_header(raw, t).split(",v1=")[1]
    v0 = "6ffbb59b2300aae63f272406069a9788598b792a944a07aba816edb039989a39"
    header = {"stripe-signature": f"t={t},v1={old},v1={new},v0={v0}"}
    assert _post(sim, raw, header)[0] == 202


@pytest.mark.parametrize(("headers", "code"), [
    ({}, "UNSIGNED"),
    ({"Stripe-Signature": "sha256=" + "0" * 64}, "BAD_SIGNATURE"),  # the hmac form is not Stripe's
    ({"Stripe-Signature": "t=abc,v1=" + "0" * 64}, "BAD_SIGNATURE"),
    ({"Stripe-Signature": "v0=" + "0" * 64}, "BAD_SIGNATURE"),
])
def test_a_missing_or_malformed_stripe_signature_is_401_and_starts_nothing(headers: dict[str, str],
                                                                           code: str) -> None:
    sim = _sim()
    status, body = _post(sim, json.dumps(EVENT).encode(), headers)
    assert (status, body["error"]["code"]) == (401, code), body
    assert "\n" not in body["error"]["message"] and _ids(sim) == []


def test_a_wrong_secret_or_a_changed_body_is_401() -> None:
    sim = _sim()
    raw = json.dumps(EVENT).encode()
    t = sim.engine.clock.now_ms() // 1000
    assert _post(sim, raw, {"Stripe-Signature": _stripe_header(raw, t, "whsec_other")})[1]["error"]["code"] \
        == "BAD_SIGNATURE"
    changed = raw.replace(b"2000", b"9000")
    assert _post(sim, changed, {"Stripe-Signature": _stripe_header(raw, t)})[0] == 401
    forged_time = _stripe_header(raw, t - 1000).replace(f"t={t - 1000}", f"t={t}")  # a fresh t on an old v1
    assert _post(sim, raw, {"Stripe-Signature": forged_time})[0] == 401
    assert _ids(sim) == []


def test_the_tolerance_is_checked_on_the_service_clock() -> None:
    sim = _sim()
    raw = json.dumps(EVENT).encode()
    t = sim.engine.clock.now_ms() // 1000
    header = {"Stripe-Signature": _stripe_header(raw, t)}
    sim.advance(301_000)  # the virtual clock moves on: the same request is now a replay
    status, body = _post(sim, raw, header)
    assert (status, body["error"]["code"]) == (401, "STALE_SIGNATURE"), body
    assert "301 s old" in body["error"]["message"] and "at most 300 s" in body["error"]["message"]
    future = {"Stripe-Signature": _stripe_header(raw, t + 301 + 400)}
    assert _post(sim, raw, future)[1]["error"]["code"] == "STALE_SIGNATURE"
    assert _post(sim, raw, {"Stripe-Signature": _stripe_header(raw, t + 2)})[0] == 202  # 299 s old
    strict = {"X-Stripe-Sig": _stripe_header(raw, t + 301 - 11)}  # its own header, 10 s tolerance
    assert _post(sim, raw, strict, "/webhooks/wf/strict")[1]["error"]["code"] == "STALE_SIGNATURE"
    fresh = {"X-Stripe-Sig": _stripe_header(raw, t + 301 - 9)}
    assert _post(sim, raw, fresh, "/webhooks/wf/strict")[0] == 202
    assert _ids(sim) == ["pay-A-1001", f"strict-{EVENT['id']}"]


@pytest.mark.parametrize(("webhook", "where"), [
    ({"signature": {"scheme": "svix", "secret": "s"}}, "triggers.t.webhook.signature.scheme"),
    ({"signature": {"scheme": "stripe"}}, "triggers.t.webhook.signature.secret"),
    ({"signature": {"scheme": "hmac", "secret": "s", "tolerance": "5m"}}, f"{SIG}.tolerance"),
    ({"signature": {"scheme": "stripe", "secret": "s", "tolerance": "2d"}}, f"{SIG}.tolerance"),
    ({"secret": "s", "signature": {"scheme": "stripe", "secret": "s"}}, "triggers.t.webhook.secret"),
])
def test_a_bad_signature_declaration_is_refused_naming_the_field(webhook: dict[str, Any], where: str) -> None:
    with pytest.raises(ValidationError) as refused:
        parse_definition({"orbit": 1, "name": "w", "version": "1", "steps": {"a": {"compute": "{% 1 %}"}},
                          "triggers": {"t": {"webhook": webhook, "id": "{% body.id %}"}}})
    assert where in [p.path for p in refused.value.problems], refused.value.problems
