"""Run one test of a test file on the in-memory simulator and compare what happened with `expect`.

The clock is virtual: the timeline moves it from one action to the next (firing every timer due on
the way), then the run goes on until nothing will ever happen again, so a 7-day wait costs nothing.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from orbit.core.definition.contracts import check_schema
from orbit.core.definition.expressions import evaluate
from orbit.core.history.events import TaskError
from orbit.core.history.state import COMPENSATE_PREFIX
from orbit.core.history.task_error import INPUT_CONTRACT_VIOLATION, broken_contract
from orbit.errors import ExpressionError, OrbitError
from orbit.testing.expect import Mismatch, compare, includes, subsequence
from orbit.testing.simulator import Behaviour, Simulator, call, crash, fail, hang, succeed
from orbit.testing.spec import Case, Mock, Suite

START_MS = 1_700_000_000_000
MAX_JUMPS = 1_000_000  # wake-ups between two timeline actions, as Simulator.run allows in all


@dataclass
class Result:
    case: Case
    mismatches: list[Mismatch] = field(default_factory=list)
    seconds: float = 0.0
    status: str = ""

    @property
    def passed(self) -> bool:
        return not self.mismatches


def behaviours(mocks: list[Mock], task: str = "", schema: Any = None,
               problems: list[Mismatch] | None = None) -> list[Behaviour]:
    """One simulator behaviour per call; a last mock with `times` is followed by a hang that
    `run_case` reports as one call too many. A templated output's problems go to `problems`."""
    out: list[Behaviour] = []
    for i, m in enumerate(mocks):
        b = _templated(m, f"mocks.{task}[{i}].output", schema, problems) if m.templated else _behaviour(m)
        out.extend([b] * (m.times or 1))
    if mocks and mocks[-1].times is not None:
        out.append(hang())
    return out


def _behaviour(m: Mock) -> Behaviour:
    if m.kind == "output":
        return succeed(m.value)
    if m.kind == "error":
        e = m.value
        return fail(e["code"], e.get("message", ""), bool(e.get("retryable", True)), e.get("details"))
    return hang() if m.kind == "timeout" else crash()


def _templated(m: Mock, path: str, schema: Any, problems: list[Mismatch] | None) -> Behaviour:
    """An output evaluated per call over `{input, attempt}`: it fails the test (and the call, with
    MOCK_ERROR) when an expression fails or the value breaks the task's output schema."""
    def answer(task_input: Any, ctx: Any) -> Any:
        try:
            value = evaluate(m.value, {"input": task_input, "attempt": ctx.attempt}, START_MS)
        except ExpressionError as exc:
            return _trouble(problems, Mismatch(path, f"the template failed on step {ctx.step}: {exc}"))
        err = check_schema(schema, value, "OUTPUT_CONTRACT_VIOLATION", "output")
        if err is not None:
            return _trouble(problems, Mismatch(path, f"step {ctx.step}: the output breaks the task's "
                                                     f"output schema: {err.message}"))
        return value

    return call(answer)


def _trouble(problems: list[Mismatch] | None, mismatch: Mismatch) -> Any:
    if problems is not None:
        problems.append(mismatch)
    raise TaskError("MOCK_ERROR", mismatch.message, retryable=False)


def run_case(suite: Suite, case: Case) -> Result:
    began = time.perf_counter()
    result = Result(case)
    sim = Simulator(start_ms=START_MS, seed=case.name)
    for d in (*suite.children, suite.definition):
        sim.register(d)
    trouble: list[Mismatch] = []
    for task, mocks in case.mocks.items():
        schema = (suite.contracts.get(task) or {}).get("output")
        sim.worker(task, *behaviours(mocks, task, schema, trouble))
    try:
        eid = sim.start(suite.definition.name, case.input, id=f"test-{case.name}")
        sim.run_until_idle()
        for i, entry in enumerate(case.timeline):
            run_to(sim, START_MS + entry.at_ms)
            problem = _act(sim, eid, entry)
            if problem:
                result.mismatches.append(Mismatch(f"timeline[{i}]", problem))
        sim.run()
    except (OrbitError, RuntimeError) as exc:  # a refused start, a simulation that never settles
        result.mismatches.append(Mismatch("run", f"{type(exc).__name__}: {exc}"))
        result.seconds = time.perf_counter() - began
        return result
    desc = sim.describe(eid)
    result.status = desc["status"]
    result.mismatches += trouble + _task_problems(sim, case, eid)
    result.mismatches += check_expectations(case.expect, desc, sim.history(eid))
    result.seconds = time.perf_counter() - began
    return result


def run_to(sim: Simulator, target_ms: int) -> None:
    """Run everything due before `target_ms` in time order, then stop the clock at `target_ms`."""
    for _ in range(MAX_JUMPS):
        sim.run_until_idle()
        due = [t for t in (sim.timers.next_fire_ms(), sim.queues.next_visible_ms()) if t is not None]
        if not due or min(due) > target_ms:
            break
        sim.clock.set(max(min(due), sim.clock.now_ms()))
    else:
        raise RuntimeError(f"the simulation did not reach {target_ms - START_MS} ms after the start")
    if target_ms > sim.clock.now_ms():
        sim.clock.set(target_ms)
    sim.run_until_idle()


def _act(sim: Simulator, eid: str, entry: Any) -> str | None:
    try:
        if entry.action == "signal":
            sim.signal(eid, entry.name, entry.payload)
        elif entry.action == "hook":
            if entry.name not in sim.engine.load_state(eid).hooks:
                return f"hook {entry.name}: the execution has no hook of that name yet"
            # the engine's own view: recorded, or derived from the stack key (docs/security.md)
            sim.resume_hook(sim.engine.hook_token(eid, entry.name), entry.payload)
        elif entry.action == "cancel":
            sim.cancel(eid, entry.name, entry.force)
    except OrbitError as exc:  # refused: e.g. the execution had already ended
        return f"{entry.action} {entry.name}: refused: {exc}"
    sim.run_until_idle()
    return None


def _task_problems(sim: Simulator, case: Case, eid: str) -> list[Mismatch]:
    out: list[Mismatch] = []
    for body in sim.unserved:
        out.append(Mismatch(f"mocks.{body['task']}", f"step {body['unit']} called task {body['task']}, "
                            "which this test does not mock; add a behaviour for it under `mocks`"))
    for task, script in sim.scripts.items():
        answers = sum(m.times or 0 for m in case.mocks[task])
        if case.mocks[task][-1].times is not None and script.deliveries > answers:
            out.append(Mismatch(f"mocks.{task}", f"called {script.deliveries} times, but its behaviours "
                                f"answer {answers} (drop the last one's `times` to let it answer the rest)"))
    if "INPUT_CONTRACT_VIOLATION" not in json.dumps(case.expect, default=str):  # unless it is the point
        for e in sim.history(eid):
            refused = refused_task_input(e.get("error") or {}) if e["type"] == "StepFailed" else None
            if refused is not None:
                out.append(Mismatch(f"steps.{e['step']}", f"would send task {refused} an input that breaks "
                                    f"tasks.{refused}.input: {e['error']['message']}"))
    return out


def refused_task_input(error: dict[str, Any]) -> str | None:
    """The task whose `tasks.NAME.input` contract a StepFailed's error says was broken, else None."""
    code = str(error.get("code"))
    return broken_contract(code, error.get("details")) if code == INPUT_CONTRACT_VIOLATION else None


def compensation_order(history: list[dict[str, Any]]) -> list[str]:
    """The units whose compensation started, in the order they started."""
    seen: list[str] = []
    for e in history:
        unit = e.get("step") or ""
        if e["type"] == "StepScheduled" and unit.startswith(COMPENSATE_PREFIX):
            name = unit[len(COMPENSATE_PREFIX):]
            if name not in seen:
                seen.append(name)
    return seen


def check_expectations(expect: dict[str, Any], desc: dict[str, Any], history: list[dict[str, Any]]
                       ) -> list[Mismatch]:
    out: list[Mismatch] = []
    if "status" in expect:
        out += compare("expect.status", expect["status"], desc["status"])
    if "output" in expect:
        out += compare("expect.output", expect["output"], desc.get("output"))
    if "output_includes" in expect:
        out += includes("expect.output_includes", expect["output_includes"], desc.get("output"))
    if "error" in expect:
        out += includes("expect.error", expect["error"], desc.get("error"))
    units = desc.get("steps") or {}
    for unit, want in (expect.get("steps") or {}).items():
        path = f"expect.steps.{unit}"
        got = units.get(unit)
        if got is None:
            ran = ", ".join(units) or "none"
            out.append(Mismatch(path, f"step {unit} never ran (units that ran: {ran})", want, None))
            continue
        actual = {"status": got.get("status"), "attempts": got.get("attempt") or 0,
                  "output": got.get("output"), "error": got.get("error")}
        for key in ("status", "attempts", "output"):
            if key in want:
                out += compare(f"{path}.{key}", want[key], actual[key], step=unit)
        if "output_includes" in want:
            out += includes(f"{path}.output_includes", want["output_includes"], actual["output"], step=unit)
        if "error" in want:
            out += includes(f"{path}.error", want["error"], actual["error"], step=unit)
    if "compensation" in expect:
        out += compare("expect.compensation", [str(u) for u in expect["compensation"]],
                       compensation_order(history))
    if "events" in expect:
        out += subsequence("expect.events", expect["events"], history)
    return out
