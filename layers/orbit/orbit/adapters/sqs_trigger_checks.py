"""A trigger buffer's check, as a delayed message on the trigger queue (service/trigger_buffers.py).

SQS delays a message at most 15 minutes; a later time is reached by checks that send themselves on.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

MAX_DELAY_S = 900


class SqsTriggerChecks:
    def __init__(self, client: Callable[[], Any], queue_url: str) -> None:
        self._client, self.queue_url = client, queue_url

    def send(self, check: dict[str, Any], delay_ms: int) -> None:
        delay = max(0, min(MAX_DELAY_S, -(-delay_ms // 1000)))  # rounded up: never early
        self._client().send_message(
            QueueUrl=self.queue_url,
            DelaySeconds=delay,
            MessageBody=json.dumps({"orbit_buffer": check}, separators=(",", ":")),
        )
