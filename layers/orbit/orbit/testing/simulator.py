"""An in-memory Orbit with a manual clock and scripted workers.

It runs the real `Engine` over the memory adapters. Time never passes on its
own: when nothing is left to do *now*, `run()` jumps the clock straight to the
next timer or delayed message, so a 7-day sleep takes milliseconds.

Workers are scripts, one behaviour per delivery of a task (the last one
repeats): `succeed(output)`, `fail(code)`, `hang()` (takes the task, never
answers: the step times out), `crash()` (takes it and dies: the queue
redelivers the message to another worker after `visibility_ms`),
`answer_twice(output)`, `late(ms, output)` (answers after `ms`),
`heartbeats(every_ms, count, output)` (a long task: `count` heartbeats `every_ms`
apart, then the answer `every_ms` after the last; `output=HANG` never answers),
or a plain function `(input, ctx) -> output` that may raise `TaskError`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from orbit.adapters.memory import (
    ManualClock,
    MemoryHistoryStore,
    MemoryPayloadStore,
    MemoryQueues,
    MemoryRegistry,
    MemoryTimers,
    SeededIds,
)
from orbit.core.history.events import TaskError
from orbit.core.history.messages import HeartbeatMessage, ResultMessage, StartedMessage
from orbit.service.engine import Engine
from orbit.worker.context import TaskContext


@dataclass(frozen=True)
class Behaviour:
    action: str  # succeed | fail | hang | crash | twice | late | beat | call
    output: Any = None
    error: TaskError | None = None
    delay_ms: int = 0
    fn: Callable[..., Any] | None = None
    count: int = 0


HANG = object()  # `heartbeats(..., output=HANG)`: heartbeat, then stop without answering


def succeed(output: Any = None) -> Behaviour:
    return Behaviour("succeed", output=output)


def fail(code: str, message: str = "", retryable: bool = True, details: Any = None) -> Behaviour:
    return Behaviour("fail", error=TaskError(code, message or code.lower(), retryable, details))


def hang() -> Behaviour:
    return Behaviour("hang")


def crash() -> Behaviour:
    return Behaviour("crash")


def answer_twice(output: Any = None) -> Behaviour:
    return Behaviour("twice", output=output)


def late(delay_ms: int, output: Any = None) -> Behaviour:
    return Behaviour("late", output=output, delay_ms=delay_ms)


def heartbeats(every_ms: int, count: int, output: Any = None) -> Behaviour:
    return Behaviour("beat", output=output, delay_ms=every_ms, count=count)


def call(fn: Callable[..., Any]) -> Behaviour:
    return Behaviour("call", fn=fn)


@dataclass
class Script:
    behaviours: list[Behaviour]
    deliveries: int = 0
    seen: list[dict[str, Any]] = field(default_factory=list)

    def next(self) -> Behaviour:
        b = self.behaviours[min(self.deliveries, len(self.behaviours) - 1)]
        self.deliveries += 1
        return b


class Simulator:
    def __init__(
        self,
        start_ms: int = 1_700_000_000_000,
        seed: str = "sim",
        snapshot_every: int = 100,
        visibility_ms: int = 30_000,
        batch: int = 10,
        max_receives: int = 5,
        hook_key: bytes | None = None,
        code_runtime: Any = None,
    ) -> None:
        """`hook_key`: derive hook tokens from it and record only their hash, as a deployed stack
        does (docs/security.md); without it, hook tokens are random and recorded in the history.
        `code_runtime`: the `CodeRuntime` that replays code workflows (e.g. `CodeRuntime(cache_size=0)`:
        every decision replays from the start, no paused instance kept); None: the process's."""
        self.clock = ManualClock(start_ms)
        self.store = MemoryHistoryStore()
        self.queues = MemoryQueues()
        self.queues.bind_clock(self.clock)
        self.timers = MemoryTimers()
        self.registry = MemoryRegistry()
        self.engine = Engine(
            self.store,
            self.queues,
            self.timers,
            MemoryPayloadStore(),
            self.registry,
            self.clock,
            SeededIds(seed, hook_key),
            snapshot_every=snapshot_every,
            backoff=lambda attempt: None,  # one thread on a virtual clock: nobody to wait for
        )
        self.engine.code_runtime = code_runtime
        # Flow control (docs/flow-control.md) on the virtual clock: limits kept in memory.
        from orbit.adapters.memory_limits import MemoryLimits
        from orbit.service.limits import FlowGate

        self.limits = MemoryLimits()
        self.engine.flow = FlowGate(self.limits, self.queues, self.clock)
        self.scripts: dict[str, Script] = {}
        self.visibility_ms = visibility_ms
        self.max_receives = max_receives  # like an SQS redrive policy: then the message is dead-lettered
        self.dead_letters: list[dict[str, Any]] = []
        self._receives: dict[str, int] = {}
        self.batch = batch
        self.unserved: list[dict[str, Any]] = []  # tasks no worker serves (they queue-time-out)
        self.cancelled_tasks: list[dict[str, Any]] = []
        self._sessions = 0

    # -------------------------------------------------------------- set-up
    def register(self, workflow: Any) -> Any:
        """A Definition, a definition dict/text/path, or a code workflow."""
        if isinstance(workflow, (str, dict)):
            from orbit.core.definition import load_definition, parse_definition

            workflow = parse_definition(workflow) if isinstance(workflow, dict) else load_definition(workflow)
        self.registry.register(workflow)
        return workflow

    def deploy(self, *workflows: Any) -> None:
        """Replace the code workflows held (a new deployment); definitions stay registered."""
        from orbit.service.replay_host import default_runtime

        self.registry.deploy(workflows)
        default_runtime().forget()
        if self.engine.code_runtime is not None:
            self.engine.code_runtime.forget()

    def worker(self, task: str, *behaviours: Behaviour | Callable[..., Any]) -> Script:
        items = [b if isinstance(b, Behaviour) else call(b) for b in behaviours] or [succeed()]
        self.scripts[task] = Script(items)
        return self.scripts[task]

    # ---------------------------------------------------------- operations
    def start(
        self, workflow: str, input: Any = None, id: str | None = None, version: str | None = None,
        priority: int | None = None,
    ) -> str:
        """`priority` (1..5): the start's place in its workflow's flow-control lines."""
        return self.engine.start(workflow, version, input, execution_id=id, priority=priority)

    def signal(self, execution_id: str, name: str, payload: Any = None) -> str:
        return self.engine.signal(execution_id, name, payload)

    def resume_hook(self, token: str, payload: Any = None) -> str:
        return self.engine.resume_hook(token, payload)

    def update(self, execution_id: str, name: str, input: Any = None, update_id: str | None = None) -> Any:
        """A durable update (docs/updates.md); runs the system until its result is recorded."""
        from orbit.errors import update_result
        from orbit.service.updates import submit, wait

        uid = submit(self.engine, execution_id, name, input, update_id)
        return update_result(wait(self.engine, execution_id, uid, 0, self.run_until_idle), 0)  # type: ignore[arg-type]

    def cancel(self, execution_id: str, reason: str = "", force: bool = False) -> None:
        self.engine.cancel(execution_id, reason, force)

    def redrive(self, execution_id: str, request_id: str | None = None) -> dict[str, Any]:
        return self.engine.redrive(execution_id, request_id)

    def fork(self, execution_id: str, from_step: str, id: str | None = None) -> str:
        return self.engine.fork(execution_id, from_step, id)

    def pause(self, execution_id: str, reason: str = "") -> str:
        return self.engine.pause(execution_id, reason)

    def unpause(self, execution_id: str, reason: str = "") -> str:
        return self.engine.unpause(execution_id, reason)

    def unpark(self, execution_id: str) -> str:
        return self.engine.unpark(execution_id)

    def describe(self, execution_id: str) -> dict[str, Any]:
        return self.engine.describe(execution_id)

    def history(self, execution_id: str) -> list[dict[str, Any]]:
        """The history as recorded (hook tokens included: the simulator is the engine's own view)."""
        return self.engine.recorded_history(execution_id)

    def types(self, execution_id: str) -> list[str]:
        return [e["type"] for e in self.history(execution_id)]

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        self.run_until_idle()

    # ---------------------------------------------------------------- pump
    def run_until_idle(self, max_rounds: int = 1_000_000) -> int:
        """Pump queues and fire due timers at the current time until nothing is left to do now."""
        rounds = 0
        while rounds < max_rounds:
            rounds += 1
            now = self.clock.now_ms()
            self.engine.fire_timers(now)
            msgs = self._inline(self.queues.receive_decisions(now, self.batch))
            if msgs:
                for i, err in self.engine.handle_batch(list(msgs)):
                    raise RuntimeError(f"decision failed for {msgs[i]}: {err}") from err
                continue
            if not self._serve_tasks(now):
                return rounds
        raise RuntimeError("the simulation did not settle")

    def run(self, max_jumps: int = 1_000_000) -> None:
        """Run until nothing will ever happen again, jumping the clock to each next wake-up."""
        for _ in range(max_jumps):
            self.run_until_idle()
            nxt = [t for t in (self.timers.next_fire_ms(), self.queues.next_visible_ms()) if t is not None]
            if not nxt:
                return
            self.clock.set(min(nxt))
        raise RuntimeError("the simulation did not finish")

    def _inline(self, msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Inline steps (docs/inline-steps.md) are served by the scripts like worker tasks: the
        engine has no runner here, so it hands each attempt over (`inline:<token>:<unit>`)."""
        from orbit.service.inline import HANDOFF, dispatch_of

        rest = []
        for m in msgs:
            mid = str(m.get("id", ""))
            if not mid.startswith(HANDOFF):
                rest.append(m)
                continue
            token, _, unit = mid[len(HANDOFF):].partition(":")
            u = self.engine.load_state(str(m["execution_id"])).units.get(unit)
            if u is None or u.token != token or u.terminal:
                continue
            body = dispatch_of(self.engine.load_state(str(m["execution_id"])), unit).to_dict()
            script = self.scripts.get(body["task"])
            if script is None:
                self.unserved.append(body)
            else:
                self._perform(script, body)
        return rest

    def _serve_tasks(self, now: int) -> bool:
        served = False
        for queue in list(self.queues.tasks):
            for body in self.queues.receive_tasks(queue, now, self.batch):
                served = True
                if body.get("kind") == "cancel_task":
                    self.cancelled_tasks.append(body)
                    continue
                script = self.scripts.get(body["task"])
                if script is None:
                    self.unserved.append(body)
                    continue
                self._perform(script, body)
        return served

    def _perform(self, script: Script, body: dict[str, Any]) -> None:
        script.seen.append(body)
        b = script.next()
        self._sessions += 1
        session = f"session-{self._sessions}"
        eid, unit, token = body["execution_id"], body["unit"], body["token"]
        self._send(StartedMessage(eid, f"started:{token}:{session}", unit, token, f"worker-{body['queue']}",
                                  session).to_dict())
        if b.action == "hang":
            return
        if b.action == "crash":  # the message comes back after the visibility timeout
            n = self._receives[body["token"]] = self._receives.get(body["token"], 0) + 1
            if n < self.max_receives:
                self.queues.send_task(body["queue"], body, delay_s=math.ceil(self.visibility_ms / 1000))
            else:
                self.dead_letters.append(body)
            return
        if b.action == "beat":
            for n in range(1, b.count + 1):
                self._send(HeartbeatMessage(eid, f"heartbeat:{token}:{session}:{n}", unit, token,
                                            {"beat": n}).to_dict(), delay_ms=n * b.delay_ms)
            if b.output is HANG:
                return
        output, error = b.output, b.error
        if b.action == "call" and b.fn is not None:
            ctx = TaskContext(body["execution_id"], body["unit"], body["attempt"], body["idempotency_key"],
                              body["token"], body.get("deadline_ms"),
                              heartbeat_timeout_ms=body.get("heartbeat_timeout_ms"),
                              redelivery=body.get("redelivery", False))
            try:
                output = b.fn(json.loads(json.dumps(body["input"])), ctx)
            except TaskError as e:
                error = e
        answer = ResultMessage(eid, f"result:{token}", unit, token, output, error).to_dict()
        if b.action == "late":
            self._send(answer, delay_ms=b.delay_ms)
            return
        if b.action == "beat":
            self._send(answer, delay_ms=(b.count + 1) * b.delay_ms)
            return
        self._send(answer)
        if b.action == "twice":
            self._send(ResultMessage(eid, f"result:{token}:again", unit, token, output, error).to_dict())

    def _send(self, message: dict[str, Any], delay_ms: int = 0) -> None:
        self.queues.send_decision(message, delay_s=math.ceil(delay_ms / 1000))
