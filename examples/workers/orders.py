"""Workers for examples/order_fulfilment.yaml.

The stores are in-memory dicts so the example runs anywhere; a real worker
would call the inventory, payment and shipping services, passing
`ctx.idempotency_key` so a redelivered task never charges twice.
"""

from __future__ import annotations

import hashlib

import orbit
from orbit.worker import task

RESERVATIONS: dict[str, dict] = {}
CHARGES: dict[str, dict] = {}


def _id(prefix: str, key: str) -> str:
    # derived from the idempotency key: a retried or redelivered call gets the same id
    return f"{prefix}-{hashlib.sha256(key.encode()).hexdigest()[:10]}"


@task("inventory.reserve")
def reserve(input: dict, ctx) -> dict:
    reservation_id = _id("res", ctx.idempotency_key)
    RESERVATIONS[reservation_id] = {"order_id": input["order_id"], "items": input["items"], "held": True}
    return {"reservation_id": reservation_id, "lines": len(input["items"])}


@task("inventory.release")
def release(input: dict, ctx) -> dict:
    held = RESERVATIONS.get(input["reservation"])
    if held is not None:
        held["held"] = False
    return {"released": input["reservation"]}


@task("payments.charge")
def charge(input: dict, ctx) -> dict:
    if input["card"] == "tok_declined":
        raise orbit.TaskError("CARD_DECLINED", f"card declined for {input['amount']}", retryable=False)
    charge_id = _id("ch", ctx.idempotency_key)
    CHARGES[charge_id] = {"amount": input["amount"], "refunded": False}
    return {"charge_id": charge_id, "amount": input["amount"]}


@task("payments.refund")
def refund(input: dict, ctx) -> dict:
    if input["charge"] in CHARGES:
        CHARGES[input["charge"]]["refunded"] = True
    return {"refunded": input["charge"]}


@task("shipping.ship")
def ship(input: dict, ctx) -> dict:
    return {"sku": input["sku"], "qty": input["qty"], "tracking": f"TRK-{input['order_id']}-{input['line']}"}
