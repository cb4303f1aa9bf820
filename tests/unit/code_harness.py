"""A small driver for code-workflow scenario tests: the real Engine on the in-memory adapters.

Workers are plain functions `(input, attempt) -> output` keyed by task name
(raise `TaskError` to fail); `hold` keeps a task's messages in its queue so a
test can act while the step is in flight. Time is a manual clock; `advance`
fires due timers.
"""

from __future__ import annotations

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
from orbit.events import TaskError
from orbit.service import Engine

Worker = Callable[[Any, int], Any]


class Harness:
    def __init__(self, *workflows: Any, workers: dict[str, Worker] | None = None) -> None:
        self.clock = ManualClock(1_700_000_000_000)
        self.store = MemoryHistoryStore()
        self.queues = MemoryQueues()
        self.queues.bind_clock(self.clock)
        self.timers = MemoryTimers()
        self.registry = MemoryRegistry()
        for wf in workflows:
            self.registry.register(wf)
        self.engine = Engine(self.store, self.queues, self.timers, None, self.registry, self.clock,
                             SeededIds("code-tests"))
        self.workers: dict[str, Worker] = dict(workers or {})
        self.calls: list[tuple[str, Any]] = []  # (task, input) in the order workers ran
        self.cancelled_tokens: list[str] = []
        self.held: set[str] = set()

    def start(self, name: str, input: Any = None, id: str = "ex-1", version: str | None = None) -> str:
        eid = self.engine.start(name, version, input, execution_id=id)
        self.run()
        return eid

    # -- pumping --------------------------------------------------------------------------------
    def run(self, limit: int = 10_000) -> None:
        """Process decisions and tasks until nothing is left to do now."""
        for _ in range(limit):
            now = self.clock.now_ms()
            msgs = self.queues.receive_decisions(now, limit=10)
            if msgs:
                for m in msgs:
                    self.engine.handle(m)
                continue
            if not self._work(now):
                return
        raise AssertionError("the workflow did not settle")

    def _work(self, now: int) -> bool:
        did = False
        for queue in list(self.queues.tasks):
            kept = []
            for body in self.queues.receive_tasks(queue, now, limit=1000):
                if body["kind"] == "cancel_task":
                    self.cancelled_tokens.append(body["token"])
                    continue
                if body["task"] in self.held:
                    kept.append(body)
                    continue
                did = True
                self._answer(body)
            for body in kept:
                self.queues.send_task(queue, body)
        return did

    def _answer(self, body: dict[str, Any]) -> None:
        task = body["task"]
        self.calls.append((task, body["input"]))
        msg: dict[str, Any] = {"kind": "result", "execution_id": body["execution_id"],
                               "id": f"result:{body['token']}", "unit": body["unit"], "token": body["token"]}
        try:
            worker = self.workers[task]
        except KeyError:
            raise AssertionError(f"no scripted worker for task {task!r}") from None
        try:
            msg["output"] = worker(body["input"], body["attempt"])
        except TaskError as e:
            msg["error"] = e.to_dict()
        self.engine.handle(msg)

    def release(self, task: str) -> None:
        self.held.discard(task)
        self.run()

    def advance(self, seconds: float) -> None:
        self.clock.advance(int(seconds * 1000))
        self.engine.fire_timers()
        self.run()

    # -- outside events -------------------------------------------------------------------------
    def signal(self, name: str, payload: Any = None, id: str = "ex-1") -> None:
        self.engine.handle({"kind": "signal", "execution_id": id, "id": f"signal:{name}:{self.clock.now_ms()}",
                            "name": name, "payload": payload})
        self.run()

    def resume_hook(self, token: str, payload: Any = None, id: str = "ex-1") -> None:
        self.engine.handle({"kind": "hook", "execution_id": id, "id": f"hook:{token}", "token": token,
                            "payload": payload})
        self.run()

    def cancel(self, reason: str = "", force: bool = False, id: str = "ex-1") -> None:
        self.engine.handle({"kind": "cancel", "execution_id": id, "id": f"cancel:{id}:{force}",
                            "reason": reason, "force": force})
        self.run()

    # -- looking ----------------------------------------------------------------------------------
    def state(self, id: str = "ex-1") -> Any:
        return self.store.load(id).fold()

    def describe(self, id: str = "ex-1") -> dict[str, Any]:
        return self.state(id).describe()

    def history(self, id: str = "ex-1") -> list[dict[str, Any]]:
        return [r.to_dict() for r in self.store.history(id, 0, 100_000).records]

    def types(self, id: str = "ex-1") -> list[str]:
        return [r["type"] for r in self.history(id)]

    def tasks(self) -> list[str]:
        return [t for t, _ in self.calls]
