"""`on_missing_worker` on task steps (issue 26): checked like every key, carried from the definition
to the worker's dispatch, and kept by a snapshot."""

from __future__ import annotations

import pytest
from orbit.core.definition import parse_definition
from orbit.core.definition.parse import DefinitionError
from orbit.core.history.state import UnitState

from tests.unit.dsl_harness import definition, sim_with


def _problems(steps: dict) -> list[str]:
    with pytest.raises(DefinitionError) as caught:
        parse_definition(definition(steps))
    return [str(p) for p in caught.value.problems]


def test_only_wait_or_fail_on_a_worker_task_step() -> None:
    assert _problems({"a": {"task": "t.x", "on_missing_worker": "retry"}}) == [
        "steps.a.on_missing_worker: must be wait (the default) or fail, not 'retry'"]
    assert _problems({"a": {"wait_for": "go", "on_missing_worker": "fail"}}) == [
        "steps.a.on_missing_worker: not used by a wait_for step (only task)"]
    assert _problems({"a": {"task": "t.x", "inline": True, "on_missing_worker": "fail"}}) == [
        "steps.a.on_missing_worker: an inline step runs in the decider, not on a worker queue: "
        "remove `on_missing_worker` or `inline`"]
    wait = parse_definition(definition({"a": {"task": "t.x", "on_missing_worker": "wait"}}))
    assert wait.steps["a"].on_missing_worker is None  # the default, spelt out


def test_the_dispatch_carries_fail_and_the_event_omits_the_default() -> None:
    sim = sim_with({"a": {"task": "t.x", "on_missing_worker": "fail"}, "b": {"task": "t.y"}})
    sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    scheduled = {e["step"]: e for e in sim.history("e1") if e["type"] == "StepScheduled"}
    assert scheduled["a"]["on_missing_worker"] == "fail" and "on_missing_worker" not in scheduled["b"]
    state = sim.engine.load_state("e1")
    assert state.units["a"].on_missing_worker == "fail"
    kept = UnitState.from_dict(state.units["a"].to_dict())
    assert kept.on_missing_worker == "fail"
    assert "on_missing_worker" not in state.units["b"].to_dict()  # old snapshots read the same


def test_a_code_workflow_step_may_opt_in_too() -> None:
    from orbit.core.runtime.code.specs import Step

    assert Step("t.x", on_missing_worker="fail").command("u").on_missing_worker == "fail"
    assert Step("t.x", on_missing_worker="wait").command("u").on_missing_worker is None
    assert Step("t.x").command("u").on_missing_worker is None
    with pytest.raises(TypeError, match="on_missing_worker must be 'wait' or 'fail', got 'never'"):
        Step("t.x", on_missing_worker="never")


def test_a_code_workflow_records_the_option_on_its_step() -> None:
    import orbit

    from tests.unit.code_harness import ID, Harness

    @orbit.workflow("eager-code")
    def eager(ctx, input):
        return ctx.step("t.pay", {}, on_missing_worker="fail")

    sim = Harness(eager, workers={"t.pay": lambda input, attempt: 1})
    sim.start("eager-code", {}, id=ID)
    sim.run()
    [scheduled] = [e for e in sim.history(ID) if e["type"] == "StepScheduled"]
    assert scheduled["on_missing_worker"] == "fail" and sim.describe(ID)["status"] == "COMPLETED"
