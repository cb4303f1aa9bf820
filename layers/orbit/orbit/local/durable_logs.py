"""CloudWatch Logs for durable functions run locally: the records a handler logs through the SDK's
logger (each carries the execution's ARN as `executionArn`), and the JSON lines it prints to stdout
that name their execution (`durableExecutionArn` or `executionArn`: Lambda sends a function's
stdout to its log group, and execution-scoped readers filter on those fields), kept per log group
(`/aws/lambda/<function>`) as Lambda's JSON log format writes them; and the one Logs call a reader
makes, FilterLogEvents (by time range and the execution's ARN), answered from them. Other stdout
passes through untouched."""

from __future__ import annotations

import io
import json
import logging
import re
import sys
import threading
import uuid
from typing import Any, TextIO

from orbit.local.clock import now_ms

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
        self.keep(arn, line["timestamp"], json.dumps(line, default=str))

    root_level = logging.WARNING

    def uninstall(self) -> None:
        """Stop capturing (the root logger's level as it was; stdout keeps its tee, now idle)."""
        root = logging.getLogger()
        root.removeHandler(self)
        root.setLevel(self.root_level)
        if isinstance(sys.stdout, _Tee) and sys.stdout.capture is self:
            sys.stdout = sys.stdout.out

    def keep(self, arn: str, ts: int, message: str) -> None:
        parts = arn.split(":")
        if len(parts) < 7:
            return
        fn = parts[6]
        event = {"logStreamName": fn, "timestamp": ts, "ingestionTime": ts,
                 "eventId": uuid.uuid4().hex, "message": message, "arn": arn}
        with self._lock2:
            rows = self.groups.setdefault(f"/aws/lambda/{fn}", [])
            rows.append(event)
            del rows[:-MAX_PER_GROUP]

    def stdout_line(self, line: str) -> None:
        """A line a handler printed: kept when it is a JSON object naming its execution."""
        text = line.strip()
        if not (text.startswith("{") and "xecutionArn" in text):
            return
        try:
            obj = json.loads(text)
        except ValueError:
            return
        arn = (obj.get("durableExecutionArn") or obj.get("executionArn")) if isinstance(obj, dict) else None
        if isinstance(arn, str) and ":function:" in arn:
            self.keep(arn, now_ms(), text)

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


class _Tee(io.TextIOBase):
    """This process's stdout, each complete line also offered to the capture (per thread: a
    `print` writes its text and its newline in two calls)."""

    def __init__(self, out: TextIO, capture: LogCapture) -> None:
        self.out, self.capture, self.partial = out, capture, threading.local()

    def write(self, s: str) -> int:
        n = self.out.write(s)
        buf = getattr(self.partial, "text", "") + s
        *lines, rest = buf.split("\n")
        self.partial.text = rest[-65536:]
        for line in lines:
            self.capture.stdout_line(line)
        return n

    def flush(self) -> None:
        self.out.flush()

    def isatty(self) -> bool:
        return self.out.isatty()

    def fileno(self) -> int:
        return self.out.fileno()


def install(stdout: bool = False) -> LogCapture:
    """Capture the SDK's records (INFO and above, as Lambda's JSON format keeps) in this process,
    and with `stdout` the handlers' JSON stdout lines (the endpoint run as a program does)."""
    capture = LogCapture()
    root = logging.getLogger()
    root.addHandler(capture)
    capture.root_level = root.level
    if root.level > logging.INFO or root.level == logging.NOTSET:
        root.setLevel(logging.INFO)
    if stdout and isinstance(sys.stdout, _Tee):
        sys.stdout.capture = capture
    elif stdout:
        sys.stdout = _Tee(sys.stdout, capture)
    return capture
