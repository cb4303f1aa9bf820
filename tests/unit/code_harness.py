"""Code-workflow scenario tests run on core's in-memory `Simulator` (the real Engine).

Adds what these tests need on top of it: workers as `(input, attempt)`
functions with a log of the calls in order, tasks held in flight until
`release`, and one default execution id.

`Harness.code_cache_size`: None, the engine replays with the process's code runtime (paused
instances cached); a number, with a `CodeRuntime` of its own holding that many (0: every decision
replays cold; `code_cold.py` runs the scenarios so, to show no decision depends on the cache).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orbit.service.replay_host import CodeRuntime
from orbit.testing.simulator import Simulator

Worker = Callable[[Any, int], Any]
ID = "ex-1"


class Harness(Simulator):
    code_cache_size: int | None = None

    def __init__(self, *workflows: Any, workers: dict[str, Worker] | None = None) -> None:
        size = self.code_cache_size
        runtime = None if size is None else CodeRuntime(cache_size=size)
        super().__init__(seed="code-tests", code_runtime=runtime)
        for wf in workflows:
            self.register(wf)
        self.calls: list[tuple[str, Any]] = []  # (task, input) in the order workers ran
        self.held: set[str] = set()
        self._parked: list[tuple[Any, dict[str, Any]]] = []
        for task, fn in (workers or {}).items():
            self.worker(task, self._logged(task, fn))

    def _logged(self, task: str, fn: Worker) -> Callable[[Any, Any], Any]:
        def call(input: Any, ctx: Any) -> Any:
            self.calls.append((task, input))
            return fn(input, ctx.attempt)
        return call

    def _perform(self, script: Any, body: dict[str, Any]) -> None:
        if body["task"] in self.held:
            self._parked.append((script, body))  # stays in flight until `release`
            return
        super()._perform(script, body)

    def release(self, task: str) -> None:
        self.held.discard(task)
        keep = []
        for script, body in self._parked:
            if body["task"] == task:
                super()._perform(script, body)
            else:
                keep.append((script, body))
        self._parked = keep
        self.run_until_idle()

    def answer_parked(self) -> None:
        """Let the tasks in flight now answer; tasks sent meanwhile stay held."""
        parked, self._parked = self._parked, []
        for script, body in parked:
            super()._perform(script, body)
        self.run_until_idle()

    def start(self, workflow: str, input: Any = None, id: str | None = ID, version: str | None = None) -> str:
        eid = super().start(workflow, input, id, version)
        self.run_until_idle()
        return eid

    def signal(self, name: str, payload: Any = None, id: str = ID) -> str:  # type: ignore[override]
        out = super().signal(id, name, payload)
        self.run_until_idle()
        return out

    def resume_hook(self, token: str, payload: Any = None) -> str:
        out = super().resume_hook(token, payload)
        self.run_until_idle()
        return out

    def cancel(self, reason: str = "", force: bool = False, id: str = ID) -> None:  # type: ignore[override]
        super().cancel(id, reason, force)
        self.run_until_idle()

    def state(self, id: str = ID) -> Any:
        return self.store.load(id).fold()

    def describe(self, id: str = ID) -> dict[str, Any]:  # type: ignore[override]
        return super().describe(id)

    def history(self, id: str = ID) -> list[dict[str, Any]]:  # type: ignore[override]
        return super().history(id)

    def types(self, id: str = ID) -> list[str]:  # type: ignore[override]
        return super().types(id)

    def tasks(self) -> list[str]:
        return [t for t, _ in self.calls]
