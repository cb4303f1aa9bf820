"""Flow control given per call (docs/flow-control.md, "Per call"): `ctx.step(..., key=, priority=)`
and a definition step's `flow: {key, priority}` count the attempt under that key and order it by
that priority; both are recorded in the StepScheduled event and compared on replay; hostile values
are refused with one line naming the call."""

from __future__ import annotations

from typing import Any

import orbit
import orbit.testing
import pytest
from code_harness import Harness
from orbit.core.definition import parse_definition
from orbit.errors import ValidationError
from orbit.testing.replay import ReplayDiverged
from orbit.testing.simulator import Simulator, late
from orbit.workflow import CodeRegistry
from test_flow_limits import T0, peak, spans, wf

ONE_AT_A_TIME = {"partner.call": {"concurrency": {"limit": 1}}}  # no key expression: the call gives it


def test_a_code_step_key_counts_the_attempt_under_that_key() -> None:
    reg = CodeRegistry()

    @orbit.workflow("keyed", registry=reg, tasks=ONE_AT_A_TIME)
    def keyed(ctx: Any, input: Any) -> Any:
        return ctx.step("partner.call", input, key=input["partner"])

    sim = Simulator()
    sim.register(keyed)
    sim.worker("partner.call", late(1000, "ok"))
    ids = [sim.start("keyed", {"partner": p}, id=f"{p}{i}") for p in "ab" for i in range(3)]
    sim.run()
    assert {sim.describe(e)["status"] for e in ids} == {"COMPLETED"}
    for p in "ab":  # one at a time per partner, the two partners side by side
        runs = spans(sim, [e for e in ids if e[0] == p], "StepDispatched", "StepSucceeded")
        assert peak(runs) == 1, runs
        assert sorted(a for a, _, _ in runs) == [0, 1000, 2000]
    scheduled = [r for r in sim.history("a0") if r["type"] == "StepScheduled"]
    assert scheduled[0]["flow_key"] == "a"
    assert all(not c.holders and not c.waiting for c in sim.limits.counters.values())


def test_a_code_step_priority_overtakes_earlier_bulk_calls() -> None:
    reg = CodeRegistry()

    @orbit.workflow("prio", registry=reg, tasks=ONE_AT_A_TIME)
    def prio(ctx: Any, input: Any) -> Any:
        return ctx.step("partner.call", input, priority=1 if input["urgent"] else 5)

    sim = Simulator()
    sim.register(prio)
    sim.worker("partner.call", late(100, "ok"))
    ids = [sim.start("prio", {"urgent": False}, id=f"bulk{i}") for i in range(4)]
    ids += [sim.start("prio", {"urgent": True}, id=f"urgent{i}") for i in range(2)]
    sim.run()
    order = [e for _, _, e in sorted(spans(sim, ids, "StepDispatched", "StepSucceeded"))]
    assert order == ["bulk0", "urgent0", "urgent1", "bulk1", "bulk2", "bulk3"]
    first = next(r for r in sim.history("urgent0") if r["type"] == "StepScheduled")
    assert first["priority"] == 1 and first["timestamp_ms"] == T0


@pytest.mark.parametrize(("options", "said"), [
    ({"key": 42}, "key must be a string"),
    ({"key": ""}, "key must be a string of 1..128 characters, not one of 0"),
    ({"key": "x" * 129}, "not one of 129"),
    ({"key": "a\nb"}, "printable"),
    ({"priority": 0}, "priority must be a whole number 1 (highest) .. 5, not 0"),
    ({"priority": True}, "not True"),
    ({"priority": "1"}, "not '1'"),
    ({"priority": 2.0}, "not 2.0"),
])
def test_hostile_call_values_are_refused_in_one_line_naming_the_call(options: dict[str, Any],
                                                                    said: str) -> None:
    with pytest.raises(TypeError) as e:
        orbit.Step("partner.call", {}, **options)
    assert str(e.value).startswith("step 'partner.call': "), str(e.value)
    assert said in str(e.value) and "\n" not in str(e.value)


def test_a_hostile_key_fails_the_run_naming_the_call() -> None:
    reg = CodeRegistry()

    @orbit.workflow("hostile", registry=reg, tasks=ONE_AT_A_TIME, on_workflow_error="fail")
    def hostile(ctx: Any, input: Any) -> Any:
        return ctx.step("partner.call", input, name="call", key={"not": "a string"})

    sim = Simulator()
    sim.register(hostile)
    sim.worker("partner.call", late(1, "ok"))
    eid = sim.start("hostile", {})
    sim.run()
    d = sim.describe(eid)
    assert d["status"] == "FAILED"
    assert "step 'call': key must be a string" in d["error"]["message"]
    assert not any(r["type"] == "StepScheduled" for r in sim.history(eid))


def _history(key: str, priority: int) -> list[dict[str, Any]]:
    def fn(ctx: Any, input: Any) -> Any:
        return ctx.step("a.x", {}, key=key, priority=priority)

    h = Harness(orbit.workflow("calls", registry=CodeRegistry())(fn), workers={"a.x": lambda i, a: "ok"})
    h.start("calls", {})
    h.run()
    assert h.describe()["status"] == "COMPLETED"
    return h.history()


@pytest.mark.parametrize(("key", "priority", "differs"), [("b", 2, {"key"}), ("a", 4, {"priority"}),
                                                           ("a", 2, set())])
def test_replay_compares_the_key_and_the_priority(key: str, priority: int, differs: set[str]) -> None:
    history = _history("a", 2)

    def changed(ctx: Any, input: Any) -> Any:
        return ctx.step("a.x", {}, key=key, priority=priority)

    wf_ = orbit.workflow("calls", registry=CodeRegistry())(changed)
    if not differs:
        orbit.testing.replay(history, wf_)
        return
    with pytest.raises(ReplayDiverged) as e:
        orbit.testing.replay(history, wf_)
    assert set(e.value.details["differs"]) == differs, e.value.details


def test_a_definition_step_flow_gives_its_key_and_priority() -> None:
    sim = Simulator()
    step = {"task": "partner.call", "flow": {"key": "{% input.p %}", "priority": "{% input.u ? 1 : 5 %}"}}
    sim.register(wf("dsl", {"a": step}, tasks=ONE_AT_A_TIME))
    sim.worker("partner.call", late(100, "ok"))
    ids = [sim.start("dsl", {"p": "a", "u": False}, id=f"bulk{i}") for i in range(3)]
    ids += [sim.start("dsl", {"p": "a", "u": True}, id="urgent")]
    ids += [sim.start("dsl", {"p": "b", "u": False}, id="other")]
    sim.run()
    runs = sorted(spans(sim, ids, "StepDispatched", "StepSucceeded"))
    assert [e for _, _, e in runs] == ["bulk0", "other", "urgent", "bulk1", "bulk2"]
    sched = next(r for r in sim.history("urgent") if r["type"] == "StepScheduled")
    assert (sched["flow_key"], sched["priority"]) == ("a", 1)


def test_a_definition_step_flow_value_that_is_not_a_priority_fails_the_step_naming_it() -> None:
    sim = Simulator()
    sim.register(wf("dslbad", {"a": {"task": "partner.call", "flow": {"priority": "{% input.p %}"}}},
                    tasks=ONE_AT_A_TIME))
    sim.worker("partner.call", late(1, "ok"))
    eid = sim.start("dslbad", {"p": 7})
    sim.run()
    d = sim.describe(eid)
    assert d["status"] == "FAILED"
    assert "flow.priority must be a whole number 1 (highest) .. 5, not 7" in d["error"]["message"]


@pytest.mark.parametrize(("flow", "path"), [
    ({"priority": 9}, "steps.a.flow.priority"),
    ({"key": ""}, "steps.a.flow.key"),
    ({"kye": "x"}, "steps.a.flow.kye"),
    ("fast", "steps.a.flow"),
    ({"key": "{% input. %}"}, "steps.a.flow.key"),
])
def test_a_bad_step_flow_is_refused_at_registration_naming_the_path(flow: Any, path: str) -> None:
    with pytest.raises(ValidationError) as e:
        parse_definition(wf("bad", {"a": {"task": "t.a", "flow": flow}}))
    assert any(p.path == path for p in e.value.problems), str(e.value)
    assert "\n" not in str(e.value)
