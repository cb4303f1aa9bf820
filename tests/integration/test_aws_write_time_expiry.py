"""Write-time expiry on moto, through the real handlers: a young execution's items carry the
provisional expiry from their first write and its end writes no expiry; one that outlives its
first hour is pinned by the timers function's sweeper, then gets its exact expiry at its end."""

from __future__ import annotations

import json
from typing import Any

import pytest
from harness import load_event
from orbit import worker
from orbit.aws import wiring as aws
from orbit.core.definition.retention import (
    SWEEP_AFTER_MS,
    YOUNG_MS,
    expires_at_s,
    provisional_expiry_s,
)
from orbit.local.ttl import expire
from orbit.service.retention import NO_EXPIRY_S

DAY_MS = 24 * 3600 * 1000
BIG = "q" * 60_000  # above the per-value limit: a payload object and its R# reference
LONG = {
    "orbit": 1, "name": "lasting", "version": "1", "retention": "1d",
    "steps": {"first": {"task": "wte.big"}, "gate": {"wait_for": "go"},
              "hooked": {"wait_for": "hooked", "after": ["gate"]}},
    "output": {"n": "{% $length(steps.first.output) %}"},
}


@worker.task("wte.big")
def big(input: Any, ctx: worker.TaskContext) -> str:
    return BIG


def items_of(clients: Any, table: str, eid: str) -> list[dict[str, Any]]:
    """Every item that belongs to `eid`: its partition, payload references, hooks (a scan)."""
    out: list[dict[str, Any]] = []
    kw: dict[str, Any] = {"TableName": table}
    while True:
        page = clients.dynamodb.scan(**kw)
        for item in page["Items"]:
            pk, sk = item["pk"]["S"], item["sk"]["S"]
            if pk == f"EXEC#{eid}" or (pk.startswith("BLOB#") and sk == f"R#{eid}") \
                    or (pk.startswith("HOOK#") and item.get("execution_id", {}).get("S") == eid):
                out.append(item)
        if "LastEvaluatedKey" not in page:
            return out
        kw["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def expiries(items: list[dict[str, Any]]) -> dict[str, int | None]:
    return {f"{i['pk']['S'].split('#')[0]}/{i['sk']['S']}": int(i["expires_at"]["N"]) if "expires_at" in i
            else None for i in items}


def updates(clients: Any) -> list[str]:
    """Counts the UpdateItem calls the services' DynamoDB client makes from now on."""
    seen: list[str] = []
    aws.services().dynamodb.meta.events.register(
        "before-call.dynamodb.UpdateItem", lambda params, **_: seen.append(str(params["body"])[:80]),
        unique_id="wte-updates")
    return seen


@pytest.fixture(autouse=True)
def _no_counting_after(clients: Any) -> Any:
    yield
    clients.dynamodb.meta.events.unregister("before-call.dynamodb.UpdateItem", unique_id="wte-updates")


def tick(cloud: Any) -> None:
    cloud.invoke("timers", load_event("timers_schedule.json"))
    cloud.run_until_idle()


def test_a_young_execution_writes_its_expiry_once_and_its_end_updates_nothing(
        cloud: Any, clients: Any, stack: Any, clock: Any) -> None:
    cloud.api("POST", "/definitions", LONG)
    assert cloud.api("POST", "/executions", {"workflow": "lasting", "id": "y-1", "input": {}})[0] == 201
    cloud.run_until_idle()
    created = aws.services().engine.load_state("y-1").created_at_ms
    p = provisional_expiry_s(created, DAY_MS)
    running = items_of(clients, stack.table, "y-1")
    # Running and young: every item already carries P, marked provisional (R# of the big value too).
    assert any(k.startswith("BLOB/R#") for k in expiries(running)), expiries(running)
    assert set(expiries(running).values()) == {p} and all("prov" in i for i in running)
    seen = updates(clients)
    clock.advance(10 * 60_000)
    assert cloud.api("POST", "/executions/y-1/signals/go", {"payload": 1})[0] == 202
    cloud.run_until_idle()
    token = aws.services().engine.hook_token("y-1", "hooked")
    assert cloud.api("POST", f"/hooks/{token}", {"payload": 2})[0] == 202
    cloud.run_until_idle()
    assert aws.services().engine.describe("y-1")["status"] == "COMPLETED"
    ended = items_of(clients, stack.table, "y-1")
    assert set(expiries(ended).values()) == {p}, expiries(ended)  # the same second on every item
    assert any(k.startswith("HOOK/") for k in expiries(ended))
    # The end walked nothing of the execution's own: the only updates are the hook's claim and the
    # worker dedupe records shortened to the 1-day retention (they live 7 days on their own).
    assert seen and all("HOOK#" in body or "IDEM#" in body for body in seen), seen
    # The sweeper, later, leaves an ended execution alone; TTL takes it all at P, nothing before.
    clock.advance(SWEEP_AFTER_MS + 60_000)
    tick(cloud)
    assert set(expiries(items_of(clients, stack.table, "y-1")).values()) == {p}
    expire(clients.dynamodb, stack.table, p - 1)
    assert len(items_of(clients, stack.table, "y-1")) == len(ended)
    expire(clients.dynamodb, stack.table, p)
    assert items_of(clients, stack.table, "y-1") == []


def test_an_execution_that_outlives_its_first_hour_is_pinned_then_gets_its_exact_expiry(
        cloud: Any, clients: Any, stack: Any, clock: Any) -> None:
    cloud.api("POST", "/definitions", LONG)
    cloud.api("POST", "/executions", {"workflow": "lasting", "id": "o-1", "input": {}})
    cloud.run_until_idle()
    created = aws.services().engine.load_state("o-1").created_at_ms
    p = provisional_expiry_s(created, DAY_MS)
    young = expiries(items_of(clients, stack.table, "o-1"))
    clock.advance(SWEEP_AFTER_MS - 60_000)
    tick(cloud)  # not yet old enough for the sweeper
    assert expiries(items_of(clients, stack.table, "o-1")) == young
    clock.advance(2 * 60_000)
    tick(cloud)
    pinned = items_of(clients, stack.table, "o-1")
    assert set(expiries(pinned).values()) == {NO_EXPIRY_S} and not any("prov" in i for i in pinned)
    cursor = clients.dynamodb.get_item(TableName=stack.table, Key={"pk": {"S": "SWEEP"},
                                                                   "sk": {"S": "RETENTION"}})["Item"]
    assert cursor["cursor"]["S"].endswith("#o-1")
    # Past P it still runs: TTL deletes nothing of it.
    clock.advance(DAY_MS)
    expire(clients.dynamodb, stack.table, clock.now_ms() // 1000)
    assert len(items_of(clients, stack.table, "o-1")) == len(pinned)
    assert p * 1000 < clock.now_ms()
    assert cloud.api("POST", "/executions/o-1/signals/go", {"payload": 1})[0] == 202
    cloud.run_until_idle()
    token = aws.services().engine.hook_token("o-1", "hooked")
    assert cloud.api("POST", f"/hooks/{token}", {"payload": 2})[0] == 202
    cloud.run_until_idle()
    state = aws.services().engine.load_state("o-1")
    assert state.status == "COMPLETED"
    exact = expires_at_s(state.finished_at_ms, DAY_MS)
    ended = items_of(clients, stack.table, "o-1")
    assert set(expiries(ended).values()) == {exact} and not any("prov" in i for i in ended), expiries(ended)
    assert {k.split("/")[0] for k in expiries(ended)} == {"EXEC", "BLOB", "HOOK"}


def test_a_young_end_after_a_redrive_gets_the_exact_expiry(cloud: Any, clients: Any, stack: Any,
                                                          clock: Any) -> None:
    calls: list[int] = []

    @worker.task("wte.flaky")
    def flaky(input: Any, ctx: worker.TaskContext) -> int:
        calls.append(1)
        if len(calls) == 1:
            raise ValueError("first run fails for good")
        return len(calls)

    cloud.api("POST", "/definitions", {"orbit": 1, "name": "redriven", "version": "1", "retention": "1d",
                                       "steps": {"only": {"task": "wte.flaky"}}})
    cloud.api("POST", "/executions", {"workflow": "redriven", "id": "r-1", "input": {}})
    cloud.run_until_idle()
    engine = aws.services().engine
    assert engine.describe("r-1")["status"] == "FAILED"
    created = engine.load_state("r-1").created_at_ms
    assert set(expiries(items_of(clients, stack.table, "r-1")).values()) == \
        {provisional_expiry_s(created, DAY_MS)}
    clock.advance(60_000)
    assert cloud.api("POST", "/executions/r-1/redrive", {})[0] in (200, 202)
    cloud.run_until_idle()
    state = engine.load_state("r-1")
    assert state.status == "COMPLETED" and state.redrive_count == 1
    assert state.finished_at_ms < created + YOUNG_MS  # young, but redriven: the exact expiry
    exact = expires_at_s(state.finished_at_ms, DAY_MS)
    items = items_of(clients, stack.table, "r-1")
    assert set(expiries(items).values()) == {exact} and not any("prov" in i for i in items)


class Died(BaseException):
    """The timers function's process died at this call (nothing may catch it)."""


@pytest.mark.parametrize("point", [("UpdateItem", "EXEC#", "before"), ("UpdateItem", "EXEC#", "after"),
                                   ("UpdateItem", "BLOB#", "after"), ("UpdateItem", "HOOK#", "before"),
                                   ("PutItem", "SWEEP", "before"), ("PutItem", "SWEEP", "after")])
def test_a_sweeper_that_dies_mid_batch_pins_everything_on_its_next_tick(
        cloud: Any, clients: Any, stack: Any, clock: Any, point: tuple[str, str, str]) -> None:
    op, key, variant = point
    cloud.api("POST", "/definitions", LONG)
    cloud.api("POST", "/executions", {"workflow": "lasting", "id": "c-1", "input": {}})
    cloud.run_until_idle()
    assert cloud.api("POST", "/executions/c-1/signals/go", {"payload": 1})[0] == 202
    cloud.run_until_idle()  # now waiting for its hook: the hook row is written (provisionally)
    p = provisional_expiry_s(aws.services().engine.load_state("c-1").created_at_ms, DAY_MS)
    clock.advance(SWEEP_AFTER_MS + 60_000)
    events = aws.services().dynamodb.meta.events
    hits: list[str] = []

    def before(model: Any, params: Any, context: dict[str, Any], **_: Any) -> None:
        body = json.loads(params.get("body") or b"{}")
        pk = ((body.get("Key") or body.get("Item") or {}).get("pk") or {}).get("S", "")
        if model.name == op and pk.startswith(key) and not hits:
            hits.append(pk)
            context["wte_die"] = True
            if variant == "before":
                raise Died(f"before {op} {pk}")

    def after(context: dict[str, Any], **_: Any) -> None:
        if context.pop("wte_die", False) and variant == "after":
            raise Died(f"after {op} {key}")

    events.register("before-call.dynamodb", before, unique_id="wte-die-before")
    events.register("after-call.dynamodb", after, unique_id="wte-die-after")
    try:
        with pytest.raises(Died):
            cloud.invoke("timers", load_event("timers_schedule.json"))
    finally:  # the session's client outlives this test
        events.unregister("before-call.dynamodb", unique_id="wte-die-before")
        events.unregister("after-call.dynamodb", unique_id="wte-die-after")
    assert len(hits) == 1
    clock.advance(60_000)  # the schedule runs it again a minute later
    tick(cloud)
    items = items_of(clients, stack.table, "c-1")
    assert set(expiries(items).values()) == {NO_EXPIRY_S}, expiries(items)
    # Past P the execution still runs and nothing of it is deleted; its end expires it exactly.
    clock.advance(DAY_MS + YOUNG_MS)
    assert clock.now_ms() > p * 1000
    expire(clients.dynamodb, stack.table, clock.now_ms() // 1000)
    assert len(items_of(clients, stack.table, "c-1")) == len(items)
    token = aws.services().engine.hook_token("c-1", "hooked")
    assert cloud.api("POST", f"/hooks/{token}", {"payload": 2})[0] == 202
    cloud.run_until_idle()
    state = aws.services().engine.load_state("c-1")
    assert state.status == "COMPLETED"
    ended = items_of(clients, stack.table, "c-1")
    assert set(expiries(ended).values()) == {expires_at_s(state.finished_at_ms, DAY_MS)}
    assert not any("prov" in i for i in ended)


def test_the_timers_role_allows_every_request_of_a_sweep_that_pins(cloud: Any, clients: Any, stack: Any,
                                                                     clock: Any) -> None:
    """The policies test's run never reaches a pin: check the sweeper's own requests against
    TimersRole here (action, and the key against LeadingKeys, or the index it queries)."""
    import fnmatch
    from pathlib import Path

    from orbit.local.cfn import load_template
    from test_aws_policies import actions, grants, leading_keys

    cloud.api("POST", "/definitions", LONG)
    cloud.api("POST", "/executions", {"workflow": "lasting", "id": "p-1", "input": {}})
    cloud.run_until_idle()
    clock.advance(SWEEP_AFTER_MS + 60_000)
    calls: list[tuple[str, str, str]] = []

    def record(model: Any, params: Any, **_: Any) -> None:
        body = json.loads(params.get("body") or b"{}")
        values = body.get("ExpressionAttributeValues") or {}
        pk = ((body.get("Key") or body.get("Item") or {}).get("pk") or values.get(":pk") or {}).get("S", "")
        calls.append((model.name, pk, body.get("IndexName") or ""))

    events = aws.services().dynamodb.meta.events
    events.register("before-call.dynamodb", record, unique_id="wte-record")
    try:
        tick(cloud)
    finally:
        events.unregister("before-call.dynamodb", unique_id="wte-record")
    assert {op for op, _, _ in calls} >= {"Query", "GetItem", "UpdateItem", "PutItem"}, calls
    role = load_template(Path(__file__).resolve().parents[2] / "template.yaml")["Resources"]["TimersRole"]
    refused = []
    for op, pk, index in calls:
        allowed = [st for st in grants(role) if f"dynamodb:{op}" in actions(st)]
        if index:  # a statement on that index
            allowed = [st for st in allowed if f"/index/{index}" in str(st["Resource"])]
        else:  # a statement on the table, whose LeadingKeys (if any) take the key
            allowed = [st for st in allowed if "/index/" not in str(st["Resource"]) and (
                leading_keys(st) is None or any(fnmatch.fnmatchcase(pk, k) for k in leading_keys(st) or []))]
        if not allowed:
            refused.append((op, pk, index))
    assert not refused, refused


def test_a_workers_hold_follows_the_young_executions_expiry_and_a_later_result_does_not_extend_it(
        cloud: Any, clients: Any, stack: Any, clock: Any) -> None:
    from orbit.adapters.dynamodb.retention import BlobRefs, ResultReferences

    cloud.api("POST", "/definitions", LONG)
    cloud.api("POST", "/executions", {"workflow": "lasting", "id": "w-1", "input": {}})
    cloud.run_until_idle()
    p = provisional_expiry_s(aws.services().engine.load_state("w-1").created_at_ms, DAY_MS)

    def holds() -> list[dict[str, Any]]:
        return [i for i in clients.dynamodb.scan(TableName=stack.table)["Items"] if i["sk"]["S"] == "W#w-1"]

    assert [(int(i["expires_at"]["N"]), "rec" in i) for i in holds()] == [(p, True)]
    # The same result again (a duplicate attempt), from a worker process that never saw it: the
    # execution's own reference holds the object, the hold is not renewed for 15 days.
    payloads = aws.services().payloads
    fresh = ResultReferences(BlobRefs(clients.dynamodb, stack.table, payloads, clock), payloads)
    fresh.hold_value("w-1", {"output": BIG})
    assert [int(i["expires_at"]["N"]) for i in holds()] == [p]
