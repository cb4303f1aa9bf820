"""The trigger dead-letter queue (an SQS queue): events a trigger refused, with the reason."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

MAX_BODY_BYTES = 256 * 1024  # SQS's message limit: a larger event is cut to what says why


class SqsDeadLetters:
    def __init__(self, client: Callable[[], Any], queue_url: str) -> None:
        self._client, self.queue_url = client, queue_url

    def send(self, body: dict[str, Any]) -> None:
        text = json.dumps(body, separators=(",", ":"), default=str)
        if len(text.encode()) > MAX_BODY_BYTES:
            text = json.dumps(
                {**body, "event": None, "event_cut": f"{len(text)} bytes, over the queue's limit"}
            )
        self._client().send_message(
            QueueUrl=self.queue_url,
            MessageBody=text,
            MessageAttributes={
                "reason": {
                    "DataType": "String",
                    "StringValue": str(body.get("reason", ""))[:256] or "refused",
                }
            },
        )
