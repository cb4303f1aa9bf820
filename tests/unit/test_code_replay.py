"""Replay semantics of code workflows: suspension, non-determinism, builds, the warm cache."""

from __future__ import annotations

import threading

import pytest
from code_harness import Harness
from orbit.core.history.events import (
    Recorded,
    StepScheduled,
    StepSucceeded,
    WorkflowCreated,
    WorkflowStarted,
)
from orbit.core.history.model import fold
from orbit.core.runtime import commands as C
from orbit.service import replay_host as code_runtime
from orbit.service.replay_host import CodeRuntime, default_runtime
from orbit.workflow import CodeRegistry, workflow


def echo(input, attempt):
    return {"echo": input}


def test_except_exception_cannot_swallow_the_suspension():
    reg = CodeRegistry()

    @workflow("swallow", registry=reg)
    def wf(ctx, input):
        try:
            out = ctx.step("a.slow", {})
        except Exception:  # noqa: BLE001 - the point of the test
            return "swallowed"
        return out

    h = Harness(wf, workers={"a.slow": echo})
    h.held = {"a.slow"}
    h.start("swallow")
    default_runtime().forget()  # discarding the paused instance raises the suspension inside it
    assert h.describe()["status"] == "RUNNING"
    h.release("a.slow")
    assert h.describe()["output"] == {"echo": {}}


def _diverging_pair(reg: CodeRegistry):
    @workflow("drift", build="b1", registry=reg)
    def v1(ctx, input):
        ctx.step("a.first", {})
        return ctx.step("a.second", {})

    def v2_body(ctx, input):
        ctx.step("a.first", {})
        return ctx.step("a.other", {})  # same build id, different code: a deployment mistake
    return v1, v2_body


def test_nondeterministic_replay_parks_the_execution_and_shows_both_calls():
    reg = CodeRegistry()
    v1, v2_body = _diverging_pair(reg)
    h = Harness(v1, workers={"a.first": echo, "a.second": echo, "a.other": echo})
    h.held = {"a.second"}
    h.start("drift")
    v2 = workflow("drift", build="b1", registry=reg)(v2_body)
    h.register(v2)
    h.engine._cache.clear()
    default_runtime().forget()
    h.release("a.second")
    d = h.describe()
    assert d["status"] == "RUNNING" and d["parked"]["code"] == "NON_DETERMINISM"
    msg = d["parked"]["message"]
    assert "durable call #2" in msg and "a.second" in msg and "a.other" in msg
    assert d["parked"]["details"]["recorded"]["unit"] == "2.a.second"
    assert d["parked"]["details"]["requested"]["unit"] == "2.a.other"
    assert "ExecutionParked" in h.types()
    # history intact: what was recorded stays (answers are still recorded while parked),
    # nothing the new code asked for was written
    assert d["steps"]["1.a.first"]["status"] == "SUCCEEDED"
    assert "2.a.second" in d["steps"] and "2.a.other" not in d["steps"]
    assert "WorkflowCompleted" not in h.types()


def test_code_that_ends_early_against_a_longer_history_is_nondeterministic():
    reg = CodeRegistry()

    @workflow("shrink", build="b1", registry=reg)
    def v1(ctx, input):
        ctx.step("a.first", {})
        ctx.sleep("1h")
        return "v1"

    h = Harness(v1, workers={"a.first": echo})
    h.start("shrink")

    def v2(ctx, input):
        return "v2"  # makes no calls at all
    h.register(workflow("shrink", build="b1", registry=reg)(v2))
    h.engine._cache.clear()
    default_runtime().forget()
    h.advance(3_600_000)
    parked = h.describe()["parked"]
    assert parked["code"] == "NON_DETERMINISM" and "ended before making it" in parked["message"]


def test_execution_started_on_build_1_finishes_on_build_1_after_build_2_is_registered():
    reg = CodeRegistry()

    @workflow("pinned", registry=reg)
    def build1(ctx, input):
        ctx.step("a.first", {})
        return {"build": 1, "second": ctx.step("a.second", {})}

    h = Harness(build1, workers={"a.first": echo, "a.second": echo, "a.new": echo})
    h.held = {"a.first"}
    h.start("pinned", id="old")

    @workflow("pinned", registry=reg)
    def build2(ctx, input):
        return {"build": 2, "new": ctx.step("a.new", {})}

    assert build1.build != build2.build and build1.build.startswith("src:")
    h.register(build2)
    h.engine._cache.clear()
    default_runtime().forget()
    h.release("a.first")
    h.start("pinned", id="new")
    assert h.describe("old")["output"]["build"] == 1
    assert h.describe("new")["output"]["build"] == 2
    created = {r["execution_id"]: r["build"] for r in h.history("old") + h.history("new")
               if r["type"] == "WorkflowCreated"}
    assert created == {"old": build1.build, "new": build2.build}


def test_a_decider_without_the_pinned_build_parks_with_build_mismatch():
    reg = CodeRegistry()

    @workflow("gone", build="b1", registry=reg)
    def b1(ctx, input):
        return ctx.step("a.first", {})

    other = CodeRegistry()
    b2 = workflow("gone", build="b2", registry=other)(lambda ctx, input: "b2")
    state = fold("x", [Recorded(1, 1000, WorkflowCreated("gone", "1", "b1", None, build="b1")),
                       Recorded(2, 1000, WorkflowStarted())])
    commands = CodeRuntime(registry=other).run(b2, state, 1000)
    assert len(commands) == 1 and isinstance(commands[0], C.Park)
    assert commands[0].error.code == "BUILD_MISMATCH" and "'b1'" in str(commands[0].error.message)
    # with the build held in its registry the same runtime replays it
    assert isinstance(CodeRuntime(registry=reg).run(b2, state, 1000)[0], C.ScheduleStep)


def _state(*events):
    return fold("s", [Recorded(i + 1, 1000 * (i + 1), e) for i, e in enumerate(events)])


def test_stale_cache_after_a_lost_commit_falls_back_to_a_full_replay():
    reg = CodeRegistry()

    @workflow("stale", build="b", registry=reg)
    def wf(ctx, input):
        a = ctx.step("a.first", {})
        return ctx.step("a.second", a)

    rt = CodeRuntime(registry=reg)
    created = [WorkflowCreated("stale", "1", "b", None, build="b"), WorkflowStarted(),
               StepScheduled("1.a.first", 1, {}, kind="task", task="a.first")]
    assert rt.run(wf, _state(*created), 1) == []  # cold: waits for a.first
    # decider A applies a.first = 1 and asks for a.second(1) ...
    out_a = rt.run(wf, _state(*created, StepSucceeded("1.a.first", 1, 1)), 2)
    assert out_a[0].step.input == 1 and rt.stats == {"cold": 1, "warm": 1}
    # ... but its commit lost: the history that won says a.first = 2 and has no a.second yet
    out_b = rt.run(wf, _state(*created, StepSucceeded("1.a.first", 1, 2)), 3)
    assert out_b[0].step.input == 2 and rt.stats == {"cold": 2, "warm": 1}


def test_same_state_twice_gives_the_same_commands():
    reg = CodeRegistry()

    @workflow("twice", build="b", registry=reg)
    def wf(ctx, input):
        return ctx.parallel(("a.x", ctx.random()), ("a.y", ctx.uuid()))

    rt = CodeRuntime(registry=reg)
    s = _state(WorkflowCreated("twice", "1", "b", None, build="b"), WorkflowStarted())
    assert rt.run(wf, s, 5) == rt.run(wf, s, 5)


def test_cold_and_warm_runtimes_write_identical_histories(monkeypatch):
    def scenario() -> list[dict]:
        reg = CodeRegistry()

        @workflow("same", registry=reg)
        def wf(ctx, input):
            ctx.progress("start")
            token = ctx.hook_token("go")
            a = ctx.step("a.first", {"t": token})
            ctx.sleep("1m")
            b = ctx.map("a.item", [1, 2, 3], concurrency=2)
            return [a, b, ctx.wait_for("go"), ctx.now_ms(), ctx.random()]

        h = Harness(wf, workers={"a.first": echo, "a.item": echo})
        h.start("same")
        h.advance(60_000)
        h.signal("go", {"ok": 1})
        assert h.describe()["status"] == "COMPLETED"
        return h.history()

    warm = scenario()
    monkeypatch.setattr(code_runtime._DEFAULT, "cache_size", 0)
    cold = scenario()
    assert cold == warm


def test_discarded_instances_do_not_leak_threads():
    """Paused instances start no thread at all, and discarding one ends its greenlet at once."""
    reg = CodeRegistry()

    @workflow("threads", registry=reg)
    def wf(ctx, input):
        return ctx.wait_for("never")

    h = Harness(wf)
    before = set(threading.enumerate())
    for i in range(20):
        h.start("threads", id=f"t{i}")
    # each paused function lives on a greenlet of the deciding thread: no thread was started
    assert set(threading.enumerate()) - before == set()
    paused = [inst._g for key, inst in default_runtime()._cache.items() if key.startswith("t")]
    assert len(paused) == 20 and not any(g.dead for g in paused)
    default_runtime().forget()
    assert all(g.dead for g in paused)  # each unwound (its pending call raised Suspended) at once


@pytest.mark.parametrize("size", [1, 3])
def test_cache_is_bounded_lru(size):
    reg = CodeRegistry()

    @workflow("lru", registry=reg)
    def wf(ctx, input):
        return ctx.wait_for("never")

    rt = CodeRuntime(registry=reg, cache_size=size)
    for i in range(5):
        created = WorkflowCreated("lru", "1", wf.build, None, build=wf.build)
        rt.run(wf, fold(f"e{i}", [Recorded(1, 1, created)]), 1)
    assert list(rt._cache) == [f"e{i}" for i in range(5 - size, 5)]
    rt.forget()


def test_a_decider_that_knows_no_such_workflow_parks_instead_of_raising():
    other = CodeRegistry()
    stranger = workflow("stranger", build="s1", registry=other)(lambda ctx, input: None)
    state = fold("y", [Recorded(1, 1, WorkflowCreated("vanished", "1", "v1", None, build="v1"))])
    commands = CodeRuntime(registry=other).run(stranger, state, 1)
    assert isinstance(commands[0], C.Park) and "vanished" in commands[0].error.message


def test_workflow_code_mutating_its_input_or_results_does_not_touch_the_history():
    reg = CodeRegistry()

    @workflow("mutator", registry=reg)
    def wf(ctx, input):
        input["items"].append("extra")
        out = ctx.step("a.first", {})
        out["echo"]["changed"] = True
        again = ctx.step("a.first", {})
        return [input, out, again]

    h = Harness(wf, workers={"a.first": echo})
    h.start("mutator", {"items": [1]})
    d = h.describe()
    assert d["input"] == {"items": [1]}
    assert d["steps"]["1.a.first"]["output"] == {"echo": {}}
    assert d["output"][1] == {"echo": {"changed": True}} and d["output"][2] == {"echo": {}}
