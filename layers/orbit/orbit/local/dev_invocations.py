"""`orbit dev`'s invocations run beside its pump, as Lambda's do beside its pollers.

The local runner's pump invokes a function and waits for it: fine for `orbit run` and tests, which
want one reproducible order. `orbit dev` serves callers in real time, and there a waiting pump is a
stopped clock: while a worker task slept, no timer fired (its step's `timeout` was recorded only
once it returned) and no other execution was decided. So `orbit dev` hands each received batch to
a thread of its own (`Invocations.start`) and the pump goes on receiving, firing timers and
deciding. Each mapping runs at most its `ScalingConfig.MaximumConcurrency` invocations at once
(`WORKER_CAP` without one, `DECIDER_CAP` for the decision queue); a batch stays in flight (invisible)
until its invocation deletes it, as on AWS.

A worker's invocation runs task code and never touches the engine: it takes no lock. A decider's
takes the engine lock, as the pump did, and lets go of it while an inline step's task runs on its
runner thread (`orbit.service.inline.while_elsewhere`), so other executions are decided and
other requests answered meanwhile.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .pump import PollResult, QueuePoller

WORKER_CAP = 8  # invocations at once of a worker mapping without MaximumConcurrency
DECIDER_CAP = 4  # decider invocations at once: each holds the engine lock but for inline tasks


class Invocations:
    """The invocations running now, per poller; `done(poller, result)` is told of each end."""

    def __init__(self, cap: Callable[[QueuePoller], int],
                 done: Callable[[QueuePoller, PollResult], None]) -> None:
        self._cap = cap
        self._done = done
        self._lock = threading.Lock()
        self._running: dict[int, int] = {}  # id(poller) -> invocations running

    def has_room(self, poller: QueuePoller) -> bool:
        with self._lock:
            return self._running.get(id(poller), 0) < self._cap(poller)

    def running(self) -> int:
        with self._lock:
            return sum(self._running.values())

    def start(self, poller: QueuePoller, settle: Callable[[], PollResult]) -> None:
        with self._lock:
            self._running[id(poller)] = self._running.get(id(poller), 0) + 1

        def run() -> None:
            result = PollResult()
            try:
                result = settle()  # its handler's BaseException is already its result (pump.py)
            finally:
                with self._lock:
                    self._running[id(poller)] -= 1
                self._done(poller, result)

        threading.Thread(target=run, name=f"orbit-invoke-{poller.mapping.function.logical_id}",
                         daemon=True).start()


def attach(pollers: list[QueuePoller], invocations: Invocations, is_worker: Callable[[QueuePoller], bool],
           locked: Callable[[Callable[[], Any]], Any]) -> None:
    """Run every poller's invocations through `invocations`; a decider's under `locked`."""
    for poller in pollers:
        poller.spawn = invocations
        poller.sqs_lock = threading.Lock()  # the pump receives while an invocation deletes
        poller.around = None if is_worker(poller) else locked


def cap_of(poller: QueuePoller, is_worker: Callable[[QueuePoller], bool]) -> int:
    if poller.mapping.max_concurrency:
        return int(poller.mapping.max_concurrency)
    return WORKER_CAP if is_worker(poller) else DECIDER_CAP
