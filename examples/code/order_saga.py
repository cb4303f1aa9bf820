"""The order-fulfilment saga of `examples/order_fulfilment.yaml`, written as a code workflow.

Same steps, same workers (`examples/workers/orders.py`), same outcomes: reserve
stock, wait for an approval signal, charge the card, ship every item (10 at a
time). When the charge fails, or the order is cancelled or times out, what
already happened is undone in reverse order: refund the charge, release the
stock. Here the compensation is ordinary Python: the failure is raised at
the call that failed (`orbit.StepFailed`, thanks to `on_exhausted=
"continue_workflow"`) and cancellation or the 2h timeout at the pending call
(`orbit.Cancelled`); the code undoes what it did and re-raises, so the
execution still ends FAILED, CANCELLED or TIMED_OUT.

Run it: `orbit run examples/code/order_saga.py --workers examples/workers/orders.py`
or register `order_saga` on a `LocalStack`.
"""

from __future__ import annotations

from typing import Any

import orbit

# The definition's `defaults`: 3 attempts with exponential backoff, 30s per attempt.
RETRY = {"max_attempts": 3, "backoff": "1s", "multiplier": 2, "max_backoff": "1m"}
CHARGE_RETRY = {"max_attempts": 4, "backoff": "2s", "non_retryable": ["CARD_DECLINED"]}
STEP = {"retry": RETRY, "timeout": "30s", "on_exhausted": "continue_workflow"}

APPROVAL_SCHEMA = {"type": "object", "required": ["approved"],
                   "properties": {"approved": {"type": "boolean"}, "by": {"type": "string"}}}


@orbit.workflow("order-fulfilment-code", version="1", timeout="2h", signals={"approval": APPROVAL_SCHEMA})
def order_saga(ctx: Any, order: dict[str, Any]) -> dict[str, Any]:
    undo: list[tuple[str, dict[str, Any]]] = []  # compensations of what succeeded, newest last
    try:
        reservation = ctx.step("inventory.reserve", {"order_id": order["order_id"], "items": order["items"]},
                               name="reserve", **STEP)
        undo.append(("inventory.release", {"reservation": reservation["reservation_id"]}))

        approval = ctx.wait_for("approval", timeout="7d")
        if approval.get("approved") is not True:
            return {"order": order["order_id"], "approved": approval.get("approved"), "charge": None,
                    "shipments": None}

        charge = ctx.step("payments.charge", {
            "order_id": order["order_id"], "amount": order["total"], "card": order["card"],
            "reservation": reservation["reservation_id"],
        }, name="charge", **{**STEP, "retry": CHARGE_RETRY})
        undo.append(("payments.refund", {"charge": charge["charge_id"]}))

        lines = [{"order_id": order["order_id"], "sku": item["sku"], "qty": item["qty"], "line": i}
                 for i, item in enumerate(order["items"])]
        shipments = ctx.map("shipping.ship", lines, concurrency=10, name="ship", **STEP)
        return {"order": order["order_id"], "approved": True, "charge": charge["charge_id"],
                "shipments": [s["tracking"] for s in shipments]}
    except (orbit.StepFailed, orbit.Cancelled):
        for task, input in reversed(undo):
            ctx.step(task, input, retry=RETRY, timeout="30s")
        raise
