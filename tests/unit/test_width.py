"""Code workflows at any width (issue 27): no OS thread per workflow or branch.

Paused workflow functions and their branches live on greenlets of the thread that decides; these
tests hold that at 10,000 branches, and that an instance paused on another thread is not switched
to (a greenlet cannot cross threads) but replayed cold.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from code_harness import Harness
from orbit.core.decider.decide import decide
from orbit.core.history.messages import ResultMessage, StartMessage
from orbit.core.history.model import apply
from orbit.core.history.state import ExecutionState
from orbit.service.replay_host import CodeRuntime
from orbit.workflow import CodeRegistry, workflow

HOUR = 3_600_000


def echo(input, attempt):
    return {"echo": input}


def test_an_instance_paused_on_another_thread_is_replayed_cold_here():
    reg = CodeRegistry()

    @workflow("elsewhere", registry=reg)
    def wf(ctx, input):
        return [ctx.step("a.first", input), ctx.wait_for("go")]

    rt = CodeRuntime(reg)
    box: dict[str, object] = {}

    def start() -> None:  # the first decision, on a thread of its own
        h = Harness(wf, workers={"a.first": echo})
        h.engine.code_runtime = rt
        h.start("elsewhere", "x")
        box["h"] = h

    t = threading.Thread(target=start)
    t.start()
    t.join()
    h = box["h"]
    assert rt.stats["cold"] == 1 and rt.stats["warm"] >= 1  # started, then resumed warm there
    h.signal("go", {"ok": 1})  # decided on this thread: the paused greenlet cannot be switched to
    assert h.describe()["status"] == "COMPLETED", h.describe()
    assert h.describe()["output"] == [{"echo": "x"}, {"ok": 1}]
    assert rt.stats["cold"] == 2


def test_a_thread_that_reuses_a_dead_threads_ident_replays_cold(monkeypatch: Any) -> None:
    """orbit dev decides each invocation on a thread of its own, and the OS hands a dead thread's
    ident to the next one: the cache must not take that for the instance's own thread (greenlet
    refused the switch: "parent cannot be on a different thread"). Forced here by one ident for all."""
    monkeypatch.setattr(threading, "get_ident", lambda: 1)
    reg = CodeRegistry()

    @workflow("reused", registry=reg)
    def wf(ctx, input):
        return [ctx.step("a.first", input), ctx.wait_for("go")]

    rt = CodeRuntime(reg)
    box: dict[str, object] = {}

    def start() -> None:
        h = Harness(wf, workers={"a.first": echo})
        h.engine.code_runtime = rt
        h.start("reused", "x")
        box["h"] = h

    t = threading.Thread(target=start)
    t.start()
    t.join()
    h = box["h"]
    done: dict[str, object] = {}
    t2 = threading.Thread(target=lambda: done.update(r=h.signal("go", {"ok": 1})))
    t2.start()
    t2.join()
    assert h.describe()["status"] == "COMPLETED", h.describe()
    assert rt.stats["cold"] == 2


class _Ids:
    def __init__(self) -> None:
        self.n = 0

    def token(self) -> str:
        self.n += 1
        return f"{self.n:032x}"


def test_a_parallel_of_10000_branches_is_decided_on_the_calling_thread_alone():
    reg = CodeRegistry()

    def branch(ctx: Any) -> int:
        n = ctx.step("w.work", 1)["n"]
        ctx.sleep("1h")
        return int(n)

    @workflow("wide", build="t", registry=reg)
    def fan(ctx: Any, n: int) -> Any:
        return sum(ctx.parallel(*[branch] * n))

    n, ids, state, now = 10_000, _Ids(), ExecutionState("wide"), 0
    rt = CodeRuntime(reg)
    threads: set[int] = set()

    def one(msg: Any) -> None:
        d = decide(fan, state, msg, now, ids, code_runtime=rt)
        threads.add(threading.active_count())
        for r in d.events:
            apply(state, r)

    before = threading.active_count()
    one(StartMessage("wide", "start", workflow="wide", input=n))
    assert len(state.active) == n + 1  # every branch's step in flight, and the group
    steps = [k for k in state.active if k.endswith("w.work")]
    for key in steps[:3] + steps[-3:]:  # a few results, then every timer
        one(ResultMessage("wide", f"r-{key}", unit=key, token=state.units[key].token or "", output={"n": 1}))
    assert threads == {before}  # 10,000 paused branches, not one thread more
    assert rt.stats["cold"] == 1  # one replay from the start; every later decision resumed it
    timers = [k for k in state.active if k.endswith("sleep()")]
    assert len(timers) == 6  # each resumed branch went on to its sleep
    paused = rt._cache["wide"]
    rt.forget()
    assert paused._g is None and paused.finished is False  # discarded: its 10,000 branches unwound
    assert threading.active_count() == before


def test_an_execution_past_the_live_unit_limit_fails_naming_the_call(monkeypatch):
    from orbit.core.runtime.code import limits as code_limits

    monkeypatch.setattr(code_limits, "MAX_LIVE_UNITS", 8)
    reg = CodeRegistry()

    def inner(ctx: Any, i: int) -> Any:  # two steps each: nested groups multiply the live units
        return ctx.parallel(lambda c: c.step("w.a", i), lambda c: c.step("w.b", i))

    @workflow("nested", registry=reg)
    def wf(ctx: Any, n: int) -> Any:
        return ctx.map(list(range(n)), inner)

    h = Harness(wf, workers={"w.a": echo, "w.b": echo})
    h.held = {"w.a", "w.b"}
    h.start("nested", 2)  # 1 map + 2 x (1 group + 2 steps) = 7 live units: within the limit
    assert h.describe()["status"] == "RUNNING", h.describe()
    h.start("nested", 3, id="ex-3")  # the third branch's group is the eighth, its first step the ninth
    d = h.describe("ex-3")
    assert d["status"] == "FAILED", d
    assert d["error"]["code"] == "TOO_MANY_UNITS"
    assert "would make 9 units live at once, more than the limit of 8" in d["error"]["message"]
    assert d["error"]["message"].startswith("'1.map()/2/1.parallel()/0/1.w.a' of workflow 'nested' "
                                            "(execution 'ex-3')")


def test_code_looping_without_a_durable_call_fails_the_decision_naming_the_line():
    from orbit.core.runtime.code.errors import Stalled
    from orbit.service.stall import StallGuard

    reg = CodeRegistry()

    def spin(ctx: Any) -> None:
        ctx.step("w.a", 1)
        while True:  # no durable call: only the guard's signal gets out of here
            pass

    @workflow("spin", build="t", registry=reg)
    def stuck(ctx: Any, n: int) -> Any:
        return ctx.parallel(spin, lambda c: c.step("w.b", 2))

    @workflow("fine", build="t", registry=reg)
    def fine(ctx: Any, n: int) -> Any:
        return ctx.step("w.a", n)

    rt = CodeRuntime(reg)
    rt.guard = StallGuard(budget_s=0.3)
    state = ExecutionState("s1")
    for r in decide(stuck, state, StartMessage("s1", "start", workflow="spin", input=0), 0, _Ids(),
                    code_runtime=rt).events:
        apply(state, r)
    key = next(k for k in state.active if k.endswith("w.a"))
    t0 = time.monotonic()
    with pytest.raises(Stalled) as e:
        decide(stuck, state, ResultMessage("s1", "r", unit=key, token=state.units[key].token or "",
                                           output={"n": 1}), 1, _Ids(), code_runtime=rt)
    assert 0.3 <= time.monotonic() - t0 < 3
    loop = {f"at {__file__}:{spin.__code__.co_firstlineno + i}" for i in (2, 3)}  # `while True:` / `pass`
    assert str(e.value).startswith("workflow 'spin' ran 0.3 s without a durable call (budget 0.3 s")
    assert str(e.value).rpartition(", ")[2] in loop, str(e.value)
    assert "s1" not in rt._cache  # dropped: the retry replays from history
    # the same runtime goes on serving others (the timer and its signal handler are gone)
    other = ExecutionState("s2")
    d = decide(fine, other, StartMessage("s2", "start", workflow="fine", input=5), 0, _Ids(), code_runtime=rt)
    assert any(type(r.event).__name__ == "StepScheduled" for r in d.events)
    time.sleep(0.2)  # no late alarm


def test_the_instance_cache_is_bounded_by_parked_units_not_only_by_executions():
    reg = CodeRegistry()

    @workflow("fan", registry=reg)
    def fan(ctx: Any, n: int) -> Any:
        return ctx.parallel(*[lambda c: c.wait_for("go")] * n)

    h = Harness(fan)
    rt = CodeRuntime(reg, cache_units=25)
    h.engine.code_runtime = rt
    for i in range(3):
        h.start("fan", 10, id=f"f{i}")  # 11 live units each (10 waits and the group)
    assert list(rt._cache) == ["f1", "f2"]  # f0 evicted: 33 parked units > 25
    rt.forget()
    assert rt._cache == {} and rt._weights == {}
