"""CloudWatch Logs for durable functions run locally: the records a handler logs through the SDK's
logger (each carries the execution's ARN as `executionArn`) kept per log group
(`/aws/lambda/<function>`) as Lambda's JSON log format writes them, and the one Logs call a
reader makes, FilterLogEvents (by time range and the execution's ARN), answered from them."""

from __future__ import annotations

import json
import logging
import re
import threading
import uuid
from typing import Any

MAX_PER_GROUP = 10_000  # the oldest records of a group are dropped past this
_ARN_IN_PATTERN = re.compile(r'\$\.(?:durableExecutionArn|executionArn)\s*=\s*"((?:[^"\\]|\\.)*)"')


class LogCapture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self._lock2 = threading.Lock()
        self.groups: dict[str, list[dict[str, Any]]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        arn = getattr(record, "executionArn", None)
        if not isinstance(arn, str) or ":function:" not in arn:
            return
        fn = arn.split(":")[6]
        line: dict[str, Any] = {
            "timestamp": int(record.created * 1000),
            "level": record.levelname,
            "message": record.getMessage(),
            "logger": record.name,
            "executionArn": arn,
            "durableExecutionArn": arn,
        }
        for k in ("operationName", "operationId", "parentId", "attempt"):
            if hasattr(record, k):
                line[k] = getattr(record, k)
        event = {
            "logStreamName": fn,
            "timestamp": line["timestamp"],
            "ingestionTime": line["timestamp"],
            "eventId": uuid.uuid4().hex,
            "message": json.dumps(line, default=str),
            "arn": arn,
        }
        with self._lock2:
            rows = self.groups.setdefault(f"/aws/lambda/{fn}", [])
            rows.append(event)
            del rows[:-MAX_PER_GROUP]

    def filter_log_events(self, body: dict[str, Any]) -> dict[str, Any]:
        group = str(body.get("logGroupName", ""))
        start, end = int(body.get("startTime") or 0), int(body.get("endTime") or 2**62)
        m = _ARN_IN_PATTERN.search(str(body.get("filterPattern") or ""))
        arn = m.group(1).replace('\\"', '"').replace("\\\\", "\\") if m else None
        with self._lock2:
            rows = list(self.groups.get(group, []))
        events = [
            {k: v for k, v in e.items() if k != "arn"}
            for e in rows
            if start <= e["timestamp"] <= end and (arn is None or e["arn"] == arn)
        ]
        return {"events": events, "searchedLogStreams": []}


def install() -> LogCapture:
    """Capture the SDK's records in this process (INFO and above, as Lambda's JSON format keeps)."""
    capture = LogCapture()
    root = logging.getLogger()
    root.addHandler(capture)
    if root.level > logging.INFO or root.level == logging.NOTSET:
        root.setLevel(logging.INFO)
    return capture
