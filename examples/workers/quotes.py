"""Tasks of examples/inline_quote.yaml: quick ones run inline in the decider, `reserve` on a worker."""

from __future__ import annotations

from typing import Any

from orbit.worker import task

PRICES = {"kettle": 25.0, "mug": 6.5}


@task("quotes.price")
def price(input: dict[str, Any], ctx: Any) -> dict[str, Any]:
    return {"amount": PRICES[input["sku"]] * int(input["qty"])}


@task("quotes.tax")
def tax(input: dict[str, Any], ctx: Any) -> dict[str, Any]:
    return {"total": round(input["amount"] * 1.2, 2)}


@task("quotes.reserve")
def reserve(input: dict[str, Any], ctx: Any) -> dict[str, Any]:
    return {"hold": f"hold-{input['sku']}-{input['qty']}"}


@task("quotes.confirm")
def confirm(input: dict[str, Any], ctx: Any) -> dict[str, Any]:
    return {"total": input["total"], "hold": input["hold"], "key": ctx.idempotency_key}
