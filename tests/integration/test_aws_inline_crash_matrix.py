"""The crash matrix for inline steps, through the real handlers on moto (issue 15).

The workflow: an at_least_once inline step, an at_most_once inline step (retried by its policy), a
worker step, and another inline step, so a chain runs in the decider invocation that handles the
API's hand-over, a worker step sits in the middle, and a second chain follows the worker's result.
For every AWS call of the reference run the process dies before it, and for writes and sends right
after it landed; the system then settles on the virtual clock (redeliveries after the visibility
timeout, leases expiring) and crash_matrix.check's invariants must hold: the execution completes
with the reference output, each step succeeds exactly once, a redelivered attempt follows a
StepAttemptUncertain, nothing is left queued. On top: the at_most_once step's function never ran
twice for one attempt.
"""

from __future__ import annotations

from typing import Any

import pytest
from crash_matrix import Reference, reference_run, run_point
from crash_points import Call, crash_points
from crash_world import EXECUTION, RUNS, Scenario

INLINE = Scenario(({"orbit": 1, "name": "crashmx-inline", "version": "1", "steps": {
    "a": {"task": "crashmx.double", "inline": True, "input": {"v": "{% input.v %}"}},
    "b": {"task": "crashmx.double", "inline": True, "semantics": "at_most_once",
          "retry": {"max_attempts": 3, "backoff": "1s"}, "input": {"v": "{% steps.a.output.v2 %}"}},
    "w": {"task": "crashmx.double", "input": {"v": "{% steps.b.output.v2 %}"}},
    "c": {"task": "crashmx.double", "inline": True, "input": {"v": "{% steps.w.output.v2 %}"}}},
    "output": "{% steps.c.output %}"},), {"v": 1})
SHARDS = 3


@pytest.fixture(scope="module")
def reference(clients: Any) -> Reference:
    return reference_run(clients, INLINE)


def test_the_reference_runs_inline_steps_in_the_decider_with_no_task_message(reference: Reference) -> None:
    assert reference.output == {"v2": 16}
    sends = [c for c in reference.calls if c.service == "sqs" and c.op.startswith("SendMessage")]
    # one task message (the worker step) and its answer; the API hands the first chain over once
    assert [c.detail for c in sends if "DefaultTaskQueue" in c.detail] == ["DefaultTaskQueue: dispatch_task"]
    assert Call("api", "sqs", "SendMessage", "DecisionQueue: wake") in sends
    assert dict(reference.runs) == {(f"{EXECUTION}:{s}", 1): 1 for s in "abwc"}


@pytest.mark.parametrize("shard", range(SHARDS))
def test_every_crash_point_of_an_inline_workflow_keeps_the_invariants(clients: Any, reference: Reference,
                                                                      shard: int) -> None:
    points = crash_points(reference.calls)[shard::SHARDS]
    failed = []
    for p in points:
        outcome = run_point(clients, reference, p)
        twice = {k: n for k, n in RUNS.items() if k[0].endswith(":b") and n > 1}
        if twice:
            outcome.problems.append(f"at_most_once step b ran twice for one attempt: {twice}")
        if not outcome.ok:
            failed.append(outcome)
    assert not failed, f"{len(failed)} of {len(points)} crash points broke an invariant:\n" + \
        "\n".join(str(o) for o in failed)
