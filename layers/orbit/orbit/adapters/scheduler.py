"""EventBridge Scheduler: the clock that fires Orbit schedules on AWS (one AWS schedule each).

Each Orbit schedule owns one AWS schedule, `orbit-<hash of its id>` in the
stack's schedule group, armed as a one-time `at(...)` expression (UTC) for the
schedule's next fire; its target is the decision queue and its input the
`schedule_fire` message for that occurrence. When the decider handles the fire
it arms the next one. Why `at()` rather than the cron itself: Orbit decides the
occurrences (cronsim, in the pure core) so that daylight saving, jitter,
exclusions, start/end and catch-up behave the same on AWS and on the local
stack; AWS's own cron skips an occurrence that falls in the spring-forward gap.

On the second (with a `clock`: unless ORBIT_TIMERS=table or ORBIT_TIMER_LEAD_S=0): Scheduler invokes
"with 60 second precision" (an `at()` of 1:00 fires between 1:00:00 and 1:00:59), so the schedule
is armed for the start of the minute before the one the fire falls in (`early_ms`): the message
arrives up to 2 minutes early, and the decider sends it back to the queue delayed to its exact
second (`ScheduleService.handle`). docs/decisions/timers-on-the-second.md.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from typing import Any

from botocore.exceptions import ClientError


def aws_name(schedule_id: str) -> str:
    return "orbit-" + hashlib.sha256(schedule_id.encode()).hexdigest()[:40]


def at_expression(at_ms: int) -> str:
    # at() has whole seconds; rounding up never fires before the occurrence's jittered time
    d = datetime.fromtimestamp(-(-at_ms // 1000), tz=timezone.utc)
    return f"at({d.strftime('%Y-%m-%dT%H:%M:%S')})"


PRECISION_MS = 60_000  # EventBridge Scheduler's documented invocation precision


def early_ms(at_ms: int) -> int:
    """The `at()` time that makes Scheduler's invocation land before `at_ms`, at most 2 min early:
    the start of the minute before `at_ms`'s (the invocation comes within that minute)."""
    before = at_ms - PRECISION_MS
    return before - before % PRECISION_MS


MARGIN_MS = 5_000  # an early `at()` closer to now than this is not armed early (it could be past)


class EventBridgeScheduler:
    def __init__(self, client: Any, group: str, target_arn: str, role_arn: str, clock: Any = None) -> None:
        self._client_or_factory = client  # a boto3 client, or a function that makes one
        self.clock = clock  # given: arm a minute or two early; the decider delays the fire to its second
        self.group = group
        self.target_arn = target_arn
        self.role_arn = role_arn

    @property
    def _client(self) -> Any:
        c = self._client_or_factory
        if callable(c) and not hasattr(c, "meta"):
            c = self._client_or_factory = c()
        return c

    def arm(self, schedule_id: str, at_ms: int | None, message: dict[str, Any] | None = None) -> bool | None:
        """Fire `message` to the decision queue at `at_ms`; None removes the AWS schedule. With a
        clock, armed early (`early_ms`) and True returned; False when `at_ms` is too close for that
        (armed at `at_ms`: Scheduler may land up to a minute late, the caller sends an exact copy)."""
        name = aws_name(schedule_id)
        if at_ms is None:
            try:
                self._client.delete_schedule(Name=name, GroupName=self.group)
            except ClientError as e:
                if e.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                    raise
            return None
        on_time: bool | None = None
        if self.clock is not None:
            early = early_ms(at_ms)
            on_time = early > self.clock.now_ms() + MARGIN_MS
            at_ms = early if on_time else at_ms
        kw: dict[str, Any] = {
            "Name": name,
            "GroupName": self.group,
            "ScheduleExpression": at_expression(at_ms),
            "ScheduleExpressionTimezone": "UTC",
            "FlexibleTimeWindow": {"Mode": "OFF"},
            "State": "ENABLED",
            "ActionAfterCompletion": "NONE",
            "Description": f"Orbit schedule {schedule_id}"[:512],
            "Target": {
                "Arn": self.target_arn,
                "RoleArn": self.role_arn,
                "Input": json.dumps(message or {}, separators=(",", ":")),
                "RetryPolicy": {"MaximumEventAgeInSeconds": 86_400, "MaximumRetryAttempts": 185},
            },
        }
        try:
            self._client.update_schedule(**kw)
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                raise
            self._client.create_schedule(**kw)
        return on_time

    def armed(self, schedule_id: str) -> str | None:
        """The AWS schedule's expression, or None (for describe and tests)."""
        try:
            out = self._client.get_schedule(Name=aws_name(schedule_id), GroupName=self.group)
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                return None
            raise
        return str(out.get("ScheduleExpression"))
