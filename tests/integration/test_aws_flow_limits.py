"""Flow control on DynamoDB (moto): the store's contract, shared with the in-memory store, and the
crash matrix around acquire, wait, grant and release: a crash before or after each write and each
send, then the redelivery the queue makes, loses no slot, lets no more than the limit in, and
leaves no waiting item behind (docs/decisions/flow-limits-state.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aws_resources import Clients, Stack
from orbit.adapters.dynamodb.limits import DynamoLimits
from orbit.adapters.memory_limits import MemoryLimits
from orbit.core.flow.gates import Bucket, Gate, Slot
from orbit.service.limits import FlowGate

WRITES = ("update_item", "put_item", "delete_item", "transact_write_items")


class Crash(Exception):
    pass


class Crashing:
    """A DynamoDB client whose `at`-th write raises Crash, before it is made or after it landed."""

    def __init__(self, client: Any, at: int = 0, after: bool = False) -> None:
        self._client, self.at, self.after, self.writes = client, at, after, 0

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._client, name)
        if name not in WRITES:
            return real

        def call(**kw: Any) -> Any:
            self.writes += 1
            if self.writes == self.at and not self.after:
                raise Crash(f"before write {self.at}")
            out = real(**kw)
            if self.writes == self.at and self.after:
                raise Crash(f"after write {self.at}")
            return out

        return call


class Sent:
    """The Queues port: records sends; the `at`-th send (counted with the writes) can crash."""

    def __init__(self, counter: Crashing | None = None) -> None:
        self.tasks: list[dict[str, Any]] = []
        self.decisions: list[dict[str, Any]] = []
        self.counter = counter

    def _point(self) -> None:
        if self.counter is not None:
            self.counter.writes += 1
            if self.counter.writes == self.counter.at:
                raise Crash(f"{'after' if self.counter.after else 'before'} send {self.counter.at}")

    def send_task(self, queue: str, body: dict[str, Any], delay_s: int = 0) -> None:
        if self.counter is not None and not self.counter.after:
            self._point()
        self.tasks.append(body)
        if self.counter is not None and self.counter.after:
            self._point()

    def send_decision(self, message: dict[str, Any], delay_s: int = 0) -> None:
        self.decisions.append(message)


class Clock:
    def __init__(self) -> None:
        self.now = 1_767_225_600_000

    def now_ms(self) -> int:
        return self.now


@pytest.fixture(params=["memory", "dynamodb"])
def store(request: Any, clients: Clients, stack: Stack) -> Any:
    return MemoryLimits() if request.param == "memory" else DynamoLimits(clients.dynamodb, stack.table)


SLOT = Slot("task:t|k", "task:t", "k", 2)


def test_store_acquire_is_bounded_and_idempotent_by_holder(store: Any) -> None:
    assert store.acquire(SLOT, "a", 1) and store.acquire(SLOT, "b", 1)
    assert not store.acquire(SLOT, "c", 1)
    assert store.acquire(SLOT, "a", 2)  # a holder asking again (a redelivery)
    assert store.read(SLOT.scope).holders == {"a", "b"}


def test_store_release_is_a_no_op_the_second_time(store: Any) -> None:
    store.acquire(SLOT, "a", 1)
    after = store.release(SLOT, "a")
    assert after is not None and after.holders == set()
    assert store.release(SLOT, "a") is None
    assert store.acquire(SLOT, "x", 1) and store.acquire(SLOT, "y", 1)  # both slots are there


def test_store_line_grant_and_cancel(store: Any) -> None:
    one = Slot("q|", "q", "", 1)
    assert store.acquire(one, "a", 1)
    assert store.enqueue(one, "b", 3, {"gate": {"holder": "b"}, "index": 0, "send": {}}, 5)
    assert store.enqueue(one, "b", 3, {"gate": {"holder": "b"}, "index": 0, "send": {}}, 6)  # once
    assert store.enqueue(one, "c", 3, {"gate": {"holder": "c"}, "index": 0, "send": {}}, 7)
    c = store.read(one.scope)
    assert c.waiting == {(3, ""): 2}
    assert store.cancel_wait(one, "c") and not store.cancel_wait(one, "c")
    assert store.read(one.scope).waiting == {(3, ""): 1}
    assert store.release(one, "a") is not None
    entry, ticket = store.head(one.scope, 3, "")
    assert ticket["gate"]["holder"] == "b"
    assert store.grant(one, entry, "b", 3, "", 0, None, 9)  # the holder set was empty: still room
    assert not store.grant(one, entry, "b", 3, "", 0, None, 9)
    c = store.read(one.scope)
    assert c.holders == {"b"} and c.granted == {"b"} and c.waiting == {}
    assert store.ticket(one.scope, "b")["granted_ms"] == 9
    assert store.release(one, "b") is not None and store.ticket(one.scope, "b") is None


def test_store_keeps_a_pass_per_priority_and_tenant(store: Any) -> None:
    """A tenant waiting at two priorities has a pass at each (core/flow/order.py): its grant at
    priority 1 leaves its pass at priority 3 where it was."""
    def slot(tenant: str) -> Slot:
        return Slot("f|", "f", "", 1, tenant)

    def ticket(holder: str) -> dict[str, Any]:
        return {"gate": {"holder": holder}, "index": 0, "send": {}}

    assert store.acquire(slot("a"), "x", 1)
    for holder, priority in (("a1", 1), ("a3", 3), ("a3b", 3)):
        assert store.enqueue(slot("a"), holder, priority, ticket(holder), 2)
    assert store.enqueue(slot("b"), "b3", 3, ticket("b3"), 3)
    assert store.read("f|").passes == {(1, "a"): 0, (3, "a"): 0, (3, "b"): 0}
    store.release(slot("a"), "x")
    entry, _ = store.head("f|", 1, "a")
    assert store.grant(slot("a"), entry, "a1", 1, "a", 1_000_000, None, 4)  # a left priority 1's line
    assert store.read("f|").passes == {(3, "a"): 0, (3, "b"): 0}
    store.release(slot("a"), "a1")
    entry, _ = store.head("f|", 3, "a")
    assert store.grant(slot("a"), entry, "a3", 3, "a", 1_000_000, 2_000_000, 5)
    c = store.read("f|")
    assert c.passes == {(3, "a"): 2_000_000, (3, "b"): 0} and c.vt == 1_000_000


def test_a_pass_stored_per_tenant_only_is_not_read_as_a_priority(clients: Clients, stack: Stack) -> None:
    """Counters written before passes were kept per priority hold `p:<tenant>`: read as nothing
    (the tenant joins at the virtual time), never as another tenant's pass."""
    store = DynamoLimits(clients.dynamodb, stack.table)
    assert store.acquire(SLOT, "x", 1)
    clients.dynamodb.update_item(TableName=stack.table, Key=store._counter_key(SLOT.scope),
                                 UpdateExpression="SET #a = :v, #b = :v",
                                 ExpressionAttributeNames={"#a": "p:acme", "#b": "p:3:acme"},
                                 ExpressionAttributeValues={":v": {"N": "7"}})
    assert store.read(SLOT.scope).passes == {(3, "acme"): 7}


def test_store_enqueue_refuses_when_there_is_room(store: Any) -> None:
    ticket = {"gate": {"holder": "a"}, "index": 0, "send": {}}
    assert not store.enqueue(SLOT, "a", 3, ticket, 1)  # no counter yet: room
    store.acquire(SLOT, "x", 1)
    assert not store.enqueue(SLOT, "a", 3, ticket, 1)  # 1 of 2 held: room
    assert store.ticket(SLOT.scope, "a") is None


def test_store_token_bucket(store: Any) -> None:
    b = Bucket("rate:x|", "rate:x", "", 2, 1000, 2, "wait")
    assert [store.reserve(b, 0) for _ in range(4)] == [0, 0, 500, 1000]
    strict = Bucket("rate:y|", "rate:y", "", 1, 1000, 1, "fail")
    assert store.reserve(strict, 0) == 0 and store.reserve(strict, 10) is None
    assert store.reserve(strict, 1000) == 0


# ------------------------------------------------------------------------------ crash matrix

QUEUE = Slot("queue:q|", "queue:q", "", 1)


def _gate(holder: str, two: bool = False) -> Gate:
    """One slot (the task's), or two: the task's, then its queue's (taken in that order)."""
    return Gate(holder, (Slot("task:t|", "task:t", "", 1),) + ((QUEUE,) if two else ()), None, 3)


def _script(flow: FlowGate, two: bool = False) -> list[Callable[[bool], None]]:
    """A holds the slot, B and C wait, then each releases in turn. Each step takes `again`: True
    when it is the redelivery of a step that crashed."""
    def dispatch(h: str) -> Callable[[bool], None]:
        return lambda again: flow.dispatch(_gate(h, two), "q", {"holder": h})

    def release(h: str) -> Callable[[bool], None]:
        return lambda again: flow.release(_gate(h, two), recovering=again)

    return [dispatch("a"), dispatch("b"), dispatch("c"), release("a"), release("b"), release("c")]


def _run(clients: Clients, table: str, at: int, after: bool,
         two: bool = False) -> tuple[Sent, DynamoLimits, int, int]:
    client = Crashing(clients.dynamodb, at, after)
    queues = Sent(client)
    limits = DynamoLimits(client, table)  # type: ignore[arg-type]
    flow = FlowGate(limits, queues, Clock())  # type: ignore[arg-type]
    peak = 0
    for step in _script(flow, two):
        try:
            step(False)
        except Crash:
            step(True)  # the message comes back: the same step, now a redelivery
        for scope in ("task:t|", "queue:q|"):
            c = limits.read(scope)
            peak = max(peak, len(c.holders) if c is not None else 0)
    return queues, limits, peak, client.writes


@pytest.mark.parametrize("two", [False, True], ids=["one-slot", "task-and-queue"])
def test_crash_matrix_around_acquire_wait_grant_and_release(clients: Clients, stack: Stack,
                                                            two: bool) -> None:
    clean, _, _, points = _run(clients, stack.table, 0, False, two)
    assert [b["holder"] for b in clean.tasks] == ["a", "b", "c"]
    assert points >= 12  # 3 acquires, 2 waits, 3 releases, 2 grants, 3 sends... each a crash point
    for at in range(1, points + 1):
        for after in (False, True):
            table = f"{stack.table}-{at}-{int(after)}"
            _copy_table(clients, stack.table, table)
            queues, limits, peak, _ = _run(clients, table, at, after, two)
            sent = [b["holder"] for b in queues.tasks]
            assert set(sent) == {"a", "b", "c"}, (at, after, sent)  # nothing lost
            assert sent.index("b") < sent.index("c"), (at, after, sent)  # the line's order kept
            assert peak <= 1, (at, after)  # never more than the limit
            for scope in ("task:t|",) + (("queue:q|",) if two else ()):
                c = limits.read(scope)
                assert c is not None and c.holders == set() and c.waiting == {} and c.granted == set(), \
                    (at, after, c)  # no slot lost, nobody left waiting
                assert limits.ticket(scope, "b") is None and limits.ticket(scope, "c") is None


def _copy_table(clients: Clients, source: str, name: str) -> None:
    desc = clients.dynamodb.describe_table(TableName=source)["Table"]
    clients.dynamodb.create_table(
        TableName=name, KeySchema=desc["KeySchema"], AttributeDefinitions=desc["AttributeDefinitions"],
        BillingMode="PAY_PER_REQUEST",
        GlobalSecondaryIndexes=[{"IndexName": g["IndexName"], "KeySchema": g["KeySchema"],
                                 "Projection": g["Projection"]}
                                for g in desc.get("GlobalSecondaryIndexes", [])])
