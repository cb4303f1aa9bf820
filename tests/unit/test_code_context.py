"""Scenario tests: one per context method of a code workflow, on the real engine in memory."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from code_harness import Harness
from orbit.core.history.events import TaskError
from orbit.core.runtime.code.errors import StepFailed
from orbit.core.runtime.code.specs import Step
from orbit.service.replay_host import default_runtime
from orbit.workflow import CodeRegistry, workflow

REG = CodeRegistry()


def echo(input, attempt):
    return {"echo": input}


def test_step_returns_worker_output_and_records_units():
    @workflow("ctx-step", registry=REG)
    def wf(ctx, input):
        a = ctx.step("inventory.reserve", {"sku": input["sku"]})
        b = ctx.step("inventory.reserve", {"sku": "again"}, name="reserve-twice")
        return [a, b]

    h = Harness(wf, workers={"inventory.reserve": echo})
    h.start("ctx-step", {"sku": "A"})
    d = h.describe()
    assert d["status"] == "COMPLETED"
    assert d["output"] == [{"echo": {"sku": "A"}}, {"echo": {"sku": "again"}}]
    assert list(d["steps"]) == ["1.inventory.reserve", "2.reserve-twice"]
    assert h.types() == ["WorkflowCreated", "WorkflowStarted", "StepScheduled", "StepDispatched",
                         "StepSucceeded", "StepScheduled", "StepDispatched", "StepSucceeded",
                         "WorkflowCompleted"]
    first = next(e for e in h.history() if e["type"] == "StepScheduled")
    assert (first["task"], first["queue"], first["kind"]) == ("inventory.reserve", "inventory", "task")


def test_step_retry_then_fail_run_fails_the_execution():
    @workflow("ctx-retry", registry=REG)
    def wf(ctx, input):
        return ctx.step("payments.charge", {}, retry={"max_attempts": 3, "backoff": "1s"})

    def flaky(input, attempt):
        raise TaskError("GATEWAY", f"attempt {attempt}")

    h = Harness(wf, workers={"payments.charge": flaky})
    h.start("ctx-retry")
    h.advance(1000)
    h.advance(2000)
    d = h.describe()
    assert d["status"] == "FAILED"
    assert d["error"]["code"] == "GATEWAY"
    assert [t for t in h.types() if t in ("StepAttemptFailed", "RetryScheduled", "StepFailed")] == [
        "StepAttemptFailed", "RetryScheduled", "StepAttemptFailed", "RetryScheduled", "StepAttemptFailed",
        "StepFailed"]


def test_continue_workflow_raises_step_failed_with_code_the_code_can_catch():
    @workflow("ctx-continue", registry=REG)
    def wf(ctx, input):
        try:
            ctx.step("payments.charge", {}, on_exhausted="continue_workflow",
                     retry={"max_attempts": 5, "non_retryable": ["CARD_DECLINED"]})
        except StepFailed as e:
            return {"fallback": ctx.step("payments.invoice", {}), "code": e.code, "retryable": e.retryable}
        return "charged"

    def declined(input, attempt):
        raise TaskError("CARD_DECLINED", "no", retryable=False)

    h = Harness(wf, workers={"payments.charge": declined, "payments.invoice": echo})
    h.start("ctx-continue")
    d = h.describe()
    assert d["status"] == "COMPLETED"
    assert d["output"] == {"fallback": {"echo": {}}, "code": "CARD_DECLINED", "retryable": False}
    assert h.tasks() == ["payments.charge", "payments.invoice"]  # not retried: non-retryable


def test_parallel_schedules_all_in_one_decision_and_keeps_order():
    @workflow("ctx-parallel", registry=REG)
    def wf(ctx, input):
        return ctx.parallel(("inventory.reserve", 1), Step("payments.charge", 2), ("shipping.ship", 3))

    h = Harness(wf, workers={t: echo for t in ("inventory.reserve", "payments.charge", "shipping.ship")})
    h.held = {"inventory.reserve", "payments.charge", "shipping.ship"}
    h.start("ctx-parallel")
    scheduled = [e["seq"] for e in h.history() if e["type"] == "StepScheduled"]
    assert len(scheduled) == 3 and scheduled == list(range(scheduled[0], scheduled[0] + 3))
    h.release("shipping.ship")
    h.release("payments.charge")
    assert h.describe()["status"] == "RUNNING"
    h.release("inventory.reserve")
    assert h.describe()["output"] == [{"echo": 1}, {"echo": 2}, {"echo": 3}]


def test_parallel_return_exceptions_puts_step_failed_in_place():
    @workflow("ctx-parallel-exc", registry=REG)
    def wf(ctx, input):
        res = ctx.parallel(("a.ok", 1), Step("a.bad", 2, on_exhausted="continue_workflow"),
                           return_exceptions=True)
        return [r.code if isinstance(r, StepFailed) else r for r in res]

    def bad(input, attempt):
        raise TaskError("NOPE", "bad", retryable=False)

    h = Harness(wf, workers={"a.ok": echo, "a.bad": bad})
    h.start("ctx-parallel-exc")
    assert h.describe()["output"] == [{"echo": 1}, "NOPE"]


def test_map_respects_concurrency_and_tolerated_failures():
    @workflow("ctx-map", registry=REG)
    def wf(ctx, input):
        return ctx.map("shipping.ship", input, concurrency=2, tolerated_failures=1)

    peak = [0]

    def ship(item, attempt):
        if item == 3:
            raise TaskError("LOST", "parcel lost", retryable=False)
        return item * 10

    h = Harness(wf, workers={"shipping.ship": ship})
    h.held = {"shipping.ship"}
    h.start("ctx-map", [1, 2, 3, 4, 5])
    for _ in range(5):
        s = h.state()
        running = [k for k in s.active if k.startswith("1.shipping.ship[")]
        peak[0] = max(peak[0], len(running))
        h.answer_parked()
    h.release("shipping.ship")
    d = h.describe()
    assert peak[0] == 2
    assert d["status"] == "COMPLETED"
    assert d["output"] == [10, 20, None, 40, 50]
    assert d["steps"]["1.shipping.ship"]["status"] == "SUCCEEDED"


def test_map_beyond_tolerance_fails_the_run():
    @workflow("ctx-map-fail", registry=REG)
    def wf(ctx, input):
        return ctx.map("shipping.ship", input)

    def ship(item, attempt):
        raise TaskError("LOST", f"parcel {item} lost", retryable=False)

    h = Harness(wf, workers={"shipping.ship": ship})
    h.start("ctx-map-fail", [1, 2])
    d = h.describe()
    assert d["status"] == "FAILED" and d["error"]["code"] == "LOST"
    assert "elements failed" in d["error"]["message"]


def test_map_of_nothing_returns_empty_list():
    @workflow("ctx-map-empty", registry=REG)
    def wf(ctx, input):
        return ctx.map("shipping.ship", [])

    h = Harness(wf)
    h.start("ctx-map-empty")
    assert h.describe()["output"] == []


def test_sleep_and_wait_until_are_durable_timers():
    @workflow("ctx-sleep", registry=REG)
    def wf(ctx, input):
        t0 = ctx.now_ms()
        ctx.sleep("10m")
        t1 = ctx.now_ms()
        ctx.wait_until(datetime.fromtimestamp((t1 + 3_600_000) / 1000, tz=UTC))
        return [t1 - t0, ctx.now_ms() - t1]

    h = Harness(wf)
    h.start("ctx-sleep")
    timer = next(e for e in h.history() if e["type"] == "TimerStarted")
    assert timer["step"] == "1.sleep()" and timer["fire_at_ms"] == h.clock.now_ms() + 600_000
    h.advance(599_000)
    assert h.describe()["status"] == "RUNNING"
    h.advance(1000)
    h.advance(3_600_000)
    d = h.describe()
    assert d["status"] == "COMPLETED" and d["output"] == [600_000, 3_600_000]


def test_wait_for_signal_sent_before_the_wait_is_buffered():
    @workflow("ctx-signal", registry=REG)
    def wf(ctx, input):
        ctx.step("a.first", {})
        return ctx.wait_for("approval", timeout="1h")

    h = Harness(wf, workers={"a.first": echo})
    h.held = {"a.first"}
    h.start("ctx-signal")
    h.signal("approval", {"approved": True})
    h.release("a.first")
    assert h.describe()["output"] == {"approved": True}
    assert "SignalConsumed" in h.types()


def test_wait_for_timeout_raises_step_failed_timeout():
    @workflow("ctx-wait-timeout", registry=REG)
    def wf(ctx, input):
        try:
            return ctx.wait_for("approval", timeout="1h")
        except StepFailed as e:
            return {"timed_out": e.code}

    h = Harness(wf)
    h.start("ctx-wait-timeout")
    h.advance(3_600_000)
    assert h.describe()["output"] == {"timed_out": "TIMEOUT"}


def test_hook_token_is_readable_before_the_wait_and_resumes_it():
    @workflow("ctx-hook", registry=REG)
    def wf(ctx, input):
        token = ctx.hook_token("approval")
        ctx.step("notify.send", {"resume_with": token})
        return ctx.wait_for("approval")

    h = Harness(wf, workers={"notify.send": echo})
    h.start("ctx-hook")
    sent = h.calls[0][1]["resume_with"]
    assert len(sent) >= 32 and sent == h.state().hooks["approval"]["token"]
    h.resume_hook(sent, {"approved": "by hook"})
    assert h.describe()["output"] == {"approved": "by hook"}


def test_child_workflow_output_becomes_the_call_result():
    @workflow("ctx-child-kid", registry=REG)
    def kid(ctx, input):
        return {"kid": ctx.step("a.work", input)}

    @workflow("ctx-child-parent", registry=REG)
    def parent(ctx, input):
        return ctx.child("ctx-child-kid", {"n": 1})

    h = Harness(parent, kid, workers={"a.work": echo})
    h.start("ctx-child-parent")
    d = h.describe()
    assert d["status"] == "COMPLETED" and d["output"] == {"kid": {"echo": {"n": 1}}}
    assert h.describe("ex-1/1.child(ctx-child-kid)")["status"] == "COMPLETED"


def test_progress_is_recorded_once_per_call_and_shown_by_describe():
    @workflow("ctx-progress", registry=REG)
    def wf(ctx, input):
        ctx.progress({"stage": "reserving"})
        ctx.hook_token("late")  # a stop between progress and the next unit must not record it twice
        ctx.step("a.first", {})
        ctx.progress({"stage": "reserving"})  # same as the current value: not recorded again
        ctx.progress({"stage": "done"})
        ctx.step("a.second", {})
        return "ok"

    h = Harness(wf, workers={"a.first": echo, "a.second": echo})
    h.start("ctx-progress")
    recorded = [e["data"] for e in h.history() if e["type"] == "ProgressRecorded"]
    assert recorded == [{"stage": "reserving"}, {"stage": "done"}]
    assert h.describe()["progress"] == {"stage": "done"}


def test_now_random_uuid_replay_to_the_same_values():
    seen = []

    @workflow("ctx-values", registry=REG)
    def wf(ctx, input):
        values = (ctx.now_ms(), ctx.random(), ctx.uuid())
        seen.append(values)
        ctx.step("a.first", {})
        return [values[0], values[1], values[2], ctx.random()]

    h = Harness(wf, workers={"a.first": echo})
    h.start("ctx-values")
    out = h.describe()["output"]
    assert out[0] == h.state().created_at_ms
    assert 0 <= out[1] < 1 and out[1] != out[3]
    assert len(out[2]) == 36 and out[2][14] == "4"
    default_runtime().forget()  # force a cold replay: same values again
    h2 = Harness(wf, workers={"a.first": echo})
    h2.start("ctx-values")
    assert h2.describe()["output"] == out


def test_continue_as_new_starts_a_fresh_execution():
    @workflow("ctx-can", registry=REG)
    def wf(ctx, input):
        n = ctx.step("a.count", input)["echo"]
        if n < 2:
            ctx.continue_as_new(n + 1)
        return n

    h = Harness(wf, workers={"a.count": echo})
    h.start("ctx-can", 0)
    assert h.describe()["status"] == "COMPLETED" and h.describe()["continued_as"] == "ex-1~1"
    assert h.describe("ex-1~2")["output"] == 2


@pytest.mark.parametrize("bad", [
    lambda ctx: ctx.step("", {}),
    lambda ctx: ctx.step("a.b", {}, on_exhausted="ignore"),
    lambda ctx: ctx.step("a.b", {}, retry={"max_attempts": 0}),
    lambda ctx: ctx.map("a.b", [1], concurrency=0),
    lambda ctx: ctx.sleep("soon"),
])
def test_bad_arguments_fail_the_execution_with_a_clear_error(bad):
    @workflow("ctx-bad", registry=REG)
    def wf(ctx, input):
        return bad(ctx)

    h = Harness(wf)
    h.start("ctx-bad")
    d = h.describe()
    assert d["status"] == "FAILED" and d["error"]["code"] == "WORKFLOW_ERROR"
    assert d["error"]["message"]


def test_values_that_are_not_json_fail_at_the_call_that_passed_them():
    @workflow("ctx-not-json", registry=REG)
    def wf(ctx, input):
        return ctx.step("a.b", {"when": datetime(2024, 1, 1)})

    h = Harness(wf)
    h.start("ctx-not-json")
    d = h.describe()
    assert d["status"] == "FAILED" and d["error"]["code"] == "VALUE_NOT_STORABLE"
    assert "the input of step '1.a.b' must be JSON data: input.when: datetime is not JSON data at " in \
        d["error"]["message"] and "test_code_context.py:" in d["error"]["message"]
    assert not h.calls

    @workflow("ctx-output-not-json", registry=REG)
    def out(ctx, input):
        return {"items": [1, {"tags": {1, 2}}]}

    h = Harness(out)
    h.start("ctx-output-not-json")
    error = h.describe()["error"]
    assert error["code"] == "VALUE_NOT_STORABLE" and not error["retryable"]
    assert "output must be JSON data: output.items[1].tags: set is not JSON data" in error["message"]

    @workflow("ctx-surrogate-in-hook", registry=REG)
    def hook(ctx, input):
        return ctx.hook_token("h", metadata={"note": "a\ud800"})

    h = Harness(hook)
    h.start("ctx-surrogate-in-hook")
    error = h.describe()["error"]
    assert error["code"] == "VALUE_NOT_STORABLE", error
    assert "metadata.note: has a lone surrogate" in error["message"]


def test_a_workflow_error_points_at_the_users_code_not_the_engine():
    @workflow("ctx-where", registry=REG)
    def wf(ctx, input):
        return ctx.step("a.b", {"when": datetime(2024, 1, 1)})  # the line to point at

    h = Harness(wf)
    h.start("ctx-where")
    message = h.describe()["error"]["message"]
    line = wf.fn.__wrapped__.__code__.co_firstlineno + 2  # fn: the function, guarded (code_errors)
    assert message.endswith(f" at {__file__}:{line}"), message

    @workflow("ctx-where-name", registry=REG)
    def named(ctx, input):
        return ctx.step("a.b", {}, name="a[0]")  # refused in Step's generated __init__

    h = Harness(named)
    h.start("ctx-where-name")
    message = h.describe()["error"]["message"]
    assert message.endswith(f" at {__file__}:{named.fn.__wrapped__.__code__.co_firstlineno + 2}"), message
