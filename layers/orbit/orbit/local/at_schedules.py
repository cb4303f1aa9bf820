"""Fire EventBridge Scheduler one-time schedules (`at(...)`) on virtual time.

moto stores Scheduler schedules and never fires them, so the local stack does,
as AWS would: when virtual time reaches an ENABLED schedule's `at()` time its
target input is sent to the target queue, once per (schedule, expression).
Orbit arms one such schedule per Orbit schedule (orbit/adapters/scheduler.py).
Read straight from moto's backend (this process), like clock.next_sqs_wake_ms:
asking the API for every schedule on every pump round would cost a request each.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any, Iterator
from zoneinfo import ZoneInfo

from .emulator import ACCOUNT, REGION
from .resources import Deployment


def at_ms(expression: str, tz: str) -> int | None:
    if not (expression.startswith("at(") and expression.endswith(")")):
        return None  # rate()/cron() Scheduler schedules are not Orbit's; not fired locally
    d = datetime.fromisoformat(expression[3:-1]).replace(tzinfo=ZoneInfo(tz or "UTC"))
    return int(d.timestamp() * 1000)


class AtSchedules:
    def __init__(self, deployment: Deployment, sqs: Any, precision_ms: int = 0) -> None:
        self.deployment = deployment
        self.sqs = sqs
        self.fired: set[tuple[str, str, str]] = set()
        self.count = 0
        # AWS invokes "with 60 second precision": an at() of 1:00:30 fires somewhere in 1:00:00-1:00:59.
        # 0: at the at() time. Else a fixed point of that window per (schedule, expression), from a
        # hash (benchmarks/bench_timers.py and the on-the-second tests model AWS's window with 60_000).
        self.precision_ms = precision_ms

    def _when(self, name: str, expression: str, t: int) -> int:
        p = self.precision_ms
        if not p:
            return t
        h = int.from_bytes(hashlib.sha256(f"{name}|{expression}".encode()).digest()[:4], "big")
        return t - t % p + h % p

    def _due(self) -> Iterator[tuple[int, Any]]:
        from moto.scheduler.models import scheduler_backends

        backend = scheduler_backends[ACCOUNT][REGION]
        for group in list(self.deployment.schedule_groups.values()):
            g = backend.schedule_groups.get(group)
            for sched in list(g.schedules.values()) if g else []:
                if sched.state != "ENABLED":
                    continue
                t = at_ms(sched.schedule_expression, sched.schedule_expression_timezone)
                if t is not None and (group, sched.name, sched.schedule_expression) not in self.fired:
                    yield self._when(sched.name, sched.schedule_expression, t), sched

    def next_wake_ms(self) -> int | None:
        return min((t for t, _ in self._due()), default=None)

    def fire_due(self, now_ms: int) -> int:
        due = sorted(((t, s) for t, s in self._due() if t <= now_ms), key=lambda ts: ts[0])
        for _, sched in due:
            target = sched.target
            queue = self.deployment.queue_by_arn(target["Arn"])
            self.sqs.send_message(QueueUrl=queue.url, MessageBody=target.get("Input") or "{}")
            self.fired.add((sched.group_name, sched.name, sched.schedule_expression))
        self.count += len(due)
        return len(due)
