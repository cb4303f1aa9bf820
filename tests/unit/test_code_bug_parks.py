"""A bug in a code workflow parks the execution (issue 31 §1); a fixed deploy carries it on.

An unexpected exception (KeyError, AttributeError...) raised by the workflow's own code records
ExecutionParked with the traceback (file, line, the code around it) instead of WorkflowFailed.
Deploying a build whose replay gets past it un-parks the execution by itself (the park's retry
timer), as for a build mismatch: no redrive. `on_workflow_error="fail"` keeps WORKFLOW_ERROR, and
an `orbit.ApplicationError` (TaskError) raised on purpose fails the execution as before.
"""

from __future__ import annotations

import pytest
from code_harness import Harness
from orbit import ApplicationError, TaskError
from orbit.errors import ValidationError
from orbit.workflow import CodeRegistry, workflow

REG = CodeRegistry()


def echo(input, attempt):
    return {"echo": input}


@workflow("bug-wf", registry=REG)
def buggy(ctx, input):
    a = ctx.step("a.first", {"n": 1})
    total = a["echo"]["n"] + input["missing"]  # the bug: KeyError
    return ctx.step("a.second", {"total": total})


@workflow("bug-wf", registry=REG)
def fixed(ctx, input):
    a = ctx.step("a.first", {"n": 1})
    total = a["echo"]["n"] + input.get("missing", 41)  # the fix
    return ctx.step("a.second", {"total": total})


def test_a_key_error_parks_with_the_traceback_and_a_fixed_deploy_completes_it() -> None:
    h = Harness(buggy, workers={"a.first": echo, "a.second": echo})
    h.start("bug-wf", {})
    d = h.describe()
    assert d["status"] == "RUNNING" and d["error"] is None, d
    parked = d["parked"]
    assert parked["code"] == "WORKFLOW_ERROR" and parked["message"].startswith("KeyError: 'missing' at ")
    frame = parked["details"]["traceback"][-1]
    line = buggy.fn.__wrapped__.__code__.co_firstlineno + 3
    assert (frame["file"], frame["line"], frame["function"]) == (__file__, line, "buggy")
    assert f"> {line:4d} |     total = a[\"echo\"][\"n\"] + input[\"missing\"]" in frame["code"]
    assert parked["details"]["exception"] == "KeyError"
    assert "WorkflowFailed" not in h.types() and "ExecutionParked" in h.types()
    h.advance(5 * 60_000)  # the park's retries replay the same bug: still parked
    assert h.describe()["parked"]["code"] == "WORKFLOW_ERROR"
    h.deploy(fixed)
    h.run()  # no message arrives: the park's retry timer replays it on the fixed build
    d = h.describe()
    assert d["status"] == "COMPLETED" and d["output"] == {"echo": {"total": 42}}, d
    assert d["parked"] is None and d["build"] == fixed.build
    types = h.types()
    assert types.index("ExecutionUnparked") < types.index("BuildSwitched") < types.index("WorkflowCompleted")
    assert [t for t, _ in h.calls] == ["a.first", "a.second"]  # a.first ran once: nothing redone


def test_on_workflow_error_fail_keeps_workflow_error() -> None:
    reg = CodeRegistry()

    @workflow("bug-fail", registry=reg, on_workflow_error="fail")
    def wf(ctx, input):
        return input.nope  # AttributeError

    h = Harness(wf)
    h.start("bug-fail", {})
    d = h.describe()
    assert d["status"] == "FAILED" and d["error"]["code"] == "WORKFLOW_ERROR"
    assert d["error"]["message"].startswith("AttributeError: 'dict' object has no attribute 'nope' at ")
    assert d["parked"] is None and "ExecutionParked" not in h.types()


@pytest.mark.parametrize("raised", [ApplicationError("OUT_OF_STOCK", "no more", retryable=False),
                                    TaskError("OUT_OF_STOCK", "no more", retryable=False)])
def test_an_application_error_raised_on_purpose_still_fails(raised: TaskError) -> None:
    reg = CodeRegistry()

    @workflow("app-error", registry=reg)
    def wf(ctx, input):
        raise raised

    h = Harness(wf)
    h.start("app-error", {})
    d = h.describe()
    assert d["status"] == "FAILED" and d["error"]["code"] == "OUT_OF_STOCK" and d["parked"] is None


def test_application_error_is_task_error() -> None:
    assert ApplicationError is TaskError


def test_a_bad_on_workflow_error_is_refused() -> None:
    with pytest.raises(ValidationError, match="on_workflow_error must be 'park' or 'fail', not 'retry'"):
        workflow("x", registry=CodeRegistry(), on_workflow_error="retry")


def test_parking_and_unparking_are_counted_once() -> None:
    from orbit.core.history.lifecycle import decision_metrics
    from orbit.core.history.model import fold, recorded_from_dict

    h = Harness(buggy, workers={"a.first": echo, "a.second": echo})
    h.start("bug-wf", {})
    h.advance(5 * 60_000)  # the retry at 1 min records ExecutionParked again
    h.deploy(fixed)
    h.run()
    history = [recorded_from_dict(e) for e in h.history()]
    counted: list[str] = []
    for n, r in enumerate(history):  # one decision per event: the worst case for double counting
        before = fold("ex-1", history[:n])
        after = fold("ex-1", history[: n + 1])
        counted += [m for m in decision_metrics(after, (before.status, before.created), [r])
                    if "Parked" in m or "Unparked" in m]
    assert [r.event.type for r in history].count("ExecutionParked") >= 2  # parked, then re-parked at a retry
    assert counted == ["ExecutionsParked", "ExecutionsUnparked"]
