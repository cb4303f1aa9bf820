"""Webhook triggers: `POST /webhooks/{workflow}/{trigger}` (docs/triggers.md, "Webhook").

The request is checked before anything is parsed or started:
1. the trigger exists and is a webhook (404 otherwise);
2. the raw body is at most the trigger's `max_bytes` (413);
3. the signature header carries the signature of the trigger's scheme under its secret from Secrets
   Manager (service/webhook_signatures.py): `hmac`, the hex HMAC-SHA256 of the raw body in
   `X-Orbit-Signature` unless the trigger names another header, optionally prefixed `sha256=`
   (GitHub's form); `stripe`, Stripe's `Stripe-Signature: t=...,v1=...` within its tolerance of the
   service clock. Compared in constant time. Missing, wrong or too old: 401, nothing starts.
Then the event `{body, headers}` goes through `triggers.deliver`: 202 with what happened. An event
the trigger refuses (an expression failed) goes to the trigger dead-letter queue with the reason
and is answered 422.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Protocol

from orbit.service.triggers import TriggerRefused, dead_letter_body, deliver, find_trigger

Response = tuple[int, Any]
SKIPPED_HEADERS = frozenset({"authorization", "cookie"})  # never handed to expressions


class WebhookSecrets(Protocol):
    def get(self, secret_id: str) -> bytes:
        """The secret's value (adapters/secrets.py: Secrets Manager, cached a few minutes)."""
        ...


def handle_webhook(
    engine: Any, workflow: str, trigger: str, raw: bytes | str | None, headers: Mapping[str, str] | None
) -> Response:
    body = raw.encode() if isinstance(raw, str) else (raw or b"")
    try:
        _, trig = find_trigger(engine, workflow, trigger)
    except TriggerRefused as e:
        return _error(404, "NOT_FOUND", str(e))
    if trig.kind != "webhook":
        return _error(
            404, "NOT_FOUND", f"trigger {trigger!r} of {workflow!r} is a {trig.kind} trigger, not a webhook"
        )
    limit = int(trig.config["max_bytes"])
    if len(body) > limit:
        return _error(
            413,
            "PAYLOAD_TOO_LARGE",
            f"webhook body: {len(body)} bytes; trigger {trigger!r} takes at most {limit}",
        )
    lowered = {str(k).lower(): str(v) for k, v in (headers or {}).items()}
    sig = dict(trig.config["signature"])
    header = str(sig["header"])
    given = lowered.get(header.lower(), "").strip()
    secrets: WebhookSecrets | None = getattr(engine, "webhook_secrets", None)
    if secrets is None:
        return _error(500, "NO_SECRETS", "this deployment cannot read webhook secrets; nothing was started")
    if not given:
        return _error(401, "UNSIGNED", f"the request has no {header} header; nothing was started")
    from orbit.service.webhook_signatures import problem

    refused = problem(sig, secrets.get(str(sig["secret"])), body, given, engine.clock.now_ms())
    if refused is not None:
        return _error(401, *refused)
    try:
        parsed: Any = json.loads(body) if body else None
    except ValueError:
        parsed = body.decode("utf-8", "replace")
    event = {"body": parsed, "headers": {k: v for k, v in lowered.items() if k not in SKIPPED_HEADERS}}
    try:
        outcome = deliver(engine, workflow, trigger, event, hashlib.sha256(body).hexdigest())
    except TriggerRefused as e:
        dead = getattr(engine, "trigger_dead_letters", None)
        if dead is not None:
            dead.send(dead_letter_body(workflow, trigger, str(e), event))
        if getattr(engine, "meter", None) is not None:
            engine.meter.count_workflow(workflow, "TriggerDeadLettered")
            engine.meter.count("TriggerDeadLettered")
        return _error(422, TriggerRefused.code, str(e))
    return 202, outcome.to_dict()


def sign(secret: bytes, body: bytes) -> str:
    """The header value a sender puts on `body` (`sha256=` + hex HMAC-SHA256): for tests and tools."""
    import hmac

    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def _error(status: int, code: str, message: str) -> Response:
    return status, {"error": {"code": code, "message": message}}
