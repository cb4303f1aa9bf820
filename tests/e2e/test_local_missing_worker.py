"""A task no worker serves waits in its queue (issue 26): until a worker that serves it appears, or
its `queue_timeout` ends it; `on_missing_worker: fail` fails it at once. Real handlers on moto."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from orbit.errors import OrbitError
from orbit.local import LocalStack
from orbit.worker import tasks as sdk

LATE = "orbit: 1\nname: late\nsteps:\n  a: {task: late.work, queue: q1, input: {n: \"{% input.n %}\"}}\n"
BOUNDED = "orbit: 1\nname: bounded\nsteps:\n  a: {task: late.never, queue_timeout: 5m}\n"
EAGER = "orbit: 1\nname: eager\nsteps:\n  a: {task: late.never, on_missing_worker: fail}\n"


@pytest.fixture
def stack() -> Iterator[LocalStack]:
    with LocalStack(mode="inprocess") as st:
        for text in (LATE, BOUNDED, EAGER):
            st.register(text)
        yield st
    with sdk._TASKS_LOCK:  # the process-wide registry is shared with other tests (xdist)
        sdk._TASKS.pop("late.work", None)


def test_a_task_without_a_worker_stays_queued_and_a_worker_started_later_completes_it(stack):
    eid = stack.start("late", {"n": 20})
    stack.run_until_idle()
    for _ in range(12):  # an hour: the message comes back again and again, and keeps waiting
        stack.advance(300)
    desc = stack.describe(eid)
    assert desc["status"] == "RUNNING" and desc["steps"]["a"]["status"] == "SCHEDULED"
    assert desc["steps"]["a"]["waiting"] == "waiting for a worker for task late.work on queue q1"
    assert [e["type"] for e in stack.history(eid)] == ["WorkflowCreated", "WorkflowStarted", "StepScheduled"]
    [worker] = [p for p in stack.cloud.pollers if p.mapping.function.logical_id == "ExampleWorkerFunction"]
    assert worker.invocations >= 12, worker.invocations  # it came back every time: never dead-lettered
    said = "waiting: a: for a worker for task late.work on queue q1 .*register a worker function"
    with pytest.raises(OrbitError, match=said):
        stack.run_until_done(eid)  # nothing will happen on its own: said at once, no spinning

    @sdk.task("late.work")
    def work(input, ctx):
        return input["n"] + 1

    stack.advance(300)  # the longest a waiting message sits before it is looked at again
    desc = stack.run_until_done(eid)
    assert desc["status"] == "COMPLETED" and desc["steps"]["a"]["output"] == 21
    assert "waiting" not in desc["steps"]["a"]


def test_its_queue_timeout_ends_the_wait(stack):
    eid = stack.start("bounded", {})
    stack.run_until_idle()
    assert stack.describe(eid)["steps"]["a"]["status"] == "SCHEDULED"
    stack.auto_advance = True
    desc = stack.run_until_done(eid)
    assert desc["status"] == "FAILED" and desc["error"]["code"] == "QUEUE_TIMEOUT"


def test_a_step_may_opt_into_failing_at_once(stack):
    eid = stack.start("eager", {})
    stack.run_until_idle()
    desc = stack.describe(eid)
    assert desc["status"] == "FAILED" and desc["error"]["code"] == "UNKNOWN_TASK"
    assert "no worker function is registered for task 'late.never'" in desc["error"]["message"]
