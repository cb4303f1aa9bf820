"""A timeout records its deadline: in WorkflowTimeoutReached and in describe's `deadline_ms`
(issue 18: A3S Flow's `Timeout { deadline, reason }`)."""

from __future__ import annotations

from code_harness import Harness
from orbit.core.history.model import fold, recorded_from_dict
from orbit.core.runtime.code.errors import WorkflowTimedOut
from orbit.workflow import CodeRegistry, workflow

from tests.unit.dsl_harness import T0, sim_with

REG = CodeRegistry()


@workflow("own-deadline", registry=REG)
def own_deadline(ctx, input):
    ctx.sleep("1h")
    deadline = input["deadline_ms"]
    if ctx.now().timestamp() * 1000 > deadline:  # the recorded time: replay gives the same answer
        raise WorkflowTimedOut("the offer expired", deadline_ms=deadline)
    return "in time"


@workflow("timed", registry=REG, timeout="2h")
def timed(ctx, input):
    return ctx.sleep("1d")


def reached(h: Harness) -> dict:
    return next(e for e in h.history("ex-1") if e["type"] == "WorkflowTimeoutReached")


def test_a_code_workflow_that_times_out_on_its_own_deadline_records_it():
    h = Harness(own_deadline)
    h.start("own-deadline", {"deadline_ms": 5})
    h.run()
    d = h.describe()
    assert d["status"] == "TIMED_OUT" and d["deadline_ms"] == 5
    assert {k: reached(h)[k] for k in ("deadline_ms", "reason")} == {"deadline_ms": 5,
                                                                     "reason": "the offer expired"}
    assert fold("ex-1", [recorded_from_dict(e) for e in h.history("ex-1")]).describe()["deadline_ms"] == 5


def test_the_workflow_timeout_of_a_code_workflow_records_the_deadline_that_passed():
    h = Harness(timed)
    h.start("timed")
    started = h.history("ex-1")[0]["timestamp_ms"]
    assert h.describe()["deadline_ms"] == started + 7_200_000  # known while it runs
    h.run()
    d = h.describe()
    assert d["status"] == "TIMED_OUT" and d["deadline_ms"] == started + 7_200_000
    assert reached(h)["deadline_ms"] == started + 7_200_000 and "reason" not in reached(h)


def test_a_definition_timeout_records_its_deadline_and_one_without_a_timeout_has_none():
    sim = sim_with({"nap": {"sleep": "3h"}}, timeout="1h")
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    event = next(e for e in sim.history(eid) if e["type"] == "WorkflowTimeoutReached")
    assert event["deadline_ms"] == T0 + 3_600_000 == sim.describe(eid)["deadline_ms"]
    plain = sim_with({"nap": {"sleep": "1m"}})
    eid = plain.start("wf", {}, id="e2")
    plain.run()
    assert plain.describe(eid)["deadline_ms"] is None
