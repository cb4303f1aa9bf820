"""ScheduleService on the in-memory adapters: claim, act, advance; conflicts; a claim left pending."""

from __future__ import annotations

import pytest
from orbit.adapters.memory import (
    ManualClock,
    MemoryHistoryStore,
    MemoryQueues,
    MemoryRegistry,
    MemoryTimers,
    SeededIds,
)
from orbit.adapters.memory_schedules import MemoryScheduler, MemoryScheduleStore
from orbit.core.definition import parse_definition
from orbit.core.schedule.times import parse_time
from orbit.errors import ConflictError, ExecutionExists, NotFound, ValidationError
from orbit.service.engine import Engine
from orbit.service.schedules import ScheduleService

T0 = parse_time("2027-01-01T00:00:00Z")
M15 = 15 * 60_000
WF = {"orbit": 1, "name": "wf", "version": "1", "steps": {"t": {"task": "t.run"}}}


def build():
    clock = ManualClock(T0)
    reg = MemoryRegistry()
    reg.register(parse_definition(WF))
    engine = Engine(MemoryHistoryStore(), MemoryQueues(), MemoryTimers(), None, reg, clock, SeededIds("s"))
    store, arm = MemoryScheduleStore(), MemoryScheduler()
    engine.schedules = svc = ScheduleService(store, arm, engine)
    return svc, engine, clock, arm


def fire(svc, arm, clock):
    for msg in arm.due(clock.now_ms()):
        svc.engine.handle_batch([msg])


def test_create_arms_fires_and_rearms():
    svc, engine, clock, arm = build()
    svc.create({"id": "s", "workflow": "wf", "every": "15m", "input": {"a": 1}})
    assert arm.next_fire_ms() == T0 + M15
    clock.advance(M15)
    fire(svc, arm, clock)
    assert engine.describe("s:2027-01-01T00:15:00Z")["input"] == {"a": 1}
    assert engine.describe("s:2027-01-01T00:15:00Z")["status"] == "RUNNING"
    assert arm.next_fire_ms() == T0 + 2 * M15
    assert svc.describe("s")["state"]["running"] == ["s:2027-01-01T00:15:00Z"]


def test_same_create_is_idempotent_other_config_refused_unknown_workflow_named():
    svc, *_ = build()
    a = svc.create({"id": "s", "workflow": "wf", "every": "15m"})
    assert svc.create({"id": "s", "workflow": "wf", "every": "15m"})["created_at"] == a["created_at"]
    with pytest.raises(ExecutionExists):
        svc.create({"id": "s", "workflow": "wf", "every": "20m"})
    with pytest.raises(ValidationError) as e:
        svc.create({"id": "t", "workflow": "nope", "every": "15m"})
    assert e.value.problems[0].path == "workflow"
    with pytest.raises(NotFound):
        svc.describe("t")


def test_a_claim_whose_start_never_happened_is_carried_out_by_the_next_load():
    svc, engine, clock, arm = build()
    svc.create({"id": "s", "workflow": "wf", "every": "15m"})
    clock.advance(M15)
    real_start = engine.start
    engine.start = lambda *a, **k: (_ for _ in ()).throw(RuntimeError("died after the claim"))
    with pytest.raises(RuntimeError):
        svc.handle({"kind": "schedule_fire", "execution_id": "schedule:s", "schedule_id": "s"})
    raw, _ = svc.store.get("s")
    assert raw["pending"] and "s:2027-01-01T00:15:00Z" in raw["running"]
    engine.start = real_start
    svc.handle({"kind": "schedule_fire", "execution_id": "schedule:s", "schedule_id": "s"})  # redelivery
    assert svc.store.get("s")[0]["pending"] == []
    assert engine.describe("s:2027-01-01T00:15:00Z")["status"] == "RUNNING"
    assert svc.describe("s")["state"]["counts"]["started"] == 1


def test_a_lost_race_reloads_and_decides_again():
    svc, engine, clock, arm = build()
    svc.create({"id": "s", "workflow": "wf", "every": "15m"})
    clock.advance(M15)
    put = svc.store.put
    raced = []

    def racing_put(sid, state, rev):
        if not raced:  # another decider pauses the schedule between our read and our write
            raced.append(1)
            d, r = svc.store.get(sid)
            put(sid, {**d, "paused": True, "note": "other"}, r)
            raise ConflictError("schedule:s", r + 1)
        return put(sid, state, rev)

    svc.store.put = racing_put
    svc.handle({"kind": "schedule_fire", "execution_id": "schedule:s", "schedule_id": "s"})
    d = svc.describe("s")
    assert d["state"]["paused"] and d["state"]["counts"] == {"skipped_paused": 1}
    with pytest.raises(NotFound):
        engine.describe("s:2027-01-01T00:15:00Z")


def test_run_end_starts_the_buffered_one_and_delete_disarms():
    svc, engine, clock, arm = build()
    svc.create({"id": "s", "workflow": "wf", "every": "15m", "overlap": "buffer_one"})
    for _ in range(2):
        clock.advance(M15)
        fire(svc, arm, clock)
    first = "s:2027-01-01T00:15:00Z"
    assert svc.describe("s")["state"]["buffered"] == ["2027-01-01T00:30:00Z"]
    svc.handle({"kind": "child_done", "execution_id": "schedule:s", "id": f"child_done:{first}",
                "unit": "run", "child_id": first, "status": "CANCELLED"})
    d = svc.describe("s")
    assert d["state"]["running"] == ["s:2027-01-01T00:30:00Z"] and d["state"]["buffered"] == []
    svc.delete("s")
    assert arm.next_fire_ms() is None
    svc.handle({"kind": "schedule_fire", "execution_id": "schedule:s", "schedule_id": "s"})  # dropped
    with pytest.raises(NotFound):
        svc.delete("s")


def test_resume_and_update_rearm_a_lost_fire():
    svc, engine, clock, arm = build()
    svc.create({"id": "s", "workflow": "wf", "every": "15m"})
    arm.arm("s", None)  # the fire went to the dead-letter queue: nothing armed
    svc.resume("s", "re-arm")
    assert arm.next_fire_ms() == T0 + M15
    arm.arm("s", None)
    svc.update("s", {"workflow": "wf", "every": "15m"})
    assert arm.next_fire_ms() == T0 + M15
