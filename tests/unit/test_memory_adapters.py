"""The in-memory adapters pass the shared port contracts, plus their own timer/queue/registry rules."""

from __future__ import annotations

import pytest
from orbit.adapters.memory import (
    ManualClock,
    MemoryHistoryStore,
    MemoryPayloadStore,
    MemoryQueues,
    MemoryRegistry,
    MemoryTimers,
    RandomIds,
    SeededIds,
)
from orbit.errors import BuildMismatch, NotFound, UnknownWorkflow

from tests.contracts.history_store import HistoryStoreContract


class TestMemoryHistoryStore(HistoryStoreContract):
    def make_store(self) -> MemoryHistoryStore:
        return MemoryHistoryStore()


def test_timers_one_per_execution_and_conditional_disarm() -> None:
    t = MemoryTimers()
    t.arm("a", 100)
    t.arm("b", 50)
    t.arm("a", 200)  # replaces
    assert t.next_fire_ms() == 50
    assert t.due(150) == [("b", 50)]
    t.disarm("b", 49)  # not the armed time: stays
    assert t.due(150) == [("b", 50)]
    t.disarm("b", 50)
    assert t.due(1000) == [("a", 200)] and t.next_fire_ms() == 200


def test_a_timer_is_replaced_only_by_an_arm_derived_from_a_state_at_least_as_new() -> None:
    t = MemoryTimers()
    t.arm("a", 100, seq=7)
    t.arm("a", 900, seq=5)  # an old commit's wake-up (a late resend): refused
    assert t.due(1000) == [("a", 100)]
    t.arm("a", 300, seq=7)  # the same state: replaces
    t.arm("a", 200, seq=9)
    assert t.due(1000) == [("a", 200)]
    t.disarm("a", 200)  # fired: an old arm may set a timer again (its wake finds nothing due)
    t.arm("a", 900, seq=5)
    assert t.due(1000) == [("a", 900)]


def test_queues_honour_delay_against_the_clock() -> None:
    clock = ManualClock(0)
    q = MemoryQueues()
    q.bind_clock(clock)
    q.send_decision({"n": 1}, delay_s=2)
    q.send_decision({"n": 2})
    assert q.receive_decisions(0) == [{"n": 2, "sent_at_ms": 0}]  # the send time, as SqsQueues
    assert q.next_visible_ms() == 2000
    assert q.receive_decisions(2000) == [{"n": 1, "sent_at_ms": 0}]  # sent at 0, visible at 2000


def test_payload_store_round_trip_and_missing() -> None:
    p = MemoryPayloadStore()
    ref = p.put(b"hello")
    assert p.get(ref) == b"hello"
    with pytest.raises(NotFound):
        p.get("mem://nothing")


class _Wf:
    def __init__(self, name: str, version: str, build: str) -> None:
        self.name, self.version, self.build = name, version, build


def test_registry_versions_and_builds() -> None:
    r = MemoryRegistry()
    r.register(_Wf("w", "1", "b1"))
    r.register(_Wf("w", "2", "b2"))
    assert r.get("w").build == "b2" and r.get("w", "1").build == "b1"
    assert r.get_build("w", "1", "b1").build == "b1"
    with pytest.raises(BuildMismatch):
        r.get_build("w", "1", "other")
    with pytest.raises(UnknownWorkflow):
        r.get("nope")
    with pytest.raises(UnknownWorkflow):
        r.get("w", "9")


def test_ids_are_128_bit_and_seeded_ones_repeat() -> None:
    assert len(RandomIds().token()) >= 22 and RandomIds().token() != RandomIds().token()
    a, b = SeededIds("x"), SeededIds("x")
    assert [a.token() for _ in range(3)] == [b.token() for _ in range(3)]
    assert len(a.token()) == 32  # 32 hex digits = 128 bits
