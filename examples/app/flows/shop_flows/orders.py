"""`shop-order-code`: the shop-order definition of template.yaml, written as a code workflow.

Orbit's decider replays it: it imports this module at cold start (Orbit's WorkflowModules parameter)
from this app's layer (Orbit's AppLayerArns parameter); see docs/deploying.md.
"""

from __future__ import annotations

from typing import Any

import orbit

RETRY = {"max_attempts": 3, "backoff": "1s", "multiplier": 2}


@orbit.workflow("shop-order-code", version="1", timeout="1h")
def shop_order(ctx: Any, order: dict[str, Any]) -> dict[str, Any]:
    quote = ctx.step("shop.quote", {"items": order["items"]}, name="quote", retry=RETRY, timeout="30s")
    reservation = ctx.step("shop.reserve", {"order_id": order["order_id"], "total": quote["total"]},
                           name="reserve", retry=RETRY, timeout="30s")
    return {"order_id": order["order_id"], "total": quote["total"],
            "reservation": reservation["reservation_id"]}
