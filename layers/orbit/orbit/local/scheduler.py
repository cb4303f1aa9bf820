"""Fire the template's `rate(...)` schedules on virtual time (moto never fires EventBridge).

A rule fires at `deployed_at + k * period`. When virtual time jumps over several
ticks, the rule fires once for the latest tick: the timers handler fires every
timer that is due, so the ticks in between would find nothing more to do.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any

from .emulator import ACCOUNT, REGION
from .lambdas import Handler, invoke
from .resources import ScheduleRule


def scheduled_event(rule: ScheduleRule, at_ms: int) -> dict[str, Any]:
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT,
        "time": datetime.fromtimestamp(at_ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": [f"arn:aws:events:{REGION}:{ACCOUNT}:rule/{rule.name}"],
        "detail": {},
    }


class Scheduler:
    def __init__(self, rules: list[tuple[ScheduleRule, Handler]], start_ms: int) -> None:
        self.rules = rules
        self.start_ms = start_ms
        self.next_fire = {r.name: start_ms + r.period_ms for r, _ in rules}
        self.fired = 0

    def tick_at_or_after(self, rule: ScheduleRule, t_ms: int) -> int:
        k = max(1, -(-(t_ms - self.start_ms) // rule.period_ms))
        return self.start_ms + k * rule.period_ms

    def next_wake_ms(self) -> int | None:
        return min(self.next_fire.values(), default=None)

    def fire_due(self, now_ms: int) -> int:
        count = 0
        for rule, handler in self.rules:
            if self.next_fire[rule.name] > now_ms:
                continue
            last_tick = self.start_ms + ((now_ms - self.start_ms) // rule.period_ms) * rule.period_ms
            self.next_fire[rule.name] = last_tick + rule.period_ms
            invoke(rule.function, handler, scheduled_event(rule, last_tick))
            count += 1
        self.fired += count
        return count
