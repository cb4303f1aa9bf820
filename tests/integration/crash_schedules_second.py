"""The schedule crash matrix on the second (docs/decisions/timers-on-the-second.md): the AWS defaults
(`ORBIT_TIMERS=sqs-delay`, a 900 s lead), so each one-time AWS schedule is armed a minute early, its
fire reaches the decider early and is sent back to the queue delayed to its second (a new send), and
the runs' 20-minute sleeps are handed to SQS by the timers sweep. moto's SQS reads the world's clock
(crash_timers.py). The invariants are crash_schedules.check's, plus: every occurrence acted on
(started, buffered or skipped) within a second of its time unless a crash delayed its fire (then
within the decision queue's visibility timeout, as any message)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from aws_resources import create_stack
from crash_points import CrashPoint, Recorder
from crash_schedules import GROUP, ROLE, SCHEDULE, SLOW, SchedulerClients, ScheduleWorld
from crash_timers import LEAD_MS, TimerWorld
from moto import mock_aws
from orbit.aws import wiring as aws


class SecondWorld(ScheduleWorld):
    next_delayed_ms = TimerWorld.next_delayed_ms

    def run(self, max_rounds: int = 600) -> None:
        self.sent: set[tuple[str, str]] = set()
        end = self.clock.now + self.run_for_ms
        self.api("POST", "/definitions", SLOW, 201)
        self.api("POST", "/schedules", SCHEDULE, 201)
        for _ in range(max_rounds):
            if self.pump("DecisionQueue") or self.release_due() or self.fire_schedules(end):
                continue
            fire = self.container().table_timers.next_fire_ms()
            if fire is not None and fire - LEAD_MS <= self.clock.now:
                self.fire_timers()
                continue
            nxt, delayed = self.next_schedule_ms(), self.next_delayed_ms()
            later = [p.due_ms for p in self.parked] + ([fire - LEAD_MS] if fire is not None else []) + \
                ([nxt] if nxt is not None and nxt <= end else []) + ([delayed] if delayed is not None else [])
            if later:
                self.clock.now = max(self.clock.now, min(later))
                continue
            return
        raise AssertionError(f"the system did not settle in {max_rounds} rounds")


@contextmanager
def second_world(clients: SchedulerClients, recorder: Recorder, crash_at: CrashPoint | None
                 ) -> Iterator[SecondWorld]:
    import moto.sqs.models as sqs_models

    saved = dict(os.environ)
    saved_time = sqs_models.unix_time, sqs_models.unix_time_millis
    with mock_aws():
        stack = create_stack(clients.dynamodb, clients.sqs, clients.s3)
        clients.scheduler.create_schedule_group(Name=GROUP)
        os.environ.update({**stack.env(), "ORBIT_TIMERS": "sqs-delay", "ORBIT_TIMER_LEAD_S": "900",
                           "ORBIT_SCHEDULE_GROUP": GROUP, "ORBIT_SCHEDULER_ROLE_ARN": ROLE,
                           "ORBIT_DECISION_QUEUE_ARN": stack.arns["DecisionQueue"]})
        try:
            recorder.attach(clients.scheduler)
            world = SecondWorld(clients, recorder, stack, None, crash_at)  # type: ignore[arg-type]
            ticks = itertools.count()  # as crash_timers.timer_world: moto's SQS on the world's clock
            sqs_models.unix_time_millis = lambda: world.clock.now + next(ticks) / 1000  # type: ignore[assignment]
            sqs_models.unix_time = lambda: sqs_models.unix_time_millis() / 1000  # type: ignore[assignment]
            yield world
        finally:
            sqs_models.unix_time, sqs_models.unix_time_millis = saved_time  # type: ignore[assignment]
            recorder.arm(None)
            aws.reset()
            os.environ.clear()
            os.environ.update(saved)


def start_lateness(world: SecondWorld) -> dict[str, int]:
    """How long after its occurrence each fire was acted on (the schedule's own record of its
    actions: started, buffered or skipped, with the time it acted, to the second)."""
    from orbit.core.schedule.times import parse_time

    raw, _ = world.container().engine.schedules.store.get("every15")
    return {a["occurrence"]: parse_time(a["at"]) - parse_time(a["occurrence"])
            for a in raw.get("actions") or [] if a.get("source") == "schedule"}


def lateness_problems(world: SecondWorld, late: dict[str, Any]) -> list[str]:
    bound = 1_000 + (world.visibility_ms["DecisionQueue"] if world.crashes else 0)
    bad = {r: ms for r, ms in late.items() if not 0 <= ms <= bound}
    return [f"occurrences acted on {bad} ms after their time (want 0..{bound})"] if bad else []
