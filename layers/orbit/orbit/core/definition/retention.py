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


# Write-time expiry (docs/decisions/0010-retention-archive-expiry.md): most executions end within an
# hour of their start. While young, every item written for an execution already carries the expiry
# it would get if it ended at the close of its first hour (`provisional_expiry_s`), so an execution that does
# end young needs no write at its end. One that lives longer is pinned (NO_EXPIRY) by the
# sweeper in time and gets its exact expiry at its end, as before.
YOUNG_MS = 60 * 60 * 1000
# How far apart the clocks of Orbit's functions may be: a decision up to this late still writes
# provisionally, so an item written without expiry always belongs to an execution that ends old.
CLOCK_SKEW_MS = 60 * 1000
# The sweeper pins executions this long after their creation: young + skew + the longest decision
# (a Lambda runs at most 15 minutes) + margin. It must stay below YOUNG_MS + MIN_RETENTION_MS.
SWEEP_AFTER_MS = YOUNG_MS + 20 * 60 * 1000


def provisional_expiry_s(created_at_ms: int, retention_ms: int) -> int:
    """The expiry a young execution's items carry: that of an end at the close of its first hour."""
    return expires_at_s(created_at_ms + YOUNG_MS, retention_ms)


def writes_provisionally(created_at_ms: int, now_ms: int) -> bool:
    """Does a write at `now_ms` for an unended execution carry the provisional expiry?"""
    return now_ms < created_at_ms + YOUNG_MS + CLOCK_SKEW_MS


def ended_young(created_at_ms: int, finished_at_ms: int) -> bool:
    """Did the execution end while every write for it was provisional (its end keeps that expiry)?"""
    return finished_at_ms < created_at_ms + YOUNG_MS
