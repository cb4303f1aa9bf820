"""The end of an execution on moto, through the real handlers: what it reads and writes.

A young execution whose start recorded its provisional expiry (WorkflowCreated.provisional_expiry_s)
and that never armed a timer ends with its final commit and index row: no read of its first commit,
no read of a timer pointer. An execution started before starts recorded the expiry (its start lacks
the field) takes the whole walk and disarms; one that armed a table timer disarms it.
"""

from __future__ import annotations

from typing import Any

import pytest
from orbit import worker
from orbit.aws import wiring as aws
from orbit.core.decider import decide as decider
from orbit.core.definition.retention import provisional_expiry_s

DAY_MS = 24 * 3600 * 1000
SHORT = {"orbit": 1, "name": "ending", "version": "1", "retention": "1d",
         "steps": {"a": {"task": "ends.echo"}, "b": {"task": "ends.echo", "after": ["a"]}},
         "output": "{% steps.b.output %}"}
TIMED = {**SHORT, "name": "ending-timed",
         "steps": {"a": {"task": "ends.echo", "timeout": "30m"}}, "output": "{% steps.a.output %}"}


@worker.task("ends.echo")
def echo(input: Any, ctx: worker.TaskContext) -> str:
    return "ok"


class Calls:
    """The DynamoDB requests the services make from `start()` on: (operation, key's pk prefix)."""

    OPS = ("GetItem", "UpdateItem", "DeleteItem", "PutItem")

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def start(self) -> None:
        events = aws.services().dynamodb.meta.events
        for op in self.OPS:
            events.register(f"provide-client-params.dynamodb.{op}", self._record(op), unique_id=f"ends-{op}")

    def _record(self, op: str) -> Any:
        def record(params: dict[str, Any], **_: Any) -> None:
            key = params.get("Key") or params.get("Item") or {}
            self.seen.append((op, key.get("pk", {}).get("S", "").split("#")[0]))
        return record

    def stop(self) -> None:
        events = aws.services().dynamodb.meta.events
        for op in self.OPS:
            events.unregister(f"provide-client-params.dynamodb.{op}", unique_id=f"ends-{op}")


@pytest.fixture
def calls() -> Any:
    c = Calls()
    yield c
    c.stop()


def items_of(clients: Any, table: str, eid: str) -> list[dict[str, Any]]:
    items = clients.dynamodb.query(TableName=table, KeyConditionExpression="pk = :pk",
                                   ExpressionAttributeValues={":pk": {"S": f"EXEC#{eid}"}})["Items"]
    assert items
    return items


def timer_items(clients: Any, table: str) -> list[str]:
    return [i["pk"]["S"] for i in clients.dynamodb.scan(TableName=table)["Items"]
            if i["pk"]["S"].startswith("TIMER")]


def run(cloud: Any, calls: Calls, definition: dict[str, Any], eid: str) -> Any:
    cloud.api("POST", "/definitions", definition)
    calls.start()
    body = {"workflow": definition["name"], "id": eid, "input": {}}
    assert cloud.api("POST", "/executions", body)[0] == 201
    cloud.run_until_idle()
    state = aws.services().engine.load_state(eid)
    assert state.status == "COMPLETED"
    return state


def test_a_young_end_whose_start_recorded_its_expiry_reads_and_updates_nothing(
        cloud: Any, clients: Any, stack: Any, calls: Calls) -> None:
    state = run(cloud, calls, SHORT, "new-1")
    p = provisional_expiry_s(state.created_at_ms, DAY_MS)
    assert state.provisional_expiry_s == p and state.timer_free
    # ROUTE: the first dispatch to a queue the stack does not map looks up an app's route, once per
    # name per 30 s in a warm decider (adapters/dynamodb/routes.py): not a read of the end.
    assert not [c for c in calls.seen if c[0] in ("GetItem", "UpdateItem", "DeleteItem")
                and c[1] not in ("IDEM", "ROUTE")]
    assert {int(i["expires_at"]["N"]) for i in items_of(clients, stack.table, "new-1")} == {p}


def test_an_execution_started_before_starts_recorded_the_expiry_takes_the_walk_and_disarms(
        cloud: Any, clients: Any, stack: Any, calls: Calls, monkeypatch: Any) -> None:
    """Its start as an engine before this change wrote it (WorkflowCreated without the field)."""
    real = decider.decide
    monkeypatch.setattr("orbit.service.deciding.decide",
                        lambda wf, state, m, now, ids, retention_ms=None, code_runtime=None:
                        real(wf, state, m, now, ids, code_runtime=code_runtime))
    state = run(cloud, calls, SHORT, "old-1")
    assert state.provisional_expiry_s is None and not state.timer_free
    p = provisional_expiry_s(state.created_at_ms, DAY_MS)
    assert ("GetItem", "TIMERPTR") in calls.seen  # disarmed: the history cannot say no timer was armed
    walked = [c for c in calls.seen if c == ("UpdateItem", "EXEC")]
    assert walked  # the earlier items lose their provisional mark one by one
    items = items_of(clients, stack.table, "old-1")
    assert {int(i["expires_at"]["N"]) for i in items} == {p} and not any("prov" in i for i in items)


def test_a_young_end_that_armed_a_table_timer_disarms_it(cloud: Any, clients: Any, stack: Any,
                                                         calls: Calls) -> None:
    state = run(cloud, calls, TIMED, "timed-1")
    assert state.provisional_expiry_s is not None and not state.timer_free
    assert ("PutItem", "TIMERPTR") in calls.seen  # a 30-minute timeout is a table timer
    assert calls.seen.count(("GetItem", "TIMERPTR")) == 1 and ("DeleteItem", "TIMERPTR") in calls.seen
    assert timer_items(clients, stack.table) == []
    assert not [c for c in calls.seen if c == ("UpdateItem", "EXEC")]  # still no walk: it ended young
