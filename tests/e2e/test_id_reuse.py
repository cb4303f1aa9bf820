"""A signal or update id names one request (issue 25, Low): the same id again with the same name
and payload is a retry (one effect, the same answer); with another name or payload it is a 409
that names what differs, not the first one's result."""

from __future__ import annotations

import json
from typing import Any

import orbit
import pytest
from orbit.errors import IdReused
from orbit.local import LocalStack
from orbit.service.http import handle_request

WAITS = {"orbit": 1, "name": "waits", "version": "1",
         "steps": {"a": {"wait_for": "go"}, "b": {"wait_for": "stop"}}}


@orbit.workflow("id-reuse-cart", version="1")
def cart(ctx: Any, input: Any) -> Any:
    items: list[str] = []

    def add(item: Any) -> Any:
        items.append(item["sku"])
        return {"count": len(items)}

    ctx.update_handler("add_item", add)
    ctx.update_handler("remove_item", lambda item: {"count": len(items)})
    ctx.wait_for("checkout")
    return items


@pytest.fixture(scope="module")
def stack() -> Any:
    with LocalStack(mode="inprocess") as st:
        st.register(WAITS)
        st.register(cart)
        yield st


def post(stack: LocalStack, path: str, body: Any) -> tuple[int, Any]:
    return handle_request(stack.engine, "POST", path, json.dumps(body))  # type: ignore[no-any-return]


def test_a_signal_id_sent_again_with_another_payload_or_name_is_a_409(stack: LocalStack) -> None:
    eid = stack.start("waits", {})
    stack.run_until_idle()
    go = f"/executions/{eid}/signals/go"
    assert post(stack, go, {"id": "s1", "payload": {"n": 1}}) == (202, {"id": "s1"})
    stack.run_until_idle()
    before = stack.history(eid)
    # a retry: the same answer, nothing new
    assert post(stack, go, {"id": "s1", "payload": {"n": 1}}) == (202, {"id": "s1"})
    status, body = post(stack, go, {"id": "s1", "payload": {"n": 2}})
    assert status == 409 and body["error"]["code"] == "CONFLICT"
    assert body["error"]["message"] == (
        "signal id 's1' is already used and this request differs: signal 'go' was sent with another "
        "payload; a retry must send the same signal, a new one a new id")
    status, body = post(stack, f"/executions/{eid}/signals/stop", {"id": "s1", "payload": {"n": 1}})
    assert status == 409 and "it was signal 'go', this is signal 'stop'" in body["error"]["message"]
    stack.run_until_idle()
    assert stack.history(eid) == before  # the step waiting for `stop` got nothing
    with pytest.raises(IdReused):
        stack.engine.signal(eid, "go", {"n": 3}, "s1")


def test_an_update_id_sent_again_with_another_input_or_name_is_a_409(stack: LocalStack) -> None:
    eid = stack.start("id-reuse-cart", {})
    stack.run_until_idle()
    assert stack.update(eid, "add_item", {"sku": "a"}, update_id="u1") == {"count": 1}
    assert stack.update(eid, "add_item", {"sku": "a"}, update_id="u1") == {"count": 1}  # a retry
    before = stack.history(eid)
    add = f"/executions/{eid}/updates/add_item"
    status, body = post(stack, add, {"input": {"sku": "b"}, "update_id": "u1"})
    assert status == 409, body
    assert "update 'add_item' was sent with another input" in body["error"]["message"]
    status, body = post(stack, f"/executions/{eid}/updates/remove_item", {"input": {"sku": "a"},
                                                                          "update_id": "u1"})
    assert status == 409
    assert "it was update 'add_item', this is update 'remove_item'" in body["error"]["message"]
    stack.run_until_idle()
    assert stack.history(eid) == before
