"""Is another caller answered while a hostile request is being handled? (issue 17)

`answered_meanwhile(hostile, other)` runs `hostile` on a thread and, while it is in flight, calls
`other` again and again (at least once). Each `other` call must finish within BOUND_S of the
process's CPU time, counted over all of its threads. That count includes the work done for the
other call, and any work done by a hostile request that it waits behind (a lock held across an
expression that runs away, a parse that never ends). It leaves out the time the OS gave to other
processes on a loaded machine. A wall-clock bound would count that time as well, and fail when
CI's 2 cores are busy. With this bound, a single try is enough: no best-of-three.

A wait that burns no CPU at all (a lock held while a socket is read) is not caught by CPU time.
Tests of that kind check the order of events instead, with `must_overlap`: the other caller is
answered while the hostile one is still in flight.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

BOUND_S = 1.0


def answered_meanwhile(hostile: Callable[[], Any], other: Callable[[], Any], bound_s: float = BOUND_S,
                       must_overlap: bool = False, hostile_timeout_s: float = 120.0) -> Any:
    """`hostile()`'s result, after checking that `other()` was answered meanwhile (see above)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = hostile()
        except BaseException as e:  # noqa: BLE001 - re-raised on the test's thread
            outcome["error"] = e

    thread = threading.Thread(target=run, daemon=True, name="hostile-request")
    begun = time.monotonic()
    thread.start()
    took: list[tuple[float, float, bool]] = []  # (CPU s, wall s, hostile still in flight after it)
    while True:
        wall, cpu = time.monotonic(), time.process_time()
        other()
        took.append((time.process_time() - cpu, time.monotonic() - wall, thread.is_alive()))
        if not thread.is_alive():
            break
        assert time.monotonic() - begun < hostile_timeout_s, f"the hostile request ran {hostile_timeout_s} s"
        time.sleep(0.01)  # leave the hostile request the CPU it needs
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    slow = [round(c, 3) for c, _, _ in took if c >= bound_s]
    assert not slow, f"another caller took {slow} s of CPU time behind the hostile request: {took}"
    if must_overlap:
        assert took[0][2], f"the other caller was answered only after the hostile request ended: {took}"
    return outcome.get("value")
