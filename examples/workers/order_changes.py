"""Workers for examples/order_changes.yaml: an in-memory order book that handlers change."""

from __future__ import annotations

import orbit
from orbit.worker import task

ORDERS: dict[str, dict] = {}


@task("changes.open_order")
def open_order(input: dict, ctx) -> dict:
    ORDERS[input["order"]] = {"address": input["address"], "items": [], "status": "open"}
    return {"order": input["order"]}


@task("changes.set_address")
def set_address(input: dict, ctx) -> dict:
    order = ORDERS[input["order"]]
    previous, order["address"] = order["address"], input["address"]
    return {"address": input["address"], "previous": previous}


@task("changes.add_item")
def add_item(input: dict, ctx) -> dict:
    if input["sku"] == "discontinued":
        raise orbit.TaskError("OUT_OF_RANGE", "this item is no longer sold", retryable=False)
    items = ORDERS[input["order"]]["items"]
    if input["sku"] not in items:  # a redelivered task adds nothing twice
        items.append(input["sku"])
    return {"sku": input["sku"], "items": len(items)}


@task("changes.remove_item")
def remove_item(input: dict, ctx) -> dict:
    items = ORDERS[input["order"]]["items"]
    if input["sku"] in items:
        items.remove(input["sku"])
    return {"removed": input["sku"]}


@task("changes.cancel_order")
def cancel_order(input: dict, ctx) -> dict:
    ORDERS[input["order"]]["status"] = "cancelled"
    return {"order": input["order"]}


@task("changes.dispatch")
def dispatch(input: dict, ctx) -> dict:
    order = ORDERS[input["order"]]
    order["status"] = "dispatched"
    return {"order": input["order"], "address": order["address"], "items": sorted(order["items"])}
