"""A small world for inline-step tests: memory adapters, an API engine (no runner: it hands inline
work over) and decider containers (with a runner) that can crash and be replaced, a worker, timers.

`World.settle()` plays the system until nothing is queued or armed: decision batches go to the
current decider container; a batch whose invocation crashed stays on the queue and comes back after
the decision queue's visibility timeout (virtual clock), to a fresh container (nothing cached).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from orbit.adapters.memory import (
    ManualClock,
    MemoryHistoryStore,
    MemoryQueues,
    MemoryRegistry,
    MemoryTimers,
    SeededIds,
)
from orbit.service.engine import Engine
from orbit.service.inline import InlineRunner
from orbit.worker.inline import InlineTasks
from orbit.worker.sdk import Worker

T0 = 1_767_225_600_000
VISIBILITY_MS = 180_000


class Crash(BaseException):
    """The container died (a BaseException: nothing in the engine catches it)."""


class CrashingStore(MemoryHistoryStore):
    """Dies before or after its `n`-th commit (counted over the world's life), when armed."""

    def __init__(self) -> None:
        super().__init__()
        self.commits = 0
        self.crash_at: tuple[int, str] | None = None  # (n, "before" | "after")

    def commit(self, eid: str, commit: Any, expires: Any = None, provisional: bool = False) -> None:
        self.commits += 1
        if self.crash_at == (self.commits, "before"):
            self.crash_at = None
            self.commits -= 1
            raise Crash(f"before commit {self.commits + 1}")
        super().commit(eid, commit, expires, provisional)
        if self.crash_at == (self.commits, "after"):
            self.crash_at = None
            raise Crash(f"after commit {self.commits}")


class World:
    def __init__(self, tasks: dict[str, Callable[..., Any]],
                 remaining_ms: Callable[[], int | None] | None = None, modules: tuple[str, ...] = ()) -> None:
        self.store, self.queues, self.timers = CrashingStore(), MemoryQueues(), MemoryTimers()
        self.registry, self.clock = MemoryRegistry(), ManualClock(T0)
        self.queues.bind_clock(self.clock)
        self.tasks = tasks
        self.modules = modules
        self.remaining_ms = remaining_ms
        self.api = Engine(self.store, self.queues, self.timers, None, self.registry, self.clock,
                          SeededIds("api"))
        self.decider = self.container()
        self.worker = Worker(self.queues, None, self.clock, tasks=tasks)
        self.hidden: list[tuple[int, list[dict[str, Any]]]] = []  # (visible again at, batch)
        self.containers = 1

    def container(self) -> Engine:
        e = Engine(self.store, self.queues, self.timers, None, self.registry, self.clock,
                   SeededIds(f"decider-{time.perf_counter_ns()}"))
        tasks = InlineTasks(self.modules, tasks=self.tasks)
        e.inline = InlineRunner(tasks, "s", remaining_ms=self.remaining_ms)
        return e

    def register(self, definition: dict[str, Any]) -> None:
        from orbit.core.definition import parse_definition

        self.registry.register(parse_definition(definition))

    def settle(self, max_rounds: int = 500) -> None:
        for _ in range(max_rounds):
            batch = self.queues.receive_decisions(self.clock.now_ms())
            if batch:
                counts = [2 if m.get("_redelivered") else 1 for m in batch]  # ApproximateReceiveCount
                try:
                    failures = self.decider.handle_batch(batch, counts)
                    assert not failures, failures
                except Crash:
                    self.hidden.append((self.clock.now_ms() + VISIBILITY_MS, batch))
                    self.decider = self.container()  # the dead container's cache is gone
                    self.containers += 1
                continue
            now = self.clock.now_ms()
            tasks = [b for q in list(self.queues.tasks) for b in self.queues.receive_tasks(q, now)]
            if tasks:
                for body in tasks:
                    self.worker.process(body)
                continue
            if self.hidden and self.hidden[0][0] <= self.clock.now_ms():
                for m in self.hidden.pop(0)[1]:
                    self.queues.send_decision({**m, "_redelivered": True})
                continue
            if self.decider.fire_timers(self.clock.now_ms()):
                continue
            nxt = [t for t in (self.timers.next_fire_ms(), self.queues.next_visible_ms(),
                               self.hidden[0][0] if self.hidden else None) if t is not None]
            if not nxt:
                return
            self.clock.set(max(min(nxt), self.clock.now_ms() + 1))
        raise AssertionError("the world did not settle")

    def events(self, eid: str) -> list[dict[str, Any]]:
        return self.api.history(eid)

    def successes(self, eid: str) -> Counter[str]:
        return Counter(e["step"] for e in self.events(eid) if e["type"] == "StepSucceeded")
