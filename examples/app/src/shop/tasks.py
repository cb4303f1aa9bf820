"""Tasks of the shop app (queue `shop`: the ShopTaskQueue of its template).

Each returns a JSON value; `orbit.TaskError(code, message, retryable=False)` fails the step for good.
Ids derive from `ctx.idempotency_key`, so a redelivered task gives the same answer.
"""

from __future__ import annotations

import hashlib
from typing import Any

from orbit import TaskError, worker

PRICES = {"apple": 0.5, "pear": 0.75, "plum": 1.25}


@worker.task("shop.quote")
def quote(input: Any, ctx: worker.TaskContext) -> dict[str, Any]:
    items = (input or {}).get("items")
    if not isinstance(items, list) or not items:
        raise TaskError("BAD_INPUT", "shop.quote needs {items: [{sku, qty}]}", retryable=False)
    unknown = [i.get("sku") for i in items if i.get("sku") not in PRICES]
    if unknown:
        raise TaskError("UNKNOWN_SKU", f"shop.quote: no price for {', '.join(map(str, unknown))}",
                        retryable=False)
    return {"total": round(sum(PRICES[i["sku"]] * int(i["qty"]) for i in items), 2)}


@worker.task("shop.reserve")
def reserve(input: Any, ctx: worker.TaskContext) -> dict[str, Any]:
    digest = hashlib.sha256(ctx.idempotency_key.encode()).hexdigest()[:10]
    return {"reservation_id": f"res-{digest}", "order_id": (input or {}).get("order_id")}
