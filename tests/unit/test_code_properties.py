"""Property: the warm cache never changes what a code workflow does.

For generated worker behaviours, an execution run with cached instances and
one replayed from the first call on every decision write the same history.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from orbit.core.history.events import TaskError
from orbit.core.runtime.code.errors import StepFailed
from orbit.service import replay_host as code_runtime
from orbit.testing.simulator import Simulator, fail, succeed
from orbit.workflow import CodeRegistry, workflow

REG = CodeRegistry()


@workflow("prop", build="p", registry=REG, timeout="1d")
def prop(ctx, input):
    out = []
    for i in range(input["rounds"]):
        try:
            out.append(ctx.step("p.a", {"i": i}, on_exhausted="continue_workflow", retry={"max_attempts": 2}))
        except StepFailed as e:
            out.append(e.code)
            ctx.progress({"failed": i})
        if i % 2:
            out.append(ctx.parallel(("p.b", i), ("p.a", -i), return_exceptions=True) and ctx.random())
    out.append(ctx.map("p.b", list(range(input["items"])), concurrency=2, tolerated_failures=99))
    return out


outcome = st.sampled_from(["ok", "fail", "fatal"])


def _behaviour(kind: str):
    return {"ok": succeed({"v": 1}), "fail": fail("FLAKY", "try again"),
            "fatal": fail("BROKEN", "no", retryable=False)}[kind]


def _history(rounds: int, items: int, a: list[str], b: list[str], cached: bool) -> list[dict]:
    rt = code_runtime.default_runtime()
    rt.forget()
    size = rt.cache_size
    rt.cache_size = size if cached else 0
    try:
        sim = Simulator(seed="prop")
        sim.register(prop)
        sim.worker("p.a", *[_behaviour(k) for k in a])
        sim.worker("p.b", *[_behaviour(k) for k in b])
        eid = sim.start("prop", {"rounds": rounds, "items": items}, id="prop-1")
        sim.run()
        return sim.history(eid)
    finally:
        rt.cache_size = size
        rt.forget()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 4), st.integers(0, 4), st.lists(outcome, min_size=1, max_size=8),
       st.lists(outcome, min_size=1, max_size=8))
def test_cached_and_cold_replays_write_the_same_history(rounds, items, a, b):
    warm = _history(rounds, items, a, b, cached=True)
    cold = _history(rounds, items, a, b, cached=False)
    assert warm == cold
    assert {"WorkflowCompleted", "WorkflowFailed"} & {e["type"] for e in warm}


def test_the_property_workflow_can_fail_and_complete():
    assert _history(1, 1, ["ok"], ["ok"], cached=True)[-1]["type"] == "WorkflowCompleted"
    failed = _history(2, 0, ["ok", "fatal", "fatal", "fatal"], ["fatal"], cached=True)
    end = next(e for e in failed if e["type"] == "WorkflowFailed")  # late answers may follow it
    assert TaskError.from_dict(end["error"]).code == "BROKEN"
