"""A 1,000-element fan-out through the real handlers on the local stack (in-process moto).

All 1,000 tasks are dispatched at once (no concurrency limit), so the task queue
is 1,000 deep: the depth at which moto's receive used to cost hundreds of
milliseconds. Some elements fail their first attempt and finish after a retry,
so results arrive out of index order and the output must still be in it.
No timing assertion: `benchmarks/bench_fanout.py` prints the figures.
"""

from __future__ import annotations

import orbit
import pytest
from orbit.local import LocalStack

N = 1000
FLAKY_EVERY = 50  # elements 0, 50, 100, ... fail once (retryable) and succeed on attempt 2


def _double(inp, ctx):
    if inp["v"] % FLAKY_EVERY == 0 and ctx.attempt == 1:
        raise orbit.TaskError("FLAKY", f"element {inp['v']} fails its first attempt", retryable=True)
    return {"v": inp["v"] * 2, "attempt": ctx.attempt}


@pytest.fixture(scope="module")
def stack():
    from orbit.worker import task

    task("e2e.fan1000.double")(_double)
    with LocalStack(mode="inprocess") as st:
        st.register(
            {
                "orbit": 1,
                "name": "e2e-fan-1000",
                "version": "1",
                "steps": {
                    "each": {
                        "for": "{% input.items %}",
                        "task": "e2e.fan1000.double",
                        "input": {"v": "{% item %}"},
                        "retry": {"max_attempts": 2, "backoff": "1s"},
                    }
                },
                "output": "{% steps.each.output %}",
            }
        )
        yield st


def test_fan_out_of_1000_returns_every_output_in_index_order(stack):
    eid = stack.start("e2e-fan-1000", {"items": list(range(N))})
    desc = stack.run_until_done(eid, wall_timeout_s=600)

    assert desc["status"] == "COMPLETED", desc.get("error")
    expected = [{"v": 2 * i, "attempt": 2 if i % FLAKY_EVERY == 0 else 1} for i in range(N)]
    assert desc["output"] == expected
    elements = {u: s for u, s in desc["steps"].items() if u.startswith("each[")}
    assert sorted(elements) == sorted(f"each[{i}]" for i in range(N))
    assert all(s["status"] == "SUCCEEDED" for s in elements.values())

    history = stack.history(eid)
    succeeded = [e["step"] for e in history if e["type"] == "StepSucceeded" and e["step"].startswith("each[")]
    assert sorted(succeeded) == sorted(elements)  # each element succeeded exactly once
    assert succeeded != [f"each[{i}]" for i in range(N)]  # the retried ones finished late...
    assert succeeded[-1] in {f"each[{i}]" for i in range(0, N, FLAKY_EVERY)}
    assert [e["type"] for e in history[-2:]] == ["StepSucceeded", "WorkflowCompleted"]  # ...yet order held


def test_the_queues_drain_without_errors(stack):
    from orbit.local import clock

    # what is still to come after the last decision (e.g. retry wakes, delayed): jump to it, handle it
    stack.cloud.run_until_idle(auto_advance=True)
    for queue in stack.cloud.deployment.queues.values():
        assert clock.visible_count(queue.name) == 0, queue.name
    assert clock.next_sqs_wake_ms() is None
    assert stack.cloud.errors == []
