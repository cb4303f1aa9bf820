"""Timers and schedule fires handed to SQS delays so they land on the second (issue 30 §2).

docs/decisions/timers-on-the-second.md: the timers sweep hands a table timer due within the lead to
SQS delayed to its second; EventBridge Scheduler is armed a minute early and the decider delays an
early fire to its second; a fire too close to arm early gets an exact copy on SQS.
"""

from __future__ import annotations

from typing import Any

from orbit.adapters.memory import (
    ManualClock,
    MemoryHistoryStore,
    MemoryQueues,
    MemoryRegistry,
    MemoryTimers,
    SeededIds,
)
from orbit.adapters.memory_schedules import MemoryScheduler, MemoryScheduleStore
from orbit.adapters.scheduler import EventBridgeScheduler, early_ms
from orbit.core.definition import parse_definition
from orbit.core.schedule.times import parse_time
from orbit.service.engine import Engine
from orbit.service.schedules import ScheduleService

T0 = parse_time("2027-01-01T00:00:00Z")
MIN = 60_000
WF = {"orbit": 1, "name": "wf", "version": "1", "steps": {"t": {"task": "t.run"}}}


def build(arm: Any = None) -> tuple[ScheduleService, Engine, ManualClock, MemoryQueues]:
    clock = ManualClock(T0)
    reg = MemoryRegistry()
    reg.register(parse_definition(WF))
    queues = MemoryQueues()
    queues.bind_clock(clock)
    engine = Engine(MemoryHistoryStore(), queues, MemoryTimers(), None, reg, clock, SeededIds("s"))
    engine.schedules = svc = ScheduleService(MemoryScheduleStore(), arm or MemoryScheduler(), engine)
    return svc, engine, clock, queues


def test_the_sweep_hands_a_long_timer_to_sqs_delayed_to_its_second() -> None:
    _, engine, clock, queues = build()
    at = T0 + 20 * MIN + 300
    engine.timers.arm("e1", at)
    engine.timers.arm("e2", T0 + 25 * MIN)  # beyond the lead: stays in the table
    clock.set(T0 + 5 * MIN + 301)  # the tick: e1 is due within its 15-minute lead
    assert engine.fire_timers(clock.now_ms(), 100, 15 * MIN) == 1
    assert engine.timers.next_fire_ms() == T0 + 25 * MIN  # e1 is the queue's now
    assert queues.receive_decisions(at - 1) == []  # never early...
    got = queues.receive_decisions(at + 1_000)  # ...and within the second (DelaySeconds rounded up)
    assert [(m["kind"], m["execution_id"]) for m in got] == [("wake", "e1")]


def test_without_a_lead_the_sweep_fires_only_what_is_due() -> None:
    _, engine, _, queues = build()
    engine.timers.arm("e1", T0 + 20 * MIN)
    assert engine.fire_timers(T0 + 19 * MIN, 100) == 0
    assert engine.fire_timers(T0 + 20 * MIN, 100) == 1
    assert len(queues.receive_decisions(T0 + 20 * MIN)) == 1


def test_an_early_schedule_fire_is_delayed_to_its_second_not_lost() -> None:
    svc, engine, clock, queues = build()
    svc.create({"id": "s", "workflow": "wf", "every": "15m"})
    fire_at = T0 + 15 * MIN
    msg = svc.arm.armed_at["s"][1]  # type: ignore[attr-defined]
    clock.set(fire_at - 95_000)  # Scheduler armed a minute early delivered it 95 s before its time
    engine.handle_batch([msg])
    assert engine.list(limit=10)[0] == []  # nothing started early
    assert queues.receive_decisions(fire_at - 1) == []
    again = queues.receive_decisions(fire_at)  # back on the queue for its very second
    assert [m["kind"] for m in again] == ["schedule_fire"]
    clock.set(fire_at)
    engine.handle_batch(again)
    assert [e.execution_id for e in engine.list(limit=10)[0]] == ["s:2027-01-01T00:15:00Z"]


class _Client:
    meta = object()

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def update_schedule(self, **kw: Any) -> None:
        self.calls.append(kw)


def test_scheduler_is_armed_a_minute_early_or_an_exact_copy_goes_to_sqs() -> None:
    clock = ManualClock(T0)
    client = _Client()
    sched = EventBridgeScheduler(client, "g", "arn:q", "arn:r", clock=clock)
    at = T0 + 10 * MIN + 13_000  # 00:10:13
    assert early_ms(at) == T0 + 9 * MIN and sched.arm("s", at, {"kind": "schedule_fire"}) is True
    assert client.calls[-1]["ScheduleExpression"] == "at(2027-01-01T00:09:00)"
    # 70 s away: a minute early would be past; armed at its time, the caller sends an exact copy
    assert sched.arm("s", T0 + 70_000, {}) is False
    assert client.calls[-1]["ScheduleExpression"] == "at(2027-01-01T00:01:10)"
    assert EventBridgeScheduler(client, "g", "arn:q", "arn:r").arm("s", at, {}) is None  # no clock: as before
    assert client.calls[-1]["ScheduleExpression"] == "at(2027-01-01T00:10:13)"


class _TooClose(MemoryScheduler):
    def arm(self, schedule_id: str, at_ms: int | None, message: dict[str, Any] | None = None) -> Any:
        super().arm(schedule_id, at_ms, message)
        return None if at_ms is None else False


def test_a_fire_too_close_to_arm_early_gets_an_exact_copy_on_sqs() -> None:
    svc, engine, clock, queues = build(_TooClose())
    svc.create({"id": "s", "workflow": "wf", "every": "1m"})
    scheduler_own = svc.arm.armed_at["s"][1]  # type: ignore[attr-defined]
    assert queues.receive_decisions(T0 + MIN - 1) == []
    copy = queues.receive_decisions(T0 + MIN)
    assert [(m["kind"], m["fire_at_ms"]) for m in copy] == [("schedule_fire", T0 + MIN)]
    clock.set(T0 + MIN)
    engine.handle_batch(copy)
    clock.set(T0 + MIN + 40_000)  # Scheduler's own, late in its minute: a duplicate, harmless
    engine.handle_batch([scheduler_own])
    assert [e.execution_id for e in engine.list(limit=10)[0]] == ["s:2027-01-01T00:01:00Z"]


def test_the_lead_is_a_setting_of_0_to_900_seconds_and_table_mode_has_none() -> None:
    import pytest
    from orbit.aws.wiring import Settings
    from orbit.errors import ValidationError

    env = {"ORBIT_TABLE": "t", "ORBIT_BUCKET": "b", "ORBIT_DECISION_QUEUE_URL": "q"}
    assert Settings.from_env(env).lead_ms == 900_000
    assert Settings.from_env({**env, "ORBIT_TIMER_LEAD_S": "0"}).lead_ms == 0
    assert Settings.from_env({**env, "ORBIT_TIMERS": "table"}).lead_ms == 0
    for bad in ("901", "-1", "15m"):
        with pytest.raises(ValidationError, match="ORBIT_TIMER_LEAD_S"):
            Settings.from_env({**env, "ORBIT_TIMER_LEAD_S": bad})
