"""EventBridge Scheduler: the clock that fires Orbit schedules on AWS (one AWS schedule each).

Each Orbit schedule owns one AWS schedule, `orbit-<hash of its id>` in the
stack's schedule group, armed as a one-time `at(...)` expression (UTC) for the
schedule's next fire; its target is the decision queue and its input the
`schedule_fire` message for that occurrence. When the decider handles the fire
it arms the next one. Why `at()` rather than the cron itself: Orbit decides the
occurrences (cronsim, in the pure core) so that daylight saving, jitter,
exclusions, start/end and catch-up behave the same on AWS and on the local
stack; AWS's own cron skips an occurrence that falls in the spring-forward gap.
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


class EventBridgeScheduler:
    def __init__(self, client: Any, group: str, target_arn: str, role_arn: str) -> None:
        self._client_or_factory = client  # a boto3 client, or a function that makes one
        self.group = group
        self.target_arn = target_arn
        self.role_arn = role_arn

    @property
    def _client(self) -> Any:
        c = self._client_or_factory
        if callable(c) and not hasattr(c, "meta"):
            c = self._client_or_factory = c()
        return c

    def arm(self, schedule_id: str, at_ms: int | None, message: dict[str, Any] | None = None) -> None:
        """Fire `message` to the decision queue at `at_ms`; None removes the AWS schedule."""
        name = aws_name(schedule_id)
        if at_ms is None:
            try:
                self._client.delete_schedule(Name=name, GroupName=self.group)
            except ClientError as e:
                if e.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                    raise
            return
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

    def armed(self, schedule_id: str) -> str | None:
        """The AWS schedule's expression, or None (for describe and tests)."""
        try:
            out = self._client.get_schedule(Name=aws_name(schedule_id), GroupName=self.group)
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                return None
            raise
        return str(out.get("ScheduleExpression"))
