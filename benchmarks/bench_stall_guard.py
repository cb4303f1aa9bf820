"""What bounding workflow code off the main thread costs (docs/decisions/sec6-user-code-bounds.md).

    .venv/bin/python benchmarks/bench_stall_guard.py        (about 20 s)

1. Per guarded feed: a `with guard(...)` around nothing, 20,000 times, on the main thread (SIGALRM
   timer armed and disarmed) and on another thread (the watchdog's arm and disarm), against none.
2. Python code under each bound (best of 5): a loop of 2,000,000 additions unguarded, under the
   watchdog, and under the rejected alternative, a `sys.settrace` budget check on every line.
3. How late the watchdog stops a loop past a 0.5 s budget (10 runs).
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from orbit.core.runtime.code.errors import Stalled
from orbit.service.stall import StallGuard

N_FEEDS = 20_000
N_ADDS = 2_000_000


def on_thread(fn: Callable[[], Any]) -> Any:
    box: dict[str, Any] = {}
    t = threading.Thread(target=lambda: box.update(r=fn()))
    t.start()
    t.join()
    return box["r"]


def feeds(guard: StallGuard | None) -> float:
    t = time.perf_counter()
    for _ in range(N_FEEDS):
        if guard is None:
            pass
        else:
            with guard("bench", lambda: 0):
                pass
    return (time.perf_counter() - t) / N_FEEDS * 1e6


def adds() -> int:
    total = 0
    for i in range(N_ADDS):
        total += i
    return total


def timed(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def under_watchdog() -> float:
    guard = StallGuard(budget_s=60)
    with guard("bench", lambda: 0):
        return timed(adds)


def under_settrace() -> float:
    deadline = time.monotonic() + 60

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if time.monotonic() > deadline:
            raise Stalled("budget")
        return tracer

    sys.settrace(tracer)
    try:
        return timed(adds)
    finally:
        sys.settrace(None)


def late_stop() -> float:
    guard = StallGuard(budget_s=0.5)
    t = time.monotonic()
    try:
        with guard("bench", lambda: 0):
            while True:
                pass
    except Stalled:
        return time.monotonic() - t - 0.5
    return -1.0


def main() -> None:
    guard = StallGuard(budget_s=60)
    print(f"per feed, no guard:            {feeds(None):6.2f} us")
    print(f"per feed, main thread SIGALRM: {feeds(guard):6.2f} us")
    print(f"per feed, watchdog (thread):   {on_thread(lambda: feeds(guard)):6.2f} us")
    base = min(on_thread(lambda: timed(adds)) for _ in range(5))  # best of 5: the machine is shared
    dog = min(on_thread(under_watchdog) for _ in range(5))
    trace = min(on_thread(under_settrace) for _ in range(5))
    print(f"{N_ADDS:,} additions: unguarded {base:.3f} s, watchdog {dog:.3f} s ({dog / base:.2f}x), "
          f"settrace {trace:.3f} s ({trace / base:.2f}x)")
    lates = [on_thread(late_stop) for _ in range(10)]
    print(f"watchdog stop past a 0.5 s budget: median {statistics.median(lates) * 1000:.0f} ms late, "
          f"max {max(lates) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
