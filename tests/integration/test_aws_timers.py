"""Durable timers: short ones on SQS DelaySeconds, long ones in the table fired by the timers function."""

from __future__ import annotations

from typing import Any

from harness import load_event
from orbit.adapters.dynamodb import DynamoTimers
from orbit.adapters.s3 import S3PayloadStore
from orbit.adapters.sqs import DelayedWakeTimers, SqsQueues
from orbit.aws import wiring as aws


def test_short_timers_ride_on_sqs_delay_long_ones_go_to_the_table(stack: Any, clients: Any,
                                                                  clock: Any) -> None:
    table = DynamoTimers(clients.dynamodb, stack.table, shards=2)
    queues = SqsQueues(clients.sqs, stack.queues["DecisionQueue"], {}, stack.queues["DefaultTaskQueue"],
                       S3PayloadStore(clients.s3, stack.bucket))
    timers = DelayedWakeTimers(table, queues, clock)
    sent: list[dict[str, Any]] = []
    clients.sqs.meta.events.register("provide-client-params.sqs.SendMessage",
                                     lambda params, **_: sent.append(params))
    try:
        timers.arm("e1", clock.now_ms() + 4_200)  # 4.2 s -> DelaySeconds 5 (never early)
        timers.arm("e2", clock.now_ms() - 50)  # already due -> no delay
        timers.arm("e3", clock.now_ms() + 901_000)  # beyond SQS's 15 minutes -> table
    finally:
        clients.sqs.meta.events.unregister("provide-client-params.sqs.SendMessage")
    assert [p["DelaySeconds"] for p in sent] == [5, 0]
    assert table.next_fire_ms() == clock.now_ms() + 901_000 and timers.due(clock.now_ms()) == []
    assert timers.due(clock.now_ms() + 901_000) == [("e3", clock.now_ms() + 901_000)]


def test_rearming_replaces_the_timer_and_disarm_is_conditional(stack: Any, clients: Any) -> None:
    t = DynamoTimers(clients.dynamodb, stack.table, shards=3)
    t.arm("a", 5_000)
    t.arm("b", 3_000)
    t.arm("a", 2_000)  # replaces a@5000
    assert t.due(10_000) == [("a", 2_000), ("b", 3_000)] and t.next_fire_ms() == 2_000
    t.disarm("a", 9_999)  # not its time any more: the pointer stays
    t.disarm("b")
    assert t.due(10_000) == [("a", 2_000)]
    t.disarm("a", 2_000)
    assert t.due(10_000) == [] and t.next_fire_ms() is None


def test_a_two_hour_sleep_fires_from_the_table(cloud: Any, clock: Any) -> None:
    cloud.api("POST", "/definitions", {"orbit": 1, "name": "nap", "version": "1",
                                       "steps": {"rest": {"sleep": "2h"},
                                                 "after": {"compute": "{% 'woke' %}", "after": ["rest"]}},
                                       "output": "{% steps.after.output %}"})
    cloud.api("POST", "/executions", {"workflow": "nap", "id": "nap-1", "input": {}})
    cloud.run_until_idle()
    engine = aws.services().engine
    assert engine.describe("nap-1")["status"] == "RUNNING"
    clock.advance(3_600_000)
    assert cloud.invoke("timers", load_event("timers_schedule.json")) == {"fired": 0}
    clock.advance(3_600_000 + 1_500)
    assert cloud.invoke("timers", load_event("timers_schedule.json")) == {"fired": 1}
    cloud.run_until_idle()
    desc = engine.describe("nap-1")
    assert desc["status"] == "COMPLETED" and desc["output"] == "woke"
    assert aws.services().table_timers.next_fire_ms() is None
