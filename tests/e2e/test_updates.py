"""Durable updates end to end on the local stack, for code workflows and definitions
(docs/updates.md): a refused update records nothing, the same update id has one effect and
returns the same result, the caller waits with a timeout, handlers replay deterministically."""

from __future__ import annotations

import orbit
import pytest
from orbit.errors import ExecutionEnded, UpdateFailed, UpdateRefused, UpdateTimedOut
from orbit.local import LocalStack
from orbit.service.http import handle_request
from orbit.service.replay_host import default_runtime
from orbit.service.updates import submit, wait

DEFN = {
    "orbit": 1, "name": "cart-defn", "version": "1",
    "steps": {"open": {"wait_for": "item"},
              "total": {"compute": "{% steps.open.output.qty * 10 %}"}},
    "updates": {"add_item": {"signal": "item",
                             "validator": "{% update.qty > 0 ? true : 'qty must be a positive number' %}",
                             "result": "{% {'sku': steps.open.output.sku, 'line': update.qty * 10} %}"},
                "echo": {"signal": "item"}},
    "output": "{% steps.total.output %}",
}


@orbit.workflow("cart-code", version="1")
def cart(ctx, input):
    items = []

    def add(item):
        items.append(item["sku"])
        return {"count": len(items)}

    def check(item):
        if not isinstance(item, dict) or not isinstance(item.get("qty"), int) or item["qty"] <= 0:
            raise ValueError("qty must be a positive number")

    ctx.update_handler("add_item", add, validator=check)
    ctx.update_handler("sneaky", lambda _: ctx.sleep("1s"))
    ctx.update_handler("broken", lambda _: 1 / 0)
    ctx.query_handler("items", lambda _: list(items))
    ctx.wait_for("checkout")
    seen_before_sleep = list(items)
    ctx.sleep("1m")
    return {"items": items, "at_checkout": seen_before_sleep}


def _types(history, kind):
    return [e for e in history if e["type"] == kind]


@pytest.fixture(scope="module")
def stack():
    with LocalStack(mode="inprocess") as st:
        st.register(DEFN)
        st.register(cart)
        yield st


def test_code_update_refused_by_its_validator_records_nothing(stack):
    eid = stack.start("cart-code", {})
    stack.run_until_idle()
    before = stack.history(eid)
    with pytest.raises(UpdateRefused) as e:
        stack.update(eid, "add_item", {"sku": "a", "qty": 0})
    assert str(e.value) == "qty must be a positive number"  # word for word
    with pytest.raises(UpdateRefused, match="has no update 'nope'; it declares: add_item, broken, sneaky"):
        stack.update(eid, "nope", {})
    stack.run_until_idle()
    assert stack.history(eid) == before


def test_code_update_same_id_twice_has_one_effect(stack):
    eid = stack.start("cart-code", {})
    stack.run_until_idle()
    assert stack.update(eid, "add_item", {"sku": "a", "qty": 1}) == {"count": 1}
    assert stack.update(eid, "add_item", {"sku": "b", "qty": 2}, update_id="u-b") == {"count": 2}
    assert stack.update(eid, "add_item", {"sku": "b", "qty": 2}, update_id="u-b") == {"count": 2}
    history = stack.history(eid)
    assert [e["update_id"] for e in _types(history, "UpdateAccepted")][1:] == ["u-b"]
    assert len(_types(history, "UpdateCompleted")) == 2
    assert stack.query(eid, "items") == ["a", "b"]
    default_runtime().forget()  # cold replays rebuild the locals the handlers changed
    assert stack.query(eid, "items") == ["a", "b"]
    assert stack.update(eid, "add_item", {"sku": "c", "qty": 1}) == {"count": 3}
    stack.signal(eid, "checkout", None)
    stack.run_until_idle()
    default_runtime().forget()
    done = stack.run_until_done(eid)
    assert done["output"] == {"items": ["a", "b", "c"], "at_checkout": ["a", "b", "c"]}
    assert stack.update(eid, "add_item", {"sku": "b", "qty": 2}, update_id="u-b") == {"count": 2}
    with pytest.raises(ExecutionEnded, match="has already ended"):
        stack.update(eid, "add_item", {"sku": "d", "qty": 1})


def test_code_update_handler_failures_are_its_result(stack):
    eid = stack.start("cart-code", {})
    stack.run_until_idle()
    with pytest.raises(UpdateFailed, match=r"called ctx\.sleep\(\)"):
        stack.update(eid, "sneaky", None)
    with pytest.raises(UpdateFailed, match="ZeroDivisionError"):
        stack.update(eid, "broken", None)
    assert stack.update(eid, "add_item", {"sku": "a", "qty": 1}) == {"count": 1}
    assert stack.describe(eid)["status"] == "RUNNING"


def test_the_caller_waits_with_a_timeout_then_asks_again(stack):
    eid = stack.start("cart-code", {})
    stack.run_until_idle()
    uid = submit(stack.engine, eid, "add_item", {"sku": "z", "qty": 1}, "slow-1")
    answer = wait(stack.engine, eid, uid, 0.05)  # nobody pumps the queue: no result in time
    assert answer["status"] == "ACCEPTED"
    with pytest.raises(UpdateTimedOut, match="ask again with update id 'slow-1'"):
        orbit.errors.update_result(answer, 0.05)
    assert stack.update(eid, "add_item", {"sku": "z", "qty": 1}, update_id="slow-1") == {"count": 1}
    assert len(_types(stack.history(eid), "UpdateAccepted")) == 1


def test_definition_updates(stack):
    eid = stack.start("cart-defn", {})
    stack.run_until_idle()
    before = stack.history(eid)
    with pytest.raises(UpdateRefused) as e:
        stack.update(eid, "add_item", {"sku": "a", "qty": -1})
    assert str(e.value) == "qty must be a positive number"
    with pytest.raises(UpdateRefused, match="it declares: add_item, echo"):
        stack.update(eid, "nope", {})
    stack.run_until_idle()
    assert stack.history(eid) == before
    result = stack.update(eid, "add_item", {"sku": "a", "qty": 3}, update_id="d-1")
    assert result == {"sku": "a", "line": 30}
    assert stack.update(eid, "add_item", {"sku": "a", "qty": 3}, update_id="d-1") == result
    done = stack.run_until_done(eid)
    assert done["status"] == "COMPLETED" and done["output"] == 30
    history = stack.history(eid)
    assert len(_types(history, "UpdateAccepted")) == 1 and len(_types(history, "SignalReceived")) == 1
    assert _types(history, "UpdateCompleted")[0]["step"] == "open"
    with pytest.raises(ExecutionEnded):
        stack.update(eid, "echo", {"qty": 1})


def test_http_api_answers_202_then_200_with_the_same_update_id(stack):
    eid = stack.start("cart-code", {})
    stack.run_until_idle()
    path = f"/executions/{eid}/updates/add_item"
    status, body = handle_request(stack.engine, "POST", path, {"input": {"sku": "h", "qty": 1}, "timeout": 0})
    assert status == 202 and body["status"] == "ACCEPTED"
    stack.run_until_idle()
    again = {"input": {"sku": "h", "qty": 1}, "timeout": 0, "update_id": body["update_id"]}
    status, done = handle_request(stack.engine, "POST", path, again)
    assert status == 200 and done["result"] == {"count": 1} and done["error"] is None
    status, refused = handle_request(stack.engine, "POST", path, {"input": {"sku": "h", "qty": 0}})
    assert status == 400 and refused["error"]["message"] == "qty must be a positive number"
    status, bad = handle_request(stack.engine, "POST", path, {"input": {}, "timeout": 99})
    assert status == 400 and "body.timeout" in bad["error"]["message"]


GATED = {
    "orbit": 1, "name": "cart-gated", "version": "1",
    "steps": {"gate": {"wait_for": "go"},
              "open": {"wait_for": "item", "after": ["gate"]}},
    "updates": {"add_item": {"signal": "item"}},
    "output": "{% steps.open.output %}",
}


def test_a_definition_update_waits_until_a_step_consumes_it(stack):
    stack.register(GATED)
    eid = stack.start("cart-gated", {})
    stack.run_until_idle()
    with pytest.raises(UpdateTimedOut) as e:  # buffered: no step waits for `item` yet
        stack.update(eid, "add_item", {"sku": "late"}, update_id="g-1", timeout=0.3)
    assert e.value.update_id == "g-1"
    assert [x["type"] for x in stack.history(eid)].count("UpdateAccepted") == 1
    stack.signal(eid, "go", None)
    stack.run_until_idle()
    assert stack.update(eid, "add_item", {"sku": "late"}, update_id="g-1") == {"sku": "late"}
    assert stack.describe(eid)["output"] == {"sku": "late"}
    assert [x["type"] for x in stack.history(eid)].count("UpdateAccepted") == 1
