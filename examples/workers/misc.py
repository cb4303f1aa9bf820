"""Workers for the smaller examples (invoicing, trial reminder, flaky fetch)."""

from __future__ import annotations

import hashlib

import orbit
from orbit.worker import task

SENT: list[dict] = []


@task("notify.email")
def email(input: dict, ctx) -> dict:
    # keyed by the idempotency key: a redelivered task does not send twice
    message_id = "msg-" + hashlib.sha256(ctx.idempotency_key.encode()).hexdigest()[:10]
    if not any(m["message_id"] == message_id for m in SENT):
        SENT.append({"message_id": message_id, **input})
    return {"message_id": message_id}


@task("billing.draft_invoice")
def draft_invoice(input: dict, ctx) -> dict:
    total = round(float(input["amount"]) * 1.2, 2)  # with 20% VAT
    return {"invoice_id": f"INV-{input['order']}", "total": total}


@task("flaky.fetch")
def fetch(input: dict, ctx) -> dict:
    if not str(input["resource"]).startswith("res:"):
        raise orbit.TaskError("BAD_RESOURCE", f"{input['resource']!r} is not a resource id", retryable=False)
    if ctx.attempt <= int(input.get("fail_times", 0)):
        raise orbit.TaskError(
            "UPSTREAM_UNAVAILABLE", f"attempt {ctx.attempt}: upstream is down", retryable=True
        )
    return {"resource": input["resource"], "attempt": ctx.attempt}
