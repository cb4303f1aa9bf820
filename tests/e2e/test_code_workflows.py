"""Code workflows end to end on the local stack: real handlers, moto, virtual time."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import orbit
import pytest
from orbit.local import LocalStack

ROOT = Path(__file__).resolve().parents[2]
ORDER = {
    "order_id": "C-1",
    "total": 59.5,
    "card": "tok_visa",
    "items": [{"sku": "kettle", "qty": 1}, {"sku": "mug", "qty": 4}],
}


def _saga():
    name = "e2e_code_order_saga"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / "code" / "order_saga.py")
        assert spec and spec.loader
        sys.modules[name] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules[name].order_saga


@orbit.workflow("code-e2e-nap", version="1")
def nap(ctx, input):
    started = ctx.now_ms()
    ctx.sleep("7d")
    token = ctx.hook_token("wake")
    ctx.progress({"token_known": bool(token)})
    return {"slept_ms": ctx.now_ms() - started, "payload": ctx.wait_for("wake", timeout="1d")}


@pytest.fixture(scope="module")
def stack():
    with LocalStack(mode="inprocess", workers=["examples/workers/orders.py"]) as st:
        st.register(_saga())
        yield st


def test_code_saga_completes_after_approval(stack):
    eid = stack.start("order-fulfilment-code", ORDER)
    stack.run_until_idle()
    assert stack.describe(eid)["steps"]["2.wait_for(approval)"]["status"] == "WAITING"
    stack.signal(eid, "approval", {"approved": True, "by": "e2e"})
    desc = stack.run_until_done(eid)
    assert desc["status"] == "COMPLETED"
    assert desc["output"]["shipments"] == ["TRK-C-1-0", "TRK-C-1-1"]
    assert desc["output"]["charge"].startswith("ch-")


def test_code_saga_declined_card_releases_the_stock(stack):
    eid = stack.start("order-fulfilment-code", {**ORDER, "order_id": "C-2", "card": "tok_declined"})
    stack.signal(eid, "approval", {"approved": True})
    desc = stack.run_until_done(eid)
    assert desc["status"] == "FAILED" and desc["error"]["code"] == "CARD_DECLINED"
    assert desc["compensation"] == "completed"
    assert desc["steps"]["compensate:1.reserve"]["status"] == "SUCCEEDED"  # the stock was released


def test_code_saga_cancel_mid_run_compensates(stack):
    eid = stack.start("order-fulfilment-code", {**ORDER, "order_id": "C-3"})
    stack.run_until_idle()
    stack.cancel(eid, "customer cancelled")
    desc = stack.run_until_done(eid)
    assert desc["status"] == "CANCELLED" and desc["compensation"] == "completed"
    assert desc["steps"]["compensate:1.reserve"]["status"] == "SUCCEEDED"
    assert desc["steps"]["2.wait_for(approval)"]["status"] == "CANCELLED"


def test_code_workflow_sleeps_a_week_and_resumes_by_hook(stack):
    stack.register(nap)
    eid = stack.start("code-e2e-nap", {})
    stack.run_until_idle()
    stack.advance(7 * 86_400 + 120)
    desc = stack.describe(eid)
    assert desc["progress"] == {"token_known": True}
    created = next(e for e in stack.history(eid) if e["type"] == "HookCreated")
    assert "token" not in created and created["token_sha256"].startswith("sha256:")  # a credential
    token = stack.engine.hook_token(eid, "wake")  # derived from the stack secret, never stored
    assert "token" not in stack.engine.load_state(eid).hooks["wake"]  # the state keeps its hash only
    stack.resume_hook(token, {"good": "morning"})
    desc = stack.run_until_done(eid)
    assert desc["status"] == "COMPLETED"
    assert desc["output"]["payload"] == {"good": "morning"}
    assert desc["output"]["slept_ms"] >= 7 * 86_400_000
