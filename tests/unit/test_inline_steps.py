"""Inline steps (issue 15): scenarios, validation, and what a chain costs."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import orbit
import pytest
from orbit import TaskError
from orbit.core.definition import parse_definition
from orbit.errors import ValidationError
from orbit.service.registration_checks import check_registration

from tests.unit.inline_world import World

RUNS: Counter[tuple[str, int]] = Counter()


def add(input: Any, ctx: Any) -> dict[str, Any]:
    RUNS[(ctx.step, ctx.attempt)] += 1
    return {"v": input["v"] + 1}


def flaky(input: Any, ctx: Any) -> dict[str, Any]:
    RUNS[(ctx.step, ctx.attempt)] += 1
    if ctx.attempt == 1:
        raise TaskError("FLAKY", "the first attempt fails", retryable=True)
    return {"v": input["v"] + 10}


def slow(input: Any, ctx: Any) -> dict[str, Any]:
    RUNS[(ctx.step, ctx.attempt)] += 1
    if ctx.attempt == 1:
        time.sleep(1.0)
    return {"v": input["v"]}


TASKS = {"t.add": add, "t.flaky": flaky, "t.slow": slow}


def chain(n: int, semantics: str = "at_least_once", name: str = "chain") -> dict[str, Any]:
    steps: dict[str, Any] = {}
    for i in range(n):
        src = "{% input.v %}" if i == 0 else "{% steps.s" + str(i - 1) + ".output.v %}"
        steps[f"s{i}"] = {"task": "t.add", "inline": True, "semantics": semantics, "input": {"v": src}}
    return {"orbit": 1, "name": name, "steps": steps, "output": "{% steps.s" + str(n - 1) + ".output.v %}"}


@pytest.fixture(autouse=True)
def _clear() -> None:
    RUNS.clear()


def test_a_chain_of_inline_steps_runs_in_one_invocation_batched_commits_and_no_queue_message() -> None:
    w = World(TASKS)
    w.register(chain(10))
    eid = w.decider.start("chain", None, {"v": 0}, "e1")  # a decider's own start runs the chain at once
    desc = w.api.describe(eid)
    assert (desc["status"], desc["output"]) == ("COMPLETED", 10)
    # results are batched (at_least_once): 8 steps ride with the start's commit, 2 with the next
    assert w.store.commits == 2
    assert w.queues.pending() == 0 and w.timers.next_fire_ms() is None  # no queue hop, no timer
    scheduled = [e for e in w.events(eid) if e["type"] == "StepScheduled"]
    assert {e["inline"] for e in scheduled} == {"at_least_once"} and all(e["queue"] == "" for e in scheduled)


def test_the_api_hands_inline_work_to_the_decider_through_one_message() -> None:
    w = World(TASKS)
    w.register(chain(3))
    eid = w.api.start("chain", None, {"v": 5}, "e1")
    assert [m["id"] for _, m in w.queues.decisions][0].startswith("inline:")
    w.settle()
    assert w.api.describe(eid)["output"] == 8 and w.successes(eid) == Counter({"s0": 1, "s1": 1, "s2": 1})


def test_at_most_once_commits_its_started_record_with_the_scheduling_commit() -> None:
    w = World(TASKS)
    w.register(chain(3, "at_most_once"))
    eid = w.decider.start("chain", None, {"v": 0}, "e1")
    types = [(e["type"], e.get("step")) for e in w.events(eid)]
    assert types[2:5] == [("StepScheduled", "s0"), ("StepDispatched", "s0"), ("StepSucceeded", "s0")]
    assert w.store.commits == 4 and w.api.describe(eid)["output"] == 3


def test_inline_retry_waits_its_backoff_on_a_durable_timer() -> None:
    w = World(TASKS)
    w.register({"orbit": 1, "name": "retry", "steps": {"f": {
        "task": "t.flaky", "inline": True, "input": {"v": 1},
        "retry": {"max_attempts": 2, "backoff": "10s"}}},
        "output": "{% steps.f.output.v %}"})
    eid = w.decider.start("retry", None, {}, "e1")
    assert w.api.describe(eid)["status"] == "RUNNING"
    assert w.timers.next_fire_ms() == w.clock.now_ms() + 10_000  # the backoff is a timer
    w.settle()
    ev = w.events(eid)
    assert [e["type"] for e in ev if e.get("step") == "f"] == [
        "StepScheduled", "StepAttemptFailed", "RetryScheduled", "StepScheduled", "StepSucceeded"]
    assert w.api.describe(eid)["output"] == 11 and RUNS == Counter({("f", 1): 1, ("f", 2): 1})


def test_an_attempt_that_would_outlive_the_invocation_times_out_and_the_retry_runs_in_the_next() -> None:
    end = [time.monotonic() + 1.5]  # the invocation has 1.5 s left: 0.5 s for the attempt
    w = World(TASKS, remaining_ms=lambda: int((end[0] - time.monotonic()) * 1000))
    w.register({"orbit": 1, "name": "slow", "steps": {"s": {
        "task": "t.slow", "inline": True, "input": {"v": 7}, "timeout": "10s",
        "retry": {"max_attempts": 2, "backoff": "0s"}}}, "output": "{% steps.s.output.v %}"})
    eid = w.decider.start("slow", None, {}, "e1")
    ev = w.events(eid)
    failed = [e for e in ev if e["type"] == "StepAttemptFailed"]
    assert failed and failed[0]["error"]["code"] == "TIMEOUT"
    # attempt 2 found too little time left: handed over on the decision queue, not run blind
    assert any(m["id"].startswith("inline:") for _, m in w.queues.decisions)
    end[0] = time.monotonic() + 30  # the next invocation
    w.settle()
    assert w.api.describe(eid)["output"] == 7 and w.successes(eid) == Counter({"s": 1})


def test_inline_and_worker_steps_mix_in_one_definition() -> None:
    w = World(TASKS)
    w.register({"orbit": 1, "name": "mixed", "steps": {
        "a": {"task": "t.add", "inline": True, "input": {"v": 1}},
        "b": {"task": "t.add", "input": {"v": "{% steps.a.output.v %}"}},
        "c": {"task": "t.add", "inline": True, "input": {"v": "{% steps.b.output.v %}"}}},
        "output": "{% steps.c.output.v %}"})
    eid = w.api.start("mixed", None, {}, "e1")
    w.settle()
    ev = w.events(eid)
    assert w.api.describe(eid)["output"] == 4
    assert [e.get("inline") for e in ev if e["type"] == "StepScheduled"] == ["at_least_once", None,
                                                                             "at_least_once"]
    assert [e["queue"] for e in ev if e["type"] == "StepScheduled"] == ["", "t", ""]


CAPTURED: list[int] = []


def double(x: int) -> int:
    return x * 2


@orbit.workflow("inline-code", build="b1")
def code_flow(ctx: Any, input: Any) -> Any:
    a = ctx.run(double, input["v"])
    factor = 3
    b = ctx.run(lambda x: x * factor, a, name="triple", semantics="at_most_once")
    return {"a": a, "b": b, "key": ctx.step("t.add", {"v": b})}


def test_ctx_run_runs_a_plain_function_inline_in_a_code_workflow() -> None:
    w = World(TASKS)
    w.registry.register(code_flow)
    eid = w.api.start("inline-code", None, {"v": 2}, "e1")
    w.settle()
    assert w.api.describe(eid)["output"] == {"a": 4, "b": 12, "key": {"v": 13}}
    ev = w.events(eid)
    runs = [e for e in ev if e["type"] == "StepScheduled" and e.get("inline")]
    assert [(e["step"], e["task"], e["input"]) for e in runs] == [
        ("1.double", f"{__name__}:double", [2]),
        ("2.triple", f"{__name__}:code_flow.<locals>.<lambda>", [4])]
    assert any(e["type"] == "StepDispatched" and e["step"] == "2.triple" for e in ev)


def test_a_task_the_decider_does_not_serve_fails_the_step_naming_the_modules() -> None:
    w = World(TASKS, modules=("tests.unit.no_such_inline_module",))
    w.register({"orbit": 1, "name": "missing", "steps": {"m": {"task": "pay.charge", "inline": True}}})
    eid = w.decider.start("missing", None, {}, "e1")
    desc = w.api.describe(eid)
    assert desc["status"] == "FAILED" and desc["error"]["code"] == "INLINE_TASK_NOT_FOUND"
    assert "pay.charge" in desc["error"]["message"]
    assert "tests.unit.no_such_inline_module" in desc["error"]["message"]


def test_validation_of_inline_keys() -> None:
    def problems(step: dict[str, Any]) -> str:
        with pytest.raises(ValidationError) as e:
            parse_definition({"orbit": 1, "name": "v", "steps": {"s": step}})
        return str(e.value)

    assert "inline step runs in the decider" in problems({"task": "a.b", "inline": True, "queue": "q"})
    assert "add `inline: true`" in problems({"task": "a.b", "semantics": "at_most_once"})
    assert "must be at_least_once or at_most_once" in problems(
        {"task": "a.b", "inline": True, "semantics": "x"})
    assert "must be true or false" in problems({"task": "a.b", "inline": "yes"})
    assert "at most 900s" in problems({"task": "a.b", "inline": True, "timeout": "20m"})
    assert "not used by a wait_for" in problems({"wait_for": "x", "inline": True}) or "inline" in problems(
        {"wait_for": "x", "inline": True})


def test_registration_refuses_an_inline_timeout_longer_than_the_deciders() -> None:
    w = World(TASKS)
    w.api.decider_timeout_ms = 30_000
    ok = parse_definition({"orbit": 1, "name": "v", "steps": {"s": {"task": "a.b", "inline": True,
                                                                   "timeout": "20s"}}})
    check_registration(w.api, ok)
    long = parse_definition({"orbit": 1, "name": "v", "steps": {"s": {"task": "a.b", "inline": True,
                                                                     "timeout": "45s"}}})
    with pytest.raises(ValidationError, match="steps.s.timeout: an inline step's timeout .45s. must fit"):
        check_registration(w.api, long)


def test_a_worker_step_is_unchanged_by_the_new_fields() -> None:
    d = parse_definition({"orbit": 1, "name": "w", "steps": {"s": {"task": "a.b"}}})
    assert d.steps["s"].inline is None
    lock = threading.Lock()
    with lock:
        w = World(TASKS)
        w.register(chain(1))
        eid = w.api.start("chain", None, {"v": 0}, "e1")
        w.settle()
        assert "inline" in [e for e in w.events(eid) if e["type"] == "StepScheduled"][0]


def test_the_simulator_serves_inline_steps_with_its_scripts() -> None:
    from orbit.testing.simulator import Simulator, fail, succeed

    sim = Simulator()
    sim.register(parse_definition({"orbit": 1, "name": "sim-inline", "steps": {"a": {
        "task": "t.a", "inline": True, "retry": {"max_attempts": 2, "backoff": "1s"}}},
        "output": "{% steps.a.output %}"}))
    sim.worker("t.a", fail("FLAKY"), succeed({"ok": True}))
    eid = sim.start("sim-inline", {})
    sim.run()
    assert sim.describe(eid)["output"] == {"ok": True}
    assert sim.types(eid).count("StepAttemptFailed") == 1


def test_a_worker_dispatch_is_not_held_back_by_a_batch_of_inline_steps() -> None:
    w = World(TASKS)
    w.register({"orbit": 1, "name": "side", "steps": {
        "a": {"task": "t.add", "inline": True, "input": {"v": 1}},
        "slow": {"task": "t.add", "input": {"v": 0}},  # a worker step, side by side with the chain
        "b": {"task": "t.add", "inline": True, "input": {"v": "{% steps.a.output.v %}"}}},
        "output": "{% steps.b.output.v %}"})
    sent = []
    send = w.queues.send_task
    w.queues.send_task = lambda q, body, delay_s=0: (sent.append(sum(RUNS.values())), send(q, body, delay_s))
    w.decider.start("side", None, {}, "e1")
    assert sent == [0]  # sent with the first commit, before any inline step ran
    w.settle()
    assert w.api.describe("e1")["output"] == 3


def test_an_inline_task_gets_a_copy_of_its_input_and_cannot_return_what_history_cannot_store() -> None:
    kept: list[Any] = []

    def mutate(input: Any, ctx: Any) -> Any:
        kept.append(input)
        input["v"] = 999  # must not reach the recorded input
        return {"v": 1} if ctx.step == "a" else {1, 2}  # a set is not JSON

    w = World({"t.m": mutate})
    w.register({"orbit": 1, "name": "copy", "steps": {
        "a": {"task": "t.m", "inline": True, "input": {"v": 1}},
        "b": {"task": "t.m", "inline": True, "input": {"v": "{% steps.a.output.v %}"}}}})
    eid = w.decider.start("copy", None, {}, "e1")
    desc = w.api.describe(eid)
    assert desc["status"] == "FAILED" and desc["error"]["code"] == "VALUE_NOT_STORABLE"
    scheduled = [e["input"] for e in w.events(eid) if e["type"] == "StepScheduled"]
    assert scheduled == [{"v": 1}, {"v": 1}]


@orbit.workflow("inline-in-branches", build="b1")
def branch_flow(ctx: Any, input: Any) -> Any:
    def branch(c: Any, item: Any) -> Any:
        doubled = c.run(double, item)
        c.sleep(60)
        return c.run(double, doubled)
    return ctx.map(input["items"], branch, concurrency=2)


def test_ctx_run_inside_map_branches_runs_inline_under_each_branch() -> None:
    w = World(TASKS)
    w.registry.register(branch_flow)
    eid = w.api.start("inline-in-branches", None, {"items": [1, 2, 3]}, "e1")
    w.settle()
    assert w.api.describe(eid)["output"] == [4, 8, 12]
    runs = [e["step"] for e in w.events(eid) if e["type"] == "StepScheduled" and e.get("inline")]
    assert len(runs) == 6 and all("/" in s for s in runs), runs
