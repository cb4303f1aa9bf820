"""Retention: how long an ended execution's data is kept, and when each of its items expires.

Pure: the bounds a retention must respect and the arithmetic from an execution's end to the
epoch second DynamoDB's TTL reads (`expires_at`). The workflow's own retention (definition key
`retention:`, decorator argument `retention=`) wins over the stack default (`RetentionDays`).
"""

from __future__ import annotations

from typing import Any

MIN_RETENTION_MS = 60 * 60 * 1000  # an hour: enough to read why an execution ended
MAX_RETENTION_MS = 10 * 365 * 24 * 3600 * 1000  # ten years
DAY_MS = 24 * 3600 * 1000


def retention_problem(ms: int) -> str | None:
    """Why `ms` is not a usable retention, or None."""
    if ms < MIN_RETENTION_MS:
        return "must be at least 1h (an ended execution must stay readable for a while)"
    if ms > MAX_RETENTION_MS:
        return "must be at most 3650d"
    return None


def retention_of(workflow: Any, default_ms: int) -> int:
    """The workflow's retention when it sets one, else the stack default."""
    own = getattr(workflow, "retention_ms", None)
    return own if isinstance(own, int) and not isinstance(own, bool) and own > 0 else default_ms


def expires_at_s(finished_at_ms: int, retention_ms: int) -> int:
    """Epoch seconds (DynamoDB TTL's unit) at which the data of an execution ended at `finished_at_ms`
    expires; rounded up, so nothing expires a fraction of a second early."""
    return -(-(finished_at_ms + retention_ms) // 1000)
