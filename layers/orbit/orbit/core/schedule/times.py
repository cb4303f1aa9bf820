"""RFC 3339 instants <-> milliseconds since the epoch (UTC), as schedules and execution ids spell them."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

# Year 1 .. 9999 keeps formatting total; an instant outside is a typo.
MIN_MS = -62_135_596_800_000
MAX_MS = 253_402_300_799_000


def format_time(ms: int) -> str:
    """`2026-03-30T07:00:00Z` (milliseconds only when there are some)."""
    d = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    if ms % 1000:
        return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"
    return d.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: Any) -> int:
    """Milliseconds from an RFC 3339 string with an offset (or `Z`); ValueError otherwise."""
    if not isinstance(value, str) or len(value) > 40:
        raise ValueError(f"must be an RFC 3339 time like 2026-03-30T07:00:00Z, not {value!r}")
    try:
        d = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"must be an RFC 3339 time like 2026-03-30T07:00:00Z, not {value!r}") from None
    if d.tzinfo is None:
        raise ValueError(f"needs a UTC offset or Z: {value!r}")
    ms = int(d.timestamp() * 1000)
    if not MIN_MS <= ms <= MAX_MS:
        raise ValueError(f"out of range: {value!r}")
    return ms
