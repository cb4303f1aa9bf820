"""Readable logs under `orbit dev`, `orbit run` and `LocalStack`: a handler's log record (and a
worker exception's traceback) printed as text, not as one escaped JSON line with a fake ARN.

On AWS the handlers log JSON through powertools (CloudWatch Logs Insights reads it); that stays
the default there. Locally, after each handler module is imported (local/lambdas.py), the
formatter of every powertools handler becomes `ReadableFormatter`, a subclass, so the handlers'
`append_keys` and `inject_lambda_context` keep working. `ORBIT_LOG_FORMAT=json` keeps JSON.

    ERROR task boom.go (order-1/charge) raised in go (workers.py:3)
    Traceback (most recent call last):
      File "workers.py", line 6, in go
        return d["missing"]
    KeyError: 'missing'
"""

from __future__ import annotations

import logging
import os
import traceback
from typing import Any

from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

# the fields worth a glance next to the message; the rest (ARNs, request ids, cold start) are Lambda's
SHOWN = ("execution_id", "step", "attempt", "workflow", "batch_id", "kind", "error")


class ReadableFormatter(LambdaPowertoolsFormatter):
    def format(self, record: logging.LogRecord) -> str:
        fields = [f"{k}={getattr(record, k)}" for k in SHOWN if getattr(record, k, None) not in (None, "")]
        text = f"{record.levelname} {record.getMessage()}" + (f" [{' '.join(fields)}]" if fields else "")
        if record.exc_info and record.exc_info[1] is not None:
            text += "\n" + "".join(traceback.format_exception(*record.exc_info)).rstrip()
        return text


def make_readable() -> None:
    """Swap the formatter of every powertools log handler for `ReadableFormatter` (idempotent)."""
    if os.environ.get("ORBIT_LOG_FORMAT", "").lower() == "json":
        return
    loggers: list[Any] = [logging.getLogger()]
    loggers += [lg for lg in logging.root.manager.loggerDict.values() if isinstance(lg, logging.Logger)]
    for lg in loggers:
        for h in lg.handlers:
            f = h.formatter
            if isinstance(f, LambdaPowertoolsFormatter) and not isinstance(f, ReadableFormatter):
                readable = ReadableFormatter()
                readable.__dict__.update(f.__dict__)  # the keys appended so far, the log format
                h.setFormatter(readable)
