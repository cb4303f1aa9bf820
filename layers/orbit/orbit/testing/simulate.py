"""`orbit simulate`: many runs of one definition on the in-memory simulator, each from its own seed,
with generated inputs, generated task outputs, injected failures and timeouts, and invariants.

A run is a pure function of (definition, run seed, rates): its input, every task's answer, which
calls fail or hang, and when each signal arrives are all drawn from `random.Random(run seed)` in
the order the deterministic simulator asks for them. So a failing run replays exactly from its seed.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from orbit.core.definition.model import Definition
from orbit.core.history.events import TaskError
from orbit.core.history.state import TERMINAL_WORKFLOW
from orbit.core.runtime.dsl.interpreter import HTTP_TASK
from orbit.errors import OrbitError
from orbit.testing.generate import GenerationError, draw
from orbit.testing.simulator import Behaviour, Script, Simulator, call, crash, hang
from orbit.testing.spec import Entry, task_contracts, tasks_called
from orbit.testing.spec_run import START_MS, compensation_order, refused_task_input, run_to

CONTRACT_CODES = ("INPUT_CONTRACT_VIOLATION", "OUTPUT_CONTRACT_VIOLATION")
INJECTED = "SIMULATED_FAILURE"
HTTP_ANSWER = {"type": "object", "required": ["status", "headers", "body"],
               "properties": {"status": {"enum": [200, 201, 204]}, "headers": {"type": "object"}, "body": {}}}
DEFAULT_HORIZON_MS = 86_400_000  # signals arrive within a day, or within the workflow's timeout


@dataclass(frozen=True)
class Rates:
    failure: float = 0.1  # a task call fails (retryable or not, half each)
    timeout: float = 0.05  # a task call hangs: the step's timeout (if any) ends it
    crash: float = 0.0  # a worker takes the call and dies: the queue redelivers it
    signal: float = 0.9  # each signal the workflow waits for is sent (else it never comes)


@dataclass
class Run:
    seed: int
    status: str = ""
    error_code: str | None = None
    violations: list[str] = field(default_factory=list)
    input: Any = None
    history: list[dict[str, Any]] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        return f"{self.status} {self.error_code}" if self.error_code else self.status


def run_seeds(seed: int, runs: int) -> list[int]:
    rnd = random.Random(seed)
    return [rnd.getrandbits(32) for _ in range(runs)]


class _Chaos(Script):
    """A worker for one task whose every call draws its fate from the run's random stream."""

    def __init__(self, task: str, sim: SimulatedRun) -> None:
        super().__init__([])
        self.task, self.run = task, sim

    def next(self) -> Behaviour:
        self.deliveries += 1
        rnd, rates = self.run.rnd, self.run.rates
        roll = rnd.random()
        if roll < rates.timeout:
            return hang()
        if roll < rates.timeout + rates.crash:
            return crash()
        if roll < rates.timeout + rates.crash + rates.failure:
            error = TaskError(INJECTED, f"{self.task}: injected failure", rnd.random() < 0.5)
            return call(lambda _input, _ctx: _raise(error))
        default = HTTP_ANSWER if self.task == HTTP_TASK else {"type": "object"}
        output = self.run.generate(self.run.contracts.get(self.task, {}).get("output", default),
                                   f"tasks.{self.task}.output")
        return call(lambda _input, _ctx: output)


def _raise(error: TaskError) -> Any:
    raise error


class SimulationError(OrbitError):
    """The simulation cannot go on at all (e.g. no value satisfies a schema); not a finding of one run."""


class SimulatedRun:
    def __init__(self, d: Definition, seed: int, rates: Rates, children: tuple[Definition, ...] = ()) -> None:
        self.d, self.seed, self.rates, self.children = d, seed, rates, children
        self.contracts = task_contracts(d, children)
        self.rnd = random.Random(seed)
        self.result = Run(seed)

    def generate(self, schema: Any, where: str) -> Any:
        try:
            return draw(schema, self.rnd.getrandbits(32))
        except GenerationError as exc:
            raise SimulationError(f"{self.d.name}: {where}: {exc}") from None

    def timeline(self) -> list[Entry]:
        horizon = self.d.timeout_ms or DEFAULT_HORIZON_MS
        entries = []
        for name in _waited_signals(self.d):
            if self.rnd.random() < self.rates.signal:
                schema = self.d.signals[name].schema if name in self.d.signals else None
                payload = self.generate(schema if schema is not None else {"type": "object"},
                                        f"signals.{name}.schema")
                entries.append(Entry(int(self.rnd.random() * horizon * 1.1), "signal", name, payload))
        for name in self.d.handlers:  # each handled signal arrives 0 to 3 times
            for _ in range(self.rnd.randrange(4)):
                schema = self.d.signals[name].schema if name in self.d.signals else None
                payload = self.generate(schema if schema is not None else {"type": "object"},
                                        f"signals.{name}.schema")
                entries.append(Entry(int(self.rnd.random() * horizon), "signal", name, payload))
        return sorted(entries, key=lambda e: e.at_ms)

    def execute(self) -> Run:
        r = self.result
        sim = Simulator(start_ms=START_MS, seed=f"sim-{self.seed}")
        for d in (*self.children, self.d):
            sim.register(d)
        tasks = {t: None for d in (self.d, *self.children) for t in tasks_called(d)}
        chaos = {task: _Chaos(task, self) for task in tasks}
        sim.scripts.update(chaos)
        try:
            r.input = self.generate(self.d.input_schema or {"type": "object"}, "input")
            eid = sim.start(self.d.name, r.input, id=f"sim-{self.seed}")
            sim.run_until_idle()
            for entry in self.timeline():
                run_to(sim, START_MS + entry.at_ms)
                try:
                    sim.signal(eid, entry.name, entry.payload)
                except OrbitError:
                    pass  # it had ended already, or took no more signals: that is the run's outcome
                sim.run_until_idle()
            sim.run()
        except SimulationError:
            raise
        except OrbitError as exc:
            r.status, r.violations = "ERROR", [f"ENGINE_ERROR: {exc}"]
            return r
        except RuntimeError as exc:  # the engine could not decide, or the run never settled
            r.status, r.violations = "ERROR", [f"ENGINE_ERROR: {exc}"]
            return r
        desc = sim.describe(eid)
        r.status = desc["status"]
        r.error_code = (desc.get("error") or {}).get("code")
        r.history = sim.history(eid)
        r.violations = check_invariants(desc, r.history)
        return r


def _waited_signals(d: Definition) -> list[str]:
    return list(dict.fromkeys(s.wait_for for s in d.steps.values() if s.kind == "wait_for" and s.wait_for))


def check_invariants(desc: dict[str, Any], history: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    if desc["status"] not in TERMINAL_WORKFLOW:
        waiting = [u for u, s in (desc.get("steps") or {}).items() if s.get("status") not in
                   ("SUCCEEDED", "FAILED", "SKIPPED", "CANCELLED")]
        out.append(f"NOT_TERMINAL: the run ended {desc['status']}, nothing left to happen "
                   f"(unfinished: {', '.join(waiting) or 'none'}); add a timeout")
    seen_errors: set[str] = set()
    for e in history:
        err = e.get("error") or {}
        code = err.get("code")
        wraps_step = e["type"] == "WorkflowFailed" and str(err.get("message", "")).startswith("step '")
        if e["type"] == "StepFailed" and (task := refused_task_input(err)) is not None:
            # The engine refused to send the task this input (tasks.NAME.input, checked when the
            # step is scheduled): the workflow built it from valid data, so the definition is wrong.
            out.append(f"TASK_CONTRACT: step {e['step']} would send {task} an input that breaks "
                       f"{(err.get('details') or {}).get('contract')}: {err.get('message')}")
        elif (code == "EXPRESSION_ERROR" or code in CONTRACT_CODES) and not wraps_step:
            text = f"{code}: {err.get('message')}"
            if text not in seen_errors:
                seen_errors.add(text)
                out.append(text)
    out += _compensation_problems(history)
    return out


def _compensation_problems(history: list[dict[str, Any]]) -> list[str]:
    """Compensations run in reverse order of success, over every compensable unit that succeeded."""
    compensable = {e["step"] for e in history if e["type"] == "StepScheduled" and e.get("compensable")}
    succeeded = [e["step"] for e in history if e["type"] == "StepSucceeded" and e.get("step") in compensable]
    done = compensation_order(history)
    if not any(e["type"] == "CompensationStarted" for e in history):
        return []
    expected = list(reversed(list(dict.fromkeys(succeeded))))
    completed = any(e["type"] == "CompensationCompleted" for e in history)
    if (done != expected) if completed else (done != expected[: len(done)]):
        return [f"COMPENSATION_ORDER: compensated {done}, expected the reverse order of success {expected}"]
    return []


@dataclass
class Summary:
    runs: list[Run]

    @property
    def outcomes(self) -> Counter[str]:
        return Counter(r.outcome for r in self.runs)

    @property
    def failing(self) -> list[Run]:
        return [r for r in self.runs if r.violations]


def simulate(d: Definition, runs: int, seed: int, rates: Rates, children: tuple[Definition, ...] = ()
             ) -> Summary:
    return Summary([SimulatedRun(d, s, rates, children).execute() for s in run_seeds(seed, runs)])


def replay(d: Definition, run_seed: int, rates: Rates, children: tuple[Definition, ...] = ()) -> Run:
    return SimulatedRun(d, run_seed, rates, children).execute()

