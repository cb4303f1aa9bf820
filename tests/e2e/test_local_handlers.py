"""`on_signal` handlers end to end on the local stack: real handlers, moto, virtual time."""

from __future__ import annotations

import sys

import pytest
from orbit.errors import ValidationError
from orbit.local import LocalStack, load_workers

WORKERS = ["examples/workers/order_changes.py"]


@pytest.fixture(scope="module")
def stack():
    with LocalStack(mode="inprocess", workers=WORKERS) as st:
        st.register("examples/order_changes.yaml")
        yield st


def _orders() -> dict:
    load_workers(WORKERS[0])
    module = next(m for n, m in sys.modules.items()
                  if n.startswith("_orbit_workers_") and n.endswith("order_changes"))
    return module.ORDERS


def _instances(stack, eid: str) -> list[dict]:
    return [e for e in stack.history(eid) if e["type"] == "HandlerStarted"]


def test_three_signals_while_the_order_sleeps_run_three_instances_in_order(stack):
    eid = stack.start("order-changes", {"order_id": "O-1", "address": "0 Start St"})
    stack.run_until_idle()
    assert stack.describe(eid)["steps"]["window"]["status"] == "WAITING"
    for street in ("1 Elm St", "2 Oak St", "3 Ash St"):
        stack.signal(eid, "address_changed", {"address": street})
    stack.run_until_idle()
    d = stack.describe(eid)
    assert d["status"] == "RUNNING" and d["steps"]["window"]["status"] == "WAITING"
    started = _instances(stack, eid)
    received = [e for e in stack.history(eid) if e["type"] == "SignalReceived"]
    assert [e["step"] for e in started] == [f"on_signal:address_changed@{r['seq']}" for r in received]
    assert [d["steps"][e["step"]]["output"] for e in started] == ["1 Elm St", "2 Oak St", "3 Ash St"]
    desc = stack.run_until_done(eid)
    assert desc["status"] == "COMPLETED"
    assert desc["output"] == {"order": "O-1", "address": "3 Ash St", "items": []}  # the last change won


def test_a_failing_handler_fails_the_order_and_undoes_every_change(stack):
    eid = stack.start("order-changes", {"order_id": "O-2", "address": "0 Start St"})
    stack.run_until_idle()
    stack.signal(eid, "address_changed", {"address": "9 New Rd"})
    stack.signal(eid, "item_added", {"sku": "kettle"})
    stack.run_until_idle()
    assert _orders()["O-2"] == {"address": "9 New Rd", "items": ["kettle"], "status": "open"}
    stack.signal(eid, "item_added", {"sku": "discontinued"})
    desc = stack.run_until_done(eid)
    assert desc["status"] == "FAILED" and desc["error"]["code"] == "OUT_OF_RANGE"
    assert desc["compensation"] == "completed"
    order = [e["steps"] for e in stack.history(eid) if e["type"] == "CompensationStarted"][0]
    assert order[-1] == "open" and len(order) == 3  # both handler changes, newest first, then the order
    assert _orders()["O-2"] == {"address": "0 Start St", "items": [], "status": "cancelled"}


def _with_a_courier_wait() -> dict:
    """The example, with a handler step that waits 30 minutes (a durable timer) after adding an item:
    an instance that is certainly running when the cancel comes."""
    from orbit.core.definition import parse_text

    doc = parse_text(open("examples/order_changes.yaml").read())
    doc["name"] = "order-changes-courier"
    doc["on_signal"]["item_added"]["steps"]["courier"] = {"sleep": "30m", "after": ["add"]}
    return doc


def test_a_cancel_while_handlers_run_cancels_them_and_compensates(stack):
    stack.register(_with_a_courier_wait())
    eid = stack.start("order-changes-courier", {"order_id": "O-3", "address": "0 Start St"})
    stack.run_until_idle()
    for sku in ("mug", "teapot"):
        stack.signal(eid, "item_added", {"sku": sku})
    stack.run_until_idle()
    keys = [e["step"] for e in _instances(stack, eid)]
    d = stack.describe(eid)
    assert len(keys) == 2 and all(d["steps"][f"{k}:courier"]["status"] == "WAITING" for k in keys)
    assert _orders()["O-3"]["items"] == ["mug", "teapot"]
    stack.cancel(eid, "customer called")
    desc = stack.run_until_done(eid)
    assert desc["status"] == "CANCELLED" and desc["compensation"] == "completed"
    for key in keys:
        assert desc["steps"][key]["status"] == "CANCELLED"
        assert desc["steps"][f"{key}:courier"]["status"] == "CANCELLED"
        assert desc["steps"][f"compensate:{key}:add"]["status"] == "SUCCEEDED"
    assert _orders()["O-3"] == {"address": "0 Start St", "items": [], "status": "cancelled"}


def test_a_name_used_both_ways_is_refused_and_an_unknown_signal_too(stack):
    with pytest.raises(ValidationError, match=r"on_signal\.approval: signal 'approval' is also waited for"):
        stack.register({"orbit": 1, "name": "both", "steps": {"approval": {"wait_for": "approval"}},
                        "on_signal": {"approval": {"steps": {"a": {"compute": "{% 1 %}"}}}}})
    eid = stack.start("order-changes", {"order_id": "O-4", "address": "0 Start St"})
    with pytest.raises(ValidationError, match="address_changed, item_added"):
        stack.signal(eid, "adress_changed", {"address": "x"})
    stack.cancel(eid, "test over")
    assert stack.run_until_done(eid)["status"] == "CANCELLED"
