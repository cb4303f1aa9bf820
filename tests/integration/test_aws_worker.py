"""Worker SDK details: batching of answers, long tasks, the long-polling runner."""

from __future__ import annotations

import json
import time
from typing import Any

from orbit import worker
from orbit.adapters.sqs import decode_bodies
from orbit.aws import wiring as aws

SLOW_ENDED: list[float] = []


@worker.task("test.slow")
def slow(input: Any, ctx: worker.TaskContext) -> dict[str, bool]:
    time.sleep(0.4)
    SLOW_ENDED.append(time.monotonic())
    return {"slow": True}


@worker.task("test.quick")
def quick(input: Any, ctx: worker.TaskContext) -> dict[str, bool]:
    return {"quick": True}


def dispatch(unit: str, task: str) -> dict[str, Any]:
    return {"kind": "dispatch_task", "execution_id": "w-1", "unit": unit, "task": task, "queue": "test",
            "input": {}, "attempt": 1, "token": f"tok-{unit}", "idempotency_key": f"w-1:{unit}",
            "deadline_ms": None, "redelivery": False}


def decision_kinds(cloud: Any, clients: Any) -> list[tuple[str, str]]:
    got = clients.sqs.receive_message(QueueUrl=cloud.stack.queues["DecisionQueue"], MaxNumberOfMessages=10)
    bodies = [b for m in got.get("Messages", []) for b in decode_bodies(m["Body"], None)]
    return sorted((b["kind"], b["unit"]) for b in bodies)


def test_a_batch_answers_in_one_request_and_a_long_task_does_not_hold_others(
        cloud: Any, clients: Any, monkeypatch: Any) -> None:
    svc = aws.services()
    svc.worker.started_grace_s = 0.1
    calls: list[tuple[float, list[str]]] = []
    real = svc.queues.send_decisions

    def spy(messages: list[dict[str, Any]], delay_s: int = 0) -> None:
        calls.append((time.monotonic(), [f"{m['kind']}:{m['unit']}" for m in messages]))
        real(messages, delay_s)

    monkeypatch.setattr(svc.queues, "send_decisions", spy)
    url = cloud.stack.queues["DefaultTaskQueue"]
    for unit, name in (("a", "test.quick"), ("b", "test.quick"), ("c", "test.slow")):
        clients.sqs.send_message(QueueUrl=url, MessageBody=json.dumps(dispatch(unit, name)))
    SLOW_ENDED.clear()
    assert cloud.pump("DefaultTaskQueue") == 3
    # a and b were held, then flushed when c outlived the grace period, together with c's `started`
    first_at, first = calls[0]
    assert sorted(first) == ["result:a", "result:b", "started:a", "started:b", "started:c"]
    assert first_at < SLOW_ENDED[0] - 0.2  # well before c finished
    assert [names for _, names in calls[1:]] == [["result:c"]]
    assert decision_kinds(cloud, clients) == [("result", "a"), ("result", "b"), ("result", "c"),
                                              ("started", "a"), ("started", "b"), ("started", "c")]


def test_long_polling_runner_handles_and_deletes(cloud: Any, clients: Any) -> None:
    import os

    url = cloud.stack.queues["DefaultTaskQueue"]
    clients.sqs.send_message(QueueUrl=url, MessageBody=json.dumps(dispatch("r", "test.quick")))
    clients.sqs.send_message(QueueUrl=url, MessageBody="not a task")
    handled = worker.run("default", env=dict(os.environ), wait_s=0, max_polls=1)
    assert handled == 1
    assert decision_kinds(cloud, clients) == [("result", "r"), ("started", "r")]
    # the unreadable message stays on the queue for redelivery (and, in time, the DLQ)
    attrs = clients.sqs.get_queue_attributes(QueueUrl=url,
                                             AttributeNames=["ApproximateNumberOfMessagesNotVisible"])
    assert attrs["Attributes"]["ApproximateNumberOfMessagesNotVisible"] == "1"


COUNTS: dict[str, int] = {}


@worker.task("test.natural", dedupe=False)
def natural(input: Any, ctx: worker.TaskContext) -> dict[str, int]:
    COUNTS[ctx.idempotency_key] = COUNTS.get(ctx.idempotency_key, 0) + 1
    return {"n": COUNTS[ctx.idempotency_key]}


def test_dedupe_false_writes_no_record_and_reruns_and_a_quick_task_writes_none(cloud: Any,
                                                                              clients: Any) -> None:
    url = cloud.stack.queues["DefaultTaskQueue"]
    for _ in range(2):  # the same dispatch delivered twice
        clients.sqs.send_message(QueueUrl=url, MessageBody=json.dumps(dispatch("n", "test.natural")))
        cloud.pump("DefaultTaskQueue")
    assert COUNTS["w-1:n"] == 2
    items = clients.dynamodb.scan(TableName=cloud.stack.table)["Items"]
    assert not [i for i in items if i["pk"]["S"].startswith("IDEM#")]
    # Changed by issue 15: a quick task on a fresh delivery writes no record either (its result
    # message is its record); a possible duplicate checks the history (test_aws_worker_dedupe.py).
    clients.sqs.send_message(QueueUrl=url, MessageBody=json.dumps(dispatch("q", "test.quick")))
    cloud.pump("DefaultTaskQueue")
    items = clients.dynamodb.scan(TableName=cloud.stack.table)["Items"]
    assert not [i for i in items if i["pk"]["S"].startswith("IDEM#")]
