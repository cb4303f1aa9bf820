"""Reconciliation in the crash world (issue 31 §5): the decider dies before committing a task's
answer, so the answer comes back only after the decision queue's visibility timeout (180 s). The
attempt's 1 min timeout fires first and the retry waits 20 min; the redelivered success of attempt
1 then resolves the step (`reconciled_attempt`), and the retry never runs. The crash matrix's
invariants hold (each step succeeded once, each task attempt ran at most once, nothing left)."""

from __future__ import annotations

from typing import Any

from crash_matrix import RECORDER, reference_run, run_point
from crash_points import Call, CrashPoint
from crash_world import EXECUTION, RUNS, Scenario, fresh_world

SLOW = Scenario(({"orbit": 1, "name": "crashmx-reconcile", "version": "1",
                  "steps": {"only": {"task": "crashmx.double", "input": {"v": "{% input.v %}"},
                                     "timeout": "1m", "retry": {"max_attempts": 2, "backoff": "20m"}}},
                  "output": "{% steps.only.output %}"},), {"v": 1})


def test_an_answer_delayed_past_its_timeout_by_a_crash_is_reconciled(clients: Any) -> None:
    ref = reference_run(clients, SLOW)
    sent = ref.calls.index(Call("example_worker", "sqs", "SendMessage", "DecisionQueue: started,result"))
    commit = next(i for i in range(sent + 1, len(ref.calls))
                  if ref.calls[i].handler == "decider" and ref.calls[i].op == "PutItem")
    outcome = run_point(clients, ref, CrashPoint(commit, "before"))
    assert outcome.ok, str(outcome)
    with fresh_world(clients, RECORDER, SLOW, CrashPoint(commit, "before")) as world:
        world.run()
        history = world.container().engine.history(EXECUTION)
        runs = dict(RUNS)
    types = [e["type"] for e in history]
    assert types.index("StepAttemptFailed") < types.index("RetryScheduled") < types.index("StepSucceeded")
    ok = next(e for e in history if e["type"] == "StepSucceeded")
    assert (ok["attempt"], ok.get("reconciled_attempt"), ok["output"]) == (2, 1, {"v2": 2})
    assert next(e for e in history if e["type"] == "StepAttemptFailed")["error"]["code"] == "TIMEOUT"
    assert types.count("StepScheduled") == 1 and [a for _, a in runs] == [1]  # attempt 2 never ran
