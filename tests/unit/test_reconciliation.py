"""Reconciliation (issue 31, docs/definitions.md): an older history, recorded when a late success
of a timed-out attempt was StaleResultIgnored, folds to the state it folded to then; the new rule
shows up only as a flag on the events it records."""

from __future__ import annotations

import json
from pathlib import Path

from orbit.core.history.events import StepSucceeded
from orbit.core.history.model import fold, recorded_from_dict

from tests.unit.test_golden_dsl import replay_problems

LEGACY = Path(__file__).resolve().parents[1] / "golden" / "legacy" / "late_answer_stale.json"


def test_a_history_recorded_before_reconciliation_replays_unchanged() -> None:
    golden = json.loads(LEGACY.read_text())
    types = [e["type"] for e in golden["history"]]
    assert types[types.index("StaleResultIgnored") + 1:] == [
        "StepScheduled", "StepDispatched", "StepSucceeded", "WorkflowCompleted"]
    assert replay_problems(golden) == []
    state = fold(golden["execution_id"], [recorded_from_dict(e) for e in golden["history"]])
    assert state.output == {"a": "second"} and state.units["a"].attempt == 2


def test_the_flag_is_absent_from_an_ordinary_success() -> None:
    assert "reconciled_attempt" not in StepSucceeded("a", 1, "ok").to_dict()
    flagged = StepSucceeded("a", 2, "ok", reconciled_attempt=1).to_dict()
    assert flagged["reconciled_attempt"] == 1
    back = recorded_from_dict({**flagged, "seq": 5, "timestamp_ms": 0})
    assert back.event == StepSucceeded("a", 2, "ok", reconciled_attempt=1)


def test_a_code_workflow_step_is_reconciled_too() -> None:
    from orbit.testing.simulator import late
    from orbit.workflow import CodeRegistry, workflow

    from tests.unit.code_harness import Harness

    @workflow("reconcile-code", registry=CodeRegistry())
    def wf(ctx, input):
        return ctx.step("r.slow", {}, timeout="10s", retry={"max_attempts": 3, "backoff": "1m"})

    h = Harness(wf)
    h.worker("r.slow", late(15_000, "first"), late(1_000, "second"))
    h.start("reconcile-code")
    h.run()
    d = h.describe()
    assert d["status"] == "COMPLETED" and d["output"] == "first"
    ok = [e for e in h.history() if e["type"] == "StepSucceeded"]
    assert [(e["attempt"], e["reconciled_attempt"]) for e in ok] == [(2, 1)]
    assert [e["type"] for e in h.history()].count("StepScheduled") == 1  # the retry never ran


def test_a_reconciled_answer_delivered_again_is_applied_once() -> None:
    from orbit.testing.simulator import hang, succeed

    from tests.unit.dsl_harness import events, sim_with

    sim = sim_with({"a": {"task": "t.a", "timeout": "10s", "retry": {"max_attempts": 2, "backoff": "1m"}}})
    sim.worker("t.a", hang(), succeed("second"))
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    sim.advance(15_000)  # attempt 1 timed out; the retry waits
    first = events(sim, eid, "StepScheduled")[0]["token"]
    answer = {"kind": "result", "execution_id": eid, "id": f"result:{first}", "unit": "a",
              "token": first, "output": "first"}
    sim.engine.handle(answer)
    after = sim.history(eid)
    sim.engine.handle(answer)  # the queue delivers it again: the same commit's message
    assert sim.history(eid) == after
    sim.engine.handle({**answer, "id": f"result:{first}:again"})  # another message, same token
    sim.run()
    assert [e["type"] for e in sim.history(eid)].count("StepSucceeded") == 1
    assert events(sim, eid, "StaleResultIgnored")[-1]["outcome"] == "succeeded"
    assert sim.describe(eid)["output"] == {"a": "first"}
