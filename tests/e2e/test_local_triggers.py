"""Triggers on the local stack (docs/triggers.md): real moto EventBridge (rules, pattern matching,
targets), SQS and Secrets Manager, the template's TriggersFunction driven by the pump.

Scenarios of issue 30: an EventBridge order event starts an execution whose id comes from the
event and a duplicate delivery starts nothing; S3 "Object Created" through EventBridge with a
prefix and suffix filter; an SQS trigger with a poison message; a signed and an unsigned webhook.
Signal-with-start under 50 concurrent calls: test_local_signal_with_start.py."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from orbit.aws.observability import METER
from orbit.local import LocalStack
from orbit.service.http import handle_request
from orbit.service.webhooks import sign

PATTERN = {"source": ["shop"], "detail-type": ["OrderPlaced"]}
ORDERS = {
    "orbit": 1,
    "name": "trig-orders",
    "version": "1",
    "steps": {"a": {"compute": "{% input %}"}},
    "output": "{% steps.a.output %}",
    "triggers": {
        "placed": {
            "eventbridge": {"pattern": PATTERN},
            "id": "{% 'order-' & detail.order_id %}",
            "input": "{% detail %}",
            "when": "{% detail.total > 0 %}",
        },
        "upload": {
            "s3": {"bucket": "trig-inbox", "prefix": "in/", "suffix": ".csv"},
            "id": "{% 'file-' & $replace(detail.object.key, '/', '-') %}",
            "input": "{% {'key': detail.object.key} %}",
        },
    },
}
QUEUE = "orbit-trigger-jobs"


@pytest.fixture(scope="module")
def stack() -> Any:
    with LocalStack(mode="inprocess") as st:
        yield st


def _put(detail: dict[str, Any], source: str = "shop", detail_type: str = "OrderPlaced") -> None:
    got = boto3.client("events").put_events(
        Entries=[{"Source": source, "DetailType": detail_type, "Detail": json.dumps(detail)}]
    )
    assert got["FailedEntryCount"] == 0, got


def _ids(stack: Any, workflow: str) -> list[str]:
    return sorted(e["execution_id"] for e in stack.list(workflow=workflow))


def test_an_order_event_starts_one_execution_named_by_the_event_and_a_duplicate_starts_nothing(
    stack: Any,
) -> None:
    stack.register(ORDERS)
    events = boto3.client("events")
    rules = events.list_rules(NamePrefix="orbit-local-t-")["Rules"]
    assert sorted(r["Description"] for r in rules) == [
        "orbit trigger trig-orders/placed",
        "orbit trigger trig-orders/upload",
    ]
    target = events.list_targets_by_rule(Rule=rules[0]["Name"])["Targets"][0]
    queues = stack.cloud.deployment.queues
    assert target["Arn"] == queues["TriggerQueue"].arn
    assert target["DeadLetterConfig"]["Arn"] == queues["TriggerDLQ"].arn
    order = {"order_id": "A1", "total": 30}
    _put(order)
    _put(order)  # at least once: the same order delivered twice
    _put({"order_id": "B2", "total": 5}, source="elsewhere")  # matches no pattern: ignored
    _put({"order_id": "C3", "total": 0})  # matches, but `when` is false: ignored
    stack.run_until_idle()
    assert _ids(stack, "trig-orders") == ["order-A1"]
    done = stack.describe("order-A1")
    assert done["status"] == "COMPLETED" and done["output"] == order


def test_an_s3_object_created_event_with_prefix_and_suffix_starts_through_eventbridge(stack: Any) -> None:
    stack.register(ORDERS)
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="trig-inbox")
    s3.put_bucket_notification_configuration(
        Bucket="trig-inbox", NotificationConfiguration={"EventBridgeConfiguration": {}}
    )
    s3.put_object(Bucket="trig-inbox", Key="in/day1.csv", Body=b"a,b\n")
    s3.put_object(Bucket="trig-inbox", Key="in/day1.txt", Body=b"no")  # suffix: no
    s3.put_object(Bucket="trig-inbox", Key="out/day1.csv", Body=b"no")  # prefix: no
    stack.run_until_idle()
    assert _ids(stack, "trig-orders") == ["file-in-day1.csv", "order-A1"]
    assert stack.describe("file-in-day1.csv")["output"] == {"key": "in/day1.csv"}


def test_retiring_the_workflow_removes_its_rules(stack: Any) -> None:
    stack.register({**ORDERS, "name": "trig-gone"})
    events = boto3.client("events")
    before = [r["Description"] for r in events.list_rules(NamePrefix="orbit-local-t-")["Rules"]]
    assert "orbit trigger trig-gone/placed" in before
    stack.retire("trig-gone")
    after = [r["Description"] for r in events.list_rules(NamePrefix="orbit-local-t-")["Rules"]]
    assert not [d for d in after if "trig-gone/" in d] and "orbit trigger trig-orders/placed" in after


def test_an_sqs_trigger_starts_one_execution_per_message_and_dead_letters_a_poison_one(
    stack: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName=QUEUE)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    stack.register(
        {
            "orbit": 1,
            "name": "trig-jobs",
            "version": "1",
            "steps": {"a": {"compute": "{% input.n * 2 %}"}},
            "output": "{% steps.a.output %}",
            "triggers": {
                "jobs": {
                    "sqs": {"queue_arn": arn},
                    "id": "{% 'job-' & body.id %}",
                    "input": "{% {'n': $number(body.n)} %}",
                }
            },
        }
    )
    counted: list[tuple[str, str]] = []
    real = METER.count_workflow
    monkeypatch.setattr(
        METER, "count_workflow", lambda wf, name, n=1: (counted.append((wf, name)), real(wf, name, n))
    )
    for body in (
        {"id": "1", "n": "21"},
        {"id": "2", "n": "twenty"},
        {"id": "1", "n": "21"},
        {"id": "3", "n": "4"},
    ):
        sqs.send_message(QueueUrl=url, MessageBody=json.dumps(body))
    stack.run_until_idle()
    assert _ids(stack, "trig-jobs") == ["job-1", "job-3"]  # message 1 twice: one execution
    assert stack.describe("job-1")["output"] == 42
    dlq = stack.cloud.deployment.queues["TriggerDLQ"].url
    dead = [
        json.loads(m["Body"])
        for m in sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10, MessageAttributeNames=["All"]).get(
            "Messages", []
        )
    ]
    assert [(d["workflow"], d["trigger"], d["event"]["body"]) for d in dead] == [
        ("trig-jobs", "jobs", {"id": "2", "n": "twenty"})
    ]
    assert "input expression failed" in dead[0]["reason"]
    assert counted.count(("trig-jobs", "TriggerDeadLettered")) == 1  # the metric (EMF, per workflow)
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert (
        attrs["ApproximateNumberOfMessages"] == "0" and attrs["ApproximateNumberOfMessagesNotVisible"] == "0"
    )


def test_a_signed_webhook_starts_and_an_unsigned_or_oversized_one_starts_nothing(stack: Any) -> None:
    boto3.client("secretsmanager").create_secret(Name="orbit-local/webhooks/pay", SecretString="whsec-1")
    stack.register(
        {
            "orbit": 1,
            "name": "trig-pay",
            "version": "1",
            "steps": {"a": {"compute": "{% input %}"}},
            "output": "{% steps.a.output %}",
            "triggers": {
                "paid": {
                    "webhook": {"secret": "orbit-local/webhooks/pay", "max_bytes": 200},
                    "id": "{% 'pay-' & body.id %}",
                    "input": "{% body.amount %}",
                }
            },
        }
    )
    raw = json.dumps({"id": "p1", "amount": 12}).encode()
    path = "/webhooks/trig-pay/paid"
    assert handle_request(stack.engine, "POST", path, raw, headers={})[0] == 401
    bad = {"X-Orbit-Signature": sign(b"other-secret", raw)}
    status, body = handle_request(stack.engine, "POST", path, raw, headers=bad)
    assert status == 401 and body["error"]["code"] == "BAD_SIGNATURE"
    big = json.dumps({"id": "p2", "pad": "x" * 300}).encode()
    assert (
        handle_request(stack.engine, "POST", path, big, headers={"x-orbit-signature": sign(b"whsec-1", big)})[
            0
        ]
        == 413
    )
    assert _ids(stack, "trig-pay") == []
    status, body = handle_request(
        stack.engine, "POST", path, raw, headers={"x-orbit-signature": sign(b"whsec-1", raw)}
    )
    assert (status, body) == (202, {"status": "started", "execution_id": "pay-p1"})
    stack.run_until_idle()
    assert _ids(stack, "trig-pay") == ["pay-p1"] and stack.describe("pay-p1")["output"] == 12


BUFFERED = {
    "orbit": 1,
    "name": "trig-buffered",
    "version": "1",
    "steps": {"a": {"compute": "{% input %}"}},
    "output": "{% steps.a.output %}",
    "triggers": {
        "typing": {
            "eventbridge": {"pattern": {"source": ["editor"]}},
            "id": "{% 'doc-' & detail.doc %}",
            "input": "{% detail %}",
            "debounce": {"key": "{% detail.doc %}", "period": "30s", "max_wait": "10m"},
        },
        "clicks": {
            "eventbridge": {"pattern": {"source": ["web"]}},
            "id": "{% 'clicks-' & detail.page %}",
            "input": "{% detail.n %}",
            "batch": {"key": "{% detail.page %}", "max_size": 3, "max_wait": "2m"},
        },
    },
}


def test_debounce_starts_one_execution_after_the_last_event_on_the_virtual_clock(stack: Any) -> None:
    stack.register(BUFFERED)
    for v in range(4):
        _put({"doc": "d1", "v": v}, source="editor", detail_type="Edited")
        stack.run_until_idle()
        stack.advance(10)  # every 10 s: the 30 s period never passes between them
    assert _ids(stack, "trig-buffered") == []
    stack.advance(25)  # 35 s after the last event
    stack.run_until_idle()
    assert _ids(stack, "trig-buffered") == ["doc-d1-1"]
    assert stack.describe("doc-d1-1")["output"] == {"doc": "d1", "v": 3}


def test_batches_start_by_size_at_once_and_by_time_after_max_wait(stack: Any) -> None:
    stack.register(BUFFERED)
    for n in range(4):
        _put({"page": "home", "n": n}, source="web", detail_type="Click")
    stack.run_until_idle()
    assert [i for i in _ids(stack, "trig-buffered") if i.startswith("clicks-")] == ["clicks-home-1"]
    assert stack.describe("clicks-home-1")["output"] == [0, 1, 2]
    stack.advance(121)  # the fourth click's batch waits at most 2 minutes
    stack.run_until_idle()
    assert stack.describe("clicks-home-2")["output"] == [3]


def test_an_sqs_trigger_on_a_queue_that_does_not_exist_is_refused_before_it_is_stored(stack: Any) -> None:
    from orbit.errors import ValidationError

    arn = "arn:aws:sqs:us-east-1:123456789012:orbit-trigger-nowhere"
    definition = {"orbit": 1, "name": "trig-nowhere", "version": "1", "steps": {"a": {"compute": "{% 1 %}"}},
                  "triggers": {"jobs": {"sqs": {"queue_arn": arn}, "id": "{% body.id %}"}}}
    with pytest.raises(ValidationError) as refused:
        stack.register(definition)
    assert str(refused.value).startswith(f"triggers.jobs.sqs.queue_arn: trigger 'jobs' names queue {arn}: "
                                         "the queue does not exist on the local stack: create it first")
    assert "trig-nowhere" not in [w["name"] for w in stack.workflows()]  # before: stored, then refused
    status, body = handle_request(stack.engine, "POST", "/definitions", definition)
    assert status == 400 and "triggers.jobs.sqs.queue_arn" in body["error"]["message"], body
    assert "trig-nowhere" not in [w["name"] for w in stack.workflows()]


def test_a_stripe_signed_webhook_starts_on_the_virtual_clock_and_a_replay_is_refused(stack: Any) -> None:
    import hashlib
    import hmac

    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    boto3.client("secretsmanager").create_secret(Name="orbit-local/webhooks/stripe", SecretString=secret)
    stack.register({
        "orbit": 1, "name": "trig-stripe", "version": "1", "steps": {"a": {"compute": "{% input %}"}},
        "output": "{% steps.a.output %}",
        "triggers": {"paid": {"webhook": {"signature": {"scheme": "stripe",
                                                        "secret": "orbit-local/webhooks/stripe"}},
                              "id": "{% 'stripe-' & body.data.object.id %}",
                              "input": "{% body.data.object.amount %}"}},
    })
    raw = json.dumps({"id": "evt_1", "object": "event", "type": "charge.succeeded",
                      "data": {"object": {"id": "ch_1", "object": "charge", "amount": 1500}}}).encode()
    t = stack.engine.clock.now_ms() // 1000  # the local stack's virtual clock, not the wall's
    header = {"Stripe-Signature": f"t={t},v1=" + hmac.new(secret.encode(), f"{t}.".encode() + raw,
                                                           hashlib.sha256).hexdigest()}
    path = "/webhooks/trig-stripe/paid"
    assert handle_request(stack.engine, "POST", path, raw, headers={})[0] == 401
    assert handle_request(stack.engine, "POST", path, raw, headers=header) == (
        202, {"status": "started", "execution_id": "stripe-ch_1"})
    stack.run_until_idle()
    assert stack.describe("stripe-ch_1")["output"] == 1500
    stack.advance(360)  # six virtual minutes later the same request is a replay
    status, body = handle_request(stack.engine, "POST", path, raw, headers=header)
    assert (status, body["error"]["code"]) == (401, "STALE_SIGNATURE"), body
    assert _ids(stack, "trig-stripe") == ["stripe-ch_1"]
