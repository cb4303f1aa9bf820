"""How long a decider waits before it reloads after losing a commit race.

Two deciders that lose to a third and retry at once race again, and with a dozen on one
execution some lose every round and give up (the message then waits for its SQS redelivery).
Waiting a random time up to an exponentially growing cap ("full jitter") spreads the retries
out, so each round has fewer racers. This is the service's concern, not the pure core's: the
randomness and the sleep live here.
"""

from __future__ import annotations

import random
import time

BASE_S = 0.005
CAP_S = 0.25


def conflict_delay(attempt: int, draw: float) -> float:
    """Seconds to wait after the `attempt`-th conflict (0-based), for a draw in [0, 1)."""
    return draw * min(CAP_S, BASE_S * 2**attempt)


def sleep_after_conflict(attempt: int) -> None:
    time.sleep(conflict_delay(attempt, random.random()))  # jitter, not a secret
