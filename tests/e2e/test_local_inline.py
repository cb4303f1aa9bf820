"""Inline steps on the local stack: real handlers on moto, mixed with a worker step; ctx.run."""

from __future__ import annotations

from typing import Any

import orbit
import pytest
from orbit.local import LocalStack


@pytest.fixture(scope="module")
def stack():
    with LocalStack(mode="inprocess", workers=["examples/workers/quotes.py"]) as st:
        st.register("examples/inline_quote.yaml")
        yield st


def test_inline_and_worker_steps_mix_through_the_handlers(stack: Any) -> None:
    eid = stack.start("inline-quote", {"sku": "mug", "qty": 4})
    desc = stack.run_until_done(eid)
    assert desc["status"] == "COMPLETED"
    assert desc["output"] == {"total": 31.2, "hold": "hold-mug-4", "key": f"{eid}:confirm"}
    scheduled = {e["step"]: e for e in stack.history(eid) if e["type"] == "StepScheduled"}
    assert {s: e.get("inline") for s, e in scheduled.items()} == {
        "price": "at_least_once", "tax": "at_least_once", "reserve": None, "confirm": "at_most_once"}
    assert desc["steps"]["confirm"]["status"] == "SUCCEEDED"


def add_vat(amount: float) -> float:
    return round(amount * 1.2, 2)


@orbit.workflow("inline-code-e2e", build="e2e-1")
def quote(ctx: Any, input: Any) -> Any:
    total = ctx.run(add_vat, input["amount"])
    hold = ctx.step("quotes.reserve", {"sku": "kettle", "qty": 1})
    return ctx.run(lambda t, h: {"total": t, **h}, total, hold, name="combine", semantics="at_most_once")


def test_ctx_run_on_the_local_stack(stack: Any) -> None:
    stack.register(quote)
    eid = stack.start("inline-code-e2e", {"amount": 10})
    desc = stack.run_until_done(eid)
    assert (desc["status"], desc["output"]) == ("COMPLETED", {"total": 12.0, "hold": "hold-kettle-1"})


def test_an_inline_timeout_longer_than_the_deciders_is_refused_at_registration(stack: Any) -> None:
    with pytest.raises(orbit.errors.ValidationError, match="must fit in the decider's timeout"):
        stack.register({"orbit": 1, "name": "too-long", "steps": {
            "s": {"task": "quotes.price", "inline": True, "timeout": "2m"}}})
