"""A bound on workflow code that runs without a durable call (issue 27, section 4).

Replay is deterministic only if it never looks at the clock, so the bound lives here, in the host,
not in the core: `StallGuard` is installed as `CodeRuntime.guard` and wraps each feed of a paused
workflow. While it is armed, a timer signal (`SIGALRM`, every quarter of the budget) looks at how
many durable calls the workflow has made (`Replay.calls`, in any branch); when none was made for a
whole budget it raises `Stalled` in whatever code is running, naming the workflow and the line of
the user's code it was at. The decision fails (the queue retries it; the instance is dropped) and
the decider goes on serving other executions.

No thread is started: Python runs signal handlers on the main thread only, so the guard is armed
only there (the Lambda handler's thread). Elsewhere (the local runner's decider threads) it does
nothing and a loop without a durable call still holds its thread (docs/limits.md).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from orbit.core.runtime.code.errors import Stalled

DEFAULT_BUDGET_S = float(os.environ.get("ORBIT_CODE_BUDGET_S", "5"))
_ORBIT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def user_line(frame: FrameType | None) -> str:
    """`file:line` of the innermost frame outside orbit's own code (the user's), or ''."""
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith((_ORBIT_DIR, "<")) and "/greenlet/" not in name:
            return f"{name}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


class StallGuard:
    """`CodeRuntime.guard`: `with guard(workflow, calls): feed` fails the feed once `calls()` stands
    still for `budget_s` seconds (at most `remaining_s()` when given: a Lambda's remaining time)."""

    def __init__(self, budget_s: float = DEFAULT_BUDGET_S,
                 remaining_s: Callable[[], float] | None = None) -> None:
        self.budget_s = budget_s
        self.remaining_s = remaining_s

    @contextmanager
    def __call__(self, workflow: str, calls: Callable[[], int]) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
            yield  # signals reach the main thread only: unguarded here
            return
        budget = self.budget_s
        if self.remaining_s is not None:
            budget = max(0.05, min(budget, self.remaining_s() * 0.8))
        seen = [calls(), time.monotonic()]
        armed = [True]

        def tick(signum: int, frame: FrameType | None) -> Any:
            if not armed[0]:
                return
            now, n = time.monotonic(), calls()
            if n != seen[0]:
                seen[0], seen[1] = n, now
            elif now - seen[1] >= budget:
                armed[0] = False
                where = user_line(frame)
                at = f", at {where}" if where else ""
                raise Stalled(f"workflow {workflow!r} ran {now - seen[1]:.1f} s without a durable call "
                              f"(budget {budget:g} s, ORBIT_CODE_BUDGET_S){at}")

        previous = signal.signal(signal.SIGALRM, tick)
        started = time.monotonic()
        other = signal.setitimer(signal.ITIMER_REAL, budget / 4, budget / 4)  # someone else's alarm
        try:
            yield
        finally:
            armed[0] = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            if other[0] > 0:  # given back, late by at most this feed (e.g. pytest-timeout's)
                signal.setitimer(signal.ITIMER_REAL, max(other[0] - (time.monotonic() - started), 0.001),
                                 other[1])
