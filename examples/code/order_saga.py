"""The order-fulfilment saga of `examples/order_fulfilment.yaml`, written as a code workflow.

Same steps, same workers (`examples/workers/orders.py`), same outcomes: reserve
stock, wait for an approval signal, charge the card, ship every item (10 at a
time). Each step that must be undone says how with `compensate=`: when the
charge fails, or the order is cancelled or times out, the engine runs the
compensations of the steps that succeeded in reverse order (refund the
charge, release the stock), exactly as for the definition. Cancellation and
the 2h timeout are also raised in the code (`orbit.Cancelled`) at the pending
call, where a workflow could run cleanup of its own; this one needs none.

Run it: `orbit run examples/code/order_saga.py --workers examples/workers/orders.py`
or register `order_saga` on a `LocalStack`.
"""

from __future__ import annotations

from typing import Any

import orbit

# The definition's `defaults`: 3 attempts with exponential backoff, 30s per attempt.
RETRY = {"max_attempts": 3, "backoff": "1s", "multiplier": 2, "max_backoff": "1m"}
CHARGE_RETRY = {"max_attempts": 4, "backoff": "2s", "non_retryable": ["CARD_DECLINED"]}

APPROVAL_SCHEMA = {"type": "object", "required": ["approved"],
                   "properties": {"approved": {"type": "boolean"}, "by": {"type": "string"}}}


@orbit.workflow("order-fulfilment-code", version="1", timeout="2h", signals={"approval": APPROVAL_SCHEMA})
def order_saga(ctx: Any, order: dict[str, Any]) -> dict[str, Any]:
    reservation = ctx.step(
        "inventory.reserve", {"order_id": order["order_id"], "items": order["items"]},
        name="reserve", retry=RETRY, timeout="30s",
        compensate=lambda out: orbit.Step("inventory.release", {"reservation": out["reservation_id"]},
                                          retry=RETRY, timeout="30s"))

    approval = ctx.wait_for("approval", timeout="7d")
    if approval.get("approved") is not True:
        return {"order": order["order_id"], "approved": approval.get("approved"), "charge": None,
                "shipments": None}

    charge = ctx.step(
        "payments.charge", {"order_id": order["order_id"], "amount": order["total"], "card": order["card"],
                            "reservation": reservation["reservation_id"]},
        name="charge", retry=CHARGE_RETRY, timeout="30s",
        compensate=lambda out: orbit.Step("payments.refund", {"charge": out["charge_id"]},
                                          retry=RETRY, timeout="30s"))

    lines = [{"order_id": order["order_id"], "sku": item["sku"], "qty": item["qty"], "line": i}
             for i, item in enumerate(order["items"])]
    shipments = ctx.map("shipping.ship", lines, concurrency=10, name="ship", retry=RETRY, timeout="30s")
    return {"order": order["order_id"], "approved": True, "charge": charge["charge_id"],
            "shipments": [s["tracking"] for s in shipments]}
