"""Cancellation and timeouts of code workflows: raised inside the code, which may clean up."""

from __future__ import annotations

from code_harness import Harness
from orbit.core.history.events import TaskError
from orbit.core.runtime.code.errors import Cancelled, StepFailed, WorkflowTimedOut
from orbit.workflow import CodeRegistry, workflow

REG = CodeRegistry()


def echo(input, attempt):
    return {"echo": input}


@workflow("cleanup", registry=REG, timeout="1h")
def with_cleanup(ctx, input):
    held = ctx.step("inventory.reserve", {})
    try:
        ctx.step("payments.charge", {})
        return ctx.wait_for("approval")
    except Cancelled as e:
        ctx.step("inventory.release", {"held": held, "why": type(e).__name__})
        raise


WORKERS = {"inventory.reserve": echo, "payments.charge": echo, "inventory.release": echo}


def test_cancel_raises_at_the_pending_call_and_cleanup_runs_before_cancelled():
    h = Harness(with_cleanup, workers=WORKERS)
    h.held = {"payments.charge"}
    h.start("cleanup")
    h.cancel("customer asked")
    d = h.describe()
    assert d["status"] == "CANCELLED" and d["compensation"] == "completed"
    assert d["error"]["code"] == "CANCELLED" and "customer asked" in d["error"]["message"]
    assert d["steps"]["2.payments.charge"]["status"] == "CANCELLED"
    assert h.tasks() == ["inventory.reserve", "inventory.release"]
    assert h.calls[-1][1]["why"] == "Cancelled"
    assert len(h.cancelled_tasks) == 1  # the running charge was told
    types = h.types()
    assert types.index("CancelRequested") < types.index("CompensationStarted") < \
        types.index("CompensationCompleted") < types.index("WorkflowCancelled")


def test_cancel_while_waiting_for_a_signal():
    h = Harness(with_cleanup, workers=WORKERS)
    h.start("cleanup")
    assert h.describe()["steps"]["3.wait_for(approval)"]["status"] == "WAITING"
    h.cancel("changed my mind")
    assert h.describe()["status"] == "CANCELLED"
    assert h.tasks()[-1] == "inventory.release"


def test_forced_cancel_skips_cleanup():
    h = Harness(with_cleanup, workers=WORKERS)
    h.held = {"payments.charge"}
    h.start("cleanup")
    h.cancel("now", force=True)
    d = h.describe()
    assert d["status"] == "CANCELLED" and d["compensation"] == "none"
    assert "inventory.release" not in h.tasks()
    assert "CompensationStarted" not in h.types()


def test_workflow_timeout_raises_workflow_timed_out_and_ends_timed_out_after_cleanup():
    h = Harness(with_cleanup, workers=WORKERS)
    h.start("cleanup")
    h.advance(3_600_000)
    d = h.describe()
    assert d["status"] == "TIMED_OUT" and d["compensation"] == "completed"
    assert h.calls[-1] == ("inventory.release", {"held": {"echo": {}}, "why": "WorkflowTimedOut"})


def test_uncaught_cancel_without_cleanup_ends_cancelled():
    @workflow("no-cleanup", registry=REG)
    def wf(ctx, input):
        return ctx.sleep("1d")

    h = Harness(wf)
    h.start("no-cleanup")
    h.cancel("bye")
    assert h.describe()["status"] == "CANCELLED"


def test_failing_cleanup_is_recorded_as_failed_compensation():
    @workflow("bad-cleanup", registry=REG)
    def wf(ctx, input):
        try:
            ctx.wait_for("never")
        except Cancelled:
            ctx.step("inventory.release", {})
        return "unreachable"

    def broken(input, attempt):
        raise TaskError("DOWN", "inventory down", retryable=False)

    h = Harness(wf, workers={"inventory.release": broken})
    h.start("bad-cleanup")
    h.cancel("x")
    d = h.describe()
    assert d["status"] == "CANCELLED" and d["compensation"] == "failed"
    assert "CompensationFailed" in h.types()


def test_children_follow_their_parent_on_cancel():
    @workflow("kid", registry=REG)
    def kid(ctx, input):
        return ctx.wait_for("never")

    @workflow("parent", registry=REG)
    def parent(ctx, input):
        return ctx.child("kid", {})

    h = Harness(parent, kid)
    h.start("parent")
    child_id = "ex-1/1.child(kid)"
    assert h.describe(child_id)["status"] == "RUNNING"
    h.cancel("stop all")
    assert h.describe()["status"] == "CANCELLED"
    assert h.describe(child_id)["status"] == "CANCELLED"


def test_a_failed_child_fails_the_parent_or_raises_when_asked():
    @workflow("kid-fails", registry=REG)
    def kid(ctx, input):
        return ctx.step("a.boom", {})

    @workflow("parent-catches", registry=REG)
    def parent(ctx, input):
        try:
            return ctx.child("kid-fails", {}, on_exhausted="continue_workflow")
        except StepFailed as e:
            return {"child_failed": e.code}

    def boom(input, attempt):
        raise TaskError("BOOM", "no", retryable=False)

    h = Harness(parent, kid, workers={"a.boom": boom})
    h.start("parent-catches")
    assert h.describe()["output"] == {"child_failed": "BOOM"}


def test_self_timeout_subclass_is_a_cancelled():
    assert issubclass(WorkflowTimedOut, Cancelled) and issubclass(Cancelled, Exception)


def test_wait_timing_out_with_the_workflow_still_runs_the_cleanup():
    @workflow("race", registry=REG, timeout="1h")
    def wf(ctx, input):
        held = ctx.step("inventory.reserve", {})
        try:
            return ctx.wait_for("approval", timeout="1h")  # due at the same instant as the workflow timeout
        except (StepFailed, Cancelled):
            ctx.step("inventory.release", held)
            raise

    h = Harness(wf, workers=WORKERS)
    h.start("race")
    h.advance(3_600_000)
    d = h.describe()
    assert d["status"] == "TIMED_OUT" and d["compensation"] == "completed"
    assert h.tasks() == ["inventory.reserve", "inventory.release"]


def test_cancel_recorded_between_calls_is_raised_at_the_next_call():
    from orbit.core.history.events import (
        CancelRequested,
        Recorded,
        StepScheduled,
        StepSucceeded,
        WorkflowCreated,
    )
    from orbit.core.history.model import fold
    from orbit.core.runtime import commands as C
    from orbit.service.replay_host import CodeRuntime

    @workflow("between", build="b", registry=REG)
    def wf(ctx, input):
        ctx.step("a.first", {})
        try:
            ctx.step("a.second", {})
        except Cancelled as e:
            ctx.step("a.cleanup", {"reason": e.reason})
            raise

    events = [WorkflowCreated("between", "1", "b", None, build="b"),
              StepScheduled("1.a.first", 1, {}, kind="task", task="a.first"),
              StepSucceeded("1.a.first", 1, {}), CancelRequested("stop")]
    state = fold("between-1", [Recorded(i + 1, 1000, e) for i, e in enumerate(events)])
    commands = CodeRuntime(registry=REG, cache_size=0).run(wf, state, 1000)
    assert [c.step.unit for c in commands if isinstance(c, C.ScheduleStep)] == ["3.a.cleanup"]
    assert commands[0].step.input == {"reason": "stop"}


@workflow("declared", registry=REG, timeout="1h")
def declared(ctx, input):
    ctx.step("inventory.reserve", {"n": 1},
             compensate=lambda out: ("inventory.release", {"undo": out["echo"]["n"]}))
    ctx.step("payments.charge", {"n": 2}, compensate=("payments.refund", {"undo": 2}))
    try:
        ctx.step("shipping.ship", {}, retry={"max_attempts": 1})
        return ctx.wait_for("done")
    except Cancelled:
        ctx.step("notify.send", {"cleanup": True})
        raise


DECLARED = {**WORKERS, "payments.refund": echo, "notify.send": echo}


def test_declared_compensations_run_in_reverse_order_when_a_step_fails():
    def broken(input, attempt):
        raise TaskError("DOWN", "no trucks", retryable=False)

    h = Harness(declared, workers={**DECLARED, "shipping.ship": broken})
    h.start("declared")
    d = h.describe()
    assert d["status"] == "FAILED" and d["error"]["code"] == "DOWN" and d["compensation"] == "completed"
    assert h.calls[-2:] == [("payments.refund", {"undo": 2}), ("inventory.release", {"undo": 1})]
    assert "compensate:2.payments.charge" in d["steps"] and "compensate:1.inventory.reserve" in d["steps"]


def test_cancel_runs_the_code_cleanup_and_the_declared_compensations():
    h = Harness(declared, workers={**DECLARED, "shipping.ship": echo})
    h.start("declared")
    h.cancel("stop")
    d = h.describe()
    assert d["status"] == "CANCELLED" and d["compensation"] == "completed"
    assert sorted(h.tasks()[-3:]) == ["inventory.release", "notify.send", "payments.refund"]
    assert h.tasks().index("payments.refund") < h.tasks().index("inventory.release")
    assert h.types()[-2:] == ["CompensationCompleted", "WorkflowCancelled"]


def test_a_failing_declared_compensation_is_reported():
    def broken(input, attempt):
        raise TaskError("DOWN", "refunds down", retryable=False)

    h = Harness(declared, workers={**DECLARED, "shipping.ship": echo, "payments.refund": broken})
    h.start("declared")
    h.cancel("stop")
    d = h.describe()
    assert d["status"] == "CANCELLED" and d["compensation"] == "failed"
    assert "inventory.release" in h.tasks()  # the next compensation still ran


def test_workflow_can_cancel_itself():
    @workflow("self-cancel", registry=REG)
    def wf(ctx, input):
        stock = ctx.step("inventory.reserve", {})
        if stock["echo"] == {}:
            raise Cancelled("nothing in stock")
        return stock

    h = Harness(wf, workers=WORKERS)
    h.start("self-cancel")
    d = h.describe()
    assert d["status"] == "CANCELLED" and d["error"]["message"] == "nothing in stock"
