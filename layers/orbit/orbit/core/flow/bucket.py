"""Token buckets with reservations, in integers: `level` is tokens x period_ms (token-ms).

A bucket refills `rate` tokens per `period_ms` up to `burst`. `reserve` takes one token now or,
for `wait`, one that is not there yet: the level goes below zero and the caller holds the item back
until its token exists (`delay_ms`). So over any window of W ms at most burst + rate x W / period
items leave, however they arrive (the bench checks it over 60 virtual seconds).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Level:
    level: int  # token-ms; one token is `period_ms`
    at_ms: int


def refill(old: Level | None, rate: int, period_ms: int, burst: int, now_ms: int) -> int:
    if old is None:
        return burst * period_ms
    gained = max(0, now_ms - old.at_ms) * rate
    return min(burst * period_ms, old.level + gained)


def reserve(old: Level | None, rate: int, period_ms: int, burst: int, now_ms: int,
            wait: bool) -> tuple[Level | None, int | None]:
    """(the level to write, delay in ms) for one token; (None, None): refused (drop/fail policies
    when no token is there now; nothing to write)."""
    level = refill(old, rate, period_ms, burst, now_ms)
    if level >= period_ms:
        return Level(level - period_ms, now_ms), 0
    if not wait:
        return None, None
    after = level - period_ms  # below zero: the debt
    return Level(after, now_ms), -(-(-after) // rate)  # ceil(-after / rate)
