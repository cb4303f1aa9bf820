"""The examples end to end on the local stack: real handlers, moto, virtual time."""

from __future__ import annotations

import sys

import boto3
import pytest
from orbit.local import LocalStack, clock, load_workers

ORDER = {
    "order_id": "A-1",
    "total": 59.5,
    "card": "tok_visa",
    "items": [{"sku": "kettle", "qty": 1}, {"sku": "mug", "qty": 4}],
}
WORKERS = ["examples/workers/orders.py", "examples/workers/misc.py"]


@pytest.fixture(scope="module")
def stack():
    with LocalStack(mode="inprocess", workers=WORKERS) as st:
        for name in ("order_fulfilment", "invoicing", "order_with_invoice", "trial_reminder", "flaky_fetch"):
            st.register(f"examples/{name}.yaml")
        yield st


def _orders_module():
    load_workers("examples/workers/orders.py")
    return next(m for n, m in sys.modules.items() if n.startswith("_orbit_workers_") and n.endswith("orders"))


def test_order_saga_completes_after_approval(stack):
    eid = stack.start("order-fulfilment", ORDER)
    stack.run_until_idle()
    assert stack.describe(eid)["steps"]["approval"]["status"] == "WAITING"
    stack.signal(eid, "approval", {"approved": True, "by": "test"})
    desc = stack.run_until_done(eid)
    assert desc["status"] == "COMPLETED"
    assert desc["output"]["shipments"] == ["TRK-A-1-0", "TRK-A-1-1"]
    assert desc["output"]["charge"].startswith("ch-")
    types = [e["type"] for e in stack.history(eid)]
    assert types[0] == "WorkflowCreated" and types[-1] == "WorkflowCompleted"
    assert types.count("StepSucceeded") == 6  # reserve, approval, charge, ship[0], ship[1], ship


def test_declined_card_compensates_the_reservation(stack):
    eid = stack.start("order-fulfilment", {**ORDER, "order_id": "A-2", "card": "tok_declined"})
    stack.signal(eid, "approval", {"approved": True})
    desc = stack.run_until_done(eid)
    assert desc["status"] == "FAILED" and desc["error"]["code"] == "CARD_DECLINED"
    assert desc["compensation"] == "completed"
    reservation = desc["steps"]["reserve"]["output"]["reservation_id"]
    assert _orders_module().RESERVATIONS[reservation]["held"] is False
    types = [e["type"] for e in stack.history(eid)]
    assert (
        types.index("CompensationStarted")
        < types.index("CompensationCompleted")
        < types.index("WorkflowFailed")
    )


def test_signal_payload_breaking_the_schema_is_refused(stack):
    from orbit.errors import PayloadRefused

    eid = stack.start("order-fulfilment", {**ORDER, "order_id": "A-3"})
    with pytest.raises(PayloadRefused):
        stack.signal(eid, "approval", {"approved": "yes please"})
    stack.cancel(eid, "test over")
    assert stack.run_until_done(eid)["status"] == "CANCELLED"


def test_seven_day_sleep_completes_on_virtual_time(stack):
    # How long it takes in wall time: benchmarks/bench_virtual_sleep.py prints it.
    eid = stack.start("trial-reminder", {"email": "ada@example.com"})
    started_virtual = stack.now_ms()
    desc = stack.run_until_done(eid)
    assert desc["status"] == "COMPLETED", desc
    assert stack.now_ms() - started_virtual >= 7 * 86_400_000
    fired = [e for e in stack.history(eid) if e["type"] == "TimerFired"]
    assert fired and fired[0]["timestamp_ms"] - stack.history(eid)[0]["timestamp_ms"] >= 7 * 86_400_000


def test_advance_fires_the_sleep_only_when_due(stack):
    eid = stack.start("trial-reminder", {"email": "bob@example.com"})
    stack.run_until_idle()
    stack.advance(6 * 86_400)
    assert stack.describe(eid)["status"] == "RUNNING"
    stack.advance(86_400 + 120)  # due, and the next one-minute schedule tick has passed
    desc = stack.describe(eid)
    assert desc["status"] == "COMPLETED", (desc, stack.cloud.errors, stack.history(eid)[-3:])


def test_retries_with_backoff(stack):
    eid = stack.start("flaky-fetch", {"resource": "res:42", "fail_times": 2})
    desc = stack.run_until_done(eid)
    assert desc["status"] == "COMPLETED" and desc["output"] == {"resource": "res:42", "attempts": 3}
    types = [e["type"] for e in stack.history(eid)]
    assert types.count("StepAttemptFailed") == 2 and types.count("RetryScheduled") == 2
    bad = stack.start("flaky-fetch", {"resource": "nope"})
    assert stack.run_until_done(bad)["error"]["code"] == "BAD_RESOURCE"


def test_child_workflow(stack):
    eid = stack.start("order-with-invoice", {"order_id": "A-9", "amount": 100})
    desc = stack.run_until_done(eid)
    assert desc["status"] == "COMPLETED", desc
    assert desc["output"] == {"order": "A-9", "invoice": {"invoice_id": "INV-A-9", "total": 120.0}}


def test_decider_partial_batch_failure_redelivery_and_dlq(stack):
    """One unreadable message in a decision batch: the rest succeed, it is redelivered after the
    visibility timeout, and after maxReceiveCount receives redrive moves it to the DLQ."""
    dep = stack.cloud.deployment
    queue, dlq = dep.queues["DecisionQueue"], dep.queues["DecisionDLQ"]
    eid = stack.start("order-fulfilment", {**ORDER, "order_id": "A-4"})
    stack.run_until_idle()
    sqs = boto3.client("sqs")
    sqs.send_message(QueueUrl=queue.url, MessageBody="this is not a decision message")
    stack.signal(eid, "approval", {"approved": True})  # same batch as the poison message
    batches = []
    stack.cloud.on_poll = lambda poller, result: batches.append(
        (poller.mapping.queue.logical_id, result.received, len(result.failed_ids))
    )
    try:
        stack.run_until_idle()
        # partial failure: one record of the batch failed, the signal in it went through
        # (an older execution's stale delayed wake may share the batch, hence >= 2)
        queue_id, received, failed = batches[0]
        assert (queue_id, failed) == ("DecisionQueue", 1) and received >= 2
        assert stack.describe(eid)["steps"]["approval"]["status"] == "SUCCEEDED"
        for _ in range(queue.max_receive_count + 2):  # each redelivery waits out the visibility timeout
            stack.advance(queue.visibility_timeout + 1)
        receptions = sum(failed for q, _, failed in batches if q == "DecisionQueue")
        assert receptions == queue.max_receive_count  # then redrive moved it
    finally:
        stack.cloud.on_poll = None
    moved = sqs.receive_message(QueueUrl=dlq.url, MaxNumberOfMessages=10).get("Messages", [])
    assert [m["Body"] for m in moved] == ["this is not a decision message"]
    assert stack.describe(eid)["status"] == "COMPLETED"


def test_fan_out_of_150_with_concurrency_20(stack):
    from orbit.worker import task

    task("e2e.double")(lambda inp, ctx: {"v": inp["v"] * 2})
    stack.register(
        {
            "orbit": 1,
            "name": "e2e-fan",
            "version": "1",
            "steps": {
                "each": {
                    "for": "{% input.items %}",
                    "concurrency": 20,
                    "task": "e2e.double",
                    "input": {"v": "{% item %}"},
                }
            },
            "output": "{% $sum(steps.each.output.v) %}",
        }
    )
    depths: list[int] = []
    default_queue = stack.cloud.deployment.queues["DefaultTaskQueue"]

    def record_depth(poller, result) -> None:  # waiting tasks, plus the batch being handled
        taken = result.received if poller.mapping.queue is default_queue else 0
        depths.append(clock.visible_count(default_queue.name) + taken)

    stack.cloud.on_poll = record_depth
    try:
        desc = stack.run_until_done(stack.start("e2e-fan", {"items": list(range(150))}))
    finally:
        stack.cloud.on_poll = None
    assert desc["status"] == "COMPLETED" and desc["output"] == 2 * sum(range(150))
    assert sum(1 for unit in desc["steps"] if unit.startswith("each[")) == 150
    assert max(depths) <= 20  # the concurrency limit keeps the worker queue shallow


def test_hook_tokens_come_from_the_local_stacks_own_secret(stack):
    # template.yaml's HookSecret, created on the emulator with a fresh value for this stack
    from orbit.core.history.hook_tokens import derive, sha256_hex

    secret = boto3.client("secretsmanager").get_secret_value(
        SecretId=stack.services.settings.hook_secret_arn)["SecretString"]
    assert len(secret) == 64
    eid = stack.start("order-fulfilment", {**ORDER, "order_id": "H-1"})
    stack.run_until_idle()
    token = derive(secret.encode(), eid, "approval")
    created = next(e for e in stack.engine.recorded_history(eid) if e["type"] == "HookCreated")
    assert created["token_sha256"] == sha256_hex(token) and "token" not in created  # never stored
    assert stack.engine.hook_token(eid, "approval") == token
    stack.resume_hook(token, {"approved": True, "by": "hook"})
    assert stack.run_until_done(eid)["status"] == "COMPLETED"
