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

The threads live on between invocations, as Lambda's environments stay warm: an invocation goes to
the thread of its mapping that went idle last, and a new thread starts only when none is idle (at
most the cap). A code workflow's paused instance can only go on on the thread that paused it (a
greenlet never switches threads, orbit/service/replay_host.py), so with a thread per invocation
every decision of a code workflow replayed from the start; on the last-idle thread the next
decision finds its instance, as on AWS's warm decider.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from .pump import PollResult, QueuePoller

WORKER_CAP = 8  # invocations at once of a worker mapping without MaximumConcurrency
DECIDER_CAP = 4  # decider invocations at once: each holds the engine lock but for inline tasks

log = logging.getLogger("orbit.dev")
Job = tuple[Callable[[], None], Callable[[], None]]  # (the invocation, what follows once the thread is idle)


class _Warm:
    """One mapping's long-lived invocation threads; the one that went idle last takes the next job."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[Job]] = []  # a stack: the last idle thread on top
        self.threads = 0

    def run(self, job: Job) -> None:
        """Run `job[0]` on the last idle thread (or a new one), then put the thread back on the idle
        stack, then `job[1]`: whoever `job[1]` tells of the end finds the thread idle already."""
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
            if inbox is None:
                self.threads += 1
        if inbox is not None:
            inbox.put(job)
            return
        inbox = queue.SimpleQueue()
        inbox.put(job)
        threading.Thread(target=self._serve, args=(inbox,), name=f"{self._name}-{self.threads}",
                         daemon=True).start()

    def _serve(self, inbox: queue.SimpleQueue[Job]) -> None:
        while True:
            invocation, then = inbox.get()
            try:
                invocation()
            except BaseException:  # the invocation's own failure is its result already
                log.exception("an invocation thread's job failed")
            with self._lock:
                self._idle.append(inbox)
            then()


class Invocations:
    """The invocations running now, per poller; `done(poller, result)` is told of each end."""

    def __init__(self, cap: Callable[[QueuePoller], int],
                 done: Callable[[QueuePoller, PollResult], None]) -> None:
        self._cap = cap
        self._done = done
        self._lock = threading.Lock()
        self._running: dict[int, int] = {}  # id(poller) -> invocations running
        self._warm: dict[int, _Warm] = {}  # id(poller) -> its threads

    def has_room(self, poller: QueuePoller) -> bool:
        with self._lock:
            return self._running.get(id(poller), 0) < self._cap(poller)

    def running(self) -> int:
        with self._lock:
            return sum(self._running.values())

    def start(self, poller: QueuePoller, settle: Callable[[], PollResult]) -> None:
        with self._lock:
            self._running[id(poller)] = self._running.get(id(poller), 0) + 1
            warm = self._warm.get(id(poller))
            if warm is None:
                warm = self._warm[id(poller)] = _Warm(f"orbit-invoke-{poller.mapping.function.logical_id}")

        result = [PollResult()]

        def run() -> None:
            result[0] = settle()  # its handler's BaseException is already its result (pump.py)

        def then() -> None:
            with self._lock:
                self._running[id(poller)] -= 1
            self._done(poller, result[0])

        warm.run((run, then))

    def threads(self, poller: QueuePoller) -> int:
        """How many threads `poller`'s invocations have started so far (they stay warm)."""
        with self._lock:
            warm = self._warm.get(id(poller))
        return warm.threads if warm is not None else 0


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
