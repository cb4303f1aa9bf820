"""Issue 25, item 3: one rule for the ids callers choose (`execution_id_problem`), and no id the
engine derives (child, continuation, schedule run, schedule parent) can be chosen by a caller."""

from __future__ import annotations

from typing import Any

import pytest
from orbit.core.decider.execute import next_execution_id
from orbit.core.history.storable import execution_id_problem
from orbit.core.schedule import state as schedule_state
from orbit.errors import NotFound, ValidationError
from orbit.service.http import handle_request
from orbit.testing.simulator import succeed

from tests.unit.dsl_harness import definition, sim_with

T = 1_767_225_600_000  # 2026-01-01T00:00:00Z
HOSTILE = ["P1/kid", "C1~1", "schedule:nightly", "nightly:2026-01-02T00:00:00Z",
           "nightly:2026-01-02T00:00:00.250Z", "a\nb", "<img src=x>", "tab\there", "\x1b[31mred", "",
           "x" * 201]


def child_ids() -> list[str]:
    """The ids of real children: a definition's workflow step, run on the simulator."""
    sim = sim_with({"kid": {"workflow": "child", "input": {}}})
    sim.register(definition({"c": {"task": "t.c"}}, name="child"))
    sim.worker("t.c", succeed({}))
    eid = sim.start("wf", {}, id="p1")
    sim.run()
    return [e["child_id"] for e in sim.history(eid) if e["type"] == "ChildStarted"]


def test_every_id_the_engine_derives_is_refused_as_a_callers_id() -> None:
    derived = [*child_ids(), next_execution_id("order-1"), next_execution_id("order-1~4"),
               schedule_state.execution_id("nightly", T), schedule_state.execution_id("nightly", T + 250),
               schedule_state.PARENT_PREFIX + "nightly"]
    assert derived[0] == "p1/kid"
    for eid in derived:
        assert execution_id_problem(eid) is not None, eid
    for fine in ["order-1", "nightly:eu", "a:b", "2026-01-02T00:00:00Z", "x:2026-01-02"]:
        assert execution_id_problem(fine) is None, fine


@pytest.mark.parametrize("bad", HOSTILE)
def test_a_fork_with_a_reserved_or_unprintable_id_is_refused_and_creates_nothing(bad: str) -> None:
    sim = sim_with({"a": {"task": "t.a"}})
    sim.worker("t.a", succeed({"v": 1}))
    eid = sim.start("wf", {}, id="P1")
    sim.run()
    before = len(sim.history(eid))
    with pytest.raises(ValidationError) as e:
        sim.fork(eid, "a", id=bad)
    assert e.value.problems[0].path == "id" and "\n" not in str(e.value), e.value
    assert len(sim.history(eid)) == before  # the original is untouched: no ForkCreated
    if bad:
        with pytest.raises(NotFound):
            sim.describe(bad)


@pytest.mark.parametrize("bad", HOSTILE)
def test_a_start_with_a_reserved_or_unprintable_id_is_refused(bad: str) -> None:
    sim = sim_with({"a": {"task": "t.a"}})
    with pytest.raises(ValidationError) as e:
        sim.start("wf", {}, id=bad)
    assert e.value.problems[0].path == "id" and "\n" not in str(e.value)


def test_the_http_api_answers_400_naming_the_field_for_fork_start_and_redrive_ids() -> None:
    sim = sim_with({"a": {"task": "t.a"}})
    sim.worker("t.a", succeed({"v": 1}))
    sim.start("wf", {}, id="P1")
    sim.run()
    calls: list[tuple[str, dict[str, Any]]] = [
        ("/executions/P1/fork", {"from_step": "a", "id": "P1/kid"}),
        ("/executions/P1/fork", {"from_step": "a", "id": "C1~1"}),
        ("/executions/P1/fork", {"from_step": "a", "id": "schedule:nightly"}),
        ("/executions/P1/fork", {"from_step": "a", "id": "x\ny"}),
        ("/executions/P1/fork", {"from_step": "a", "id": "<img>"}),
        ("/executions", {"workflow": "wf", "id": "nightly:2026-01-02T00:00:00Z"}),
        ("/executions/P1/redrive", {"id": "r\n1"}),
    ]
    for path, body in calls:
        status, answer = handle_request(sim.engine, "POST", path, body)
        assert status == 400 and answer["error"]["problems"][0]["path"] == "body.id", (path, answer)
        assert "\n" not in answer["error"]["message"]


def test_a_schedule_still_starts_its_own_occurrence_and_a_caller_cannot_take_it_first() -> None:
    sim = sim_with({"a": {"task": "t.a"}})
    occurrence = schedule_state.execution_id("nightly", T + 86_400_000)
    with pytest.raises(ValidationError, match="runs of schedules"):
        sim.start("wf", {}, id=occurrence)
    # the schedule's own start (it names its parent) is not a caller's: it goes through
    parent = {"execution_id": "schedule:nightly", "step": "run"}
    eid = sim.engine.start("wf", None, {}, occurrence, parent=parent)
    assert eid == occurrence and sim.describe(eid)["status"] == "RUNNING"
