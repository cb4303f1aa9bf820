"""The schedule adapters on moto: the DynamoDB store's conditional writes and EventBridge Scheduler arming."""

from __future__ import annotations

import json

import boto3
import pytest
from orbit.adapters.dynamodb.schedules import DynamoScheduleStore
from orbit.adapters.memory_schedules import MemoryScheduleStore
from orbit.adapters.scheduler import EventBridgeScheduler, at_expression, aws_name
from orbit.errors import ConflictError


@pytest.fixture(params=["memory", "dynamodb"])
def store(request, stack, clients):
    if request.param == "memory":
        return MemoryScheduleStore()
    return DynamoScheduleStore(clients.dynamodb, stack.table)


def test_store_writes_only_on_the_revision_read(store):
    assert store.get("a") is None
    assert store.put("a", {"x": 1}, None) == 1
    with pytest.raises(ConflictError):
        store.put("a", {"x": 2}, None)  # exists already
    assert store.put("a", {"x": 2}, 1) == 2
    with pytest.raises(ConflictError):
        store.put("a", {"x": 3}, 1)  # a writer that read revision 1 lost
    assert store.get("a") == ({"x": 2}, 2)
    store.put("b", {"y": 1}, None)
    page, cursor = store.list(1)
    assert page == [{"x": 2}] and cursor == "a"
    assert store.list(10, cursor)[0] == [{"y": 1}]
    assert store.delete("a") and not store.delete("a")
    assert store.get("a") is None


def test_eventbridge_scheduler_arms_rearms_and_removes(stack):
    client = boto3.client("scheduler", region_name="us-east-1")
    client.create_schedule_group(Name="g")
    made = []

    def factory():
        made.append(1)
        return client

    role = "arn:aws:iam::123456789012:role/r"
    sched = EventBridgeScheduler(factory, "g", stack.arns["DecisionQueue"], role)
    assert not made  # no client until a schedule is touched
    msg = {"kind": "schedule_fire", "schedule_id": "s1"}
    sched.arm("s1", 1_767_225_600_000, msg)
    got = client.get_schedule(Name=aws_name("s1"), GroupName="g")
    assert got["ScheduleExpression"] == "at(2026-01-01T00:00:00)"
    assert got["ScheduleExpressionTimezone"] == "UTC"
    assert got["Target"]["Arn"] == stack.arns["DecisionQueue"] and json.loads(got["Target"]["Input"]) == msg
    sched.arm("s1", 1_767_225_600_001, msg)  # re-armed in place; a fraction rounds up, never early
    assert sched.armed("s1") == "at(2026-01-01T00:00:01)"
    assert len(client.list_schedules(GroupName="g")["Schedules"]) == 1
    sched.arm("s1", None)
    sched.arm("s1", None)  # removing twice is fine
    assert sched.armed("s1") is None and len(made) == 1


def test_aws_names_fit_eventbridge_limits():
    name = aws_name("x" * 100)
    assert len(name) <= 64 and name.startswith("orbit-")
    assert at_expression(999) == "at(1970-01-01T00:00:01)"
