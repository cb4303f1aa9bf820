"""The crash matrix for inline steps: the decider container dies before and after every commit
(each checkpoint) and inside a step's function, for both semantics, with a worker step in between.

After the system settles (the dead invocation's batch comes back after the visibility timeout, to a
fresh container; leases expire on the virtual clock):
- the execution ends COMPLETED with the reference output, and every step succeeded exactly once;
- at_most_once: no attempt's function ran twice (an interrupted one is ATTEMPT_UNCERTAIN, and only
  the retry policy runs a new attempt);
- at_least_once: a function ran again only when a crash interrupted it (at most once more here).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from orbit import TaskError

from tests.unit.inline_world import Crash, World

RUNS: Counter[tuple[str, int]] = Counter()
DIE_IN: list[str] = []  # a step whose next run kills the container after the function's side effect


def step(input: Any, ctx: Any) -> dict[str, Any]:
    RUNS[(ctx.step, ctx.attempt)] += 1
    if DIE_IN and DIE_IN[0] == ctx.step:
        DIE_IN.clear()
        raise Crash(f"inside {ctx.step}")
    return {"v": input["v"] + 1}


def definition(semantics: str) -> dict[str, Any]:
    inline = {"inline": True, "semantics": semantics, "retry": {"max_attempts": 3, "backoff": "1s"}}
    return {"orbit": 1, "name": "crash", "steps": {
        "a": {"task": "t.step", "input": {"v": "{% input.v %}"}, **inline},
        "b": {"task": "t.step", "input": {"v": "{% steps.a.output.v %}"}, **inline},
        "w": {"task": "t.step", "input": {"v": "{% steps.b.output.v %}"}},  # a worker step
        "c": {"task": "t.step", "input": {"v": "{% steps.w.output.v %}"}, **inline}},
        "output": "{% steps.c.output.v %}"}


class Died(Exception):
    pass


def run(semantics: str, crash_at: tuple[int, str] | None = None, die_in: str | None = None) -> World:
    RUNS.clear()
    DIE_IN[:] = [die_in] if die_in else []
    w = World({"t.step": step})
    w.register(definition(semantics))
    w.api.start("crash", None, {"v": 0}, "e1")
    w.store.crash_at = crash_at
    w.settle()
    return w


def reference_commits(semantics: str) -> int:
    w = run(semantics)
    assert w.api.describe("e1")["output"] == 4
    return w.store.commits


def points() -> list[tuple[str, tuple[int, str] | None, str | None]]:
    out: list[tuple[str, tuple[int, str] | None, str | None]] = []
    for semantics in ("at_least_once", "at_most_once"):
        for n in range(2, reference_commits(semantics) + 1):  # commit 1 is the API's start
            out += [(semantics, (n, "before"), None), (semantics, (n, "after"), None)]
        out += [(semantics, None, s) for s in ("a", "b", "c")]
    return out


@pytest.mark.parametrize(("semantics", "crash_at", "die_in"), points())
def test_a_crash_at_any_checkpoint_loses_nothing_and_runs_nothing_twice(
        semantics: str, crash_at: tuple[int, str] | None, die_in: str | None) -> None:
    w = run(semantics, crash_at, die_in)
    assert w.containers == 2, "the crash point was never reached"
    desc = w.api.describe("e1")
    assert (desc["status"], desc.get("output")) == ("COMPLETED", 4), desc
    assert w.successes("e1") == Counter({"a": 1, "b": 1, "w": 1, "c": 1})
    events = w.events("e1")
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    uncertain = {(e["step"], e["attempt"]) for e in events if e["type"] == "StepAttemptUncertain"}
    for (unit, attempt), n in RUNS.items():
        if unit == "w":
            continue
        if semantics == "at_most_once":
            assert n == 1, f"{unit} attempt {attempt} ran {n} times"
        else:
            # a crash re-runs what it interrupted: an attempt it left uncertain, or one of a batch
            # whose results were not committed yet (the redelivered message decides it afresh)
            assert n <= 2, (unit, attempt, n, uncertain)
    if semantics == "at_most_once" and die_in:
        failed = [e for e in events if e["type"] == "StepAttemptFailed" and e["step"] == die_in]
        assert [e["error"]["code"] for e in failed] == ["ATTEMPT_UNCERTAIN"]
    assert w.queues.pending() == 0


def test_uncertain_at_most_once_is_not_retried_without_a_policy() -> None:
    RUNS.clear()
    DIE_IN[:] = ["a"]
    w = World({"t.step": step})
    w.register({"orbit": 1, "name": "once", "steps": {"a": {
        "task": "t.step", "inline": True, "semantics": "at_most_once", "input": {"v": 1}}}})
    w.api.start("once", None, {}, "e1")
    w.settle()
    desc = w.api.describe("e1")
    assert desc["status"] == "FAILED" and desc["error"]["code"] == "ATTEMPT_UNCERTAIN"
    assert RUNS == Counter({("a", 1): 1})


_ = TaskError
